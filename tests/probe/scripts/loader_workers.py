"""A DataLoader with two workers whose dataset draws from numpy; the worker_init_fn
reseeds numpy from entropy unless --seed is given."""
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.from_numpy(np.random.rand(3)).float() + i  # GETITEM LINE


def worker_init_fn(worker_id):
    if "--seed" in sys.argv:
        np.random.seed(1000 + worker_id)
    else:
        np.random.seed()  # from entropy: differs in every run


if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Noisy(), batch_size=2, num_workers=2, worker_init_fn=worker_init_fn)
    for batch in loader:
        opt.zero_grad()
        model(batch).sum().backward()
        opt.step()
    print(model.weight)
