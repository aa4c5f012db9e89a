"""A plain loop under accelerate's Accelerator; `--seed` calls accelerate.utils.set_seed."""
import sys

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, TensorDataset

if "--seed" in sys.argv:
    set_seed(3)
accelerator = Accelerator(cpu=True)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
data = DataLoader(TensorDataset(torch.linspace(0, 1, 64).reshape(16, 4)), batch_size=4, shuffle=True)
model, opt, data = accelerator.prepare(model, opt, data)
for (x,) in data:
    opt.zero_grad()
    accelerator.backward(model(x).pow(2).mean())
    opt.step()
