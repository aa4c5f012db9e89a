"""RPL303 end to end: a real DataLoader fed by a DistributedSampler (the replica count and rank
given, so no process group is needed), its epochs' orders before and after `repro-lint --fix`."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

EPOCHS = '''
import json

import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    dataset = TensorDataset(torch.arange(32))
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, seed=7)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    orders = []
    for epoch in range(3):
        order = []
        for (batch,) in loader:
            order += batch.tolist()
        orders.append(order)
    print(json.dumps(orders))


if __name__ == "__main__":
    main()
'''


def orders(path):
    proc = subprocess.run([sys.executable, str(path)], cwd=path.parent, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_fix_gives_each_epoch_its_own_order(project, cli):
    script = project("train.py", EPOCHS)
    before = orders(script)
    assert len(before) == 3 and before[0] == before[1] == before[2]  # the bug: one order for every epoch
    assert len(set(before[0])) == 16  # this rank's half of the data

    found = cli("check", "train.py", "--no-cache", "--select", "RPL303", "--output-format", "concise", cwd=project.root)
    assert found.returncode == 1 and "RPL303 [*]" in found.stdout, found.stdout + found.stderr
    fixed = cli("check", "train.py", "--fix", "--no-cache", "--select", "RPL303", cwd=project.root)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "sampler.set_epoch(epoch)" in script.read_text()

    after = orders(script)
    assert after[0] != after[1] and after[1] != after[2]
    # each epoch still gives this rank half of the data, drawn anew
    assert all(len(set(order)) == 16 and set(order) <= set(range(32)) for order in after)
    again = cli("check", "train.py", "--no-cache", "--select", "RPL303", cwd=project.root)
    assert again.returncode == 0, again.stdout
