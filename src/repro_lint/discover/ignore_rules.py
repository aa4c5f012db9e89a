"""`.gitignore` and `exclude` patterns, matched in time linear in the path.

A glob translated to a regular expression the usual way (`*` as `[^/]*`) backtracks: a
repository's `.gitignore` line `*a*a*a*a*a*a*a*a*a*a*b` took a minute per file name of 40
characters. Here every wildcard the matcher could try in more than one way is made to try
one: a run of `*` is one `*`; the fixed pieces between two `*` of a name, and the groups of
names between two `**`, are taken at their first place that fits (the regular-expression
form of an atomic group, a lookahead whose capture is then consumed), which is right for
globs, as each `*` can take whatever the pieces after it leave. Only the last `*` of a name
tries several places, each once. So a path is matched in time about its length times the
pattern's.

The rules are Git's, as `pathspec`'s `gitwildmatch` reads them: the last pattern that
matches decides, `!` negates, a pattern without a slash but at its end matches a name at
any depth, a trailing slash only folders, `**` any number of folders, and a pattern that
matches a folder matches everything in it. A pattern with an invalid bracket expression is
left out, as Git leaves it out. A pattern longer than `MAX_PATTERN` characters, and the
patterns of one file past `MAX_PATTERNS`, are skipped with a warning (`IgnoreRules.skipped`).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

# Git has no limit; real ignore files have lines of a few dozen characters and at most a few
# thousand patterns. Past these, matching each file would cost more than checking it.
MAX_PATTERN = 1000
MAX_PATTERNS = 10_000

_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9",
    "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z", "xdigit": "0-9A-Fa-f",
}
_names = itertools.count()  # group names, unique across every pattern of a combined expression


class _Invalid(ValueError):
    """A bracket expression without its closing bracket (or an empty range), an escape of
    nothing: Git leaves such a pattern out."""


def _bracket(seg: str, i: int) -> tuple[str, int]:
    """The regular expression of the bracket expression that starts after `seg[i - 1]`
    (`[`), and the index past its `]`. Never matches `/`."""
    j = i
    negated = j < len(seg) and seg[j] in "!^"
    j += negated
    items: list[str] = []
    chars: list[Optional[str]] = []  # each item's character (None: a class), for ranges
    first = True
    while j < len(seg) and (seg[j] != "]" or first):
        first = False
        if seg.startswith("[:", j):
            end = seg.find(":]", j + 2)
            name = seg[j + 2:end] if end >= 0 else None
            if name in _POSIX_CLASSES:
                items.append(_POSIX_CLASSES[name])
                chars.append(None)
                j = end + 2
                continue
        c = seg[j]
        if c == "\\":
            j += 1
            if j == len(seg):
                raise _Invalid(seg)
            c = seg[j]
        elif c == "-" and chars and chars[-1] is not None and j + 1 < len(seg) and seg[j + 1] != "]":
            hi = seg[j + 2] if seg[j + 1] == "\\" and j + 2 < len(seg) else seg[j + 1]
            if hi < chars[-1]:
                raise _Invalid(seg)  # (an empty range: Git matches nothing with it)
            items.append(f"-{re.escape(hi)}")
            chars.append(None)
            j += 3 if seg[j + 1] == "\\" else 2
            continue
        items.append(re.escape(c))
        chars.append(c)
        j += 1
    if j >= len(seg):
        raise _Invalid(seg)
    body = "".join(items)
    # (a range or a class can hold `/`: a name never does)
    return (f"[^/{body}]" if negated else f"(?!/)[{body}]"), j + 1


def _pieces(seg: str) -> list[Optional[list[str]]]:
    """A name's glob as its fixed pieces (lists of one-character expressions) with `None`
    for each run of `*`."""
    out: list[Optional[list[str]]] = [[]]
    i = 0
    while i < len(seg):
        c = seg[i]
        i += 1
        if c == "*":
            if out[-1] is not None:
                out.append(None)
            continue
        if out[-1] is None:
            out.append([])
        piece = out[-1]
        if c == "\\":
            if i == len(seg):
                raise _Invalid(seg)  # (an escape of nothing)
            piece.append(re.escape(seg[i]))
            i += 1
        elif c == "?":
            piece.append("[^/]")
        elif c == "[":
            expr, i = _bracket(seg, i)
            piece.append(expr)
        else:
            piece.append(re.escape(c))
    return out


def _name(seg: str) -> str:
    """The expression of one name's glob (matching within a name, never `/`)."""
    if seg == "*":
        return "[^/]+"  # (Git: a name `*` is never empty)
    parts = _pieces(seg)
    out = ["".join(parts[0] or [])]
    stars = [i for i, p in enumerate(parts) if p is None]
    for i in stars:
        after = "".join(parts[i + 1]) if i + 1 < len(parts) and parts[i + 1] is not None else ""
        if i == stars[-1]:
            out.append(f"[^/]*{after}")  # the last piece lies at the end: the one search that backtracks
        elif after:
            g = f"n{next(_names)}"
            out.append(f"(?=(?P<{g}>[^/]*?{after}))(?P={g})")
    return "".join(out)


def _first_fit(group: str, follow: str) -> str:
    """`group` (names joined by `/`) at the first folder depth from here where it matches
    and `follow` holds after it, taken there and nowhere else."""
    g = f"g{next(_names)}"
    return f"(?=(?P<{g}>(?:[^/]*/)*?{group}){follow})(?P={g})"


def _segments(text: str) -> Optional[tuple[bool, list[str]]]:
    """(whether it negates, its names with `**` for "any folders"), as `pathspec`'s
    gitwildmatch normalises them; None for a line that is no pattern."""
    if not text.endswith("\\ "):
        text = text.rstrip()
    if not text or text.startswith("#") or text == "/":
        return None
    negate = text.startswith("!")
    if negate:
        text = text[1:]
    segs = text.split("/")
    is_dir = not segs[-1]
    if not segs[0]:
        del segs[0]  # anchored at the ignore file's folder
    elif len(segs) == 1 or (len(segs) == 2 and not segs[1]):
        if segs[0] != "**":
            segs.insert(0, "**")  # a bare name: at any depth
    if not segs:
        return None
    if not segs[-1]:
        segs[-1] = "**"
    segs = [s for i, s in enumerate(segs) if not (s == "**" and i and segs[i - 1] == "**")]
    return negate, segs + ([""] if is_dir else [])


def _expression(segs: list[str]) -> str:
    """A pattern's expression, for `re.match` against a path relative to the ignore file's
    folder (a folder's path ends with `/`)."""
    is_dir = segs[-1] == ""
    if is_dir:
        segs = segs[:-1]
    if segs == ["**"] or segs == ["**", "*", "**"]:
        return "[^/]*/" if is_dir or len(segs) == 3 else "."
    if segs == ["**", "*"]:
        return "."
    trailing = segs[-1] == "**" and len(segs) > 1
    if trailing:
        segs = segs[:-1]
    leading = segs[0] == "**"
    if leading:
        segs = segs[1:]
    # groups of names between `**`: each taken at its first fit
    groups: list[list[str]] = [[]]
    for s in segs:
        if s == "**":
            groups.append([])
        else:
            groups[-1].append(_name(s))
    out = []
    for i, names in enumerate(groups):
        body = "/".join(names)
        last = i == len(groups) - 1
        follow = "/" if not last or trailing or is_dir else r"(?:/|\Z)"
        if i == 0 and not leading:
            out.append(body)  # anchored: at the start, where any placement would begin
            out.append(f"(?={follow})" if last else "")
        else:
            out.append(("/" if i else "") + _first_fit(body, follow))
    return "".join(out)


@dataclass
class IgnoreRules:
    """The patterns of one ignore file (or of the `exclude` setting), ready to match."""

    source: str  # what the patterns came from, for warnings: `sub/.gitignore`, `exclude`
    blocks: list[tuple[bool, "re.Pattern[str]"]] = field(default_factory=list)  # (negated, any of a run)
    skipped: list[str] = field(default_factory=list)  # one warning line each

    @classmethod
    def parse(cls, lines: Iterable[str], source: str) -> "IgnoreRules":
        rules = cls(source)
        runs: list[tuple[bool, list[str]]] = []
        count = 0
        for lineno, line in enumerate(lines, 1):
            if len(line) > MAX_PATTERN:
                rules.skipped.append(f"{source}:{lineno}: pattern skipped (longer than {MAX_PATTERN:,} characters): {_shown(line)}")
                continue
            parsed = _segments(line)
            if parsed is None:
                continue
            if count == MAX_PATTERNS:
                rules.skipped.append(f"{source}:{lineno}: this pattern and the ones after it skipped (more than {MAX_PATTERNS:,} patterns)")
                break
            negate, segs = parsed
            try:
                expr = _expression(segs)
            except _Invalid:
                continue
            count += 1
            if runs and runs[-1][0] == negate:
                runs[-1][1].append(expr)
            else:
                runs.append((negate, [expr]))
        rules.blocks = [(negate, _compiled(exprs)) for negate, exprs in runs]
        return rules

    def match_file(self, rel: str) -> bool:
        """Whether the patterns exclude `rel` (relative to their folder, with `/`; a folder's
        path ends with `/`): the last pattern that matches decides."""
        for negate, block in reversed(self.blocks):
            if block.match(rel) is not None:
                return not negate
        return False


def _compiled(exprs: list[str]) -> "re.Pattern[str]":
    """Any of `exprs`, as one expression (one call per file rather than one per pattern)."""
    try:
        return re.compile("|".join(f"(?:{e})" for e in exprs), re.DOTALL)
    except re.error:  # (not expected: each part is well formed) the parts that compile
        good = []
        for e in exprs:
            try:
                re.compile(e)
                good.append(e)
            except re.error:
                continue
        return re.compile("|".join(f"(?:{e})" for e in good) or "(?!)", re.DOTALL)


def _shown(pattern: str) -> str:
    """A skipped pattern as a warning shows it: its start, printable."""
    head = pattern[:40]
    return repr(head + "...") if len(pattern) > 40 else repr(head)
