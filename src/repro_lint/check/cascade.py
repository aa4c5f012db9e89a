"""Follow-on fixes (spec "Fixes" 13): a fix that seeds a program without determinism intent
gives it that intent, and --fix then also fixes what the rules that look only at programs
with intent find there (its cuDNN flags, deterministic algorithms); a fix that turns a switch
on (`set_seed(seed, deterministic=True)`) makes deterministic algorithms ask for the cuBLAS
workspace. `check` announces them on the fix that causes them, so that its counts, --fix's
and the diff's agree. What other modules' rules find once programs are seeded is
`check.across`."""

from __future__ import annotations

import dataclasses
from typing import Iterable

from repro_lint.analysis.context import Context, let_go_of
from repro_lint.analysis.determinism_state import switched_on
from repro_lint.core.findings import Finding, FollowOn
from repro_lint.index.program import Program
from repro_lint.rules.registry import RULES

# How many fixes deep a chain is followed: a seed, the flags it makes follow, what a flag
# fix that turns a switch on asks for in turn (the rounds --fix makes for one program).
DEPTH = 3


def announce(ctx: Context, program: Program, found: Iterable[Finding], target_paths: set[str]) -> None:
    """Attach to the fixes of `found` (the program's findings) the fixes that applying them
    makes follow (`Fix.follow_ons`): to a fix that turns a switch on, what then follows in
    the program; to the first fix that seeds the program, what seeding it makes follow.
    Those the check reports fixable anyway are taken out once every rule has run (`settle`)."""
    found = list(found)
    for f in found:
        if f.fixable and f.fix.switches_on:  # type: ignore[union-attr]
            attach(f, follow_ons(ctx, program, (), f.fix.switches_on, target_paths))  # type: ignore[union-attr]
    seeding = [f for f in found if f.fixable and f.fix.seeds]  # type: ignore[union-attr]
    if not seeding:
        return
    sources = frozenset(s for f in seeding for s in f.fix.seeds)  # type: ignore[union-attr]
    # with torch's intent already there, seeding changes nothing the rules look at
    if program.has_intent(("torch",)) or (program.has_intent() and "torch" not in sources):
        return
    attach(seeding[0], follow_ons(ctx, program, sources, (), target_paths))


def follow_ons(ctx: Context, program: Program, sources: Iterable[str], switches: tuple, target_paths: set[str], depth: int = DEPTH) -> list[FollowOn]:
    """The fixable findings of the rules that follow intent in the program once fixes seed
    `sources` and turn `switches` on; then, for those whose own fixes turn a switch on, what
    follows them in turn. A follow-on of an unsafe fix is unsafe: --fix makes it only with
    --unsafe-fixes."""
    changed = program.changed_by(sources, switched_on(program, switches))
    try:
        found = [
            f for spec in RULES.values() if spec.follows == "intent"
            for f in spec.check(ctx, changed) if f.location.path in target_paths and f.fixable
        ]
    finally:
        let_go_of(changed)
    out = [follow_on(f) for f in found]
    if depth <= 1:
        return out
    seen = {key(o) for o in out}
    for f in found:
        more = tuple(s for s in f.fix.switches_on if s not in switches)  # type: ignore[union-attr]
        if not more:
            continue
        for o in follow_ons(ctx, program, sources, (*switches, *more), target_paths, depth - 1):
            if key(o) not in seen:
                seen.add(key(o))
                out.append(o if f.fix.safety == "safe" else dataclasses.replace(o, safety="unsafe"))  # type: ignore[union-attr]
    return out


def follow_on(f: Finding) -> FollowOn:
    return FollowOn(f.code, f.name, f.fix.safety, f.fix.description, f.location.path, f.location.line)  # type: ignore[union-attr]


def key(o: FollowOn) -> tuple:
    """What a follow-on and the finding it fixes share: rule, file and line."""
    return (o.code, o.path, o.line)


def attach(f: Finding, more: Iterable[FollowOn]) -> None:
    """Add follow-ons to the fix of `f` (one already there is not added again)."""
    fix = f.fix
    if fix is None:
        return
    have = {key(o) for o in fix.follow_ons}
    added = []
    for o in more:
        if key(o) not in have:
            have.add(key(o))
            added.append(o)
    if added:
        f.fix = dataclasses.replace(fix, follow_ons=(*fix.follow_ons, *added))


def settle(findings: list[Finding]) -> None:
    """Take out of the findings' follow-ons those the check reports fixable itself (the same
    rule at the same line): they are fixed as findings, not as follow-ons. One the check
    reports without a fix stays: the fix that causes it makes it fixable (--fix counts it as
    a follow-on too). Done once every rule has run, so that the result is the same whichever
    process ran which rule."""
    reported = {(f.code, f.location.path, f.location.line) for f in findings if f.fixable}
    for f in findings:
        fix = f.fix
        if fix is not None and fix.follow_ons:
            kept = tuple(o for o in fix.follow_ons if key(o) not in reported)
            if kept != fix.follow_ons:
                f.fix = dataclasses.replace(fix, follow_ons=kept)
