"""Data order decided by iterating over a set of strings: it follows PYTHONHASHSEED."""
import torch

torch.manual_seed(0)
names = {f"sample-{i:02d}" for i in range(24)}
values = [float(int(name[-2:])) for name in names]  # order of the set
x = torch.tensor(values)  # TENSOR LINE
weights = torch.linspace(0.0, 1.0, len(values), requires_grad=True)
(x * weights).sum().backward()
