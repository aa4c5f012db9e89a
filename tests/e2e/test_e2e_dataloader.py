"""RPL301/RPL302 end to end: real torch DataLoader workers, `repro-lint --fix` in a subprocess.

The scripts are run in fresh interpreters, as a user would run a training script twice.
"""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

# An unseeded program: the only seeds after the fix are the ones RPL301/RPL302 add, so the
# contrast between the runs is due to those two rules (RPL101 is not selected).
AUGMENTED = '''
import random

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Jittered(Dataset):
    """An augmentation drawn from the stdlib and numpy global RNGs, in the worker processes."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.tensor([i + random.random(), np.random.rand()], dtype=torch.float64)


def main():
    loader = DataLoader(Jittered(), batch_size=4, shuffle=True, num_workers=2)
    for epoch in range(2):
        for batch in loader:
            print(repr(batch.flatten().tolist()))


if __name__ == "__main__":
    main()
'''

# A seeded program whose batch order must not depend on how many numbers other code draws
# from the global generator first (EXTRA_DRAW adds one `torch.rand(1)` after the model).
ISOLATION = '''
import os

import torch
from torch.utils.data import DataLoader


def main():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    if os.environ.get("EXTRA_DRAW"):
        torch.rand(1)
    loader = DataLoader(list(range(16)), batch_size=4, shuffle=True, num_workers=2)
    print([batch.tolist() for batch in loader], model.weight.shape)


if __name__ == "__main__":
    main()
'''


def run_script(path, extra_env=None):
    env = dict(os.environ)
    env.pop("EXTRA_DRAW", None)
    env.update(extra_env or {})
    proc = subprocess.run([sys.executable, str(path)], cwd=path.parent, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def fix(cli, root, codes):
    proc = cli("check", root, "--fix", "--no-cache", "--select", codes, "--exit-zero", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_fix_makes_augmented_batches_from_workers_repeatable(project, cli):
    script = project("train.py", textwrap.dedent(AUGMENTED).lstrip())
    before = [run_script(script), run_script(script)]
    assert before[0] != before[1]

    fix(cli, project.root, "RPL301,RPL302")
    fixed = script.read_text()
    assert "generator=torch.Generator().manual_seed(SEED)" in fixed
    assert "worker_init_fn=seed_worker" in fixed and "def seed_worker(worker_id):" in fixed
    after = [run_script(script), run_script(script)]
    assert after[0] == after[1]
    batches = after[0].splitlines()
    assert len(batches) == 8 and len(set(batches)) == 8  # two epochs, fresh draws per batch

    # nothing left for the two rules to report
    proc = cli("check", project.root, "--no-cache", "--select", "RPL301,RPL302", cwd=project.root)
    assert proc.returncode == 0, proc.stdout


def test_worker_init_fn_alone_does_not_fix_an_unseeded_order(project, cli):
    # since PyTorch 1.9 the workers' seeds derive from the loader's base seed: seeding the
    # workers from torch.initial_seed() repeats nothing while that base seed is unseeded
    script = project("train.py", textwrap.dedent(AUGMENTED).lstrip())
    fix(cli, project.root, "RPL302")
    assert "worker_init_fn=seed_worker" in script.read_text() and "generator=" not in script.read_text()
    assert run_script(script) != run_script(script)


def test_loader_generator_isolates_the_order_from_other_draws(project, cli):
    script = project("train.py", textwrap.dedent(ISOLATION).lstrip())
    plain, extra = run_script(script), run_script(script, {"EXTRA_DRAW": "1"})
    assert plain == run_script(script)  # seeded: repeatable as long as nothing else changes
    assert plain != extra  # one more draw from the global generator reshuffles the data

    fix(cli, project.root, "RPL301")
    assert "generator=torch.Generator().manual_seed(0)" in script.read_text()
    assert run_script(script) == run_script(script, {"EXTRA_DRAW": "1"})
