"""Trains with the seed given by --seed; with --fixed-loader the DataLoader's shuffle comes
from a generator seeded with a constant, whatever --seed says."""
import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--fixed-loader", action="store_true")
args = parser.parse_args()

torch.manual_seed(args.seed)
generator = torch.Generator().manual_seed(1234) if args.fixed_loader else None
data = TensorDataset(torch.arange(32.0).reshape(16, 2))
model = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Dropout(0.5), torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for (batch,) in DataLoader(data, batch_size=4, shuffle=True, generator=generator):  # LOADER LINE
    opt.zero_grad()
    model(batch).sum().backward()
    opt.step()
