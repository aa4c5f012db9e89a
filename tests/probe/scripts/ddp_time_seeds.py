"""DDP on gloo where each rank seeds itself from the clock: the ranks draw different numbers
of augmentations per batch, so they run different numbers of ops between collectives."""
import random
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
rank = dist.get_rank()
seed = time.time_ns() % 2**31 + rank
random.seed(seed)
torch.manual_seed(seed)
model = DistributedDataParallel(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(30):
    x = torch.randn(16, 8)
    for _ in range(random.randint(0, 12)):  # augmentations drawn per batch
        x = x.flip(0)
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()
dist.destroy_process_group()
