"""Cheap, bitwise-exact fingerprints of tensors, computed where the tensor lives.

A tensor's bytes are read as 64-bit integers (so -0.0, NaN payloads and the last ulp all
count) and reduced on its own device to two int64 sums: a plain sum and a position-weighted
sum. Integer addition is associative, so the reductions themselves are deterministic on
every device. Only a few scalars per op cross to the host.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

import torch

# Tiny tensors are read out exactly: one transfer either way, and no reductions to launch.
_EXACT_LIMIT = 16
# Weighted sums run over chunks of this many words so the int64 temporaries stay small.
_CHUNK = 1 << 20

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


def _plain(t: torch.Tensor) -> torch.Tensor:
    """The tensor's values as a flat tensor of a real or integer dtype (a copy only where needed)."""
    v = t.detach()
    if v.is_quantized:
        v = v.int_repr()
    if v.is_complex():
        v = torch.view_as_real(v)
    if v.dtype == torch.bool:
        v = v.view(torch.uint8)
    return v.reshape(-1)


def _reductions(flat: torch.Tensor) -> torch.Tensor:
    # Reading the bytes as int64 words needs no conversion pass (widening every element to
    # int64 first is many times slower on CPU).
    raw = flat.view(torch.uint8)
    whole = raw.numel() // 8 * 8
    try:
        words = raw[:whole].view(torch.int64)
    except RuntimeError:  # a slice whose start is not 8-byte aligned
        words = raw[:whole].clone().view(torch.int64)
    sums = []
    for start in range(0, words.numel(), _CHUNK):
        chunk = words[start : start + _CHUNK]
        total = chunk.sum()
        weighted = (chunk * _weights_for(flat.device, chunk.numel())).sum() + start * total
        sums.append(torch.stack([total, weighted]))
    if whole < raw.numel():  # the last few bytes, weighted by position
        tail = raw[whole:].to(torch.int64)
        sums.append(torch.stack([tail.sum(), (tail * _weights_for(flat.device, tail.numel())).sum()]))
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
            flat = _plain(t)
            if flat.numel() <= _EXACT_LIMIT:
                parts[i] = (*_header(t), flat.view(torch.uint8).tolist())
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
