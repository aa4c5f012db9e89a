"""Never ends on its own; only --max-ops can stop it."""
import torch

x = torch.zeros(3)
while True:
    try:
        x = x + 1
    except Exception:  # must not swallow the probe's stop
        pass
