"""The probe's results as findings (the JSON report's `findings`, and SARIF)."""

from __future__ import annotations

import os
from typing import Any, Optional

from repro_lint.core import catalog
from repro_lint.core.findings import Finding, Location, Related


def display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel


def probe_rules() -> dict[str, dict]:
    """The probe's codes as SARIF rules, from their documents (`rules/probe/RPP*.toml`)."""
    from repro_lint.core import catalog
    from repro_lint.output.sarif import rule_metadata

    return {code: meta for code, meta in rule_metadata().items() if code in catalog.probe_docs()}


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
        if not draw["seeded"] and not _before_any_seed(draw):
            loc = draw["location"]
            key = (draw["function"], draw["source"], loc and (loc["path"], loc["line"], loc["column"]), draw.get("during_import"))
            unseeded.setdefault(key, []).append(draw)
    for (function, source, _, _), draws in unseeded.items():
        count = sum(d["count"] for d in draws)
        processes = sorted({d["process"] for d in draws if d.get("process") and d["process"] != "main"})
        where = f" in {', '.join(processes)}" if processes else ""
        first = draws[0]
        if first.get("kind") == "entropy-generator":
            message = f"{function}() without a seed starts a generator from OS entropy ({count} here{where}): pass it a seed"
        else:
            message = f"{function} draws from the global {source} generator, which was not seeded before it ({count} draws here{where})"
        if first.get("during_import"):
            message += (
                f"; the draw is made by {first['during_import']} while it is imported, before any seed set after "
                "this import line: seed before the import if its values matter"
            )
        out.append(_finding("RPP102", first["location"], fallback, message))
    for item in report.get("benign_divergences", []):
        message = f"runs differ at {item['op']} in {item['process']} but the difference is benign: {item['reason']}"
        out.append(_finding("RPP105", item["location"], fallback, message))
    for stream in (report.get("seed_sensitivity") or {}).get("streams", []):
        if not stream["changes"]:
            where = "" if stream["process"] == "main" else f" in {stream['process']}"
            message = (
                f"{stream['function']} ({stream['kind']}{where}) drew the same values with both seeds: this stream "
                "ignores the program's seed"
            )
            out.append(_finding("RPP106", stream["location"], fallback, message))
    for saved in report.get("checkpoints") or []:
        if not saved["rng_state"]:
            what = " and ".join(c for c in saved["contents"] if not c.startswith("rng:"))
            message = (
                f"checkpoint {saved['path'] or '(a file object)'} holds {what} state but no RNG state (saved after "
                f"step {saved['step']}): a run resumed from it draws other random numbers than this run"
            )
            out.append(_finding("RPP107", saved["location"], fallback, message))
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


# The package that owns each global generator: a draw made while it is itself imported comes
# before any seed the program could set (seeding needs the import).
_OWNERS = {"torch": "torch", "python": "random", "numpy": "numpy"}


def _before_any_seed(draw: dict[str, Any]) -> bool:
    module = draw.get("during_import")
    owner = _OWNERS.get(draw["source"].split(".")[0])
    return bool(module) and module.split(".")[0] == owner


def _location(location: Optional[dict[str, Any]], fallback: str) -> Location:
    if location is None:
        return Location(display_path(fallback), 1, 1, 1, 1)
    return Location(location["path"], location["line"], location["column"], location["line"], location["column"])


def _finding(code: str, location, fallback: str, message: str, related=None) -> Finding:
    doc = catalog.probe_docs()[code]
    return Finding(
        code=code,
        name=doc.name,
        message=message,
        location=_location(location, fallback),
        related=related or [],
        severity="warning",
        help=doc.help or None,
    )
