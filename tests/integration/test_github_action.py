"""The composite GitHub Action (`action.yml`) and the example workflow: both valid against
GitHub's schemas (SchemaStore's, as check-jsonschema vendors them), the README shows the
example as it is, and the action's own scripts do what they say when run as a runner runs
them (bash, with the runner's variables and files)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO, SRC
from sarif_schema import validate_sarif

ACTION = REPO / "action.yml"
WORKFLOW = REPO / "examples" / "workflows" / "reproducibility.yml"
BAD = "import numpy as np\n\n\ndef main():\n    print(np.random.rand(3))\n\n\nif __name__ == '__main__':\n    main()\n"


def _validate(schema: str, path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
                          capture_output=True, text=True)


def test_action_and_example_workflow_validate_against_githubs_schemas(tmp_path):
    r = _validate("vendor.github-actions", ACTION)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _validate("vendor.github-workflows", WORKFLOW)
    assert r.returncode == 0, r.stdout + r.stderr
    # the validation can fail: an action without `description`, a job step without `uses` or `run`
    broken = tmp_path / "action.yml"
    broken.write_text(ACTION.read_text().replace("description: >-\n  Find", "summary: >-\n  Find", 1))
    assert _validate("vendor.github-actions", broken).returncode == 1
    broken = tmp_path / "workflow.yml"
    broken.write_text(WORKFLOW.read_text().replace("      - uses: actions/checkout@v4\n", "      - name: nothing\n", 1))
    assert _validate("vendor.github-workflows", broken).returncode == 1


def test_readme_shows_the_example_workflow_as_it_is():
    readme = (REPO / "README.md").read_text()
    shown = re.search(r"## CI\n.*?```yaml\n(.*?)```", readme, re.S).group(1)
    assert shown == WORKFLOW.read_text()


def test_example_workflow_grants_what_uploads_need():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    for job in workflow["jobs"].values():
        assert job["permissions"] == {"contents": "read", "security-events": "write", "actions": "read"}
        uses = [s["uses"] for s in job["steps"] if "repro-lint" in s.get("uses", "")]
        assert uses and all(re.fullmatch(r"ORG/repro-lint@[0-9a-f]{40}", u) for u in uses)  # pinned to a commit
    probe = next(s for s in workflow["jobs"]["probe"]["steps"] if "probe-script" in s.get("with", {}))
    assert probe["with"]["probe-torch"].startswith("torch==")


def _step(name: str) -> dict:
    action = yaml.safe_load(ACTION.read_text())
    return next(s for s in action["runs"]["steps"] if s["name"] == name)


def _runner(tmp_path: Path, project: Path, step: dict, inputs: dict, outputs: dict = None):
    """Run a step's script as the runner does: bash, its `env:` with the inputs filled in, a
    `repro-lint` on PATH (this checkout), and the runner's files and folders."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "repro-lint"
    shim.write_text(f'#!/bin/sh\nPYTHONPATH="{SRC}" exec "{sys.executable}" -m repro_lint "$@"\n')
    shim.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "RUNNER_TEMP": str(tmp_path),
           "GITHUB_OUTPUT": str(tmp_path / "output.txt"), "HOME": os.environ.get("HOME", str(tmp_path)),
           "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(tmp_path / "cache"))}
    for key, value in step.get("env", {}).items():
        def fill(m):
            kind, name = m.group(1), m.group(2)
            return (inputs if kind == "inputs" else outputs or {}).get(name, "")

        env[key] = re.sub(r"\$\{\{\s*(inputs|steps)\.([\w-]+(?:\.outputs\.[\w-]+)?)\s*\}\}", fill, str(value))
    r = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=project, env=env, capture_output=True, text=True, timeout=300)
    found = {}
    if (tmp_path / "output.txt").exists():
        found = dict(line.split("=", 1) for line in (tmp_path / "output.txt").read_text().splitlines())
    return r, found


def test_check_step_writes_sarif_annotates_and_reports_the_status(tmp_path, project):
    project("train.py", BAD)
    runner = tmp_path / "runner"
    runner.mkdir()
    r, out = _runner(runner, project.root, _step("Check"), {"paths": ".", "args": "", "annotate": "true"})
    assert r.returncode == 0, r.stderr  # findings: the Result step fails the job, after the upload
    assert out["status"] == "1" and "::warning file=train.py,line=5" in r.stdout
    log = json.loads(Path(out["sarif"]).read_text())
    validate_sarif(log)
    assert [res["ruleId"] for res in log["runs"][0]["results"]] == ["RPL101"]
    result = _step("Result")
    r, _ = _runner(runner, project.root, result, {}, {"check.outputs.status": "1"})
    assert r.returncode == 1 and "found what makes runs impossible to repeat" in r.stdout
    r, _ = _runner(runner, project.root, result, {}, {"check.outputs.status": "0"})
    assert r.returncode == 0


def test_check_step_fails_on_an_error(tmp_path, project):
    project("train.py", BAD)
    project("pyproject.toml", '[project]\nname = "x"\nversion = "0"\n\n[tool.repro-lint]\nsed = 1\n')
    r, out = _runner(tmp_path, project.root, _step("Check"), {"paths": ".", "args": "", "annotate": "true"})
    assert r.returncode == 2 and "unknown configuration key" in r.stderr


def test_probe_step_refuses_an_unpinned_torch(tmp_path, project):
    project("train.py", BAD)
    for torch in ("", "torch", "torch>=2"):
        r, out = _runner(tmp_path, project.root, _step("Probe"), {"probe-script": "train.py", "probe-torch": torch})
        assert r.returncode == 2 and "::error title=repro-lint::probe-torch must pin torch" in r.stdout, torch
        assert "status" not in out


def test_uploads_are_skipped_for_fork_pull_requests():
    for name in ("Upload the findings to code scanning", "Upload the probe's report to code scanning"):
        condition = _step(name)["if"]
        assert "github.event.pull_request.head.repo.fork" in condition and "upload-sarif == 'true'" in condition


@pytest.mark.slow
def test_install_step_installs_the_actions_checkout_into_a_venv_of_its_own(tmp_path, project):
    """No package index entry: the action's Install step installs the checkout it runs from
    (`GITHUB_ACTION_PATH`) into its own virtual environment, and puts it on the PATH."""
    project("train.py", BAD)
    step = _step("Install repro-lint")
    env = {**os.environ, "RUNNER_TEMP": str(tmp_path), "GITHUB_ACTION_PATH": str(REPO), "GITHUB_PATH": str(tmp_path / "path.txt")}
    env.pop("PYTHONPATH", None)
    r = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=project.root, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    [bin_dir] = (tmp_path / "path.txt").read_text().split()
    assert Path(bin_dir).parent == tmp_path / "repro-lint-venv"
    r = subprocess.run([str(Path(bin_dir) / "repro-lint"), "check", "--output-format", "concise"], cwd=project.root,
                       capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert r.returncode == 1 and "train.py:5:11: RPL101" in r.stdout, r.stderr
