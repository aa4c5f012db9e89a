"""A program: an entry point with the project code it reaches (made by `ProjectIndex.program`),
and what happens in it: its events by kind, the sources it seeds and draws, its intent."""

from __future__ import annotations

import functools
from array import array
from typing import TYPE_CHECKING, Iterator, Optional

from repro_lint.facts.model import Event, ModuleInfo

if TYPE_CHECKING:
    from repro_lint.index.project_index import ProjectIndex, ScopeRef


# the empty set of scopes or sources every program without any shares (`frozenset()` makes a
# new one each time: 216 bytes, three per program, 8 MB for 12,000 programs)
_NONE: frozenset = frozenset()


def _event_order(ev: Event) -> tuple[int, int]:
    return (ev.line, ev.col)


class Program:
    """An entry point with the project code it reaches."""

    def __init__(self, index: ProjectIndex, entry: ModuleInfo, scopes: Optional[list[ScopeRef]]) -> None:
        self.index = index
        self.entry = entry
        self._scopes = scopes
        # where the index made the program (`walked`): the numbers of the scopes reached, in
        # order (`ScopeWalk.scope_refs`), and of those that have events
        self._order: Optional[array] = None
        self._event_ids: "Optional[array | list[int]]" = None
        self._seeds: Optional[dict] = None
        self._draws: Optional[dict] = None
        # seeding scopes that run only for some of the classes an object may be of (`_typed`)
        self._uncertain: frozenset = _NONE
        # framework hooks the program reaches because a framework runs them (`trainer.fit`)
        self.hook_starts: tuple[ScopeRef, ...] = ()
        # sources taken as seeded although the program does not seed them (`changed_by`)
        self.assumed_seeds: frozenset = _NONE
        # events that take the place of the program's own, by (path, line, col, kind) of the
        # event each replaces (`changed_by`)
        self.replaced: dict = {}

    def seeded_by(self, sources) -> "Program":
        """The same program as it stands once a fix seeds `sources`: it shows the intent that
        seeding gives (what the determinism rules then find is what --fix fixes next)."""
        return self.changed_by(sources)

    def changed_by(self, sources=(), replaced: Optional[dict] = None) -> "Program":
        """The same program as it stands once fixes are applied: they seed `sources` (it
        shows the intent that seeding gives, and seeds them: `seeds_source`), and change the
        events `replaced` names into the ones it gives (a switch turned on). What the rules then
        find is what --fix fixes next (`check.cascade`)."""
        copy = Program(self.index, self.entry, self._scopes)
        copy._order, copy._event_ids, copy.hook_starts = self._order, self._event_ids, self.hook_starts
        copy.assumed_seeds = self.assumed_seeds | frozenset(sources) if sources else self.assumed_seeds
        copy.replaced = {**self.replaced, **replaced} if replaced else self.replaced
        return copy

    def seeds_source(self, source: str) -> bool:
        """Whether the program seeds `source`, or is taken to by `changed_by`."""
        return source in self.assumed_seeds or source in self.seeds()

    @classmethod
    def walked(cls, index: ProjectIndex, entry: ModuleInfo, order: list[int], event_ids: list[int]) -> "Program":
        """The program of the scopes numbered `order` (`event_ids`: those with events). The
        numbers are kept, 4 bytes each, and the scopes listed when asked: the lists of
        12,000 programs took 8 MB on 38,000 files."""
        program = cls(index, entry, None)
        program._order = array("i", order)
        program._event_ids = array("i", event_ids)
        return program

    @property
    def scopes(self) -> list[ScopeRef]:
        """The reached scopes, in reach order (a new list each time for a program the index made)."""
        if self._scopes is not None:
            return self._scopes
        refs = self.index.scope_refs()
        return [refs[i] for i in self._order]  # type: ignore[union-attr]

    @functools.cached_property
    def scope_set(self) -> set[ScopeRef]:
        # built on first use: a program can reach tens of thousands of scopes
        return set(self.scopes)

    def scopes_now(self) -> set[ScopeRef]:
        """The reached scopes as a set, `scope_set` when it is built, else one not kept by
        the program (for a question asked of it before its own rules run)."""
        held = self.__dict__.get("scope_set")
        return held if held is not None else set(self.scopes)

    def events(self, *kinds: str) -> Iterator[tuple[ModuleInfo, str, Event]]:
        """The events of the reached scopes in reach order (of the given kinds, or all)."""
        if self.replaced:
            return self._events_replaced(kinds)
        return self._events(kinds)

    def _events_replaced(self, kinds: tuple) -> Iterator[tuple[ModuleInfo, str, Event]]:
        """`events`, with the events `replaced` names in place of the program's own."""
        swap = self.replaced
        asked = tuple(dict.fromkeys((*kinds, *(key[3] for key in swap)))) if kinds else ()
        for info, scope, ev in self._events(asked):
            ev = swap.get((info.path, ev.line, ev.col, ev.kind), ev)
            if not kinds or ev.kind in kinds:
                yield info, scope, ev

    def _events(self, kinds: tuple) -> Iterator[tuple[ModuleInfo, str, Event]]:
        modules = self.index.modules
        if self._event_ids is None:
            for mod, scope in self.scopes:
                info = modules[mod]
                for ev in info.events.get(scope, ()):
                    if not kinds or ev.kind in kinds:
                        yield info, scope, ev
            return
        # each reached scope's events are looked at only for the kinds it has: programs
        # of a large project share most of their scopes, and each rule asks for one kind
        index = self.index
        refs = index.scope_refs()
        scope_kinds = index.scope_kinds
        wanted = index.kind_bits(kinds)
        for i in self._event_ids:
            if kinds and not scope_kinds(i) & wanted:
                continue
            mod, scope = refs[i]
            info = modules[mod]
            events = info.events.get(scope, ())
            if not kinds:
                # (grouped by kind in the order the kinds first come, then in source order)
                hits = [ev for k in {ev.kind: None for ev in events} for ev in events if ev.kind == k]
                hits.sort(key=_event_order)
            elif len(kinds) == 1:
                kind = kinds[0]
                hits = [ev for ev in events if ev.kind == kind]
            else:
                hits = [ev for k in kinds for ev in events if ev.kind == k]
                if len(hits) > 1:
                    hits.sort(key=_event_order)
            for ev in hits:
                yield info, scope, ev

    def seeds(self) -> dict[str, list[tuple[ModuleInfo, str, Event]]]:
        # computed once per program: several rules ask (callers must not change it)
        if self._seeds is None:
            out: dict[str, list] = {}
            for info, scope, ev in self.events("seed", "seedcand", "configload"):
                for src in self.index.seed_sources(info, ev):
                    out.setdefault(src, []).append((info, scope, ev))
            self._seeds = self._typed(out)
        return self._seeds

    def _typed(self, seeds: dict) -> dict:
        """The seeds, but those made in a subclass's override that the program never runs: the
        object whose method calls it is of a class the program shows (`typed_reach`). Those
        that run only for some of the classes an object may be of are kept as `maybe`."""
        from repro_lint.index.typed_reach import reaches_override, typed_reach

        index = self.index
        self._uncertain = _NONE
        if not seeds or not reaches_override(index, self):
            return seeds
        may, certain = typed_reach(index, self)
        out = {}
        for source, occs in seeds.items():
            kept = [o for o in occs if (o[0].module, o[1]) in may]
            if kept:
                out[source] = kept
        self._uncertain = frozenset((o[0].module, o[1]) for occs in out.values() for o in occs) - certain or _NONE
        return out

    def certain_seeds(self) -> dict:
        """The seeds that run whatever class the program's objects are of (`seeds` also has
        those that may run): what shows intent."""
        seeds = self.seeds()
        if not self._uncertain:
            return seeds
        out = {}
        for source, occs in seeds.items():
            kept = [o for o in occs if (o[0].module, o[1]) not in self._uncertain]
            if kept:
                out[source] = kept
        return out

    def let_go(self) -> None:
        """Forget the seeds and draws worked out, and the set of scopes (asked again, they are
        worked out again): 28 MB of scope sets on 38,000 files were kept to the end."""
        self._seeds = None
        self._draws = None
        self.__dict__.pop("scope_set", None)

    def draws(self) -> dict[str, list[tuple[ModuleInfo, str, Event]]]:
        if self._draws is None:
            out: dict[str, list] = {}
            for info, scope, ev in self.events("draw"):
                out.setdefault(ev.data["source"], []).append((info, scope, ev))
            self._draws = out
        return self._draws

    def has_intent(self, sources: Optional[tuple] = None) -> bool:
        """Seeds something (of `sources`, if given) or sets a determinism flag towards
        determinism. (A framework that seeds from its own default seed shows no intent; the
        user's seed given to it does.)"""
        if self.assumed_seeds and (sources is None or self.assumed_seeds & set(sources)):
            return True
        if any(
            ev.data.get("intent", True) for src, occs in self.certain_seeds().items() if sources is None or src in sources
            for _, _, ev in occs
        ):
            return True
        m = self.index.m
        for _, _, ev in self.events("flag", "switch", "trainer", "env", "intent"):
            if ev.kind == "intent":
                return True
            if ev.kind == "flag":
                spec = m.flags.get(ev.data["name"], {})
                if ev.data["value"] is None or ev.data["value"] == spec.get("deterministic"):
                    return True
            elif ev.kind == "switch":
                if ev.data["value"] is not False:
                    return True
            elif ev.kind == "trainer":
                if ev.data["deterministic"] not in (False, "missing"):
                    return True
            elif ev.kind == "env" and ev.data["var"] == m.cublas["variable"]:
                return True
        return False

    def may_use_device(self) -> bool:
        """Whether the program may put work on an accelerator: it trains (on whatever device
        its configuration names), a reached scope moves something to a device or names one
        (`DEVICE_SCOPES`), or a framework, trainer or process launcher of it may pick the GPU
        itself. Without, it runs on the CPU."""
        for _, _, ev in self.events("trainer", "runner", "handoff", "train"):
            # (a program that trains may do it on whatever device its configuration names)
            if ev.kind != "train" or ev.data.get("what") in ("backward", "step"):
                return True
        modules = self.index.modules
        for mod, scope in self.scopes:
            if scope in modules[mod].summary("device_scopes"):
                return True
        return False

    def cuda_settings_matter(self, cpu_ops: bool = False) -> bool:
        """Whether the CUDA determinism settings (cuDNN's flags, the cuBLAS workspace; with
        `cpu_ops`, deterministic algorithms) can matter to the program: it may put work on
        an accelerator, or sets such settings itself (its author runs it where they matter).
        Deterministic algorithms also govern a few CPU operations (scatter and index writes,
        the catalog's nondeterministic operations): with `cpu_ops`, a program that reaches one
        counts too. A program whose only sign of intent is a seed and that runs on the CPU (a
        script that writes initial weights, a conversion) gets none of them."""
        for _ in self.events("flag", "switch", "env", *(("ndop",) if cpu_ops else ())):
            return True
        return self.may_use_device()

    def uses_torch(self) -> bool:
        roots = {imp[0].partition(".")[0] for imp in self.entry.imports}
        if roots & self.index.m.other_frameworks and "torch" not in roots:
            return False  # a JAX or TensorFlow script: its model is not torch's
        for _ in self.events("torchuse"):
            return True
        for mod, scope in self.scopes:
            info = self.index.modules[mod]
            fn = info.functions.get(scope)
            if fn is not None and fn.class_name is not None:
                cls_key = f"{info.module}.{scope.rpartition('.')[0]}" if info.module else scope.rpartition(".")[0]
                if self.index.is_module_class(cls_key):
                    return True
        return False

    def uses_cudnn(self) -> bool:
        """Whether the program reaches something cuDNN runs (a convolution, a recurrent layer:
        `cudnn-ops` in flags.toml): the cuDNN flags govern nothing else."""
        for _ in self.events("cudnn"):
            return True
        return False

    def calls_method(self, names: "frozenset[str]") -> bool:
        """Whether a reached scope calls a method of one of `names` (on any object)."""
        calling = self.index.scopes_calling(names)
        for mod, scope in self.scopes:
            hit = calling(mod)
            if hit and scope in hit:
                return True
        return False

    def calls_in_entry(self) -> Iterator[tuple[str, tuple, tuple[str, ...]]]:
        """Calls made by the entry module's reached scopes, with their project callees."""
        for mod, scope in self.scopes:
            if mod != self.entry.module:
                continue
            for call, keys in self.index.callees(self.entry, scope):
                yield scope, call, keys
