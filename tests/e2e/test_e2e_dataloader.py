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


# A seeded program whose dataset holds its own generator: the workers get identical copies of
# it, whatever the torch release, and draw the same jitter for different samples.
HELD = '''
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Jittered(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.tensor([self.rng.normal()], dtype=torch.float64)


def main():
    torch.manual_seed(0)
    loader = DataLoader(Jittered(), batch_size=4, num_workers=2)
    for batch in loader:
        print(repr(batch.flatten().tolist()))


if __name__ == "__main__":
    main()
'''

# A seeded program that builds its loader anew every epoch (EXTRA_DRAW adds a draw from the
# global generator in each epoch, as a model that samples a mask would).
EPOCH_LOADER = '''
import argparse
import os

import torch
from torch.utils.data import DataLoader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    model = torch.nn.Linear(4, 2)
    ds = list(range(16))
    for epoch in range(4):
        if os.environ.get("EXTRA_DRAW"):
            torch.rand(1)
        loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=1)
        print([batch.tolist() for batch in loader], model.weight.shape)


if __name__ == "__main__":
    main()
'''

# torch 1.8's workers do not reseed numpy: there the documented seed_worker is the RPL302 fix
OLD_TORCH = "torch>=1.8\n"


def run_script(path, extra_env=None, args=()):
    env = dict(os.environ)
    env.pop("EXTRA_DRAW", None)
    env.update(extra_env or {})
    proc = subprocess.run(
        [sys.executable, str(path), *args], cwd=path.parent, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def fix(cli, root, codes):
    proc = cli("check", root, "--fix", "--no-cache", "--select", codes, "--exit-zero", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_fix_makes_augmented_batches_from_workers_repeatable(project, cli):
    project("requirements.txt", OLD_TORCH)
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


def test_on_current_releases_the_seeded_generator_alone_repeats_the_workers_draws(project, cli):
    # since 1.9 each worker reseeds python's and numpy's global RNGs from the loader's base
    # seed, which the generator RPL301 adds fixes: no worker_init_fn is needed, or added
    script = project("train.py", textwrap.dedent(AUGMENTED).lstrip())
    fix(cli, project.root, "RPL301,RPL302")
    fixed = script.read_text()
    assert "generator=torch.Generator().manual_seed(SEED)" in fixed
    assert "worker_init_fn" not in fixed
    after = [run_script(script), run_script(script)]
    assert after[0] == after[1]
    batches = after[0].splitlines()
    assert len(batches) == 8 and len(set(batches)) == 8


def test_reseed_fix_gives_each_worker_its_own_stream_of_the_held_generator(project, cli):
    script = project("train.py", textwrap.dedent(HELD).lstrip())
    first, second = run_script(script).splitlines()  # one batch from each worker
    assert first == second  # both workers drew from identical copies of the generator

    fix(cli, project.root, "RPL302")
    assert "worker_init_fn=reseed_worker" in script.read_text()
    after = run_script(script)
    first, second = after.splitlines()
    assert first != second  # each worker's copy now has a seed of its own
    assert after == run_script(script)  # from torch's seed: repeatable

    proc = cli("check", project.root, "--no-cache", "--select", "RPL302", cwd=project.root)
    assert proc.returncode == 0, proc.stdout


def test_worker_init_fn_alone_does_not_fix_an_unseeded_order(project, cli):
    # since PyTorch 1.9 the workers' seeds derive from the loader's base seed: seeding the
    # workers from torch.initial_seed() repeats nothing while that base seed is unseeded
    project("requirements.txt", OLD_TORCH)
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


def test_a_loader_built_every_epoch_gets_one_generator_made_before_the_loop(project, cli):
    # a generator made in the call would restart every epoch: every epoch the same order
    script = project("train.py", textwrap.dedent(EPOCH_LOADER).lstrip())
    fix(cli, project.root, "RPL301")
    fixed = script.read_text()
    assert "    g = torch.Generator().manual_seed(args.seed)\n    for epoch in range(4):\n" in fixed
    assert "DataLoader(ds, batch_size=4, shuffle=True, num_workers=1, generator=g)" in fixed
    first = run_script(script)
    epochs = first.splitlines()
    assert len(epochs) == 4 and len(set(epochs)) == 4  # each epoch its own order
    assert first == run_script(script)  # the same seed repeats them
    assert first == run_script(script, {"EXTRA_DRAW": "1"})  # other draws do not move them
    assert first != run_script(script, args=("--seed", "1"))  # the user's seed still decides

    proc = cli("check", project.root, "--no-cache", "--select", "RPL301", cwd=project.root)
    assert proc.returncode == 0, proc.stdout
