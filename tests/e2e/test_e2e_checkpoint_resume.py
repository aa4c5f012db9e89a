"""RPL501 end to end: a small training script (real torch on CPU, dropout, numpy and python
draws) checkpoints every step; a run interrupted at step 3 and resumed from its checkpoint is
compared with an uninterrupted run, before and after `repro-lint --fix --unsafe-fixes`."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

TRAIN = '''
import argparse
import json
import random

import numpy as np
import torch
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--stop-at", type=int, default=0)
    parser.add_argument("--resume", default="")
    args = parser.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    start = 0
    if args.resume:
        checkpoint = torch.load(args.resume)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        start = checkpoint["step"]
    losses = []
    for step in range(start, args.steps):
        x = torch.randn(16, 4) + float(np.random.rand()) + random.random()
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(round(loss.item(), 6))
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step + 1}, f"ckpt{step + 1}.pt")
        if step + 1 == args.stop_at:
            break
    print(json.dumps(losses))


if __name__ == "__main__":
    main()
'''


def run(script, *args):
    proc = subprocess.run([sys.executable, script.name, *args], cwd=script.parent, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def interrupted_and_resumed(script):
    first = run(script, "--stop-at", "3")
    return first + run(script, "--resume", "ckpt3.pt")


def test_a_resumed_run_repeats_the_uninterrupted_one_after_the_fix(project, cli):
    script = project("train.py", TRAIN)
    whole = run(script)
    assert len(whole) == 6
    before = interrupted_and_resumed(script)
    assert before[:3] == whole[:3]
    assert before[3:] != whole[3:]  # the resumed run starts the generators afresh

    found = cli("check", "train.py", "--no-cache", "--select", "RPL501", "--output-format", "concise", cwd=project.root)
    assert found.returncode == 1 and "RPL501 [-]" in found.stdout, found.stdout + found.stderr
    fixed = cli("check", "train.py", "--fix", "--unsafe-fixes", "--no-cache", "--select", "RPL501", cwd=project.root)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    text = script.read_text()
    for saved in ("torch.get_rng_state()", "np.random.get_state()", "random.getstate()", "weights_only=False"):
        assert saved in text, text

    assert run(script) == whole  # saving the states draws nothing: the uninterrupted run is unchanged
    assert interrupted_and_resumed(script) == whole
    again = cli("check", "train.py", "--no-cache", "--select", "RPL501", cwd=project.root)
    assert again.returncode == 0, again.stdout
