"""RPL2xx: seeding across process boundaries (RPL201, RPL202).

What the rules read is recorded during extraction by `facts/families/processes.py`: module-level
statements of Hydra apps, and `handoff` events for calls that hand a function to other
processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from repro_lint.core.findings import Finding, Fix, Related
from repro_lint.core.edits import MoveStatements
from repro_lint.facts.model import MAIN_SCOPE, MODULE_SCOPE, Event, ModuleInfo
from repro_lint.analysis.context import Context, location, sentences
from repro_lint.rules.registry import rule
from repro_lint.facts.families.processes import DEFS, FACTS, process_catalog
from repro_lint.analysis.messages import source_label
from repro_lint.analysis.training import instance_call, launched_keys


# -- RPL201 ------------------------------------------------------------------------------------
@dataclass
class _Stmt:
    scope: str
    kind: str
    span: tuple
    binds: frozenset
    loads: frozenset
    reads: frozenset
    calls: frozenset

    def contains(self, line: int, col: int) -> bool:
        return (self.span[0], self.span[1]) <= (line, col) <= (self.span[2], self.span[3])


@dataclass
class _Candidate:
    stmt: _Stmt
    at: object  # Event or span: where the finding is reported
    seeds: set = field(default_factory=set)
    settings: set = field(default_factory=set)
    what: list = field(default_factory=list)

    def pos(self) -> tuple:
        at = self.at
        return (at.line, at.col) if isinstance(at, Event) else (at[0], at[1])  # type: ignore[index, union-attr]


def _setting_names(ev: Event) -> set:
    return {ev.data["name"]} if ev.kind == "flag" else set(ev.data["sets"])


def _main_effects(ctx: Context, info: ModuleInfo, main: str) -> tuple[set, set]:
    """Sources the Hydra main function seeds and settings it makes, itself or through callees."""
    index = ctx.index
    seeds: set = set()
    settings: set = set()
    for mod, scope in index.reach([(info.module, main)]):
        if mod == info.module and scope in (MODULE_SCOPE, MAIN_SCOPE):
            continue  # the module importing itself (`from train import Workspace`) is not the main's code
        mi = index.modules[mod]
        for ev in mi.events.get(scope, ()):
            if ev.kind in ("seed", "seedcand"):
                seeds.update(index.seed_sources(mi, ev))
            elif ev.kind in ("flag", "switch"):
                settings |= _setting_names(ev)
    return seeds, settings


class _Rpl201:
    """RPL201 for one module: the candidates, what already runs in the main, the move."""

    def __init__(self, ctx: Context, info: ModuleInfo) -> None:
        self.ctx = ctx
        self.info = info
        facts = info.extra[FACTS]
        self.stmts = sorted((_Stmt(*rec) for rec in facts["stmts"]), key=lambda s: s.span)
        self.by_span = {s.span: s for s in self.stmts}
        self.main_locals: dict = facts["main_locals"]
        self.mains = list(info.hydra_mains)
        self.main_refs = {(info.module, q) for q in self.mains}
        self._launch: dict[str, bool] = {}

    def launches(self, key: str) -> bool:
        """Whether calling project function `key` runs the Hydra main (it is the launch)."""
        hit = self._launch.get(key)
        if hit is None:
            refs = self.ctx.index.reach([self.ctx.index.scope_of(key)], include_imports=False)
            hit = self._launch[key] = bool(self.main_refs & set(refs))
        return hit

    def containing(self, line: int, col: int) -> Optional[_Stmt]:
        for st in self.stmts:
            if st.contains(line, col):
                return st
        return None

    def project_calls(self, scope: str):
        """Calls of project functions made by module-level statements (not references)."""
        for call, keys in self.ctx.index.callees(self.info, scope):
            st = self.containing(call[2], call[3])
            if st is None or tuple(call[2:6]) not in st.calls:
                continue
            keys = [k for k in keys if not self.launches(k)]
            if keys:
                yield st, call, keys

    def candidates(self) -> list[_Candidate]:
        index = self.ctx.index
        info = self.info
        found: dict[tuple, _Candidate] = {}

        def add(st: Optional[_Stmt], at, seeds=(), settings=(), what=""):
            if st is None or st.scope not in (MODULE_SCOPE, MAIN_SCOPE):
                return
            cand = found.get(st.span)
            if cand is None:
                cand = found[st.span] = _Candidate(st, at)
            cand.seeds.update(seeds)
            cand.settings.update(settings)
            if what and what not in cand.what:
                cand.what.append(what)
            pos = (at.line, at.col) if isinstance(at, Event) else (at[0], at[1])
            if pos < cand.pos():
                cand.at = at

        for scope in (MODULE_SCOPE, MAIN_SCOPE):
            for ev in info.events.get(scope, ()):
                if ev.kind in ("seed", "seedcand"):
                    srcs = index.seed_sources(info, ev)
                    if srcs:
                        add(self.by_span.get(ev.stmt), ev, seeds=srcs, what=f"`{ev.data.get('api') or ev.data['target']}(...)` seeds {_sources(srcs)}")
                elif ev.kind == "flag":
                    add(self.by_span.get(ev.stmt), ev, settings=_setting_names(ev), what=f"`{ev.data['name']}` is set")
                elif ev.kind == "switch":
                    add(self.by_span.get(ev.stmt), ev, settings=_setting_names(ev), what=f"`{ev.data['api']}(...)` is called")
            for st, call, keys in self.project_calls(scope):
                seeds: set = set()
                for key in keys:
                    seeds |= index.effects(key).seeds
                if seeds:
                    name = call[0] or call[1]
                    add(st, tuple(call[2:6]), seeds=seeds, what=f"`{name.rsplit('.', 1)[-1]}(...)` seeds {_sources(seeds)}")
        return sorted(found.values(), key=lambda c: c.stmt.span)

    def draws_in(self, st: _Stmt) -> set:
        """Sources a module-level statement draws from, itself or through project calls."""
        out: set = set()
        for ev in self.info.events.get(st.scope, ()):
            if ev.kind == "draw" and ev.stmt == st.span:
                out.add(ev.data["source"])
        for _, call, keys in self.project_calls(st.scope):
            if st.contains(call[2], call[3]) and tuple(call[2:6]) in st.calls:
                for key in keys:
                    eff = self.ctx.index.effects(key)
                    out |= eff.draws - eff.seeds
        return out

    def blocker(self, cand: _Candidate, moved: set, main: str, main_def: Optional[_Stmt], prelude: set) -> Optional[tuple]:
        """(reason, statement) when moving `cand` would change what other code sees."""
        st = cand.stmt
        local = self.main_locals.get(main, frozenset())
        bound_before: set = set()
        for other in self.stmts:
            if other.span in moved and other.span < st.span:
                bound_before |= other.binds
        clash = sorted((st.loads - prelude - bound_before - st.binds) & local)
        if clash:
            return (f"`{main}` has its own local `{clash[0]}`", main_def)
        for other in self.stmts:
            if other.span in moved or other is st or other is main_def:
                continue
            used = sorted(st.binds & other.loads)
            if used:
                return (f"`{used[0]}` is used on line {other.span[0]}", other)
            if other.span <= st.span or other.scope not in (MODULE_SCOPE, MAIN_SCOPE):
                continue
            read = sorted(cand.settings & other.reads)
            if read:
                what = f"`{read[0]}`" if "." in read[0] else f"the {read[0]} setting"
                return (f"line {other.span[0]} reads {what} back", other)
            drawn = sorted(cand.seeds & self.draws_in(other))
            if drawn:
                return (f"line {other.span[0]} draws from {drawn[0]} after it", other)
        return None

    def prelude(self, moved: list[_Stmt]) -> tuple[list[str], set]:
        """Imports that give the main function its own reference to torch state."""
        roots = process_catalog().reimport
        bound: set = set()
        loads: set = set()
        for st in moved:
            bound |= st.binds
            loads |= st.loads
        lines: list[str] = []
        names: set = set()
        for name in sorted(loads - bound):
            qual = self.info.exports.get(name)
            if not qual or qual.split(".", 1)[0] not in roots:
                continue
            if "." in qual:
                parent, last = qual.rsplit(".", 1)
                line = f"from {parent} import {last}" + (f" as {name}" if name != last else "")
            else:
                line = f"import {qual}" + (f" as {name}" if name != qual else "")
            lines.append(line)
            names.add(name)
        lines.sort(key=lambda text: (text.startswith("from "), text))  # `import` lines first, as isort does
        return lines, names

    def findings(self) -> Iterable[Finding]:
        ctx = self.ctx
        info = self.info
        cands = self.candidates()
        if not cands:
            return
        covered_seeds: Optional[set] = None
        covered_settings: Optional[set] = None
        for main in self.mains:
            seeds, settings = _main_effects(ctx, info, main)
            covered_seeds = seeds if covered_seeds is None else covered_seeds & seeds
            covered_settings = settings if covered_settings is None else covered_settings & settings
        cands = [c for c in cands if (c.seeds - (covered_seeds or set())) or (c.settings - (covered_settings or set()))]
        if not cands:
            return
        main = self.mains[0]
        main_def = next(
            (s for s in self.stmts if s.scope == MODULE_SCOPE and s.kind in DEFS[:2] and main in s.binds), None
        )
        blocked: dict[tuple, tuple] = {}
        if len(self.mains) > 1:
            for c in cands:
                blocked[c.stmt.span] = ("the module defines more than one Hydra main function", None)
        elif "." in main or main_def is None:
            for c in cands:
                blocked[c.stmt.span] = (f"`{main}` is not a module-level function", None)
        for c in cands:
            if c.stmt.kind in DEFS:
                blocked.setdefault(c.stmt.span, ("it is part of a class or function definition", None))
            elif _suppressed(info, c.pos()[0]):
                # `# noqa: RPL201` keeps the statement where it is; the others still move
                blocked.setdefault(c.stmt.span, ("suppressed", None))
        moved = {c.stmt.span for c in cands if c.stmt.span not in blocked}
        # a statement that stays behind can make another one stay: repeat until nothing changes
        changed = True
        while changed:
            changed = False
            _, prelude_names = self.prelude([c.stmt for c in cands if c.stmt.span in moved])
            for c in cands:
                if c.stmt.span not in moved:
                    continue
                why = self.blocker(c, moved, main, main_def, prelude_names)
                if why is not None:
                    moved.discard(c.stmt.span)
                    blocked[c.stmt.span] = why
                    changed = True
        fix = None
        if moved:
            to_move = [c.stmt for c in cands if c.stmt.span in moved]
            lines, _ = self.prelude(to_move)
            n = len(to_move)
            fix = Fix(
                f"move {'this statement' if n == 1 else f'these {n} statements'} to the start of `{main}`"
                + (f" (with `{'; '.join(lines)}` inside it)" if lines else ""),
                "safe",
                (MoveStatements(tuple(st.span for st in to_move), main, "\n".join(lines)),),
            )
        main_fn = info.functions.get(main)
        for c in cands:
            yield self.finding(c, main, main_fn, blocked.get(c.stmt.span), fix if c.stmt.span in moved else None)

    def finding(self, cand: _Candidate, main: str, main_fn, why: Optional[tuple], fix: Optional[Fix]) -> Finding:
        info = self.info
        where = "at module level" if cand.stmt.scope == MODULE_SCOPE else "in the `__main__` block"
        lost = " and ".join(w for w, on in (("seed", cand.seeds), ("determinism setting", cand.settings)) if on)
        message = f"{'; '.join(cand.what)} {where} of a Hydra app, outside its `@hydra.main` function `{main}`"
        help = (
            f"launchers that run `{main}` in other processes ({process_catalog().launchers}) never run this code there, "
            f"so the {lost} is lost and runs with the same parameters differ; set it inside `{main}`"
        )
        related = []
        if main_fn is not None:
            related.append(Related(location(info, (main_fn.line, main_fn.col, main_fn.line, main_fn.col)), f"`{main}` is the Hydra main function"))
        if why is not None:
            reason, other = why
            help += f". Not moved automatically: {reason}"
            if other is not None and other.span[0] != (main_fn.line if main_fn else -1):
                related.append(Related(location(info, other.span), reason))
        return self.ctx.finding("RPL201", info, cand.at, message, related, fix, help=sentences(help))  # type: ignore[arg-type]


def _suppressed(info: ModuleInfo, line: int) -> bool:
    if line not in info.noqa:
        return False
    codes = info.noqa[line]
    return codes is None or any("RPL201".startswith(c) for c in codes)


def _sources(srcs: Iterable[str]) -> str:
    order = {"python": 0, "numpy": 1, "torch": 2}
    names = sorted(set(srcs), key=lambda s: (order.get(s, 9), s))
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


@rule("RPL201", per="module")
def seed_outside_hydra_main(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    if not info.hydra_mains or info.is_test or FACTS not in info.extra:
        return
    yield from _Rpl201(ctx, info).findings()


# -- RPL202 ------------------------------------------------------------------------------------
def _handoff_message(name: str, api: str, missing: list[str]) -> tuple[str, str]:
    """The message and the help of an RPL202 finding."""
    cat = process_catalog()
    labels = [source_label(s) for s in missing]
    rngs = f"{labels[0]} RNG" if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]} RNGs"
    message = f"`{name}` draws from {rngs} without seeding {'it' if len(labels) == 1 else 'them'}, and `{api}` runs it in other processes"
    advice = f"seed inside `{name}` (e.g. from a per-task seed passed as an argument)"
    if cat.starts_jobs(api):
        return message, sentences(f"`{api}` runs it in separate jobs, which start unseeded, so results change from run to run", advice)
    copied = [s for s in missing if s not in cat.fork_reseeded]
    reseeded = [source_label(s) for s in missing if s in cat.fork_reseeded]
    fork = []
    if copied:
        streams = "stream" if len(copied) == 1 else "streams"
        fork.append(f"under fork every worker repeats the parent's {_sources(copied)} {streams} (the same numbers in every worker)")
    if reseeded:
        fork.append(f"under fork {' and '.join(reseeded)} is reseeded from OS entropy in every worker")
    return message, sentences(
        f"{'; '.join(fork)}; under spawn every worker starts unseeded, so results change from run to run", advice
    )


@rule("RPL202", per="module", apart=True)
def seed_outside_worker(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    index = ctx.index
    cat = process_catalog()
    order = {s: i for i, s in enumerate(index.m.sources)}
    for _, ev in info.all_events("handoff"):
        if ev.data["target"] is None:
            continue  # a callable not known here
        keys = launched_keys(index, ev, info)
        if not keys:
            continue
        keys = (*keys, *(k for q in ev.data.get("instances", ()) for k in instance_call(index, q, info)))
        if ev.data["decorated"] and not any(set(index.functions[k].decorators or ()) & cat.remote_decorators for k in keys):
            continue
        draws: set = set()
        seeds: set = set()
        for key in keys:
            eff = index.effects(key)
            draws |= eff.draws
            seeds |= eff.seeds
        init = ev.data["initializer"]
        if init:
            for key in index.resolve(init, info):
                seeds |= index.effects(key).seeds
        missing = sorted(draws - seeds, key=lambda s: order.get(s, 99))
        if not missing:
            continue
        fn_info, fn = index.function(keys[0])
        name = fn.qual.rsplit(".", 1)[-1] if fn.class_name is None else fn.qual
        related = [Related(location(fn_info, (fn.line, fn.col, fn.line, fn.col)), f"`{name}` is defined here")]
        message, help = _handoff_message(name, ev.data["api"], missing)
        yield ctx.finding("RPL202", info, ev, message, related, help=help)
