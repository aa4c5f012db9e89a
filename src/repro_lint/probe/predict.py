"""RPP104: which ops that ran are nondeterministic on CUDA, by the catalog's conditions.

The conditions are evaluated by `repro_lint.core.op_conditions`, the same evaluation the static
rule RPL405 uses; this module only says what the running aten operator's arguments are.
Imported by the parent process too (`prediction_table`), so it must not import torch.
"""

from __future__ import annotations

from typing import Any, Optional

from repro_lint.core import op_conditions
from repro_lint.core.op_conditions import ABSENT, Decided


def prediction_table(catalog: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """aten name -> the catalog entries that list it, with the keys the runner needs."""
    table: dict[str, list[dict[str, Any]]] = {}
    keys = (
        op_conditions.REQUIRES, op_conditions.EXEMPT, op_conditions.LAYOUT, op_conditions.ARGUMENT,
        op_conditions.ATEN_ARGUMENT, *op_conditions.RUNNING_ONLY,
    )
    for op in catalog.get("op", []):
        entry = {key: op[key] for key in keys if key in op}
        entry.update(
            id=op["id"],
            backward_only=bool(op.get("backward-only")),
            forward=sorted(op_conditions.forward_operators(op)),
            backward=sorted(op_conditions.backward_operators(op)),
        )
        for name in dict.fromkeys(op.get("aten", [])):
            table.setdefault(name, []).append(entry)
    return table


def entry_applies(entry: dict, name: str, backward: bool, forward_op: Optional[str]) -> bool:
    """Whether an entry concerns this op in this pass, before its argument conditions.

    A backward-only entry concerns the gradient of its own forward operators only: gather's
    backward is a scatter_add, but a scatter_add of the user's is not gather's backward.
    """
    if not entry["backward_only"]:
        return True
    return backward and name in entry["backward"] and forward_op in entry["forward"]


def runtime_getter(positions: dict[str, int], args: tuple, kwargs: dict, device: str = "cpu", callers: frozenset = frozenset()):
    """An accessor (see op_conditions) over a running aten operator's arguments, on `device`."""

    def value(name: str, position: Optional[int] = None) -> Any:
        if name in kwargs:
            return kwargs[name]
        index = positions.get(name, position)
        if index is None or index >= len(args):
            return ABSENT if name not in positions else None  # declared but left to its default
        return args[index]

    def get(kind: str, spec: dict) -> Any:
        if kind == op_conditions.REQUIRES:
            return value(spec["name"]) if spec["name"] in positions else ABSENT
        if kind == op_conditions.EXEMPT:
            if spec["name"] in positions:
                return value(spec["name"])
            # An overload without the argument may have another at its place (scatter.value's
            # `value` where scatter.src has `src`); a backward operator has a tensor there
            # (`_adaptive_avg_pool2d_backward`'s `self`), which no exemption is about.
            found = value(spec["name"], spec.get("position"))
            return found if op_conditions.comparable(found) else ABSENT
        if kind == op_conditions.OPERAND_DTYPE:
            return dtype_kind(value("", spec["position"])) in spec["values"] if _is_tensor(value("", spec["position"])) else ABSENT
        if kind == op_conditions.DEVICES:
            return device in spec
        if kind == op_conditions.PYTHON_CALLER:
            return bool(callers & set(spec))
        if kind == op_conditions.DUPLICATE_INDICES:
            index = value(spec.get("name", ""), spec.get("position"))
            repeats = has_repeats(index)
            return ABSENT if repeats is None else repeats
        if kind == op_conditions.LAYOUT:
            operand = value("", spec["position"])
            layout = getattr(operand, "layout", None)
            return ABSENT if layout is None else str(layout).replace("torch.", "")
        if kind == op_conditions.ATEN_ARGUMENT:
            return value(spec["name"]) if spec["name"] in positions else ABSENT
        # ARGUMENT: an operator without it implies the value by its name
        # (`upsample_bilinear2d` is mode="bilinear").
        if spec["name"] not in positions:
            return Decided(True)
        found = value(spec["name"])
        listed = spec["values"]
        if found is None or spec.get("aten-codes") or any(type(found) is type(v) for v in listed):
            return found
        return Decided(True)  # an enum passed as an int without codes cannot be judged

    return get


def matching_entries(
    entries: list[dict], name: str, positions: dict[str, int], args: tuple, kwargs: dict,
    backward: bool, forward_op: Optional[str], device: str = "cpu", callers: frozenset = frozenset(),
) -> list[dict]:
    get = runtime_getter(positions, args, kwargs, device, callers)
    matches = [
        entry for entry in entries
        if entry_applies(entry, name, backward, forward_op) and op_conditions.evaluate(entry, get, running=True) is True
    ]
    if backward and any(e["backward_only"] for e in matches):
        # e.g. index_add inside index_select's backward: the index_select entry says more.
        matches = [e for e in matches if e["backward_only"]]
    return matches


def _is_tensor(value: Any) -> bool:
    return hasattr(value, "dtype") and hasattr(value, "is_quantized")


def dtype_kind(tensor: Any) -> str:
    """The kind of a tensor's dtype, in the words of `op_conditions.DTYPE_KINDS`."""
    if tensor.is_quantized:
        return "quantized"
    if tensor.is_complex():
        return "complex"
    if tensor.is_floating_point():
        return "floating"
    return "bool" if str(tensor.dtype) == "torch.bool" else "integer"


def has_repeats(index: Any) -> Optional[bool]:
    """Whether an index operand names a position twice: a tensor of positions, or the list
    of index tensors of advanced indexing (a position is then one entry of each, broadcast).
    None when it cannot be told (no index, a boolean mask among several indices)."""
    import torch

    tensors = [index] if isinstance(index, torch.Tensor) else [t for t in (index or ()) if t is not None] if isinstance(index, (list, tuple)) else []
    if not tensors or not all(isinstance(t, torch.Tensor) for t in tensors):
        return None
    with torch._C._DisableTorchDispatch():  # the probe's own ops, not the program's
        if any(t.dtype == torch.bool for t in tensors):
            # a mask selects each position at most once
            return False if len(tensors) == 1 else None
        if len(tensors) == 1:
            flat = tensors[0].reshape(-1)
            return bool(flat.numel() != torch.unique(flat).numel())
        columns = torch.broadcast_tensors(*tensors)
        rows = torch.stack([c.reshape(-1) for c in columns], dim=1)
        return bool(rows.shape[0] != torch.unique(rows, dim=0).shape[0])
