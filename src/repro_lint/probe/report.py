"""Turns the runs' traces into the probe report (a JSON-ready dict, documented in
docs/probe.md) and into findings."""

from __future__ import annotations

import linecache
import os
from typing import Any, Optional

import repro_lint
from repro_lint.findings import Finding, Location, Related
from repro_lint.probe import compare
from repro_lint.probe.launch import RunFailed, RunOutcome

SCHEMA = "repro-lint-probe/1"

# Probe results as rules, for SARIF and for readers of `findings`.
PROBE_RULES: dict[str, dict[str, str]] = {
    "RPP101": {
        "name": "runs-diverge",
        "summary": "Two runs of the same program computed different values.",
        "help": "The first op whose inputs or outputs differ between runs is where reproducibility is lost; "
        "fix that cause first, later differences usually follow from it.",
    },
    "RPP102": {
        "name": "unseeded-global-draw",
        "summary": "A draw from a global random number generator that was not seeded before it.",
        "help": "Seed the generator (`random.seed`, `numpy.random.seed`, `torch.manual_seed`) before the first "
        "draw, or pass an explicitly seeded generator.",
    },
    "RPP103": {
        "name": "determinism-alert",
        "summary": "With deterministic algorithms enabled, torch reported an op without a deterministic implementation.",
        "help": "Under `torch.use_deterministic_algorithms(True)` this op raises; use a deterministic alternative "
        "or accept the nondeterminism for this op only.",
    },
    "RPP104": {
        "name": "cuda-nondeterministic-op",
        "summary": "An op that is nondeterministic on CUDA ran (predicted from the catalog, without a GPU).",
        "help": "On a GPU this op can give different results from run to run; see the catalog entry's condition "
        "and deterministic alternative.",
    },
}

_EXPLANATIONS = {
    compare.UNSEEDED_DRAW: "{op} drew different values from the global torch generator: {why}",
    compare.NONDETERMINISTIC_OP: "{op} returned different results for identical inputs: its kernel is "
    "nondeterministic, or it read memory that was never written.",
    compare.EXTERNAL_INPUT: "the inputs of {op} differ although every earlier op matched: the values reached "
    "torch from outside it (Python or numpy code).",
    compare.CONTROL_FLOW: "the runs executed different ops from here on ({op} vs {other}): a decision in Python "
    "code (a random draw, the iteration order of a set, the clock) took another path.",
}


class _Locations:
    """Resolves a run's location ids into dicts with a source line and a 1-based column."""

    def __init__(self, data: dict[str, Any]):
        self._table = data.get("locations", [])

    def get(self, loc: int) -> Optional[dict[str, Any]]:
        if loc is None or loc < 0 or loc >= len(self._table):
            return None
        path, line, function, byte_col = self._table[loc]
        text = linecache.getline(path, line)
        column = len(text.encode()[:byte_col].decode(errors="ignore")) + 1 if byte_col >= 0 else 1
        return {"path": display_path(path), "line": line, "column": column, "function": function, "source": text.strip()}


def display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel


def _hex(value: int) -> str:
    return f"{value:016x}"


def build_report(
    *,
    target: dict[str, Any],
    settings: dict[str, Any],
    outcomes: list[RunOutcome],
    audit: Optional[RunOutcome],
    audit_failure: Optional[RunFailed],
    catalog_ops: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    first = outcomes[0]
    where = _Locations(first.data)
    divergence = compare.first_divergence([(o.plan.index, o.data) for o in outcomes])
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "tool": {"name": "repro-lint", "version": repro_lint.__version__},
        "target": target,
        "settings": settings,
        "device": first.data.get("device"),
        "status": "diverged" if divergence else "identical",
        "exit_code": 1 if divergence else 0,
        "runs": [_run_info(o, "compared") for o in outcomes] + ([_run_info(audit, "deterministic-audit")] if audit else []),
        "divergence": _divergence(divergence, outcomes) if divergence else None,
        "rng": {
            "draws": [_draw(d, where) for d in first.data["draws"]],
            "seeding_calls": [_seeding(s, where) for s in first.data["seeds"]],
        },
        "deterministic_audit": _audit(audit, audit_failure),
        "cuda_nondeterministic_ops": _predictions(first.data, where, catalog_ops),
        "environment": first.data.get("environment"),
        "error": None,
    }
    report["findings"] = [f.to_dict() for f in findings(report)]
    return report


def error_report(*, target: dict[str, Any], settings: dict[str, Any], failure: RunFailed) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "tool": {"name": "repro-lint", "version": repro_lint.__version__},
        "target": target,
        "settings": settings,
        "status": "error",
        "exit_code": 2,
        "error": {"kind": failure.kind, "message": failure.message, "run": failure.run, "traceback": failure.traceback},
        "findings": [],
    }


def _run_info(o: RunOutcome, role: str) -> dict[str, Any]:
    return {
        "run": o.plan.index,
        "role": role,
        "ops": len(o.data["ops"]),
        "stop_reason": o.data.get("stop_reason"),
        "seconds": o.data.get("seconds"),
        "pythonhashseed": o.hash_seed or None,
        "torch_seed": o.plan.torch_seed,
    }


def _divergence(d: compare.Divergence, outcomes: list[RunOutcome]) -> dict[str, Any]:
    by_run = {o.plan.index: o for o in outcomes}
    a, b = by_run[d.runs[0]], by_run[d.runs[1]]
    where_a, where_b = _Locations(a.data), _Locations(b.data)
    location = where_a.get(d.locations[0])
    suspects: dict[tuple, dict[str, Any]] = {}
    if d.kind in (compare.EXTERNAL_INPUT, compare.CONTROL_FLOW):
        # Values from Python or numpy reach torch unseen; their unseeded draws are the usual cause.
        for o, where in ((a, where_a), (b, where_b)):
            for draw in o.data["draws"]:
                if draw["source"] in ("python", "numpy") and not draw["seeded"] and draw["first_op"] <= d.op_index:
                    suspect = _draw(draw, where)
                    suspects.setdefault((suspect["function"], _where(suspect["location"])), suspect)
    text = _EXPLANATIONS[d.kind].format(op=d.ops[0], other=d.ops[1], why=_draw_cause(a.data, d))
    if suspects:
        text += " Unseeded draws before it: " + ", ".join(f"{fn} at {where}" for fn, where in suspects) + "."
    if d.kind in (compare.EXTERNAL_INPUT, compare.CONTROL_FLOW) and a.hash_seed != b.hash_seed:
        text += (
            f" The runs had PYTHONHASHSEED {a.hash_seed} and {b.hash_seed}: code that iterates over a set (or relies on "
            "hash values) of strings sees a different order in each."
        )
    return {
        "kind": d.kind,
        "op_index": d.op_index,
        "runs": list(d.runs),
        "op": d.ops[0],
        "op_in_other_run": d.ops[1],
        "location": location,
        "location_in_other_run": where_b.get(d.locations[1]),
        "inputs_identical": d.inputs[0] == d.inputs[1] and d.ops[0] == d.ops[1],
        "fingerprints": {"inputs": [_hex(d.inputs[0]), _hex(d.inputs[1])], "outputs": [_hex(d.outputs[0]), _hex(d.outputs[1])]},
        "later_divergent_ops": d.later,
        "compared_ops": d.compared,
        "explanation": text,
        "suspects": list(suspects.values()),
    }


def _draw_cause(data: dict[str, Any], d: compare.Divergence) -> str:
    for draw in data["draws"]:
        if draw["location"] == d.locations[0] and draw["function"] == d.ops[0] and not draw["seeded"]:
            return "the generator was not seeded before this draw."
    return "the generator's state differed although it had been seeded (a seed that changes between runs, or a reseed from entropy)."


def _where(location: Optional[dict[str, Any]]) -> str:
    return f"{location['path']}:{location['line']}" if location else "(no user code on the stack)"


def _draw(draw: dict[str, Any], where: _Locations) -> dict[str, Any]:
    return {
        "source": draw["source"],
        "function": draw["function"],
        "location": where.get(draw["location"]),
        "seeded": draw["seeded"],
        "count": draw["count"],
        "first_op_index": draw["first_op"],
    }


def _seeding(call: dict[str, Any], where: _Locations) -> dict[str, Any]:
    return {
        "sources": call["source"].split(","),
        "function": call["function"],
        "location": where.get(call["location"]),
        "fixed": call["seeded"],  # False: reseeded from OS entropy
        "count": call["count"],
    }


def _audit(audit: Optional[RunOutcome], failure: Optional[RunFailed]) -> dict[str, Any]:
    if audit is None and failure is None:
        return {"status": "skipped", "alerts": [], "error": None}
    if audit is None:
        return {"status": "failed", "alerts": [], "error": failure.message if failure else None}
    where = _Locations(audit.data)
    alerts = [
        {"message": a["message"], "op": a["op"], "location": where.get(a["location"]), "count": a["count"]}
        for a in audit.data["alerts"]
    ]
    return {"status": "ok", "device": audit.data.get("device"), "alerts": alerts, "error": None}


def _predictions(data: dict[str, Any], where: _Locations, catalog_ops: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    merged: dict[tuple, dict[str, Any]] = {}
    for hit in data.get("predicted", []):
        entry = catalog_ops.get(hit["id"], {})
        location = where.get(hit["location"])
        key = (hit["id"], hit["location"])
        item = merged.get(key)
        if item is None:
            merged[key] = item = {
                "id": hit["id"],
                "summary": entry.get("summary", ""),
                "ops": [],
                "location": location,
                "count": 0,
                "backward": False,
                "device": hit["device"],
                "condition": entry.get("condition", ""),
                "with_deterministic_algorithms": entry.get("with-deterministic-algorithms", ""),
                "alternative": entry.get("alternative", ""),
            }
        if hit["op"] not in item["ops"]:
            item["ops"].append(hit["op"])
        item["count"] += hit["count"]
        item["backward"] = item["backward"] or hit["backward"]
    def order(p: dict[str, Any]) -> tuple:
        loc = p["location"]
        return (loc["path"], loc["line"], loc["column"], p["id"]) if loc else ("", 0, 0, p["id"])

    return sorted(merged.values(), key=order)


_EFFECT = {
    "deterministic": "deterministic algorithms make it deterministic",
    "raises": "with deterministic algorithms it raises",
}


def findings(report: dict[str, Any]) -> list[Finding]:
    """The report's results as findings (for the JSON `findings` list and SARIF)."""
    fallback = report["target"].get("path") or "<unknown>"
    out: list[Finding] = []
    d = report.get("divergence")
    if d:
        related = [
            Related(_location(s["location"], fallback), f"unseeded {s['function']}") for s in d["suspects"] if s["location"]
        ]
        message = f"runs diverge at {d['op']} (op #{d['op_index'] + 1}): {d['explanation']}"
        out.append(_finding("RPP101", d["location"], fallback, message, related))
    for draw in report["rng"]["draws"]:
        if not draw["seeded"]:
            message = (
                f"{draw['function']} draws from the global {draw['source']} generator, "
                f"which was not seeded before it ({draw['count']} draws here)"
            )
            out.append(_finding("RPP102", draw["location"], fallback, message))
    for alert in report["deterministic_audit"]["alerts"]:
        out.append(_finding("RPP103", alert["location"], fallback, f"{alert['message']} ({alert['count']} times)"))
    for p in report["cuda_nondeterministic_ops"]:
        parts = [f"{p['summary']}", f"ran {p['count']} times ({', '.join(p['ops'])}{', backward pass' if p['backward'] else ''})"]
        if p["with_deterministic_algorithms"] in _EFFECT:
            parts.append(_EFFECT[p["with_deterministic_algorithms"]])
        if p["alternative"]:
            parts.append(f"alternative: {p['alternative']}")
        out.append(_finding("RPP104", p["location"], fallback, "; ".join(parts)))
    return out


def _location(location: Optional[dict[str, Any]], fallback: str) -> Location:
    if location is None:
        return Location(display_path(fallback), 1, 1, 1, 1)
    return Location(location["path"], location["line"], location["column"], location["line"], location["column"])


def _finding(code: str, location, fallback: str, message: str, related=None) -> Finding:
    return Finding(
        code=code,
        name=PROBE_RULES[code]["name"],
        message=message,
        location=_location(location, fallback),
        related=related or [],
        severity="warning",
    )
