"""End-to-end: where runs of real (tiny) training programs diverge, and why."""

from __future__ import annotations

import pytest

from .helpers import marker_line

pytestmark = pytest.mark.slow


def test_unseeded_rand_diverges_at_the_draw(probe):
    result = probe("unseeded_rand.py", "--no-deterministic-run")  # the next test covers that run
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
    rpp102 = next(f for f in report["findings"] if f["code"] == "RPP102")
    assert "Seed the generator" in rpp102["help"]  # the help line of rules/probe/RPP102.toml
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
    torch_draws = [x for x in report["rng"]["draws"] if x["source"] == "torch"]
    assert torch_draws and all(x["seeded"] for x in torch_draws)
    # A draw from an explicit generator is not a global draw.
    assert "aten::randn" not in {x["function"] for x in torch_draws}


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
