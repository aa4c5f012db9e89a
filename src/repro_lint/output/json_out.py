"""JSON output: a stable, documented schema (see README, "JSON output")."""

from __future__ import annotations

import json

from repro_lint import __version__
from typing import Optional

from repro_lint.core.findings import Finding
from repro_lint.output.locations import Locator

SCHEMA_VERSION = 1


def render(findings: list[Finding], errors: list[str], files_checked: int, locator: Optional[Locator] = None) -> str:
    locator = locator or Locator()
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "repro-lint", "version": __version__},
        "files_checked": files_checked,
        "findings": [finding_dict(f, locator) for f in findings],
        "errors": errors,
        "summary": summary(findings),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def finding_dict(f: Finding, locator: Locator) -> dict:
    """The finding's documented form; in a notebook, `cell` is the cell's number (1-based,
    among all the file's cells) and lines are lines in that cell (else `cell` is null)."""
    out = f.to_dict()
    out["cell"] = None
    for place, loc in [(out, f.location), *zip(out["related"], (r.location for r in f.related))]:
        shown = locator.shown(loc)
        if shown.cell is not None:
            place["cell"] = shown.cell
            place["start"] = {"line": shown.line, "column": shown.col}
            place["end"] = {"line": shown.end_line, "column": shown.end_col}
        elif place is not out:
            place["cell"] = None
    return out


def summary(findings: list[Finding]) -> dict:
    from repro_lint.output.text import follow_on_counts

    safe, unsafe = follow_on_counts(findings)
    by_code: dict[str, int] = {}
    for f in findings:
        by_code[f.code] = by_code.get(f.code, 0) + 1
    return {
        "total": len(findings),
        "by_code": dict(sorted(by_code.items())),
        "fixable_safe": sum(1 for f in findings if f.fixable and f.fix.safety == "safe"),  # type: ignore[union-attr]
        "fixable_unsafe": sum(1 for f in findings if f.fixable and f.fix.safety == "unsafe"),  # type: ignore[union-attr]
        "follow_ons_safe": sum(safe.values()),
        "follow_ons_unsafe": sum(unsafe.values()),
    }
