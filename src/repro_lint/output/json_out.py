"""JSON output: a stable, documented schema (see README, "JSON output")."""

from __future__ import annotations

import json

from repro_lint import __version__
from repro_lint.findings import Finding

SCHEMA_VERSION = 1


def render(findings: list[Finding], errors: list[str], files_checked: int) -> str:
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "repro-lint", "version": __version__},
        "files_checked": files_checked,
        "findings": [f.to_dict() for f in findings],
        "errors": errors,
        "summary": summary(findings),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def summary(findings: list[Finding]) -> dict:
    by_code: dict[str, int] = {}
    for f in findings:
        by_code[f.code] = by_code.get(f.code, 0) + 1
    return {
        "total": len(findings),
        "by_code": dict(sorted(by_code.items())),
        "fixable_safe": sum(1 for f in findings if f.fixable and f.fix.safety == "safe"),  # type: ignore[union-attr]
        "fixable_unsafe": sum(1 for f in findings if f.fixable and f.fix.safety == "unsafe"),  # type: ignore[union-attr]
    }
