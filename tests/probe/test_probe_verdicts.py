"""End-to-end: verdicts by what reaches the results, CUDA predictions that apply the
catalog's conditions, and what a failing program said."""

from __future__ import annotations

import re

import pytest

from .helpers import marker_line

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow


def test_ctc_scratch_memory_is_benign(probe):
    result = probe("ctc_scratch.py", "--no-deterministic-run")
    assert result.code == 0, result.stderr
    report = result.report
    assert report["status"] == "identical" and report["divergence"] is None
    benign = report["benign_divergences"]
    assert [(b["op"], b["location"]["line"], b["process"]) for b in benign] == [
        ("aten::_ctc_loss", marker_line("ctc_scratch.py", "CTC LINE"), "main")
    ]
    assert "RPP105" in {f["code"] for f in report["findings"]}


def test_initialisation_overwritten_by_a_checkpoint_is_benign(probe, tmp_path):
    torch.manual_seed(0)
    checkpoint = tmp_path / "model.pt"
    torch.save(torch.nn.Linear(8, 2).state_dict(), checkpoint)
    result = probe("from_checkpoint.py", "--no-deterministic-run", "--", str(checkpoint))
    assert result.code == 0, result.stderr
    benign = result.report["benign_divergences"]
    assert benign and benign[0]["op"] == "aten::uniform_"
    assert benign[0]["location"]["line"] == marker_line("from_checkpoint.py", "MODEL LINE")
    # the unseeded draw itself is still reported
    assert "RPP102" in {f["code"] for f in result.report["findings"]}


def test_cuda_predictions_follow_the_catalog_conditions(probe):
    result = probe("cuda_layers.py", "--no-deterministic-run", fmt="sarif")
    assert result.code == 0, result.stderr
    results = [r for r in result.report["runs"][0]["results"] if r["ruleId"] == "RPP104"]
    by_line = {}
    for r in results:
        line = r["locations"][0]["physicalLocation"]["region"]["startLine"]
        by_line.setdefault(line, []).append(r["message"]["text"])
    conv = by_line[marker_line("cuda_layers.py", "CONV LINE")]
    assert len(conv) == 1 and conv[0].startswith("Conv1d/Conv2d/Conv3d")  # not ConvTranspose, not twice
    # one forward and one backward convolution ran there: the count says 2, as the table does
    assert "ran 2 times (aten::convolution, aten::convolution_backward, backward pass)" in conv[0]
    assert marker_line("cuda_layers.py", "ATTENTION LINE") not in by_line  # dense bmm is not bmm_sparse
    assert marker_line("cuda_layers.py", "BAG LINE") not in by_line  # mode="mean" is deterministic
    table = probe("cuda_layers.py", "--no-deterministic-run").report["cuda_nondeterministic_ops"]
    assert [(p["id"], p["location"]["line"], p["count"]) for p in table] == [
        ("convolution", marker_line("cuda_layers.py", "CONV LINE"), 2)
    ]


def test_program_exiting_with_a_message_is_an_error_that_shows_it(probe):
    result = probe("exits_with_message.py", fmt="text")
    assert result.code == 2
    assert "no config given: pass --config conf/train.yaml" in result.stderr
    argparse_error = probe("exits_with_message.py", "--", "--bogus", fmt="json")
    assert argparse_error.code == 2
    assert argparse_error.report["error"]["kind"] == "script-exit"
    assert "unrecognized arguments: --bogus" in argparse_error.stderr  # the program's own stderr
    assert re.search(r"usage: exits_with_message\.py", argparse_error.stderr)


def test_stdin_file_is_given_to_every_run(probe, tmp_path):
    seed = tmp_path / "seed.txt"
    seed.write_text("7\n")
    result = probe("--stdin", str(seed), "--no-deterministic-run", "seed_from_stdin.py")
    assert result.code == 0, result.stderr  # each run read 7: both seeded alike
    assert result.report["status"] == "identical" and result.report["runs"][0]["ops"] > 0
    without = probe("--no-deterministic-run", "seed_from_stdin.py")  # standard input is empty by default
    assert without.code == 2 and "invalid literal for int()" in without.stderr
