"""GitHub Actions workflow commands: one annotation per finding."""

from __future__ import annotations

from typing import Optional

from repro_lint.core.findings import Finding
from repro_lint.output.locations import Locator
from repro_lint.output.log_safe import escape_github


def _escape_data(s: str) -> str:
    return escape_github(s)


def _escape_prop(s: str) -> str:
    return escape_github(s, prop=True)


def _fix_note(f: Finding) -> str:
    """Whether the finding is fixable and how safely, as the text output says it."""
    if f.fix is None or not f.fixable:
        return ""
    how = "--fix" if f.fix.safety == "safe" else "--fix --unsafe-fixes"
    return f" [fix ({f.fix.safety}, {how}): {f.fix.description}]"


def render(findings: list[Finding], locator: Optional[Locator] = None) -> str:
    """`::warning` annotations (`::error` for a file that does not parse). A notebook's finding points at the line of the `.ipynb` file
    that holds the code, its message starting with `cell N:LINE:COL`."""
    locator = locator or Locator()
    lines = []
    for f in findings:
        loc = f.location
        in_file = locator.file_lines(loc)
        if in_file is None:
            where = f"line={loc.line},col={loc.col},endLine={loc.end_line},endColumn={loc.end_col}"
            prefix = ""
        else:
            shown = locator.shown(loc)
            where = f"line={in_file[0]},endLine={in_file[1]}"
            prefix = f"cell {shown.cell}:{shown.line}:{shown.col}: "
        props = f"file={_escape_prop(loc.path)},{where},title={_escape_prop(f'{f.code} {f.name}')}"
        help_line = f"\nhelp: {f.help}" if f.help else ""
        lines.append(f"::{f.severity} {props}::{_escape_data(f'{prefix}{f.code} {f.message}{_fix_note(f)}{help_line}')}")
    return "\n".join(lines) + ("\n" if lines else "")
