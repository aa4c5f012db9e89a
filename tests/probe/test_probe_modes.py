"""End-to-end: `--vary-seed` (which random streams ignore the seed) and `--resume-check`
(checkpoints without RNG state, and a resumed run against an uninterrupted one), as a user
runs them from the README."""

from __future__ import annotations

import pytest

from .helpers import marker_line

pytestmark = pytest.mark.slow


def _ignored(report):
    return {(s["function"], s["location"]["line"]) for s in report["seed_sensitivity"]["streams"] if not s["changes"]}


def test_a_loader_that_ignores_the_seed_option_is_reported(probe):
    result = probe("--vary-seed", "--seed-arg", "--seed {seed}", "seed_option.py", "--", "--fixed-loader")
    assert result.code == 1, result.stderr
    report = result.report
    assert report["status"] == "seed-ignored" and report["seed_sensitivity"]["method"] == "argument"
    assert [r["role"] for r in report["runs"]] == ["compared", "seed-varied"]
    line = marker_line("seed_option.py", "LOADER LINE")
    assert ("aten::randperm", line) in _ignored(report)
    assert {f["start"]["line"] for f in report["findings"] if f["code"] == "RPP106"} == {line}
    kinds = {s["kind"] for s in report["seed_sensitivity"]["streams"] if s["changes"]}
    assert {"dropout", "initialisation"} <= kinds  # the rest follows the seed


def test_a_program_whose_streams_follow_the_seed_passes(probe):
    result = probe("--vary-seed", "--seed-arg", "--seed {seed}", "seed_option.py", fmt="text")
    assert result.code == 0, result.stderr
    assert "Every random stream changed with the seed" in result.stdout
    assert "RPP106" not in result.stdout


def test_seeds_moved_by_the_probe_find_the_fixed_loader_too(probe):
    # no seed option named: every seed the program sets is moved in the second run
    result = probe("--vary-seed", "seed_option.py", "--", "--fixed-loader")
    assert result.code == 1, result.stderr
    assert result.report["seed_sensitivity"]["method"] == "intercept"
    assert ("aten::randperm", marker_line("seed_option.py", "LOADER LINE")) in _ignored(result.report)
    followed = probe("--vary-seed", "seed_option.py")
    assert followed.code == 0, followed.stderr


def test_a_checkpoint_without_rng_state_is_reported_and_the_resumed_run_diverges(probe, tmp_path):
    result = probe(
        "--resume-check", "--resume-args", f"--out {tmp_path} --resume {tmp_path}/step2.pt", "checkpoints.py",
        "--", "--out", str(tmp_path),
    )
    assert result.code == 1, result.stderr
    report = result.report
    [saved] = report["checkpoints"]
    assert saved["contents"] == ["model", "optimizer"] and saved["rng_state"] == [] and saved["step"] == 2
    assert saved["location"]["line"] == marker_line("checkpoints.py", "SAVE LINE")
    assert report["resume"]["resumed_from"]["step"] == 2
    d = report["divergence"]
    assert (d["kind"], d["op"]) == ("unseeded-draw", "aten::bernoulli_")  # dropout in step 3
    assert d["location"]["line"] == marker_line("checkpoints.py", "FORWARD LINE")
    assert "holds no RNG state" in d["explanation"]
    assert "RPP107" in {f["code"] for f in report["findings"]}


def test_a_checkpoint_with_rng_state_resumes_identically(probe, tmp_path):
    result = probe(
        "--resume-check", "--resume-args", f"--out {tmp_path} --resume {tmp_path}/step2.pt --with-rng", "checkpoints.py",
        "--", "--out", str(tmp_path), "--with-rng",
    )
    assert result.code == 0, (result.stderr, result.report and result.report["divergence"])
    report = result.report
    assert report["status"] == "identical" and report["resume"]["compared_steps"] == 2
    assert report["checkpoints"][0]["rng_state"] == ["rng:torch"]
    assert "RPP107" not in {f["code"] for f in report["findings"]}


def test_resume_check_alone_reports_the_checkpoint(probe, tmp_path):
    result = probe("--resume-check", "--no-deterministic-run", "checkpoints.py", "--", "--out", str(tmp_path), fmt="text")
    assert result.code == 1, result.stderr
    assert "checkpoints lack RNG state" in result.stdout and "RPP107" in result.stdout


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seed-arg", "--seed {seed}", "x.py"], "go with --vary-seed"),
        (["--vary-seed", "--seed-arg=--seed", "x.py"], "must hold {seed}"),
        (["--resume-args", "--resume a.pt", "x.py"], "goes with --resume-check"),
        (["--vary-seed", "--resume-check", "x.py"], "give one"),
    ],
)
def test_mode_usage_errors(argv, message, tmp_path):
    from .helpers import run_probe

    (tmp_path / "x.py").write_text("pass\n")
    result = run_probe(*argv, cwd=tmp_path)
    assert result.code == 2 and message in result.stderr and "Traceback" not in result.stderr
