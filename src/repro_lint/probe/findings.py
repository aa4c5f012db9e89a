"""The probe's results as findings (the JSON report's `findings`, and SARIF)."""

from __future__ import annotations

import os
from typing import Any, Optional

from repro_lint.findings import Finding, Location, Related


def display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel


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
    "RPP105": {
        "name": "benign-divergence",
        "summary": "Two runs computed different values that reach no result (scratch memory, overwritten values).",
        "help": "Nothing to fix for reproducibility: the values that differ are overwritten or only read by ops whose "
        "results are the same. Listed so that a change that lets them reach a result is noticed.",
    },
    "RPP104": {
        "name": "cuda-nondeterministic-op",
        "summary": "An op that is nondeterministic on CUDA ran (predicted from the catalog, without a GPU).",
        "help": "On a GPU this op can give different results from run to run; see the catalog entry's condition "
        "and deterministic alternative.",
    },
}

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
        where = "" if d.get("process", "main") == "main" else f" in {d['process']}"
        message = f"runs diverge at {d['op']} (op #{d['op_index'] + 1}{where}): {d['explanation']}"
        out.append(_finding("RPP101", d["location"], fallback, message, related))
    unseeded: dict[tuple, list] = {}  # one finding per line, whichever processes drew there
    for draw in report["rng"]["draws"]:
        if not draw["seeded"]:
            loc = draw["location"]
            key = (draw["function"], draw["source"], loc and (loc["path"], loc["line"], loc["column"]))
            unseeded.setdefault(key, []).append(draw)
    for (function, source, _), draws in unseeded.items():
        count = sum(d["count"] for d in draws)
        processes = sorted({d["process"] for d in draws if d.get("process") and d["process"] != "main"})
        where = f" in {', '.join(processes)}" if processes else ""
        message = f"{function} draws from the global {source} generator, which was not seeded before it ({count} draws here{where})"
        out.append(_finding("RPP102", draws[0]["location"], fallback, message))
    for item in report.get("benign_divergences", []):
        message = f"runs differ at {item['op']} in {item['process']} but the difference is benign: {item['reason']}"
        out.append(_finding("RPP105", item["location"], fallback, message))
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
