"""The parts of a run that are compared with the same part of another run: each process
(named by its place in the run: `main`, `main/worker 1`, `rank 0`, `rank 1/worker 0`) and
each Hydra multirun job (`main/job 3`, whichever worker process ran it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class Unit:
    key: str
    trace: dict[str, Any]  # the process trace the ops come from
    ops: list  # the unit's op rows
    index: list[int]  # process op index of each of the unit's ops
    depth: int
    stop_reason: Optional[str] = None
    job: bool = False
    local: dict[int, int] = field(default_factory=dict)  # process op index -> unit op index

    def unit_index(self, process_index: int) -> Optional[int]:
        return self.local.get(process_index)

    def keyed(self, entries: list) -> dict[str, Any]:
        """`state`/`final` entries whose birth op lies in this unit, keyed by unit op index."""
        out = {}
        for birth, fp in entries:
            op, _, slot = birth.partition(":")
            local = self.local.get(int(op))
            if local is None and not (int(op) < 0 and not self.job):
                continue
            out[f"{local}:{slot}"] = fp
        return out


def _label(process: dict[str, Any]) -> str:
    role, index = process.get("role"), process.get("index")
    if role in ("worker", "spawn", "rank", "subprocess", "fork"):
        return f"{role} {index}"
    if role == "process":
        return str(index)
    return str(process.get("root") or "main")


def name_processes(roots: dict[str, dict], children: list[dict]) -> dict[str, str]:
    """Process key -> its name in the run."""
    names: dict[str, str] = {}
    by_key: dict[str, dict] = {}
    for root, data in roots.items():
        key = (data.get("process") or {}).get("key")
        if key:
            names[key] = root
    for trace in children:
        by_key[trace["process"]["key"]] = trace["process"]

    def base(process: dict) -> str:
        segment = process.get("parent_segment")
        if segment:
            return f"{process.get('root') or 'main'}/{segment}"
        parent = process.get("parent")
        if parent in names:
            return names[parent]
        if parent in by_key:
            return resolve(by_key[parent])
        return str(process.get("root") or "main")

    resolving: set = set()

    def resolve(process: dict) -> str:
        key = process["key"]
        if key in names:
            return names[key]
        if key in resolving:  # a broken parent chain: attach to the run's top process
            return str(process.get("root") or "main")
        resolving.add(key)
        names[key] = f"{base(process)}/{_label(process)}"
        return names[key]

    # Siblings with the same name (the workers of each epoch) are told apart by the order
    # their parent started them, which is the program's order.
    ordered = sorted(by_key.values(), key=lambda p: (_ordinal(p), p["key"]))
    for process in ordered:
        resolve(process)
    seen: dict[str, int] = {}
    for process in ordered:
        name = names[process["key"]]
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            names[process["key"]] = f"{name} #{seen[name]}"
    return names


def _ordinal(process: dict) -> tuple:
    ordinal = process.get("ordinal", 0)
    return tuple(ordinal) if isinstance(ordinal, list) else (ordinal,)


def build_units(roots: dict[str, dict], children: list[dict]) -> dict[str, Unit]:
    names = name_processes(roots, children)
    units: dict[str, Unit] = {}
    for trace in [*roots.values(), *children]:
        process = trace.get("process") or {}
        name = names.get(process.get("key"), process.get("root") or "main")
        root = str(process.get("root") or "main")
        bounds = [(start, label) for start, label in trace.get("segments", [])]
        ops = trace.get("ops", [])
        current: Optional[str] = None
        cuts = {start: label for start, label in bounds}
        label_at = []
        for i in range(len(ops)):
            if i in cuts:
                current = cuts[i]
            label_at.append(current)
        for i, row in enumerate(ops):
            key = f"{root}/{label_at[i]}" if label_at[i] else name
            unit = units.get(key)
            if unit is None:
                unit = units[key] = Unit(key, trace, [], [], key.count("/"), trace.get("stop_reason"), bool(label_at[i]))
            unit.local[i] = len(unit.ops)
            unit.ops.append(row)
            unit.index.append(i)
        if name not in units:  # a process that recorded nothing still shows
            units[name] = Unit(name, trace, [], [], name.count("/"), trace.get("stop_reason"))
    return units
