"""JSON output: a stable, documented schema (see README, "JSON output")."""

from __future__ import annotations

import json

from repro_lint import __version__
from typing import Iterator, Optional

from repro_lint.core.findings import Finding
from repro_lint.output.locations import Locator

SCHEMA_VERSION = 1


def render(findings: list[Finding], errors: list[str], files_checked: int, locator: Optional[Locator] = None) -> str:
    return "".join(render_chunks(findings, errors, files_checked, locator))


# findings encoded into each chunk written
_FINDINGS_PER_CHUNK = 256


def render_chunks(findings: list[Finding], errors: list[str], files_checked: int, locator: Optional[Locator] = None) -> Iterator[str]:
    """The text of `json.dumps(doc, indent=2, ensure_ascii=False)` for the whole document, in
    chunks to write as they are made, each finding's dict made and encoded in turn: the
    document's dicts and the list of every small piece of its text that `json.dumps` joins
    took about 215 MB on a 38,000-file tree (28,000 findings), the largest resident set of its check.
    An encoded value holds no line break of its own (a string's is escaped): a finding's
    text, indented, is the text it has inside the document."""
    locator = locator or Locator()
    encode = json.JSONEncoder(ensure_ascii=False, indent=2).encode
    head = {"schema_version": SCHEMA_VERSION, "tool": {"name": "repro-lint", "version": __version__}, "files_checked": files_checked}
    tail = {"errors": errors, "summary": summary(findings)}
    out = [encode(head)[:-2], ',\n  "findings": ']  # (without the closing "\n}")
    if not findings:
        out.append("[]")
    else:
        out.append("[")
        for i, f in enumerate(findings):
            out.append(",\n    " if i else "\n    ")
            out.append(encode(finding_dict(f, locator)).replace("\n", "\n    "))
            if len(out) >= 2 * _FINDINGS_PER_CHUNK:
                yield "".join(out)
                out = []
        out.append("\n  ]")
    out.append(",\n" + encode(tail)[2:] + "\n")  # (without the opening "{\n")
    yield "".join(out)


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
