"""Follow-on fixes (spec "Fixes" 13): a seed gives a program determinism intent, and --fix then
fixes its flags too. `check` announces them; the counts of `check`, `--diff`, `--fix
--show-fixes` and the JSON summary agree, and agree with what the diff holds."""

import json
import re
import textwrap

import pytest

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
