"""The programs `--fix` fixes repeat: run twice with the same `--seed` they print the same
numbers, with another seed other numbers; ranks started by `torch.multiprocessing.spawn` draw
streams of their own (spec "Fixes" 11). Real torch on CPU, real processes."""

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

# evaluation spread over processes when --procs > 1: each rank samples noise and reports it;
# nothing is seeded
SPAWNED = textwrap.dedent('''
    import argparse
    import random

    import numpy as np
    import torch
    import torch.multiprocessing as mp


    def evaluate(rank, args, queue):
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten())
        noise = torch.randn(2, 3, 6, 6)
        pick = np.random.randint(0, 1000)
        jitter = random.random()
        queue.put((rank, round(float(model(noise).sum()), 6), int(pick), round(jitter, 6)))


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--procs", type=int, default=2)
        args = parser.parse_args()
        queue = mp.get_context("spawn").SimpleQueue()
        if args.procs > 1:
            mp.spawn(evaluate, args=(args, queue), nprocs=args.procs)
        else:
            evaluate(0, args, queue)
        print(sorted(queue.get() for _ in range(args.procs)))


    if __name__ == "__main__":
        main()
''').lstrip()


def _run(script, *args):
    proc = subprocess.run([sys.executable, str(script), *args], cwd=script.parent, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return eval(proc.stdout.strip().splitlines()[-1])  # (the list the script printed)


def test_fixed_spawned_program_repeats_per_seed_and_ranks_differ(cli, project):
    script = project("evaluate.py", SPAWNED)
    before = _run(script, "--seed", "1")
    assert before != _run(script, "--seed", "1")  # unseeded: runs differ (OS entropy)

    r = cli("check", "--no-cache", "--fix", "--exit-zero", ".", cwd=project.root)
    assert r.returncode == 0, r.stdout + r.stderr
    text = script.read_text()
    assert "torch.manual_seed(args.seed + rank)" in text, text

    first = _run(script, "--seed", "1")
    assert first == _run(script, "--seed", "1")
    assert first != _run(script, "--seed", "2")
    (r0, *a), (r1, *b) = first
    assert (r0, r1) == (0, 1)
    assert a != b and all(x != y for x, y in zip(a, b))  # each rank its own stream, for every source
    # one process: rank 0's stream, as in the spawned run
    assert _run(script, "--seed", "1", "--procs", "1") == [first[0]]
