"""One `--fix` reaches the fixed point, fixes that only appear after other fixes included.

A seeding fix in the entry script gives the whole program determinism intent; only then do
the RPL4xx rules report a `cudnn.benchmark = True` in a library module the script calls,
and a second program that reaches the same module (through an object of its class, whose
method the index looks up there). The run must fix those as well: a second `--fix` changes
nothing and finds nothing more to fix.
"""

from __future__ import annotations

import pytest

TRAIN = '''\
import torch

from lib.loader import make_loader


def main():
    loader = make_loader(torch.randn(8, 2))
    model = torch.nn.Conv1d(2, 1, 1)  # cuDNN runs it: the benchmark flag matters
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for (x,) in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()


if __name__ == "__main__":
    main()
'''

LOADER = '''\
import torch
from torch.utils.data import DataLoader, TensorDataset


class Stream:
    def read(self, data):
        torch.backends.cudnn.benchmark = True  # fixed-size inputs
        return DataLoader(TensorDataset(data), batch_size=2)


def make_loader(data):
    return Stream().read(data)
'''

CLIENT = '''\
import json
import sys

import torch

from lib.loader import Stream


def main():
    with open(sys.argv[1]) as fh:
        rows = json.loads(fh.read())
    for (batch,) in Stream().read(torch.tensor(rows)):
        print(batch)


main()
'''


@pytest.mark.slow
def test_a_second_fix_changes_nothing(project, cli):
    project("train.py", TRAIN)
    project("lib/__init__.py", "")
    project("lib/loader.py", LOADER)
    project("client.py", CLIENT)
    root = project.root
    first = cli("--fix", "--unsafe-fixes", "--no-cache", ".", cwd=root)
    assert first.returncode in (0, 1), first.stderr
    assert "Fixed " in first.stdout
    loader = (root / "lib" / "loader.py").read_text()
    assert "torch.backends.cudnn.benchmark = False\n" in loader, loader
    after = {p: p.read_bytes() for p in root.rglob("*.py")}
    second = cli("--fix", "--unsafe-fixes", "--no-cache", ".", cwd=root)
    assert second.returncode in (0, 1), second.stderr
    assert "Fixed " not in second.stdout, second.stdout
    changed = [str(p.relative_to(root)) for p, data in after.items() if p.read_bytes() != data]
    assert not changed, f"a second --fix changed {changed}:\n{second.stdout}"
    assert "fixable" not in second.stdout, second.stdout
