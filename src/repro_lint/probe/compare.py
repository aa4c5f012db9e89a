"""Finds where runs part ways: the first op whose inputs or outputs differ between runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from repro_lint.probe.trace_format import GLOBAL_DRAW

# Kinds of first divergence, in the words of the report.
UNSEEDED_DRAW = "unseeded-draw"  # an RNG op got identical inputs but drew different values
NONDETERMINISTIC_OP = "nondeterministic-op"  # identical inputs, different outputs
EXTERNAL_INPUT = "external-input"  # inputs differ although every earlier op matched
CONTROL_FLOW = "control-flow"  # the runs executed different ops


@dataclass
class Divergence:
    kind: str
    op_index: int  # 0-based position in the trace
    runs: tuple[int, int]  # 1-based run numbers compared
    ops: tuple[Optional[str], Optional[str]]
    locations: tuple[int, int]  # location ids in each run's own table (-1: none)
    inputs: tuple[int, int]
    outputs: tuple[int, int]
    later: int  # later ops (of those both runs executed) whose outputs differ
    compared: int  # ops both runs executed


def first_divergence(traces: list[tuple[int, dict[str, Any]]]) -> Optional[Divergence]:
    """Compare every run with the first one; the earliest divergence of any pair wins."""
    (ref_run, ref), others = traces[0], traces[1:]
    found: Optional[Divergence] = None
    for run, other in others:
        d = _compare(ref_run, ref, run, other)
        if d is not None and (found is None or d.op_index < found.op_index):
            found = d
    return found


def _compare(run_a: int, a: dict, run_b: int, b: dict) -> Optional[Divergence]:
    names_a, names_b = a["names"], b["names"]
    ops_a, ops_b = a["ops"], b["ops"]
    n = min(len(ops_a), len(ops_b))
    first, kind = -1, ""
    for i in range(n):
        x, y = ops_a[i], ops_b[i]
        if x[2:4] == y[2:4] and names_a[x[0]] == names_b[y[0]]:
            continue
        first, kind = i, _kind(names_a[x[0]], names_b[y[0]], x, y)
        break
    if first < 0:
        if len(ops_a) == len(ops_b) or _stopped_early(a, b):
            return None
        # One run went on after the other ended: the control flow differed at the end.
        first, kind = n, CONTROL_FLOW
    later = sum(
        1
        for i in range(first + 1, n)
        if ops_a[i][3] != ops_b[i][3] or names_a[ops_a[i][0]] != names_b[ops_b[i][0]]
    )
    x = ops_a[first] if first < len(ops_a) else None
    y = ops_b[first] if first < len(ops_b) else None
    return Divergence(
        kind=kind,
        op_index=first,
        runs=(run_a, run_b),
        ops=(names_a[x[0]] if x else None, names_b[y[0]] if y else None),
        locations=(x[1] if x else -1, y[1] if y else -1),
        inputs=(x[2] if x else 0, y[2] if y else 0),
        outputs=(x[3] if x else 0, y[3] if y else 0),
        later=later,
        compared=n,
    )


def _kind(name_a: str, name_b: str, x: list, y: list) -> str:
    if name_a != name_b:
        return CONTROL_FLOW
    if x[2] != y[2]:
        return EXTERNAL_INPUT
    return UNSEEDED_DRAW if x[4] & GLOBAL_DRAW else NONDETERMINISTIC_OP


def _stopped_early(a: dict, b: dict) -> bool:
    # A time limit ends runs at different points; the shorter trace is a prefix, not a difference.
    return "timeout" in (a.get("stop_reason"), b.get("stop_reason"))
