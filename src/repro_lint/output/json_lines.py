"""`--output-format json-lines`: one finding per line, each the object of the JSON format's
`findings` list (ruff's `json-lines`)."""

from __future__ import annotations

import json
from typing import Iterator, Optional

from repro_lint.core.findings import Finding
from repro_lint.output.json_out import finding_dict
from repro_lint.output.locations import Locator


def render_lines(findings: list[Finding], locator: Optional[Locator] = None) -> Iterator[str]:
    locator = locator or Locator()
    for f in findings:
        yield json.dumps(finding_dict(f, locator), ensure_ascii=False) + "\n"
