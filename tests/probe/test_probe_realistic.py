"""End-to-end on programs written the way training code is (Lightning, the Hugging Face
Trainer, accelerate, an IterableDataset in persistent workers, torch.compile with bf16
autocast): the probe runs them to the end and gives the verdict a user expects. Tests of a
framework that is not installed are skipped."""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = pytest.mark.slow


def _needs(module: str):
    return pytest.mark.skipif(importlib.util.find_spec(module) is None, reason=f"{module} is not installed")


def _identical(probe, script, *args):
    result = probe("--no-deterministic-run", f"realistic/{script}", "--", *args)
    assert result.code == 0, (result.stderr, result.report and result.report["divergence"])
    assert result.report["status"] == "identical" and result.report["probe_errors"] == []
    return result.report


@_needs("lightning")
def test_lightning_seeded_with_seed_everything_is_identical(probe):
    report = _identical(probe, "lightning_train.py", "--seed")
    assert report["runs"][0]["ops"] > 0


@_needs("transformers")
def test_hf_trainer_model_built_before_the_trainer_seeds(probe):
    result = probe("--no-deterministic-run", "realistic/hf_trainer.py")
    assert result.code == 1, result.stderr
    d = result.report["divergence"]
    assert d["kind"] == "unseeded-draw" and d["location"]["path"].endswith("hf_trainer.py")
    [judged] = d["seeding"]
    assert judged["before"] == [] and judged["after"]  # the Trainer's set_seed ran only after it
    _identical(probe, "hf_trainer.py", "--model-init")


@_needs("accelerate")
def test_accelerate_with_set_seed_is_identical(probe):
    _identical(probe, "accelerate_train.py", "--seed")


def test_iterable_dataset_in_persistent_workers_is_identical(probe):
    report = _identical(probe, "iterable_persistent.py")
    workers = [row for row in report["processes"] if "/worker" in row["name"]]
    assert len(workers) == 2 and all(row["ops"][0] > 0 for row in workers)


def test_compiled_model_under_bf16_autocast_is_identical(probe):
    report = _identical(probe, "compiled_autocast.py")
    assert report["compile"]["calls"]
