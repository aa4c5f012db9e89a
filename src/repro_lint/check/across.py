"""Follow-on fixes across programs (spec "Fixes" 13): what the module rules find once the
programs' seeding fixes are applied. A loader in a module that several programs reach (a
shared `load_data`) follows the programs' seed (`torch.initial_seed()`) only once every one of
them seeds torch, so it becomes fixable when the last of them gets its seed, which may be
another program's fix, or an unsafe one; a generator or an augmentation pipeline there is
reported once a program with intent reaches it. --fix finds and fixes these in its next
round; `check` announces them on the seeding fix that makes them follow (a `then` line
naming the module), so that the counts agree.

Seeding fixes are RPL101's, reported in the entry module of the program they seed."""

from __future__ import annotations

from typing import Optional

from repro_lint.analysis.context import Context, let_go_of
from repro_lint.check.cascade import attach, follow_on
from repro_lint.core.findings import Finding
from repro_lint.index.program import Program
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
    # where a module rule's finding may become fixable: where one is reported without a fix (a
    # shared loader), and the seeded programs' entry modules (a generator there, reported once
    # the program shows intent, takes its seed); not a library module where seeding reveals a
    # finding that was not reported at all (its fix would need a seed in scope there)
    module_rules = {code for code, spec in RULES.items() if spec.per == "module"}
    places: dict[str, set] = {}
    for f in findings:
        if f.code in module_rules and not f.fixable:
            places.setdefault(f.location.path, set()).add(f.code)
    found = _found(ctx, seeders, ALL, target_paths, reported, places)
    if not found:
        return
    every_one_safe = all(f.fix.safety == "safe" for fixes in seeders.values() for f in fixes)  # type: ignore[union-attr]
    safe = found if every_one_safe else _found(ctx, seeders, SAFE, target_paths, reported, _places(found), entries=False)
    for key, (info, g) in sorted(found.items(), key=lambda item: item[0]):
        if key in safe:
            g = safe[key][1]  # (as --fix makes it)
        parent = _parent(ctx, seeders, SAFE if key in safe else ALL, info.module)
        if parent is not None:
            attach(parent, [follow_on(g)])


def _applied(fixes: list[Finding], run: str) -> list[Finding]:
    return [f for f in fixes if run == ALL or f.fix.safety == "safe"]  # type: ignore[union-attr]


def _found(
    ctx: Context, seeders: dict, run: str, target_paths: set[str], reported: set, places: dict, entries: bool = True,
) -> dict:
    """(rule, path, line) -> (module, finding) of what the module rules find fixable, and the check
    does not report fixable, once the seeding fixes of `run` are applied: the rules `places`
    names for the module at each path (that the seeded programs reach), and (`entries`) every
    module rule in those programs' entry modules."""
    copies: dict = {}
    for program in ctx.programs:
        # (a seeding fix seeds what the program does not)
        sources = {s for f in _applied(seeders.get(program.entry.path, []), run) for s in f.fix.seeds}  # type: ignore[union-attr]
        if sources:
            copies[id(program)] = program.changed_by(sources)
    if not copies:
        return {}
    sim = ctx.changed(copies)
    modules = ctx.index.modules
    every = {spec.code for spec in RULES.values() if spec.per == "module"}
    wanted = {**places, **{p.entry.path: every for p in copies.values()}} if entries else places
    reached = dict.fromkeys(mod for p in copies.values() for mod, _ in p.scopes)
    infos = [modules[m] for m in reached if m in modules and modules[m].path in wanted and modules[m].path in target_paths]
    out: dict = {}
    try:
        for info in infos:
            for spec in (RULES[code] for code in sorted(wanted[info.path])):
                for g in spec.check(sim, info):
                    key = (g.code, g.location.path, g.location.line)
                    if g.fixable and key not in reported and g.location.path in target_paths:
                        out.setdefault(key, (info, g))
    finally:
        for p in copies.values():
            let_go_of(p)
        sim.release()
    return out


def _places(found: dict) -> dict:
    places: dict[str, set] = {}
    for (code, _, _), (info, _) in found.items():
        places.setdefault(info.path, set()).add(code)
    return places


def _parent(ctx: Context, seeders: dict, run: str, module: str) -> Optional[Finding]:
    """The seeding fix a follow-on in `module` is announced on: a safe one where --fix makes
    the follow-on, else an unsafe one (it takes --unsafe-fixes); of a program that reaches the
    module where one does; the one that seeds torch (what loaders follow) first."""
    best: Optional[tuple] = None
    for program in ctx.programs:
        for f in seeders.get(program.entry.path, ()):
            if (f.fix.safety == "safe") != (run == SAFE):  # type: ignore[union-attr]
                continue
            rank = (
                not any(mod == module for mod, _ in program.scopes),
                "torch" not in f.fix.seeds,  # type: ignore[union-attr]
            )
            if best is None or rank < best[0]:
                best = (rank, f)
            if rank == (False, False):
                return f
    return best[1] if best is not None else None
