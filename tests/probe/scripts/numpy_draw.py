"""torch is seeded, but the data comes from numpy's unseeded global generator."""
import numpy as np
import torch

torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
bias = torch.randn(1, generator=torch.Generator().manual_seed(3))  # not a global draw
for step in range(2):
    noise = np.random.rand(5, 3)  # NUMPY LINE
    x = torch.from_numpy(noise).float()
    loss = model(x).pow(2).mean()
    loss.backward()
