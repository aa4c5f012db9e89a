"""Follow-on fixes (spec "Fixes" 13): a fix that seeds a program without determinism intent
gives it that intent, and --fix then also fixes what the rules that look only at programs
with intent find there (its cuDNN flags, deterministic algorithms). `check` announces them on
the seeding fix, so that its counts, --fix's and the diff's agree."""

from __future__ import annotations

import dataclasses
from typing import Iterable

from repro_lint.analysis.context import Context, let_go_of
from repro_lint.core.findings import Finding, FollowOn
from repro_lint.index.program import Program
from repro_lint.rules.registry import RULES


def announce(ctx: Context, program: Program, found: Iterable[Finding], target_paths: set[str]) -> None:
    """Attach to the first finding of `found` (the program's findings) whose fix seeds the
    program the fixes that seeding makes follow (`Fix.follow_ons`). Those the check reports
    anyway (through another program) are taken out once every rule has run (`settle`)."""
    seeding = [f for f in found if f.fixable and f.fix.seeds]  # type: ignore[union-attr]
    if not seeding:
        return
    sources = frozenset(s for f in seeding for s in f.fix.seeds)  # type: ignore[union-attr]
    # with torch's intent already there, seeding changes nothing the rules look at
    if program.has_intent(("torch",)) or (program.has_intent() and "torch" not in sources):
        return
    seeded = program.seeded_by(sources)
    out: list[FollowOn] = []
    try:
        for spec in RULES.values():
            if spec.follows != "intent":
                continue
            for f in spec.check(ctx, seeded):
                if f.location.path not in target_paths or not f.fixable:
                    continue
                out.append(FollowOn(f.code, f.name, f.fix.safety, f.fix.description, f.location.path, f.location.line))  # type: ignore[union-attr]
    finally:
        let_go_of(seeded)
    if out:
        first = seeding[0]
        first.fix = dataclasses.replace(first.fix, follow_ons=tuple(out))  # type: ignore[arg-type]


def settle(findings: list[Finding]) -> None:
    """Take out of the findings' follow-ons those the check reports itself (the same rule at
    the same line): they are fixed as findings, not as follow-ons. Done once every rule has
    run, so that the result is the same whichever process ran which rule."""
    reported = {(f.code, f.location.path, f.location.line) for f in findings}
    for f in findings:
        fix = f.fix
        if fix is not None and fix.follow_ons:
            kept = tuple(o for o in fix.follow_ons if (o.code, o.path, o.line) not in reported)
            if kept != fix.follow_ons:
                f.fix = dataclasses.replace(fix, follow_ons=kept)
