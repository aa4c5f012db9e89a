"""Cheap, bitwise-exact fingerprints of tensors, computed where the tensor lives.

A tensor's bits are reinterpreted as integers of the same width (so -0.0, NaN payloads
and the last ulp all count) and reduced on its own device to two int64 sums: a plain sum
and a position-weighted sum. Integer addition is associative, so the reductions themselves
are deterministic on every device. Only a few scalars per op cross to the host.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

import torch

# Tiny tensors are read out exactly: one transfer either way, and no reductions to launch.
_EXACT_LIMIT = 16
# Weighted sums run over chunks of this many elements so the int64 temporaries stay small.
_CHUNK = 1 << 20

_INT_OF_WIDTH = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_weights: dict[torch.device, torch.Tensor] = {}


def stable_hash(value: Any) -> int:
    """A 64-bit hash that is the same in every process (unlike `hash`, which PYTHONHASHSEED salts)."""
    digest = hashlib.blake2b(repr(value).encode("utf-8", "backslashreplace"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _weights_for(device: torch.device, n: int) -> torch.Tensor:
    w = _weights.get(device)
    if w is None or w.numel() < n:
        w = torch.arange(1, max(n, 1024) + 1, dtype=torch.int64, device=device)
        _weights[device] = w
    return w[:n]


def _as_integers(t: torch.Tensor) -> torch.Tensor:
    """The same bits, as a flat integer tensor (a copy only where the layout needs one)."""
    v = t.detach()
    if v.is_quantized:
        v = v.int_repr()
    if v.is_complex():
        v = torch.view_as_real(v)
    int_dtype = _INT_OF_WIDTH[v.element_size()]
    if v.dtype != int_dtype:
        v = v.view(int_dtype)
    return v.reshape(-1)


def _reductions(flat: torch.Tensor) -> torch.Tensor:
    # Widening once and reducing int64 is much faster on CPU than `sum(dtype=torch.int64)`.
    sums = []
    for start in range(0, flat.numel(), _CHUNK):
        chunk = flat[start : start + _CHUNK].to(torch.int64)
        total = chunk.sum()
        weighted = (chunk * _weights_for(flat.device, chunk.numel())).sum() + start * total
        sums.append(torch.stack([total, weighted]))
    return sums[0] if len(sums) == 1 else torch.stack(sums).sum(0)


def _header(t: torch.Tensor) -> tuple:
    return (str(t.dtype), tuple(t.shape))


def fingerprint_tensors(tensors: Iterable[torch.Tensor]) -> list[int]:
    """One 64-bit fingerprint per tensor, with at most one host transfer per device."""
    tensors = list(tensors)
    parts: list[Any] = [None] * len(tensors)
    pending: dict[torch.device, list[tuple[int, torch.Tensor]]] = {}
    for i, t in enumerate(tensors):
        try:
            if t.layout != torch.strided or t.device.type == "meta" or t.numel() == 0:
                parts[i] = (*_header(t), str(t.layout), t.device.type)
                continue
            flat = _as_integers(t)
            if flat.numel() <= _EXACT_LIMIT:
                parts[i] = (*_header(t), flat.tolist())
            else:
                pending.setdefault(flat.device, []).append((i, _reductions(flat)))
        except Exception:  # exotic tensor types (subclasses, nested): fall back to metadata
            parts[i] = ("opaque", type(t).__name__, str(getattr(t, "dtype", "")), tuple(getattr(t, "shape", ())))
    for entries in pending.values():
        values = torch.stack([r for _, r in entries]).tolist()
        for (i, _), sums in zip(entries, values):
            parts[i] = (*_header(tensors[i]), sums)
    return [stable_hash(p) for p in parts]


def fingerprint_storage(storage: Any) -> int:
    """Storages appear as op arguments (`set_`); their bytes are data like any tensor's."""
    try:
        as_tensor = torch.empty(0, dtype=torch.uint8, device=storage.device)
        as_tensor.set_(storage.untyped() if hasattr(storage, "untyped") else storage)
        return fingerprint_tensors([as_tensor])[0]
    except Exception:
        return stable_hash(("storage", type(storage).__name__))
