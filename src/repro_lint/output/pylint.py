"""`--output-format pylint`: `PATH:LINE: [CODE] MESSAGE`, as pylint's parseable format and
ruff's `pylint` write it (a notebook's line is shown as `train.ipynb:cell 3:2`)."""

from __future__ import annotations

from typing import Iterator, Optional

from repro_lint.core.findings import Finding
from repro_lint.output.locations import Locator


def render_lines(findings: list[Finding], locator: Optional[Locator] = None) -> Iterator[str]:
    locator = locator or Locator()
    for f in findings:
        shown = locator.shown(f.location)
        where = f"{shown.path}:cell {shown.cell}:{shown.line}" if shown.cell is not None else f"{shown.path}:{shown.line}"
        yield f"{where}: [{f.code}] {f.message}\n"
