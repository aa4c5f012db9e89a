"""End-to-end: predictions, stopping early, targets and failures."""

from __future__ import annotations

import re

import pytest
from sarif_schema import validate_sarif

from .helpers import SCRIPTS, marker_line, run_probe

pytestmark = pytest.mark.slow


def test_cuda_nondeterministic_ops_are_predicted_on_cpu(probe):
    result = probe("cuda_ops.py", "--no-deterministic-run", fmt="sarif")
    assert result.code == 0, result.stderr  # seeded: the runs are identical on CPU
    log = result.report
    validate_sarif(log)  # the official SARIF 2.1.0 schema
    assert log["runs"][0]["invocations"] == [{"executionSuccessful": True}]
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "repro-lint"
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} >= {"RPP101", "RPP104"}
    predicted = {
        (r["locations"][0]["physicalLocation"]["region"]["startLine"], r["message"]["text"].split("; ")[0])
        for r in run["results"]
        if r["ruleId"] == "RPP104"
        and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("cuda_ops.py")
    }
    lines = {line for line, _ in predicted}
    interpolate = marker_line("cuda_ops.py", "INTERPOLATE LINE")
    index_add = marker_line("cuda_ops.py", "INDEX_ADD LINE")
    assert {interpolate, index_add} <= lines
    assert any(line == index_add and "index_add_" in text for line, text in predicted)
    # Bilinear interpolation is nondeterministic in its backward pass, reported at the forward call.
    assert any(line == interpolate and "interpolat" in text.lower() for line, text in predicted), predicted


def test_max_ops_stops_an_endless_program(probe):
    result = probe("endless.py", "--max-ops", "300", "--no-deterministic-run", timeout=120)
    assert result.code == 0, result.stderr
    runs = result.report["runs"]
    assert [(r["ops"], r["stop_reason"]) for r in runs] == [(300, "max-ops"), (300, "max-ops")]


def test_timeout_stops_runs_and_compares_what_was_recorded(probe):
    result = probe("endless.py", "--timeout", "1", "--no-deterministic-run", timeout=180)
    assert result.code == 0, result.stderr
    runs = result.report["runs"]
    assert [r["stop_reason"] for r in runs] == ["timeout", "timeout"]
    assert all(r["ops"] > 0 for r in runs)


def test_timeout_stops_a_program_when_the_alarm_lands_in_a_finalizer(probe):
    # the stop raised there is swallowed by the interpreter: the next op stops the program
    result = probe("slow_finalizers.py", "--timeout", "1", "--no-deterministic-run", timeout=180)
    assert result.code == 0, result.stderr
    assert [r["stop_reason"] for r in result.report["runs"]] == ["timeout", "timeout"]


def test_failing_program_is_an_error_with_its_traceback(probe):
    result = probe("raises.py")
    assert result.code == 2
    assert result.report["status"] == "error" and result.report["error"]["kind"] == "script-error"
    assert "RuntimeError: mat1 and mat2 shapes cannot be multiplied" in result.stderr
    assert f'raises.py", line {marker_line("raises.py", "RAISE LINE")}' in result.stderr
    # Neither the probe's frames nor the torch frames its dispatch mode adds.
    for internal in ("repro_lint", "_ops.py", "_compile.py", "eval_frame.py"):
        assert internal not in result.stderr, result.stderr


def test_module_function_target(probe):
    result = probe("-m", "demo_pkg.train:main", "--no-deterministic-run")
    assert result.code == 0, result.stderr
    report = result.report
    assert report["target"] == {"kind": "module", "module": "demo_pkg.train", "function": "main", "args": []}
    assert {x["source"] for x in report["rng"]["draws"]} == {"torch", "python"}
    assert all(x["seeded"] for x in report["rng"]["draws"])


def test_missing_module_is_a_clear_error(probe):
    result = probe("-m", "demo_pkg.nowhere:main", fmt="text")
    assert result.code == 2
    assert "no module named 'demo_pkg.nowhere'" in result.stderr
    assert "Traceback" not in result.stderr


def test_torch_that_cannot_be_imported(tmp_path):
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("raise ImportError('simulated broken install')\n")
    result = run_probe(SCRIPTS / "endless.py", env={"PYTHONPATH": f"{fake}:{SCRIPTS.parents[2] / 'src'}"})
    assert result.code == 2
    assert "repro-lint probe needs PyTorch: pip install torch" in result.stderr
    assert re.search(r"Traceback", result.stderr) is None
