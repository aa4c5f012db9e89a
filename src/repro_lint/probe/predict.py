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
    keys = (op_conditions.REQUIRES, op_conditions.EXEMPT, op_conditions.LAYOUT, op_conditions.ARGUMENT, op_conditions.ATEN_ARGUMENT)
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


def runtime_getter(positions: dict[str, int], args: tuple, kwargs: dict):
    """An accessor (see op_conditions) over a running aten operator's arguments."""

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
            # An overload without the argument has another at its place (scatter.value's
            # `value` where scatter.src has `src`).
            return value(spec["name"], spec.get("position"))
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
    backward: bool, forward_op: Optional[str],
) -> list[dict]:
    get = runtime_getter(positions, args, kwargs)
    matches = [
        entry for entry in entries
        if entry_applies(entry, name, backward, forward_op) and op_conditions.evaluate(entry, get) is True
    ]
    if backward and any(e["backward_only"] for e in matches):
        # e.g. index_add inside index_select's backward: the index_select entry says more.
        matches = [e for e in matches if e["backward_only"]]
    return matches
