"""What a checkpoint the program saves holds: model or optimizer state, and the states of the
random number generators that a resumed run needs to draw what the uninterrupted run drew
(`--resume-check`). Judged by the shape of the saved object, in the process that saves it."""

from __future__ import annotations

import os
from typing import Any

# The bytes of torch's CPU generator state (`torch.get_rng_state()`, `Generator.get_state()`).
_TORCH_CPU_STATE = 5056
_MAX_NODES = 20_000


def contents(obj: Any) -> list[str]:
    """Which of `model`, `optimizer`, `rng:torch`, `rng:cuda`, `rng:numpy`, `rng:python` the
    object holds (nested in dicts, lists and tuples, as checkpoints are)."""
    import torch

    found: set[str] = set()
    stack = [(obj, 0)]
    seen = 0
    while stack and seen < _MAX_NODES:
        value, depth = stack.pop()
        seen += 1
        if isinstance(value, torch.nn.Module):
            found.add("model")
            continue
        if isinstance(value, torch.optim.Optimizer):
            found.add("optimizer")
            continue
        if isinstance(value, torch.Tensor):
            if value.dtype == torch.uint8 and value.dim() == 1 and not value.is_quantized:
                if value.numel() == _TORCH_CPU_STATE:
                    found.add("rng:torch")
                elif value.numel() == 16:  # a CUDA generator's seed and offset
                    found.add("rng:cuda")
            continue
        if isinstance(value, dict):
            keys = set(value)
            if {"state", "param_groups"} <= keys:
                found.add("optimizer")
                continue
            if "bit_generator" in keys and "state" in keys:
                found.add("rng:numpy")
                continue
            if hasattr(value, "_metadata") and value and all(isinstance(v, torch.Tensor) for v in value.values()):
                found.add("model")  # a module's state_dict
                continue
            if depth < 8:
                stack.extend((v, depth + 1) for v in value.values())
            continue
        if isinstance(value, tuple) and len(value) == 5 and value[0] == "MT19937":
            found.add("rng:numpy")
            continue
        if isinstance(value, tuple) and len(value) == 3 and value[0] == 3 and isinstance(value[1], tuple) and len(value[1]) == 625:
            found.add("rng:python")
            continue
        if isinstance(value, (list, tuple)) and depth < 8:
            stack.extend((v, depth + 1) for v in value)
    return sorted(found)


def folder(path: str) -> str:
    return os.path.dirname(os.path.abspath(path))
