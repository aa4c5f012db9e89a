"""Follow-on fixes across programs (spec "Fixes" 13): what the module rules find once the
programs' seeding fixes are applied. A loader in a module that several programs reach (a
shared `load_data`) follows the programs' seed (`torch.initial_seed()`) only once every one of
them seeds torch, so it becomes fixable when the last of them gets its seed, which may be
another program's fix, or an unsafe one. --fix finds and fixes it in its next round; `check`
announces it on the seeding fix that makes it follow (a `then` line naming the module), so
that the counts agree.

Where they are looked for: the findings of module rules reported without a fix (that rule, in
that module). A module finding that seeding reveals where none was reported (a generator in
the entry module of a program that its seed gives intent) is not looked for: that takes every
module rule over every seeded program's modules again, and on a 38,000-file tree with --jobs 2
the rules that ran in the forked copy then decode the events of 6,000 entry modules in this
process (28 MB more at the check's peak). Seeding fixes are RPL101's, reported in the entry
module of the program they seed."""

from __future__ import annotations

from typing import Optional

from repro_lint.analysis.context import Context, let_go_of, program_caches
from repro_lint.analysis.placement import programs_reaching
from repro_lint.check.cascade import attach, follow_on
from repro_lint.core import catalog
from repro_lint.core.findings import Finding
from repro_lint.facts.model import MAIN_SCOPE, MODULE_SCOPE
from repro_lint.rules.registry import RULES

SAFE, ALL = "safe", "all"


def announce_across(ctx: Context, findings: list[Finding], target_paths: set[str]) -> None:
    """Attach to the seeding fixes among `findings` (every finding of the check) what the
    module rules find fixable, in the modules the seeded programs reach, that the check does
    not report fixable: first with every seeding fix applied (what --unsafe-fixes makes),
    then, for what that finds, with the safe ones alone (what --fix makes)."""
    seeders: dict[str, list[Finding]] = {}
    for f in findings:
        if f.fixable and f.fix.seeds:  # type: ignore[union-attr]
            seeders.setdefault(f.location.path, []).append(f)
    if not seeders:
        return
    reported = {(f.code, f.location.path, f.location.line) for f in findings if f.fixable}
    # (a rule without a fix, RPL103's seed after a draw, never has one to make available)
    docs = catalog.rule_docs()
    module_rules = {code for code, spec in RULES.items() if spec.per == "module" and code in docs and docs[code].fix != "none"}
    places: dict[str, set] = {}
    for f in findings:
        if f.code in module_rules and not f.fixable:
            places.setdefault(f.location.path, set()).add(f.code)
    found = _found(ctx, seeders, ALL, target_paths, reported, places)
    if not found:
        return
    every_one_safe = all(f.fix.safety == "safe" for fixes in seeders.values() for f in fixes)  # type: ignore[union-attr]
    safe = found if every_one_safe else _found(ctx, seeders, SAFE, target_paths, reported, _places(found))
    reach: dict = {}
    for key, (info, g) in sorted(found.items(), key=lambda item: item[0]):
        if key in safe:
            g = safe[key][1]  # (as --fix makes it)
        parent = _parent(ctx, seeders, SAFE if key in safe else ALL, info.module, reach)
        if parent is not None:
            attach(parent, [follow_on(g)])


def _applied(fixes: list[Finding], run: str) -> list[Finding]:
    return [f for f in fixes if run == ALL or f.fix.safety == "safe"]  # type: ignore[union-attr]


def _found(
    ctx: Context, seeders: dict, run: str, target_paths: set[str], reported: set, places: dict,
) -> dict:
    """(rule, path, line) -> (module, finding) of what the module rules find fixable, and the check
    does not report fixable, once the seeding fixes of `run` are applied: the rules `places`
    names for the module at each path."""
    infos = [info for info in ctx.index.modules.values() if info.path in places and info.path in target_paths]
    reaching = {
        id(p): p for info in infos for scope in (MODULE_SCOPE, MAIN_SCOPE, *info.functions)
        for p in programs_reaching(ctx, info, scope)
    }
    copies: dict = {}
    for program in reaching.values():
        # (a seeding fix seeds what the program does not)
        sources = {s for f in _applied(seeders.get(program.entry.path, []), run) for s in f.fix.seeds}  # type: ignore[union-attr]
        if sources:
            copies[id(program)] = program.changed_by(sources)
    if not copies:
        return {}
    sim = ctx.changed(copies)
    ours = {id(p) for p in sim.programs}
    out: dict = {}
    try:
        for info in infos:
            for spec in (RULES[code] for code in sorted(places[info.path])):
                for g in spec.check(sim, info):
                    key = (g.code, g.location.path, g.location.line)
                    if g.fixable and key not in reported and g.location.path in target_paths:
                        out.setdefault(key, (info, g))
            _let_go(ours)
    finally:
        _let_go(ours)
        sim.release()
    return out


def _let_go(ours: set) -> None:
    """Forget what the rules worked out for the programs (`ours`, by id) of one module's check:
    asked again, it is worked out again. Held to the end, the seed settings of 4,000 programs
    took 22 MB on 38,000 files, where the rules that made them let go of them program by program."""
    for table in program_caches():
        for program in [p for p in table.keys() if id(p) in ours]:
            let_go_of(program)


def _places(found: dict) -> dict:
    places: dict[str, set] = {}
    for (code, _, _), (info, _) in found.items():
        places.setdefault(info.path, set()).add(code)
    return places


def _parent(ctx: Context, seeders: dict, run: str, module: str, reach: dict) -> Optional[Finding]:
    """The seeding fix a follow-on in `module` is announced on: a safe one where --fix makes
    the follow-on, else an unsafe one (it takes --unsafe-fixes); of a program that reaches the
    module where one does; the one that seeds torch (what loaders follow) first. `reach` keeps
    the modules of each program asked about."""
    best: Optional[tuple] = None
    for program in ctx.programs:
        fixes = [f for f in seeders.get(program.entry.path, ()) if (f.fix.safety == "safe") == (run == SAFE)]  # type: ignore[union-attr]
        if not fixes:
            continue
        mods = reach.get(id(program))
        if mods is None:
            mods = reach[id(program)] = frozenset(mod for mod, _ in program.scopes)
        for f in fixes:
            rank = (module not in mods, "torch" not in f.fix.seeds)  # type: ignore[union-attr]
            if best is None or rank < best[0]:
                best = (rank, f)
            if rank == (False, False):
                return f
    return best[1] if best is not None else None
