"""Two steps of DistributedDataParallel on gloo; seeded only with --seed."""
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
if "--seed" in sys.argv:
    torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Linear(4, 1))  # MODEL LINE
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.ones(8, 4) * (dist.get_rank() + 1)
for _ in range(2):
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()
dist.destroy_process_group()
