"""numpy's Generator started without a seed: the data differ in every run (and there is no set)."""
import numpy as np
import torch

torch.manual_seed(0)
rng = np.random.default_rng()  # RNG LINE
x = torch.from_numpy(rng.random((4, 3))).float()
print(torch.nn.Linear(3, 1)(x).sum().item())
