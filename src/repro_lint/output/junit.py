"""`--output-format junit`: JUnit XML, one test suite per file and one failed test case per
finding, as ruff's `junit` writes it (CI services show it as test results). A run without
findings is one passing test case."""

from __future__ import annotations

from typing import Optional
from xml.sax.saxutils import escape, quoteattr

from repro_lint.core.findings import Finding
from repro_lint.output.locations import Locator


def render(findings: list[Finding], locator: Optional[Locator] = None) -> str:
    locator = locator or Locator()
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.location.path, []).append(f)
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n']
    n = max(len(findings), 1)
    out.append(f'<testsuites name="repro-lint" tests="{n}" failures="{len(findings)}" errors="0">\n')
    if not findings:
        out.append('  <testsuite name="repro-lint" tests="1" disabled="0" errors="0" failures="0" package="org.repro-lint">\n')
        out.append('    <testcase name="No findings" classname="repro-lint"/>\n  </testsuite>\n')
    for path, items in by_file.items():
        out.append(
            f'  <testsuite name={quoteattr(path)} tests="{len(items)}" disabled="0" errors="0" '
            f'failures="{len(items)}" package="org.repro-lint">\n'
        )
        for f in items:
            shown = locator.shown(f.location)
            where = f"cell {shown.cell}, line {shown.line}" if shown.cell is not None else f"line {shown.line}"
            out.append(
                f'    <testcase name={quoteattr(f"org.repro-lint.{f.code}")} classname={quoteattr(path)} '
                f'line="{shown.line}" column="{shown.col}">\n'
                f"      <failure message={quoteattr(f.message)}>{escape(f'{where}, col {shown.col}, {f.message}')}</failure>\n"
                "    </testcase>\n"
            )
        out.append("  </testsuite>\n")
    out.append("</testsuites>\n")
    return "".join(out)
