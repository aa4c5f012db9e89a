"""Follow-on fixes (spec "Fixes" 13): a seed gives a program determinism intent, and --fix then
fixes its flags too. `check` announces them; the counts of `check`, `--diff`, `--fix
--show-fixes` and the JSON summary agree, and agree with what the diff holds."""

import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from fixture_harness import in_process

# unseeded: RPL101's seed is the only finding at first; then RPL401 (a convolution, safe) and
# RPL403 (unsafe: no operation that raises is reached, so `warn_only` is not needed) follow
CASCADING = textwrap.dedent('''
    import argparse

    import torch


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--seed", type=int, default=0)
        args = parser.parse_args()
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.LazyLinear(2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(torch.randn(2, 3, 8, 8)).sum()
        loss.backward()
        opt.step()


    if __name__ == "__main__":
        main()
''').lstrip()


def _counts(summary: str) -> tuple[int, int, int]:
    """(fixable with --fix, follow-ons with --fix, follow-ons only with --unsafe-fixes)."""
    fixable = re.search(r"(\d+) fixable with --fix", summary)
    then = re.search(r"fixable with --fix, then (\d+) follow-on", summary)
    unsafe = re.search(r"With --unsafe-fixes, (\d+) more follow-on|more fixable with --unsafe-fixes, then (\d+) follow-on", summary)
    more = int(next(g for g in unsafe.groups() if g)) if unsafe else 0
    return int(fixable.group(1)) if fixable else 0, int(then.group(1)) if then else 0, more


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_check_diff_fix_and_json_agree_on_a_cascade(cli, project, unsafe):
    project("train.py", CASCADING)
    extra = ["--unsafe-fixes"] if unsafe else []
    check = cli("check", "--no-cache", *extra, ".", cwd=project.root)
    summary = check.stdout.strip().splitlines()[-1]
    fixable, then, more = _counts(summary)
    assert (fixable, then, more) == (1, 1, 1), summary
    assert "= then (--fix): RPL401" in check.stdout and "= then (--unsafe-fixes): RPL403" in check.stdout
    expected = fixable + then + (more if unsafe else 0)
    follow = then + (more if unsafe else 0)

    diff = cli("check", "--no-cache", "--diff", *extra, ".", cwd=project.root)
    assert f"Would fix {expected} findings ({follow} follow-on)." in diff.stderr, diff.stderr
    added = [line for line in diff.stdout.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert any("manual_seed(args.seed)" in line for line in added)
    assert any("cudnn.deterministic = True" in line for line in added)
    assert any("use_deterministic_algorithms" in line for line in added) is unsafe

    doc = json.loads(cli("check", "--no-cache", "--output-format", "json", ".", cwd=project.root).stdout)
    assert (doc["summary"]["follow_ons_safe"], doc["summary"]["follow_ons_unsafe"]) == (then, more)
    seeding = next(f for f in doc["findings"] if f["code"] == "RPL101")
    assert sorted(o["code"] for o in seeding["fix"]["follow_ons"]) == ["RPL401", "RPL403"]

    fixed = cli("check", "--no-cache", "--fix", "--show-fixes", *extra, ".", cwd=project.root)
    assert f"Fixed {expected} findings ({follow} follow-on):" in fixed.stdout, fixed.stdout
    assert fixed.stdout.count(", follow-on") == follow
    listed = sum(int(n) for n in re.findall(r"^    (\d+) × ", fixed.stdout, re.M))
    assert listed == expected
    # what the diff showed is what was written
    assert "torch.backends.cudnn.deterministic = True" in (project.root / "train.py").read_text()


def test_selection_leaves_out_follow_ons_of_rules_not_selected(cli, project):
    project("train.py", CASCADING)
    check = cli("check", "--no-cache", "--select", "RPL101", ".", cwd=project.root)
    assert "follow-on" not in check.stdout and "= then" not in check.stdout
    fixed = cli("check", "--no-cache", "--select", "RPL101", "--fix", ".", cwd=project.root)
    assert "Fixed 1 finding, none remain." in fixed.stdout, fixed.stdout
    assert "cudnn" not in (project.root / "train.py").read_text()


def test_a_program_with_intent_has_no_follow_ons(cli, project):
    project("train.py", CASCADING.replace("    args = parser.parse_args()\n", "    args = parser.parse_args()\n    torch.manual_seed(args.seed)\n"))
    check = cli("check", "--no-cache", ".", cwd=project.root)
    assert "follow-on" not in check.stdout
    assert "RPL401" in check.stdout  # reported directly, not as a follow-on


# -- cascades beyond a seed's own program (fixtures/fix_projects/) ----------------------------
PROJECTS = Path(__file__).resolve().parents[2] / "fixtures" / "fix_projects"

# what `check` must announce on each project (with --unsafe-fixes), beside counts that agree
BEYOND_A_SEED = {
    # an unsafe RPL403 fix that takes the framework's form (`set_seed(SEED, deterministic=True)`)
    # turns deterministic algorithms on without the cuBLAS workspace: RPL404 follows it
    "set_seed_keyword_then_cublas": "= then (--unsafe-fixes): RPL404: set CUBLAS_WORKSPACE_CONFIG",
    # a loader in a module two programs reach follows their seed once both seed torch, the
    # second only with its unsafe (every-rank) seed: a follow-on in another module
    "loader_fixable_once_every_program_seeds": "= then (--unsafe-fixes): RPL301 in imgen/data.py: pass `generator=",
}


@pytest.fixture
def run(monkeypatch, capsys):
    return in_process(monkeypatch, capsys)


def _copy(case: str, root: Path) -> Path:
    shutil.copytree(PROJECTS / case, root, ignore=shutil.ignore_patterns("*.fixed.py", "case.toml", "__pycache__"))
    (root / "pyproject.toml").write_text('[project]\nname = "case"\nversion = "0"\n')
    return root


def _announced(summary: str) -> tuple[int, int, int, int]:
    """check's summary: (fixable with --fix, their follow-ons, more with --unsafe-fixes, theirs)."""
    safe = re.search(r"(\d+) fixable with --fix(?:, then (\d+) follow-on)?", summary)
    unsafe = re.search(r"(\d+) more fixable with --unsafe-fixes(?:, then (\d+) follow-on)?", summary)
    extra = re.search(r"With --unsafe-fixes, (\d+) more follow-on", summary)
    s, f = (int(safe.group(1)), int(safe.group(2) or 0)) if safe else (0, 0)
    u, g = (int(unsafe.group(1)), int(unsafe.group(2) or 0)) if unsafe else (0, int(extra.group(1)) if extra else 0)
    return s, f, u, g


def _made(text: str, verb: str) -> tuple[int, int]:
    """(findings, follow-ons) of "Would fix N findings (M follow-on)" or "Fixed N (M follow-on)"."""
    m = re.search(rf"{verb} (\d+)(?: findings?)?(?: \((\d+) follow-on\))?", text)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else (0, 0)


def _counts_agree(run, root: Path, unsafe: bool) -> str:
    """`check`, `--diff` and `--fix --show-fixes` in `root` say the same numbers; check's report."""
    extra = ["--unsafe-fixes"] if unsafe else []
    check = run("check", "--no-cache", *extra, ".", cwd=root)
    s, f, u, g = _announced(check.stdout.strip().splitlines()[-1])
    expected = (s + f + u + g, f + g) if unsafe else (s + f, f)
    diff = run("check", "--no-cache", "--diff", *extra, ".", cwd=root)
    assert _made(diff.stderr, "Would fix") == expected, (check.stdout, diff.stderr)
    fixed = run("check", "--no-cache", "--fix", "--show-fixes", *extra, ".", cwd=root)
    assert _made(fixed.stdout, "Fixed") == expected, (check.stdout, fixed.stdout)
    assert sum(int(n) for n in re.findall(r"^    (\d+) × ", fixed.stdout, re.M)) == expected[0]
    assert fixed.stdout.count(", follow-on") == expected[1]
    return check.stdout


@pytest.mark.parametrize("case", sorted(BEYOND_A_SEED))
def test_counts_agree_where_fixes_follow_other_fixes_than_a_seed(case, tmp_path, run):
    # one unsafe run: what check announces is what the diff and --fix make
    report = _counts_agree(run, _copy(case, tmp_path / "unsafe"), unsafe=True)
    assert BEYOND_A_SEED[case] in report, report
    assert _counts_agree(run, tmp_path / "unsafe", unsafe=True).strip().splitlines()[-1].endswith("All checks passed.")
    # a safe run, then an unsafe one on what it left: each agrees with what check says then
    safe = _copy(case, tmp_path / "safe")
    _counts_agree(run, safe, unsafe=False)
    report = _counts_agree(run, safe, unsafe=True)
    assert BEYOND_A_SEED[case] in report, report
    for path in safe.rglob("*.py"):  # (and the files come out as one unsafe run leaves them)
        assert path.read_text() == (tmp_path / "unsafe" / path.relative_to(safe)).read_text(), path


def test_a_switch_turned_on_in_place_asks_for_the_cublas_workspace(run, project):
    # `use_deterministic_algorithms(False)` made True: the cuBLAS workspace follows (RPL404)
    project("requirements.txt", "torch>=1.13\n")
    project("train.py", CASCADING.replace(
        "    args = parser.parse_args()\n",
        "    args = parser.parse_args()\n    torch.manual_seed(args.seed)\n    torch.use_deterministic_algorithms(False)\n",
    ))
    report = _counts_agree(run, project.root, unsafe=True)
    assert "= then (--unsafe-fixes): RPL404" in report, report
    assert 'os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG"' in (project.root / "train.py").read_text()

