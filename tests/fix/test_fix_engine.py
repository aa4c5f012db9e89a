"""The fix engine's rounds and checks, with test-only rules patched in (in process)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from repro_lint.discover.config import Config
from repro_lint.check.run import run_check
from repro_lint.check.select import select
from repro_lint.core.findings import Fix
from repro_lint.core.edits import InsertStatements
from repro_lint.fix.rounds import apply_fixes
from repro_lint.rules.registry import RULES, load_rules

TRAIN = "import random\n\n\ndef main():\n    print(random.random())\n\n\nif __name__ == \"__main__\":\n    main()\n"


def fix(root: Path, cfg: Config | None = None, **kw):
    cfg = cfg or Config(select=["RPL1"])
    old = os.getcwd()
    os.chdir(root)
    try:
        report = run_check([Path(".")], cfg, root=root, use_cache=False)
        return apply_fixes(report, select(report, cfg), cfg, use_cache=False, **kw)
    finally:
        os.chdir(old)


@pytest.fixture
def patch_rule(monkeypatch):
    """Replace rule CODE's check by `check(ctx, unit, original_check)`."""
    load_rules()

    def patch(code, check):
        spec = RULES[code]
        monkeypatch.setitem(RULES, code, dataclasses.replace(spec, check=lambda ctx, unit: check(ctx, unit, spec.check)))

    return patch


def test_fixes_revealed_by_a_fix_are_applied_in_later_rounds(project, patch_rule):
    """RPL104 is made to report any module that seeds but has no `MARKER`; the RPL101 fix
    (round 1) makes it report, its own fix (round 2) settles the file."""
    path = project("train.py", TRAIN)

    def marker(ctx, info, original):
        if any(True for _ in info.all_events("seed")) and "MARKER" not in info.constants:
            yield ctx.finding("RPL104", info, (1, 0, 1, 1), "no marker", fix=Fix("add a marker", "safe", (
                InsertStatements("after-imports", "MARKER = 1", key="marker"),)))

    patch_rule("RPL104", marker)
    outcome = fix(project.root)
    assert outcome.errors == []
    assert outcome.fixed == 2
    assert path.read_text() == (
        "import random\n\nMARKER = 1\n\nSEED = 0\n\n\ndef main():\n    print(random.random())\n\n\n"
        "if __name__ == \"__main__\":\n    random.seed(SEED)\n    main()\n"
    )
    assert fix(project.root).changed_paths == []  # idempotent


def test_fixes_that_never_settle_are_refused(project, patch_rule):
    path = project("train.py", TRAIN)

    def endless(ctx, info, original):
        n = len(info.constants)  # a new constant every time: the finding never goes
        yield ctx.finding("RPL104", info, (1, 0, 1, 1), "never happy", fix=Fix("add a line", "safe", (
            InsertStatements("after-imports", f"counter_{n} = 1"),)))

    patch_rule("RPL104", endless)
    outcome = fix(project.root)
    assert len(outcome.errors) == 1
    assert outcome.errors[0].startswith("train.py: RPL104: fix not applied: fixes did not settle after 4 rounds")
    assert path.read_text() == TRAIN


def test_the_rule_whose_fix_adds_a_finding_is_blamed(project, patch_rule):
    path = project("train.py", TRAIN)

    def hashseed(ctx, program, original):
        for finding in original(ctx, program):
            extra = InsertStatements("after-imports", '{mod:os}.environ["PYTHONHASHSEED"] = "0"', key="bad")
            yield dataclasses.replace(finding, fix=dataclasses.replace(finding.fix, edits=finding.fix.edits + (extra,)))

    patch_rule("RPL101", hashseed)
    project("lib.py", "import numpy as np\n\nnp.random.seed(1)\nrng = np.random.default_rng()\n")
    (project.root / "train.py").write_text(TRAIN.replace("import random\n", "import random\n\nimport numpy as np\n\nrng = np.random.default_rng()\n"))
    outcome = fix(project.root)
    assert [e.split(": fix not applied")[0] for e in outcome.errors] == ["train.py: RPL101"]
    assert "new finding RPL104" in outcome.errors[0]
    assert "np.random.default_rng()" in path.read_text()  # untouched, RPL102's fix included
    assert outcome.changed_paths == ["lib.py"]  # the other file is fixed


def test_findings_revealed_by_intent_are_not_new(project):
    """Seeding a torch program gives it determinism intent: the RPL4xx findings it then gets
    are not blamed on the seeding fix."""
    path = project("train.py", "import torch\n\n\ndef main():\n    print(torch.nn.Linear(2, 2))\n\n\nif __name__ == \"__main__\":\n    main()\n")
    outcome = fix(project.root, Config())
    assert outcome.errors == []
    assert "torch.manual_seed(SEED)" in path.read_text()


def test_diff_only_writes_nothing(project):
    path = project("train.py", TRAIN)
    outcome = fix(project.root, write=False)
    assert outcome.fixed == 1 and outcome.changed_paths == ["train.py"]
    assert outcome.diff.startswith("--- a/train.py\n+++ b/train.py\n")
    assert "+    random.seed(SEED)\n" in outcome.diff
    assert path.read_text() == TRAIN
