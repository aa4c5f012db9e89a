"""End to end, real torch on CPU, fresh interpreters: a fix uses the user's seed.

- After `--fix`, the same `--seed` repeats bit for bit and another `--seed` gives other results
  (the fix seeded with `args.seed`, not a new constant).
- Importing the fixed library modules changes nothing in the importing process: not the seed
  torch reports, not any generator's state, not the deterministic-algorithms switch.
- A loader built in a library follows the program's seed after the fix: its order no longer
  changes when other code draws from torch's generator first, and still changes with `--seed`.
Results are printed as float hex, so equality means bitwise equality.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli

pytestmark = pytest.mark.slow

PROJECTS = Path(__file__).resolve().parents[2] / "fixtures" / "fix_projects"


def copy_project(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(PROJECTS / name, root, ignore=shutil.ignore_patterns("*.fixed.py", "case.toml"))
    (root / "pyproject.toml").write_text('[project]\nname = "case"\nversion = "0"\n')
    return root


def run(root: Path, *args: str, code: str | None = None) -> str:
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=str(root))
    cmd = [sys.executable, "-c", code] if code is not None else [sys.executable, *args]
    r = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_fixed_program_follows_its_seed_option(tmp_path):
    root = copy_project("argparse_helper_first", tmp_path)
    before = [run(root, "train.py", "--seed", "1") for _ in range(2)]
    assert before[0] != before[1], "the unseeded script repeated by chance"

    r = run_cli("--fix", "--no-cache", ".", cwd=root)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    text = (root / "train.py").read_text()
    assert "np.random.seed(args.seed)" in text and "torch.manual_seed(args.seed)" in text and "SEED" not in text

    same = [run(root, "train.py", "--seed", "1") for _ in range(2)]
    other = run(root, "train.py", "--seed", "2")
    assert same[0] == same[1], "the same --seed must repeat bit for bit"
    assert other != same[0], "another --seed must give other results"


PROBE = """
import random, sys
import numpy as np
import torch
torch.manual_seed(7); np.random.seed(7); random.seed(7)
def state():
    return (torch.initial_seed(), torch.get_rng_state().tolist(), np.random.get_state()[1].tolist(),
            random.getstate(), torch.are_deterministic_algorithms_enabled(),
            torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
before = state()
import mylib, mylib.data, mylib.models, mylib.tempnames, mylib.utils  # noqa: E401
after = state()
print("unchanged" if before == after else "changed")
"""


def test_importing_fixed_library_modules_changes_no_state(tmp_path):
    root = copy_project("library_package", tmp_path)
    r = run_cli("--fix", "--unsafe-fixes", "--no-cache", ".", cwd=root)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert "generator=" in (root / "mylib" / "data.py").read_text()  # the library was fixed
    assert "use_deterministic_algorithms" in (root / "train.py").read_text()
    assert run(root, code=PROBE) == "unchanged"


ORDER = """
import sys
import torch
from mylib import make_loader
seed, draw_first = int(sys.argv[1]), sys.argv[2] == "yes"
torch.manual_seed(seed)
if draw_first:
    torch.rand(3)  # other code draws from torch's generator before the loader is iterated
print([int(x) for (batch,) in make_loader(16, batch_size=4) for x in batch.flatten()])
"""


def test_fixed_library_loader_follows_the_program_seed(tmp_path):
    root = copy_project("library_package", tmp_path)
    (root / "order.py").write_text(ORDER)
    before = {(s, d): run(root, "order.py", str(s), d) for s in (1, 2) for d in ("no", "yes")}
    assert before[(1, "no")] != before[(1, "yes")], "before the fix the order depends on other draws"

    r = run_cli("--fix", "--no-cache", "mylib/data.py", cwd=root)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert "torch.initial_seed()" in (root / "mylib" / "data.py").read_text()

    after = {(s, d): run(root, "order.py", str(s), d) for s in (1, 2) for d in ("no", "yes")}
    assert after[(1, "no")] == after[(1, "yes")] and after[(2, "no")] == after[(2, "yes")]
    assert after[(1, "no")] != after[(2, "no")], "the order must still change with the seed"


def test_spawned_training_is_seeded_in_the_processes_that_train(tmp_path):
    # A seed set in the launching process would leave the spawned process unseeded (one
    # rank: gloo's two-rank teardown now and then hangs or aborts on a loaded machine, and
    # one spawned process shows the same thing).
    root = copy_project("spawn_unseeded", tmp_path)
    r = run_cli("--fix", "--no-cache", ".", cwd=root)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    runs = [_run_spawned(root, "ddp.py", "--steps", "2", "--world-size", "1") for _ in range(2)]
    assert runs[0] == runs[1], "the spawned processes must start from the same seed in every run"


def _run_spawned(root: Path, *args: str) -> str:
    """`run`, but a spawned gloo process that aborts while tearing down ("terminate called
    without an active exception", seen now and then on a loaded machine) is run once more:
    the abort is the process group's, after the training this test is about."""
    for _ in range(2):
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=str(root))
        r = subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=180)
        if r.returncode == 0 or "terminate called without an active exception" not in r.stderr:
            break
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()
