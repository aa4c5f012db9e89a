"""What calling a project function does, transitively: the sources it draws from and seeds
(part of `index.ProjectIndex`, which holds the call graph these methods walk)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from repro_lint.facts.model import REF_WORKER, Event, ModuleInfo
from repro_lint.index import hydra_configs


class Effects:
    """What calling a function does, transitively: the sources it draws from and seeds."""

    __slots__ = ("draws", "seeds", "intent")

    def __init__(self) -> None:
        # frozensets, the empty one shared: a project has one of these per function and
        # most are empty (never changed in place: unions rebind)
        self.draws: frozenset[str] = _NONE
        self.seeds: frozenset[str] = _NONE
        self.intent = False


_NONE: frozenset = frozenset()
# Effects by (draws, seeds, intent) (`FunctionEffects._finish_component`): as many as there
# are sets of sources, a handful
_SHARED: "dict[tuple, Effects]" = {}


class FunctionEffects:
    """The effects of project functions, worked out over the call graph (`callees`) of the
    index this is part of."""

    def seed_sources(self, info: ModuleInfo, ev: Event) -> tuple[str, ...]:
        """Sources a seed or seed-candidate event seeds (candidates: only if unresolvable)."""
        if ev.kind == "seed":
            return ev.data["sources"]
        if ev.kind == "seedcand":
            target = ev.data["target"]
            root = target.split(".", 1)[0]
            if root in self.m.known_packages or self.resolve(target, info) or "." in target and self.module_of(target, info):
                return ()
            return self.m.sources
        if ev.kind == "configload":
            return self.config_seeds(info)
        return ()

    def config_seeds(self, info: ModuleInfo) -> tuple[str, ...]:
        """What the seeding functions that the YAML files beside a module apply seed (a config
        loader of catalog `config-appliers` calls them when the program loads one)."""
        memo = self.__dict__.setdefault("_config_seeds", {})
        folder = str(Path(info.path).parent)
        hit = memo.get(folder)
        if hit is None:
            found: set[str] = set()
            if self.root is not None:
                for name in hydra_configs.applied_names(Path(folder), self.m.apply_pattern, self.root):
                    keys = self.resolve(name, info)
                    if keys:
                        for key in keys:
                            found |= self.effects(key).seeds
                    elif name in self.m.seeders:
                        found |= set(self.m.seeders[name].sources)
                    elif self.m.looks_like_seeder(name):
                        found |= set(self.m.sources)
            hit = memo[folder] = tuple(s for s in self.m.sources if s in found)
        return hit

    def effects(self, key: str) -> Effects:
        """Transitive draws/seeds of a project function.

        Functions that call each other in a cycle reach the same functions, so they get
        one shared answer, worked out per strongly connected component of the call graph
        once every component they call is done (Tarjan's algorithm, with explicit stacks:
        call chains in a large project are deeper than Python's recursion limit). An
        answer never depends on which function was asked about first, which a memo that
        cuts cycles with a placeholder gets wrong (and results then differed with the
        order rules ran in)."""
        done = self._effects.get(key)
        if done is None:
            self._component_effects(key)
            done = self._effects[key]
        return done

    def _component_effects(self, start: str) -> None:
        """Fill `_effects` for `start` and every function it reaches that has none yet."""
        effects = self._effects
        function = self.function
        number: dict[str, int] = {start: 0}
        low: dict[str, int] = {start: 0}
        stack = [start]
        on_stack = {start}
        info, fn = function(start)
        work = [(start, self._callee_keys(info, fn.qual))]
        while work:
            node, pending = work[-1]
            for k in pending:
                if k in effects:
                    continue  # a finished component
                if k not in number:
                    number[k] = low[k] = len(number)
                    stack.append(k)
                    on_stack.add(k)
                    sub_info, sub_fn = function(k)
                    work.append((k, self._callee_keys(sub_info, sub_fn.qual)))
                    break
                if k in on_stack and number[k] < low[node]:
                    low[node] = number[k]
            else:
                work.pop()
                if work and low[node] < low[work[-1][0]]:
                    low[work[-1][0]] = low[node]
                if low[node] == number[node]:
                    members = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        members.append(m)
                        if m == node:
                            break
                    self._finish_component(members)

    def _finish_component(self, members: list[str]) -> None:
        """One Effects for a component: its members' own events and what they call outside it
        (every such callee's component is finished before this one)."""
        eff = Effects()
        inside = set(members)
        for m in members:
            info, fn = self.function(m)
            self._own_effects(info, fn.qual, eff)
        for m in members:
            info, fn = self.function(m)
            for k in self._callee_keys(info, fn.qual):
                if k in inside:
                    continue
                sub = self._effects[k]
                if sub.draws:
                    eff.draws |= sub.draws
                if sub.seeds:
                    eff.seeds |= sub.seeds
                if sub.intent:
                    eff.intent = True
        # equal answers are one object (never changed once made): two thirds of a large
        # project's functions have none, and the others share a few sets of sources
        eff = _SHARED.setdefault((eff.draws, eff.seeds, eff.intent), eff)
        for m in members:
            self._effects[m] = eff

    def seeding_names(self) -> frozenset[str]:
        """Names of the project functions that seed something when called (worked out once;
        the editor's workspace state asks, RPL103 uses `seed_reach.seed_callers`)."""
        if self._seeding_names is None:
            self._seeding_names = frozenset(fn.name for key, fn in self.functions.items() if self.effects(key).seeds)
        return self._seeding_names

    def _callee_keys(self, info: ModuleInfo, scope: str) -> Iterator[str]:
        # (a loader's worker_init_fn runs in its workers: not the caller's effects)
        return (k for call, keys in self.callees(info, scope) if call[1] != REF_WORKER for k in keys)

    def _own_effects(self, info: ModuleInfo, scope: str, eff: Effects) -> None:
        for ev in info.events.get(scope, ()):
            if ev.kind == "draw":
                eff.draws |= {ev.data["source"]}
            elif ev.kind in ("seed", "seedcand", "configload"):
                srcs = self.seed_sources(info, ev)
                if srcs:
                    eff.seeds |= frozenset(srcs)
                    eff.intent = eff.intent or ev.data.get("intent", True)
