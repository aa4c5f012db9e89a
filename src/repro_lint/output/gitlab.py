"""`--output-format gitlab`: a GitLab Code Quality report (a JSON array of issues with
`description`, `check_name`, `fingerprint`, `severity` and `location`), paths relative to
the project root, as the merge request widget wants them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from repro_lint.core.findings import Finding
from repro_lint.output.locations import Locator
from repro_lint.output.places import fingerprint, place, project_path

# Code Quality's scale is info, minor, major, critical, blocker: a warning is `minor`
SEVERITY = {"warning": "minor", "error": "major"}


def render(findings: list[Finding], root: Optional[Path] = None, locator: Optional[Locator] = None) -> str:
    locator = locator or Locator()
    seen: dict[tuple, int] = {}
    issues = []
    for f in findings:
        path = project_path(f.location.path, root)
        n = seen[(path, f.code, f.message)] = seen.get((path, f.code, f.message), 0) + 1
        at = place(f.location, locator)
        issues.append(
            {
                "description": f"{f.code} {at.prefix}{f.message}",
                "check_name": f.code,
                "fingerprint": fingerprint(f, path, n),
                "severity": SEVERITY.get(f.severity, "minor"),
                "location": {
                    "path": path,
                    "positions": {
                        "begin": {"line": at.line, "column": at.col},
                        "end": {"line": at.end_line, "column": at.end_col},
                    },
                },
            }
        )
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
