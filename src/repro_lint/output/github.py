"""GitHub Actions workflow commands: one annotation per finding."""

from __future__ import annotations

from repro_lint.findings import Finding


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def _fix_note(f: Finding) -> str:
    """Whether the finding is fixable and how safely, as the text output says it."""
    if f.fix is None or not f.fixable:
        return ""
    how = "--fix" if f.fix.safety == "safe" else "--fix --unsafe-fixes"
    return f" [fix ({f.fix.safety}, {how}): {f.fix.description}]"


def render(findings: list[Finding]) -> str:
    lines = []
    for f in findings:
        loc = f.location
        props = (
            f"file={_escape_prop(loc.path)},line={loc.line},col={loc.col},"
            f"endLine={loc.end_line},endColumn={loc.end_col},title={_escape_prop(f'{f.code} {f.name}')}"
        )
        lines.append(f"::warning {props}::{_escape_data(f'{f.code} {f.message}{_fix_note(f)}')}")
    return "\n".join(lines) + ("\n" if lines else "")
