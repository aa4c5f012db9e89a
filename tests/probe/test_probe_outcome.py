"""End-to-end: the probe never changes what a program does. A program that runs without the
probe runs under it too; what fails inside the probe's own hooks is reported as the probe's
error, and ranks stopped early never leave another rank waiting."""

from __future__ import annotations

import pytest

from .helpers import marker_line

pytestmark = pytest.mark.slow


def test_adaptive_pooling_backward_runs_and_is_predicted(probe):
    # the backward operator has a tensor where the catalog's exemption looks for the output size
    result = probe("adaptive_pool.py", "--no-deterministic-run")
    assert result.code == 0, result.stderr
    report = result.report
    assert report["status"] == "identical" and report["probe_errors"] == []
    line = marker_line("adaptive_pool.py", "POOL LINE")
    predicted = {(p["id"], p["location"]["line"]) for p in report["cuda_nondeterministic_ops"]}
    assert ("adaptive_avg_pool2d_backward", line) in predicted  # an output size of 2 is affected
    assert "interpolate_area" not in {p["id"] for p in report["cuda_nondeterministic_ops"]}  # no interpolate ran


def test_collate_resize_of_float_tensors_is_not_the_quantized_case(probe):
    result = probe("float_batches.py", "--no-deterministic-run")
    assert result.code == 0, result.stderr
    rows = {row["name"] for row in result.report["processes"]}
    assert {"main/worker 0", "main/worker 1"} <= rows  # the workers' collate ran under the probe
    assert "resize_quantized" not in {p["id"] for p in result.report["cuda_nondeterministic_ops"]}


def test_ranks_seeded_from_the_clock_are_never_left_waiting(probe):
    """Each rank draws its own number of augmentations, so when --max-ops stops one rank the
    other may be waiting in a collective the stopped rank will not enter. Repeated: the
    clock decides where each rank stands."""
    for attempt in range(10):
        result = probe("--nproc-per-node", "2", "--no-deterministic-run", "--max-ops", "255", "ddp_time_seeds.py")
        assert result.code == 1, (attempt, result.stderr)  # time seeds differ between runs
        runs = result.report["runs"]
        assert {r["stop_reason"] for r in runs} <= {"max-ops", "peer-stopped"}, (attempt, runs)
        assert result.report["error"] is None
