"""Finds where runs part ways (the first op whose inputs or outputs differ between runs, in
each process) and whether that difference reaches the program's results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from repro_lint.probe.trace_format import COLLECTIVE, GLOBAL_DRAW, SINK

# Kinds of first divergence, in the words of the report.
UNSEEDED_DRAW = "unseeded-draw"  # an RNG op got identical inputs but drew different values
NONDETERMINISTIC_OP = "nondeterministic-op"  # identical inputs, different outputs
EXTERNAL_INPUT = "external-input"  # inputs differ although every earlier op matched
CONTROL_FLOW = "control-flow"  # the runs executed different ops

# Stops that end runs at different points: the shorter trace is a prefix, not a difference.
_UNEVEN_STOPS = ("timeout", "peer-stopped", "terminated", "exec")


@dataclass
class Divergence:
    kind: str
    op_index: int  # 0-based position in the unit's trace
    runs: tuple[int, int]  # 1-based run numbers compared
    ops: tuple[Optional[str], Optional[str]]
    locations: tuple[int, int]  # location ids in each run's own table (-1: none)
    inputs: tuple[int, int]
    outputs: tuple[int, int]
    later: int  # later ops (of those both runs executed) whose outputs differ
    compared: int  # ops both runs executed
    unit: str = "main"
    reaches: bool = True  # the difference reaches a result (False: benign)
    reason: str = ""  # what it reaches, or why it is benign
    lengths: tuple[int, int] = (0, 0)


def first_divergence(traces: list[tuple[int, dict[str, Any]]]) -> Optional[Divergence]:
    """Compare every run with the first one; the earliest divergence of any pair wins."""
    (ref_run, ref), others = traces[0], traces[1:]
    found: Optional[Divergence] = None
    for run, other in others:
        d = compare_ops(ref_run, ref, ref["ops"], run, other, other["ops"], uneven=_stopped_early(ref, other))
        if d is not None and (found is None or d.op_index < found.op_index):
            found = d
    return found


def compare_ops(
    run_a: int, a: dict, ops_a: list, run_b: int, b: dict, ops_b: list, *, uneven: bool = False
) -> Optional[Divergence]:
    names_a, names_b = a["names"], b["names"]
    n = min(len(ops_a), len(ops_b))
    first, kind = -1, ""
    for i in range(n):
        x, y = ops_a[i], ops_b[i]
        if x[2:4] == y[2:4] and names_a[x[0]] == names_b[y[0]]:
            continue
        first, kind = i, _kind(names_a[x[0]], names_b[y[0]], x, y)
        break
    if first < 0:
        if len(ops_a) == len(ops_b) or uneven:
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
        lengths=(len(ops_a), len(ops_b)),
    )


def _kind(name_a: str, name_b: str, x: list, y: list) -> str:
    if name_a != name_b:
        return CONTROL_FLOW
    if x[2] != y[2] or x[4] & COLLECTIVE:
        return EXTERNAL_INPUT  # a collective's results carry other ranks' values
    return UNSEEDED_DRAW if x[4] & GLOBAL_DRAW else NONDETERMINISTIC_OP


def _stopped_early(a: dict, b: dict) -> bool:
    # A time limit ends runs at different points; the shorter trace is a prefix, not a difference.
    return any(r in _UNEVEN_STOPS for r in (a.get("stop_reason"), b.get("stop_reason")))


def compare_units(run_a: int, unit_a, run_b: int, unit_b, uneven: bool) -> Optional[Divergence]:
    """The first divergence of one process (or job) between two runs, judged by whether it
    reaches a result."""
    uneven = uneven or any(r in _UNEVEN_STOPS for r in (unit_a.stop_reason, unit_b.stop_reason))
    d = compare_ops(run_a, unit_a.trace, unit_a.ops, run_b, unit_b.trace, unit_b.ops, uneven=uneven)
    if d is None:
        return None
    d.unit = unit_a.key
    d.reaches, d.reason = _judge(d, unit_a, unit_b, uneven)
    return d


def _judge(d: Divergence, a, b, uneven: bool) -> tuple[bool, str]:
    """Whether the values that differ reach a result: a value handed to Python (`.item()`,
    `.numpy()`, a file, another process), a parameter or buffer, or a tensor still alive
    where the recording ended. Values that are overwritten or that only feed ops whose
    results are the same (uninitialised scratch memory) reach none."""
    if d.kind == CONTROL_FLOW:
        return True, "the runs executed different ops from here on"
    if uneven:
        return True, "the runs were stopped at different points, so what the difference reaches cannot be followed"
    names_a, names_b = a.trace["names"], b.trace["names"]
    for i in range(d.op_index, d.compared):
        x, y = a.ops[i], b.ops[i]
        if (x[4] | y[4]) & SINK and x[3] != y[3]:
            return True, f"{names_a[x[0]]} (op #{i + 1}) hands different values to Python"
        if names_a[x[0]] != names_b[y[0]]:
            return True, f"the runs executed different ops from op #{i + 1} on"
    for what, field in (("a parameter or buffer ends with different values", "state"),
                        ("a tensor alive at the end holds different values", "final")):
        left, right = a.keyed(a.trace.get(field, [])), b.keyed(b.trace.get(field, []))
        for key in sorted(set(left) | set(right)):
            if left.get(key) != right.get(key):
                op = key.split(":")[0]
                where = f" (first seen at op #{int(op) + 1})" if op not in ("None", "-1") else ""
                return True, what + where
    sent_a, sent_b = _sinks(a), _sinks(b)
    for i, (x, y) in enumerate(zip(sent_a, sent_b)):
        if x[2] != y[2]:
            return True, f"values passed to {_SINK_WORDS.get(x[0], x[0])} differ"
    if len(sent_a) != len(sent_b):
        return True, "the runs passed different numbers of tensors out of torch"
    return False, "its values reach no result: later ops computed the same values, and no parameter, output or value handed to Python differs"


_SINK_WORDS = {"numpy": "numpy", "tolist": "a Python list", "pickle": "pickle or torch.save", "send": "another process"}


def _sinks(unit) -> list:
    """The values this unit passed out of torch (a job's or task's own, by the segment
    they were recorded in)."""
    own = unit.key.rsplit("/", 1)[-1] if unit.job else None
    return [s for s in unit.trace.get("sinks", []) if (s[4] if len(s) > 4 else None) == own]
