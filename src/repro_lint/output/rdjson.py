"""`--output-format rdjson`: reviewdog's Diagnostic Format (`rdjson`), one diagnostic per
finding with its severity and code (fixes are applied with `--fix`, not offered as
suggestions: they are edits of the syntax tree, not text replacements)."""

from __future__ import annotations

import json
from typing import Optional

from repro_lint.core.findings import Finding
from repro_lint.output.locations import Locator
from repro_lint.output.places import place


def render(findings: list[Finding], locator: Optional[Locator] = None) -> str:
    locator = locator or Locator()
    diagnostics = []
    for f in findings:
        at = place(f.location, locator)
        diagnostics.append(
            {
                "message": at.prefix + f.message + (f"\nhelp: {f.help}" if f.help else ""),
                "location": {
                    "path": f.location.path,
                    "range": {
                        "start": {"line": at.line, "column": at.col},
                        "end": {"line": at.end_line, "column": at.end_col},
                    },
                },
                "severity": f.severity.upper(),
                "code": {"value": f.code},
            }
        )
    doc = {"source": {"name": "repro-lint"}, "severity": "WARNING", "diagnostics": diagnostics}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
