"""`--add-noqa`: accept the findings a project has now, so that only new ones fail.

Each finding's line gets `# noqa: CODE`; a line that has `# noqa: CODES` already keeps them
and gains the missing codes; a bare `# noqa` covers everything already. Running it again
changes nothing (the findings are suppressed then). Notebooks are edited in their cells.
A line whose end lies inside a string, or that continues with a backslash, cannot hold a
comment: it is reported and left alone.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from repro_lint.core.findings import Finding
from repro_lint.fix.source import SourceError, SourceFile
from repro_lint.fix.writer import NotWritten, write_atomic
from repro_lint.facts.sourcetext import NOQA, noqa_codes

_LINE_END = re.compile(r"(\r\n|\r|\n)?$")


@dataclass
class NoqaOutcome:
    added: int = 0  # directives added or extended
    errors: list = field(default_factory=list)  # one line each
    warnings: list = field(default_factory=list)


def add_noqa(findings: list[Finding], root: Optional[Path] = None, reason: Optional[str] = None) -> NoqaOutcome:
    """Add `# noqa` comments for `findings`, with `reason` after the codes (`--add-noqa=REASON`,
    as ruff writes it); files outside the project `root` are not written."""
    outcome = NoqaOutcome()
    by_file: dict[str, dict[int, set]] = {}
    for f in findings:
        if f.code == "RPL001" or f.location.line < 1:
            continue  # a file that does not parse cannot be suppressed
        by_file.setdefault(f.location.path, {}).setdefault(f.location.line, set()).add(f.code)
    for path, lines in sorted(by_file.items()):
        try:
            src = SourceFile.read(Path(path))
        except (OSError, SourceError) as exc:
            outcome.errors.append(f"{path}: noqa not added: cannot read it: {exc}")
            continue
        text, added, warnings = with_noqa(src.text, lines, reason)
        outcome.warnings.extend(f"{path}:{w}" for w in warnings)
        if not added:
            continue
        try:
            write_atomic(src.path, src.encode(text), src.raw, root)
        except (NotWritten, OSError, SourceError) as exc:
            outcome.errors.append(f"{path}: noqa not added: {exc}")
            continue
        outcome.added += added
    return outcome


def with_noqa(text: str, wanted: dict[int, set], reason: Optional[str] = None) -> tuple[str, int, list]:
    """`text` with `# noqa: CODES` on the lines of `wanted` (line -> codes): (new text,
    directives added or extended, `LINE: why not` for lines that cannot take one). A line
    with codes already gets them all, sorted and comma-separated, as ruff rewrites it
    (`# noqa: E501 F401` becomes `# noqa: E501, F401, RPL101`)."""
    tail = f" {reason.strip()}" if reason and reason.strip() else ""
    lines = text.splitlines(keepends=True)
    blocked = _lines_without_room(text)
    added = 0
    warnings = []
    for lineno in sorted(wanted):
        if lineno > len(lines):
            continue
        line = lines[lineno - 1]
        end = _LINE_END.search(line).group(0)  # type: ignore[union-attr]
        body = line[: len(line) - len(end)]
        if lineno in blocked or body.rstrip().endswith("\\"):
            warnings.append(f"{lineno}: no noqa added for {', '.join(sorted(wanted[lineno]))}: the line ends inside a string or continues on the next one")
            continue
        hit = NOQA.search(body)
        if hit is not None and hit.group("codes") is None:
            continue  # a bare `# noqa` covers every code
        if hit is not None:
            have = noqa_codes(hit.group("codes"))
            missing = [c for c in wanted[lineno] if not any(c.startswith(h) for h in have)]
            if not missing:
                continue
            rest = body[hit.end():]
            # the reason goes after the codes unless the comment says something there already
            note = tail if tail and not rest.strip() else ""
            body = body[: hit.start()] + "# noqa: " + ", ".join(sorted({*have, *missing})) + note + rest
        else:
            body = body.rstrip() + "  # noqa: " + ", ".join(sorted(wanted[lineno])) + tail
        lines[lineno - 1] = body + end
        added += 1
    return "".join(lines), added, warnings


def _lines_without_room(text: str) -> set:
    """Lines whose end lies inside a string token (a comment there would be part of it)."""
    out: set = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] < tok.end[0] and tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                if tok.type == tokenize.STRING or tokenize.tok_name.get(tok.type, "").startswith("FSTRING"):
                    out.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    return out
