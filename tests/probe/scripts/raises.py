"""Trains one step, then fails."""
import torch


def load_batch():
    return {"x": torch.ones(2)}["y"]  # RAISE LINE


torch.manual_seed(0)
w = torch.ones(2, requires_grad=True)
(w * 2).sum().backward()
load_batch()
