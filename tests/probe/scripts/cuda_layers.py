"""Layers whose CUDA determinism depends on how they are built."""
import torch
import torch.nn as nn

torch.manual_seed(0)
conv = nn.Conv2d(1, 2, 3)
attention = nn.MultiheadAttention(8, 2)
bag = nn.EmbeddingBag(10, 4, mode="mean")
y = conv(torch.randn(2, 1, 5, 5)).sum()  # CONV LINE
q = torch.randn(3, 2, 8)
y = y + attention(q, q, q)[0].sum()  # ATTENTION LINE
y = y + bag(torch.tensor([1, 2, 3, 4]), torch.tensor([0, 2])).sum()  # BAG LINE
y.backward()
