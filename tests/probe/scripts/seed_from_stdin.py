"""Reads its seed from standard input."""
import sys

import torch

torch.manual_seed(int(sys.stdin.read()))
print(torch.rand(3))
