"""A tiny training loop whose data comes from torch.rand; `--seed` seeds torch first."""
import sys
import warnings

import torch

if "--seed" in sys.argv:
    torch.manual_seed(0)

w = torch.zeros(4, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(3):
    x = torch.rand(8, 4)  # DATA LINE
    loss = ((x @ w) - 1.0).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()

if torch.are_deterministic_algorithms_enabled():
    # What a CUDA kernel without a deterministic implementation reports under warn_only=True.
    warnings.warn(  # ALERT LINE
        "index_add_cuda_ does not have a deterministic implementation, but you set "
        "'torch.use_deterministic_algorithms(True, warn_only=True)'. You can file an issue."
    )
print("final", w.tolist())
