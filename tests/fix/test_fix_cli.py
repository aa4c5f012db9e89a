"""`repro-lint --fix`, `--diff`, `--unsafe-fixes`, `--exit-non-zero-on-fix`, run as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import SRC

TRAIN = '''\
import random

import numpy as np
import torch


def main():
    model = torch.nn.Linear(2, 2)
    torch.manual_seed(0)
    print(model, np.random.rand(), random.random())


if __name__ == "__main__":
    main()
'''

# a program with determinism intent (the cuDNN flag) and no seed of its own: RPL102's fix adds `SEED`
GENERATOR = (
    "import numpy as np\nimport torch\n\ntorch.backends.cudnn.benchmark = False\nrng = np.random.default_rng()\n\n"
    'if __name__ == "__main__":\n    print(rng.random())\n'
)


def test_fix_reports_fixed_and_remaining(cli, project):
    path = project("train.py", TRAIN)
    r = cli("--fix", "--no-cache", "--select", "RPL1", ".", cwd=project.root)
    assert r.returncode == 1, r.stderr  # RPL103 (no fix) remains
    assert "Fixed 2; found 1 finding (RPL103: 1)." in r.stdout
    text = path.read_text()
    assert "    torch.manual_seed(0)\n    random.seed(0)\n    np.random.seed(0)\n" in text
    again = cli("--fix", "--no-cache", "--select", "RPL1", ".", cwd=project.root)
    assert again.returncode == 1 and "Fixed" not in again.stdout
    assert path.read_text() == text


def test_exit_non_zero_on_fix(cli, project):
    path = project("lib.py", GENERATOR)
    r = cli("--fix", "--no-cache", "--exit-non-zero-on-fix", ".", cwd=project.root)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Fixed 1 finding, none remain." in r.stdout
    assert "default_rng(seed=SEED)" in path.read_text()
    path.write_text(GENERATOR)
    r = cli("--fix", "--no-cache", ".", cwd=project.root)
    assert r.returncode == 0 and "Fixed 1 finding, none remain." in r.stdout
    r = cli("--fix", "--no-cache", "--exit-non-zero-on-fix", ".", cwd=project.root)
    assert r.returncode == 0 and "All checks passed." in r.stdout  # nothing fixed this time


def test_diff_prints_and_writes_nothing(cli, project):
    path = project("lib.py", GENERATOR)
    before = path.stat().st_mtime_ns
    r = cli("--diff", "--no-cache", ".", cwd=project.root)
    assert r.returncode == 1, r.stderr
    assert r.stdout == (
        "--- a/lib.py\n+++ b/lib.py\n@@ -1,8 +1,10 @@\n import numpy as np\n import torch\n \n+SEED = 0\n+\n"
        " torch.backends.cudnn.benchmark = False\n-rng = np.random.default_rng()\n+rng = np.random.default_rng(seed=SEED)\n"
        ' \n if __name__ == "__main__":\n     print(rng.random())\n'
    )
    assert path.read_text() == GENERATOR and path.stat().st_mtime_ns == before
    path.write_text("x = 1\n")
    r = cli("--diff", "--no-cache", ".", cwd=project.root)
    assert r.returncode == 0 and r.stdout == ""


def test_diff_marks_missing_final_newline(cli, project):
    project("lib.py", GENERATOR.rstrip("\n"))
    r = cli("--diff", "--no-cache", ".", cwd=project.root)
    assert r.returncode == 1
    assert "\\ No newline at end of file\n" in r.stdout


def test_noqa_findings_are_not_fixed(cli, project):
    path = project("lib.py", GENERATOR)
    assert "RPL102" in cli("--no-cache", ".", cwd=project.root).stdout
    suppressed = GENERATOR.replace("default_rng()\n", "default_rng()  # noqa: RPL102\n")
    path.write_text(suppressed)
    r = cli("--fix", "--no-cache", ".", cwd=project.root)
    assert r.returncode == 0 and "All checks passed." in r.stdout
    assert path.read_text() == suppressed


# -- a test-only unsafe fix: RPL102's fix, marked unsafe, in a subprocess ---------------------
UNSAFE_RUNNER = textwrap.dedent('''\
    import dataclasses
    import sys

    from repro_lint.rules.registry import RULES, load_rules

    load_rules()
    spec = RULES["RPL102"]

    def unsafe(ctx, info):
        for finding in spec.check(ctx, info):
            if finding.fix is not None:
                finding.fix = dataclasses.replace(finding.fix, safety="unsafe")
            yield finding

    RULES["RPL102"] = dataclasses.replace(spec, check=unsafe)
    from repro_lint.cli.main import main

    sys.exit(main(sys.argv[1:]))
''')


def run_patched(runner: str, *args, cwd):
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", runner, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_unsafe_fixes_need_the_flag(project):
    path = project("lib.py", GENERATOR)
    r = run_patched(UNSAFE_RUNNER, "--no-cache", ".", cwd=project.root)
    assert "lib.py:5:7: RPL102" in r.stdout and "[-]" in r.stdout
    assert "fix (unsafe, --unsafe-fixes)" in r.stdout
    assert "1 more fixable with --unsafe-fixes." in r.stdout
    r = run_patched(UNSAFE_RUNNER, "--no-cache", "--format", "json", ".", cwd=project.root)
    fix = json.loads(r.stdout)["findings"][0]["fix"]
    assert fix["available"] is True and fix["safety"] == "unsafe"
    r = run_patched(UNSAFE_RUNNER, "--no-cache", "--format", "sarif", ".", cwd=project.root)
    props = json.loads(r.stdout)["runs"][0]["results"][0]["properties"]
    assert props["fixable"] is True and props["fixSafety"] == "unsafe"
    r = run_patched(UNSAFE_RUNNER, "--no-cache", "--format", "github", ".", cwd=project.root)
    assert "[fix (unsafe, --fix --unsafe-fixes): pass a seed to `default_rng`]" in r.stdout

    r = run_patched(UNSAFE_RUNNER, "--no-cache", "--diff", ".", cwd=project.root)
    assert r.returncode == 0 and r.stdout == ""
    r = run_patched(UNSAFE_RUNNER, "--no-cache", "--fix", ".", cwd=project.root)
    assert r.returncode == 1 and path.read_text() == GENERATOR
    r = run_patched(UNSAFE_RUNNER, "--no-cache", "--diff", "--unsafe-fixes", ".", cwd=project.root)
    assert r.returncode == 1 and "+rng = np.random.default_rng(seed=SEED)" in r.stdout
    assert path.read_text() == GENERATOR
    r = run_patched(UNSAFE_RUNNER, "--no-cache", "--fix", "--unsafe-fixes", ".", cwd=project.root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Fixed 1 finding, none remain." in r.stdout
    assert "default_rng(seed=SEED)" in path.read_text()


def test_safe_fix_shown_in_every_format(cli, project):
    project("lib.py", GENERATOR)
    r = cli("--no-cache", ".", cwd=project.root)
    assert "[*]" in r.stdout and "fix (safe, --fix): pass a seed to `default_rng`" in r.stdout
    r = cli("--no-cache", "--format", "concise", ".", cwd=project.root)
    assert r.stdout.startswith("lib.py:5:7: RPL102 [*] ")
    r = cli("--no-cache", "--format", "json", ".", cwd=project.root)
    assert json.loads(r.stdout)["findings"][0]["fix"]["safety"] == "safe"
    r = cli("--no-cache", "--format", "sarif", ".", cwd=project.root)
    assert json.loads(r.stdout)["runs"][0]["results"][0]["properties"]["fixSafety"] == "safe"
    r = cli("--no-cache", "--format", "github", ".", cwd=project.root)
    assert "[fix (safe, --fix): pass a seed to `default_rng`]" in r.stdout


# -- fixes that must be refused: the file stays as it was, exit 2 ------------------------------
BAD_FIX_RUNNER = textwrap.dedent('''\
    import dataclasses
    import sys

    from repro_lint.core.edits import InsertStatements
    from repro_lint.rules.registry import RULES, load_rules

    load_rules()
    spec = RULES["RPL102"]
    CODE = sys.argv.pop(1)

    def bad(ctx, info):
        for finding in spec.check(ctx, info):
            if finding.fix is not None:
                edits = finding.fix.edits + (InsertStatements("after-imports", CODE),)
                finding.fix = dataclasses.replace(finding.fix, edits=edits)
            yield finding

    RULES["RPL102"] = dataclasses.replace(spec, check=bad)
    from repro_lint.cli.main import main

    sys.exit(main(sys.argv[1:]))
''')


def test_fix_adding_a_finding_is_refused(project):
    path = project("lib.py", GENERATOR)
    r = run_patched(BAD_FIX_RUNNER, '{mod:os}.environ["PYTHONHASHSEED"] = "0"', "--fix", "--no-cache", ".", cwd=project.root)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "lib.py: RPL102: fix not applied: the fixed file would have a new finding RPL104 at line" in r.stderr
    assert path.read_text() == GENERATOR
    r = run_patched(BAD_FIX_RUNNER, '{mod:os}.environ["PYTHONHASHSEED"] = "0"', "--diff", "--no-cache", ".", cwd=project.root)
    assert r.returncode == 2 and r.stdout == ""


def test_fix_that_does_not_compile_is_refused(project):
    path = project("lib.py", GENERATOR)
    r = run_patched(BAD_FIX_RUNNER, "return 1", "--fix", "--no-cache", ".", cwd=project.root)
    assert r.returncode == 2
    assert "RPL102: fix not applied: the fixed file does not compile: 'return' outside function" in r.stderr
    assert path.read_text() == GENERATOR
