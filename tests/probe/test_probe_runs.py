"""End-to-end: the probe runs real (tiny) training programs several times on CPU."""

from __future__ import annotations

import re

import pytest

from .helpers import SCRIPTS, marker_line, run_probe

pytestmark = pytest.mark.slow


def test_unseeded_rand_diverges_at_the_draw(probe):
    result = probe("unseeded_rand.py")
    assert result.code == 1, result.stderr
    report = result.report
    assert report["status"] == "diverged"
    d = report["divergence"]
    line = marker_line("unseeded_rand.py", "DATA LINE")
    assert d["kind"] == "unseeded-draw"
    assert d["op"] == "aten::rand"
    assert d["location"]["path"].endswith("unseeded_rand.py")
    assert d["location"]["line"] == line
    assert "torch.rand(8, 4)" in d["location"]["source"]
    assert d["inputs_identical"] is True
    outputs = d["fingerprints"]["outputs"]
    assert outputs[0] != outputs[1]
    assert d["later_divergent_ops"] > 0
    draws = [x for x in report["rng"]["draws"] if x["location"] and x["location"]["line"] == line]
    assert draws and draws[0]["source"] == "torch" and draws[0]["seeded"] is False and draws[0]["count"] == 3
    assert {"RPP101", "RPP102"} <= {f["code"] for f in report["findings"] if f["start"]["line"] == line}
    # Each compared run got its own hash seed and torch seed.
    compared = [r for r in report["runs"] if r["role"] == "compared"]
    assert len({r["pythonhashseed"] for r in compared}) == 2
    assert report["environment"]["torch"]["version"].startswith("2.")


def test_seeded_program_is_identical_and_text_report_is_plain(probe):
    result = probe("unseeded_rand.py", "--", "--seed", fmt="text")
    assert result.code == 0, result.stderr
    assert "Runs are identical" in result.stdout
    assert "\x1b[" not in result.stdout  # no colour codes when the output is not a terminal
    # The deterministic-algorithms run collected the alert with the user's line.
    alert_line = marker_line("unseeded_rand.py", "ALERT LINE")
    assert f"unseeded_rand.py:{alert_line}" in result.stdout
    assert "does not have a deterministic implementation" in result.stdout


def test_numpy_draw_is_named_by_the_audit(probe):
    result = probe("numpy_draw.py", "--no-deterministic-run")
    assert result.code == 1, result.stderr
    report = result.report
    line = marker_line("numpy_draw.py", "NUMPY LINE")
    numpy_draws = [x for x in report["rng"]["draws"] if x["source"] == "numpy"]
    assert [(x["function"], x["location"]["line"], x["seeded"]) for x in numpy_draws] == [("numpy.random.rand", line, False)]
    d = report["divergence"]
    assert d["kind"] == "external-input"  # the values entered torch from numpy
    assert d["location"]["line"] == line + 1
    assert [s["location"]["line"] for s in d["suspects"]] == [line]
    # torch itself was seeded: its draws (the Linear's initialisation) are marked so.
    assert all(x["seeded"] for x in report["rng"]["draws"] if x["source"] == "torch")


def test_set_iteration_order_diverges_with_different_hash_seeds(probe):
    result = probe("hash_order.py", "--no-deterministic-run")
    assert result.code == 1, result.stderr
    d = result.report["divergence"]
    assert d["kind"] == "external-input"
    assert d["location"]["line"] == marker_line("hash_order.py", "TENSOR LINE")
    assert "PYTHONHASHSEED" in d["explanation"]


def test_fixed_hash_seed_is_inherited(probe):
    result = probe("hash_order.py", "--no-deterministic-run", env={"PYTHONHASHSEED": "7"})
    assert result.code == 0, result.stderr
    assert {r["pythonhashseed"] for r in result.report["runs"]} == {"7"}


def test_cuda_nondeterministic_ops_are_predicted_on_cpu(probe, tmp_path):
    result = probe("cuda_ops.py", "--no-deterministic-run")
    assert result.code == 0, result.stderr
    predicted = {(p["id"], p["location"]["line"], p["backward"]) for p in result.report["cuda_nondeterministic_ops"]}
    interpolate = marker_line("cuda_ops.py", "INTERPOLATE LINE")
    index_add = marker_line("cuda_ops.py", "INDEX_ADD LINE")
    assert ("index_add", index_add, False) in predicted
    # Bilinear interpolation is nondeterministic in its backward pass, reported at the forward call.
    assert ("upsample_linear_backward", interpolate, True) in predicted or any(
        line == interpolate and backward for _, line, backward in predicted
    )
    # Explicit generators are not global draws.
    assert not [x for x in result.report["rng"]["draws"] if x["function"] == "aten::randn"]

    sarif = run_probe("--format", "sarif", "--no-deterministic-run", "cuda_ops.py", output=tmp_path / "out.sarif")
    log = sarif.report
    assert log["version"] == "2.1.0" and log["$schema"]
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "repro-lint"
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} >= {"RPP101", "RPP104"}
    lines = {
        r["locations"][0]["physicalLocation"]["region"]["startLine"]
        for r in run["results"]
        if r["ruleId"] == "RPP104" and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("cuda_ops.py")
    }
    assert {interpolate, index_add} <= lines


def test_max_ops_stops_an_endless_program(probe):
    result = probe("endless.py", "--max-ops", "300", "--no-deterministic-run", timeout=120)
    assert result.code == 0, result.stderr
    runs = result.report["runs"]
    assert [(r["ops"], r["stop_reason"]) for r in runs] == [(300, "max-ops"), (300, "max-ops")]


def test_failing_program_is_an_error_with_its_traceback(probe):
    result = probe("raises.py")
    assert result.code == 2
    assert result.report["status"] == "error" and result.report["error"]["kind"] == "script-error"
    assert "KeyError" in result.stderr
    assert f'raises.py", line {marker_line("raises.py", "RAISE LINE")}' in result.stderr
    assert "repro_lint" not in result.stderr.replace("repro-lint", "")  # no frames of the probe itself


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
    assert "pip install 'repro-lint[probe]'" in result.stderr
    assert re.search(r"Traceback", result.stderr) is None
