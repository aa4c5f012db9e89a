"""Trains one step, then fails."""
import torch


def bad_matmul():
    return torch.ones(2, 3) @ torch.ones(2, 3)  # RAISE LINE


torch.manual_seed(0)
w = torch.ones(2, requires_grad=True)
(w * 2).sum().backward()
bad_matmul()
