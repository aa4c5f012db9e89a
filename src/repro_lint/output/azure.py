"""`--output-format azure`: Azure Pipelines logging commands, one `##vso[task.logissue]`
per finding (as ruff's `azure` writes them), typed by the finding's severity."""

from __future__ import annotations

from typing import Iterator, Optional

from repro_lint.core.findings import Finding
from repro_lint.output.locations import Locator
from repro_lint.output.places import place


def _escape(text: str) -> str:
    # the logging command's own escapes
    return text.replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    # a property also ends at `;` and the properties at `]`
    return _escape(text).replace(";", "%3B").replace("]", "%5D")


def render_lines(findings: list[Finding], locator: Optional[Locator] = None) -> Iterator[str]:
    locator = locator or Locator()
    for f in findings:
        at = place(f.location, locator)
        props = (
            f"type={f.severity};sourcepath={_escape_property(f.location.path)};linenumber={at.line};"
            f"columnnumber={at.col};code={f.code};"
        )
        yield f"##vso[task.logissue {props}]{_escape(at.prefix + f.message)}\n"
