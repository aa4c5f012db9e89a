"""Imports a library that draws from torch's global generator while it is imported."""
import torch

import noisy_lib  # IMPORT LINE

torch.manual_seed(0)
print((noisy_lib.NOISE + torch.rand(3)).sum().item())
