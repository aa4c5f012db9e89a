"""`--output-format` and `--format` are the same option in every command that writes a
report: check, rule, rules, probe and env diff (and `--output-file` names the file)."""

import json

import pytest


def test_rule_rules_and_check_take_both_names(cli, project):
    project("train.py", "import numpy as np\nprint(np.random.rand(2))\n")
    for args in (["rules"], ["rule", "RPL101"], ["check", "-n"]):
        a = cli(*args, "--output-format", "json", cwd=project.root)
        b = cli(*args, "--format", "json", cwd=project.root)
        assert a.returncode == b.returncode != 2 and json.loads(a.stdout) == json.loads(b.stdout), args


def test_env_diff_takes_both_names(cli, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"schema": "repro-lint-env/1", "python": {"version": "3.11.0"}}))
    b.write_text(json.dumps({"schema": "repro-lint-env/1", "python": {"version": "3.12.0"}}))
    one = cli("env", "diff", a, b, "--output-format", "json")
    two = cli("env", "diff", a, b, "--format", "json")
    assert one.returncode == two.returncode != 2, one.stderr
    assert json.loads(one.stdout) == json.loads(two.stdout)


@pytest.mark.slow
def test_probe_takes_both_names(cli, tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text("import torch\nprint(torch.ones(2).sum())\n")
    for name in ("--output-format", "--format"):
        r = cli("probe", name, "json", "--no-deterministic-run", script, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["schema"] == "repro-lint-probe/1"
