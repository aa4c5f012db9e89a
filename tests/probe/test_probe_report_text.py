"""End-to-end: the report names the real cause in its text, not only in its JSON: generators
started from entropy, seeds set in another process, files an earlier run left, draws made
while a library is imported, and which process drew what."""

from __future__ import annotations

import os
import sys

import pytest

from .helpers import SRC, marker_line

pytestmark = pytest.mark.slow


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_generator_started_from_entropy_is_named_not_hash_order(probe):
    result = probe("entropy_rng.py", "--no-deterministic-run")
    assert result.code == 1, result.stderr
    d = result.report["divergence"]
    line = marker_line("entropy_rng.py", "RNG LINE")
    assert [(s["function"], s["kind"], s["location"]["line"]) for s in d["suspects"]] == [
        ("numpy.random.default_rng", "entropy-generator", line)
    ]
    assert "PYTHONHASHSEED" not in d["explanation"] and "set" not in d["explanation"].split()
    rpp102 = [f for f in result.report["findings"] if f["code"] == "RPP102"]
    assert [f["start"]["line"] for f in rpp102] == [line] and "OS entropy" in rpp102[0]["message"]


def test_a_file_the_first_run_wrote_is_named_as_the_cause(probe, tmp_path):
    result = probe("file_cache.py", "--no-deterministic-run", "--", str(tmp_path))
    assert result.code == 1, result.stderr
    d = result.report["divergence"]
    assert d["kind"] == "control-flow"
    [left] = d["left_behind"]
    assert left["path"].endswith("features.pt")
    assert left["location"]["line"] == marker_line("file_cache.py", "SAVE LINE")
    assert f"file_cache.py:{marker_line('file_cache.py', 'LOAD LINE')}" in left["then"]
    assert "PYTHONHASHSEED" not in d["explanation"] and "leaves behind" in d["explanation"]


def test_a_seed_set_only_in_the_launcher_is_said_in_the_text(probe, tmp_path):
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    args = ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "+scale=1,2",
            f"hydra.sweep.dir={tmp_path / 'sweep'}", f"hydra.run.dir={tmp_path / 'run'}"]
    result = probe("hydra_module_seed.py", "--no-deterministic-run", "--", *args, fmt="text")
    assert result.code == 1, result.stderr
    text = _flat(result.stdout)
    seed_line = marker_line("hydra_module_seed.py", "MODULE SEED")
    assert "First divergence in main/job" in text
    assert f"seeded only in other processes: torch.manual_seed at hydra_module_seed.py:{seed_line} in main" in text


def test_draws_table_has_a_process_column_and_one_row_per_line(probe):
    result = probe("worker_numpy.py", "--no-deterministic-run", fmt="text")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if "Draws from global" in line)
    assert "Process" in lines[header + 2]
    line = marker_line("worker_numpy.py", "WORKER DRAW")
    rows = [row for row in lines[header:] if f"worker_numpy.py:{line}" in row]
    assert len(rows) == 1 and "main/worker 0, main/worker 1" in rows[0]


def test_numpy_in_workers_of_a_torch_seeded_program_is_seeded(probe):
    """PyTorch (1.9 and later) seeds numpy in each DataLoader worker from the loader's base
    seed, which comes from the seeded torch generator: the runs are identical."""
    result = probe("worker_numpy.py", "--no-deterministic-run")
    assert result.code == 0, result.stderr
    report = result.report
    assert report["status"] == "identical"
    worker_draws = [d for d in report["rng"]["draws"] if d["source"] == "numpy"]
    assert {d["process"] for d in worker_draws} == {"main/worker 0", "main/worker 1"}
    assert all(d["seeded"] for d in worker_draws)
    assert "RPP102" not in {f["code"] for f in report["findings"]}


def test_a_draw_made_while_a_library_is_imported_says_so(probe, tmp_path):
    # an installed package: the user site-packages folder counts as installed code
    base = tmp_path / "userbase"
    site = base / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    site.mkdir(parents=True)
    (site / "noisy_lib.py").write_text("import torch\n\nNOISE = torch.rand(3)\n")
    env = {"PYTHONUSERBASE": str(base), "PYTHONPATH": os.pathsep.join([str(SRC), str(site), os.environ.get("PYTHONPATH", "")])}
    result = probe("import_draw.py", "--no-deterministic-run", env=env)
    assert result.code == 1, result.stderr
    line = marker_line("import_draw.py", "IMPORT LINE")
    [draw] = [d for d in result.report["rng"]["draws"] if d["location"]["line"] == line]
    assert draw["during_import"] == "noisy_lib" and draw["seeded"] is False
    [finding] = [f for f in result.report["findings"] if f["code"] == "RPP102"]
    assert "noisy_lib while it is imported" in finding["message"]
