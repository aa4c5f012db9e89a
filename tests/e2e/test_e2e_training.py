"""End to end: an unseeded training script repeats bit for bit after `repro-lint --fix`.

The script draws from Python's `random` (noise), numpy (data), and torch (parameter
initialisation, dropout, DataLoader shuffling). It runs in fresh interpreters, as a user
would run it twice; the final loss and a parameter checksum are printed as float hex, so
that equality means bitwise equality.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import run_cli

pytestmark = pytest.mark.slow

TRAIN = '''\
import random

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.set_num_threads(1)
    xs = torch.from_numpy(np.random.rand(64, 8).astype("float32"))
    ys = (xs.sum(dim=1, keepdim=True) > 4).float()
    xs = xs + random.uniform(0.0, 0.1)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))
    loader = DataLoader(TensorDataset(xs, ys), batch_size=8, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.BCEWithLogitsLoss()
    for _ in range(3):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
    checksum = sum(float(p.double().sum()) for p in model.parameters())
    print("loss", float(loss).hex(), "checksum", checksum.hex())


if __name__ == "__main__":
    main()
'''


def run_script(root):
    env = dict(os.environ, PYTHONHASHSEED="0")
    r = subprocess.run([sys.executable, "train.py"], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_fixed_training_script_repeats_bit_for_bit(project):
    script = project("train.py", TRAIN)
    before = [run_script(project.root), run_script(project.root)]
    assert before[0] != before[1], "the unseeded script repeated by chance"

    r = run_cli("--fix", "--no-cache", ".", cwd=project.root)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    fixed = script.read_text()
    for needle in ("random.seed(SEED)", "np.random.seed(SEED)", "torch.manual_seed(SEED)"):
        assert needle in fixed

    after = [run_script(project.root), run_script(project.root)]
    assert after[0] == after[1]
    print(f"\nbefore --fix: {before}\nafter --fix:  {after}\n{r.stdout}\n--- fixed script ---\n{fixed}", file=sys.stderr)
