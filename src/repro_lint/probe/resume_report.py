"""`--resume-check`: checkpoints that a resumed run cannot continue from exactly, and where a
run resumed from a checkpoint parts ways with the uninterrupted run.

A checkpoint holds training state when it holds optimizer state, or model state saved while
training went on (a model saved after the last optimizer step is an export, not a
checkpoint). It lacks RNG state when neither it nor another file saved into the same folder
at the same step holds a generator state (the Hugging Face Trainer writes `rng_state.pth`
beside `optimizer.pt`).

The resumed run is compared with the uninterrupted one step by step (optimizer steps), in the
main process: step k of the resumed run with step N + k of the uninterrupted run, N being
the step at which the checkpoint the resumed run loaded was saved.
"""

from __future__ import annotations

from typing import Any, Optional

from repro_lint.probe import compare
from repro_lint.probe.checkpoints import folder
from repro_lint.probe.trace_format import GLOBAL_DRAW


def checkpoints(traces: list[dict[str, Any]], locations, process_names: dict) -> list[dict[str, Any]]:
    """Every torch.save of training state in these traces, with whether RNG state went with it."""
    out = []
    for trace in traces:
        saves = trace.get("saves", [])
        steps = len(trace.get("steps", []))
        where = locations(trace)
        for save in saves:
            holds = set(save["contents"])
            training = "optimizer" in holds or ("model" in holds and save["step"] < steps)
            if not training:
                continue
            group = [
                s for s in saves
                if s["step"] == save["step"] and (s is save or (s["path"] and save["path"] and folder(s["path"]) == folder(save["path"])))
            ]
            rng = sorted({c for s in group for c in s["contents"] if c.startswith("rng:")})
            out.append({
                "process": process_names.get((trace.get("process") or {}).get("key")) or "main",
                "path": save["path"], "location": where.get(save["location"]), "step": save["step"],
                "contents": sorted(holds), "rng_state": rng,
            })
    return out


def resumed_from(full: dict[str, Any], resumed: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The checkpoint of the uninterrupted run that the resumed run loaded, and its step."""
    saved = {s["path"]: s for s in full.get("saves", []) if s["path"]}  # the last save of a path is what is on disk
    loads = [f for f in resumed.get("files", []) if f["kind"] == "read" and f["path"] in saved]
    if not loads:
        return None
    load = min(loads, key=lambda f: f["first_op"])
    return {"path": load["path"], "step": saved[load["path"]]["step"], "load_op": load["first_op"]}


def compare_resumed(full: dict[str, Any], resumed: dict[str, Any], start: dict[str, Any]) -> tuple[Optional[compare.Divergence], int]:
    """The first op where the resumed run's steps differ from the uninterrupted run's steps
    after the checkpoint, and how many steps were compared."""
    steps_a, steps_b = full.get("steps", []), resumed.get("steps", [])
    ops_a, ops_b = full["ops"], resumed["ops"]
    names_a, names_b = full["names"], resumed["names"]
    place_a, place_b = _places(full), _places(resumed)

    def same_op(i: int, j: int) -> bool:
        x, y = ops_a[i], ops_b[j]
        return names_a[x[0]] == names_b[y[0]] and place_a(x[1]) == place_b(y[1])

    n = start["step"]
    compared = 0
    for k in range(len(steps_b)):
        if n + k >= len(steps_a):
            break
        end_a, end_b = steps_a[n + k], steps_b[k]
        begin_a = steps_a[n + k - 1] if n + k > 0 else 0
        begin_b = steps_b[k - 1] if k > 0 else start["load_op"]
        size_a, size_b = end_a - begin_a, end_b - begin_b
        # Steps are lined up at their ends: the uninterrupted run's first step after the
        # checkpoint also holds the code that saved it, and the resumed run's first step what it
        # did after loading (state copies, a new data iterator).
        tail = 0
        while tail < min(size_a, size_b) and same_op(end_a - tail - 1, end_b - tail - 1):
            tail += 1
        compared += 1
        length = tail if k == 0 else max(size_a, size_b)
        offset_a, offset_b = end_a - length, end_b - length
        for i in range(length):
            if i >= size_a or i >= size_b or not same_op(offset_a + i, offset_b + i):
                return _divergence(full, resumed, max(offset_a + i, begin_a), max(offset_b + i, begin_b), compare.CONTROL_FLOW, k, n), compared
            x, y = ops_a[offset_a + i], ops_b[offset_b + i]
            if x[2:4] == y[2:4]:
                continue
            kind = compare.EXTERNAL_INPUT if x[2] != y[2] else (
                compare.UNSEEDED_DRAW if x[4] & GLOBAL_DRAW else compare.NONDETERMINISTIC_OP
            )
            return _divergence(full, resumed, offset_a + i, offset_b + i, kind, k, n), compared
    return None, compared


def _places(trace: dict[str, Any]):
    table = trace.get("locations", [])

    def place(loc: int) -> tuple:
        return tuple(table[loc][:2]) + (table[loc][3],) if 0 <= loc < len(table) else ()

    return place


def _divergence(full: dict, resumed: dict, i: int, j: int, kind: str, k: int, n: int) -> compare.Divergence:
    ops_a, ops_b = full["ops"], resumed["ops"]
    x = ops_a[i] if i < len(ops_a) else None
    y = ops_b[j] if j < len(ops_b) else None
    later = sum(1 for a, b in zip(ops_a[i + 1:], ops_b[j + 1:]) if a[3] != b[3])
    return compare.Divergence(
        kind=kind, op_index=i, runs=(1, 2),
        ops=(full["names"][x[0]] if x else None, resumed["names"][y[0]] if y else None),
        locations=(x[1] if x else -1, y[1] if y else -1), inputs=(x[2] if x else 0, y[2] if y else 0),
        outputs=(x[3] if x else 0, y[3] if y else 0), later=later, compared=len(ops_a), unit="main", reaches=True,
        reason=f"the resumed run's step {k + 1} (step {n + k + 1} of the uninterrupted run) differs from here on",
        lengths=(len(ops_a), len(ops_b)),
    )
