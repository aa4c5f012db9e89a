"""Seeds from the clock: every run differs."""
import time

import torch

torch.manual_seed(int(time.time() * 1e6) % 2**31)
model = torch.nn.Linear(4, 1)
print(model(torch.ones(2, 4)).sum().item())
