"""Output for people: findings with their source line and a marker, then a summary."""

from __future__ import annotations

import os
from typing import IO, Iterable, Iterator, Optional

from repro_lint.core.findings import Finding
from repro_lint.output.locations import Locator
from repro_lint.output.log_safe import line_start, neutral


def color_wanted(stream: IO[str], choice: str = "auto") -> bool:
    """`--color`: `always`, `never`, or `auto`: a terminal, unless NO_COLOR is set to a
    non-empty value; FORCE_COLOR set to a non-empty value colours a pipe or a file too
    (NO_COLOR wins over it, as in ruff)."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def concise(findings: list[Finding], locator: Optional[Locator] = None) -> str:
    """One line per finding, `[*]` (safe fix) or `[-]` (unsafe fix) right after the code."""
    return "".join(concise_lines(findings, locator))


def concise_lines(findings: list[Finding], locator: Optional[Locator] = None) -> Iterator[str]:
    """The lines of `concise`, made as they are written (a large project's report is tens
    of megabytes built as one string)."""
    locator = locator or Locator()
    for f in findings:
        yield f"{line_start(neutral(locator.label(f.location)))}: {f.code}{_fix_mark(f)} {neutral(f.message)}\n"


def _fix_mark(f: Finding) -> str:
    if not f.fixable:
        return ""
    return " [*]" if f.fix.safety == "safe" else " [-]"  # type: ignore[union-attr]


# ANSI styles of the text report (SGR parameters)
_STYLES = {"label": "1", "code": "1;31", "fix": "36", "gutter": "34", "marker": "31", "related": "2", "help": "32"}
def _plain(text: str) -> str:
    # a checked file's own text is shown (names, lines): nothing a terminal or a CI log
    # takes as a command (`log_safe`)
    return neutral(text)


class _Styler:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, style: str, text: str) -> str:
        return f"\x1b[{_STYLES[style]}m{text}\x1b[0m" if self.color and text else text


def render(findings: list[Finding], color: bool = False, show_source: bool = True, locator: Optional[Locator] = None) -> str:
    """The report of `findings` for people, as one string (`render_chunks` joined)."""
    return "".join(render_chunks(findings, color, show_source, locator))


def render_chunks(findings: Iterable[Finding], color: bool = False, show_source: bool = True, locator: Optional[Locator] = None) -> Iterator[str]:
    """The report for people, one finding's text at a time: a large project's report is
    written as it is made, not held whole (tens of megabytes for 40,000 findings). Plain
    strings: it runs for every finding, where a rendering library cost more than the rules."""
    locator = locator or Locator()
    paint = _Styler(color)
    for f in findings:
        out: list[str] = []
        add = out.append
        shown = locator.shown(f.location)
        mark = paint("fix", _fix_mark(f)) if f.fixable else ""
        add(f"{paint('label', line_start(_plain(shown.label)) + ':')} {paint('code', f.code)}{mark} {_plain(f.message)}\n")
        if show_source:
            line = locator.source_line(f.location.path, f.location.line)
            if line is not None:
                text = _plain(line.expandtabs(1))
                add(f"{paint('gutter', f'{shown.line:>4} | ')}{text}\n")
                start = max(shown.col - 1, 0)
                end = shown.end_col - 1 if shown.end_line == shown.line else len(text)
                width = max(end - start, 1)
                add(f"{paint('gutter', ' ' * 4 + ' | ')}{paint('marker', ' ' * start + '^' * width)}\n")
        for r in f.related[:5]:
            add(paint("related", _plain(f"     = related: {locator.label(r.location)}: {r.message}")) + "\n")
        if len(f.related) > 5:
            add(paint("related", f"     = ... and {len(f.related) - 5} more related locations") + "\n")
        if f.help:
            add(paint("help", _plain(f"     = help: {f.help}")) + "\n")
        if f.fix is not None and f.fixable:
            how = "--fix" if f.fix.safety == "safe" else "--unsafe-fixes"
            add(paint("fix", _plain(f"     = fix ({f.fix.safety}, {how}): {f.fix.description}")) + "\n")
            for o in f.fix.follow_ons:
                how = "--fix" if o.safety == "safe" and f.fix.safety == "safe" else "--unsafe-fixes"
                where = f" in {o.path}" if o.path != f.location.path else ""
                add(paint("fix", _plain(f"     = then ({how}): {o.code}{where}: {o.description}")) + "\n")
        add("\n")
        yield "".join(out)


def summary_line(findings: list[Finding], fixed: int = 0, follow_ons_fixed: int = 0) -> str:
    """"Found N findings (...). S fixable with --fix, then F follow-on fixes (...). U more
    fixable with --unsafe-fixes." — follow-ons (fixes that earlier fixes reveal,
    `Fix.follow_ons`) are counted apart, so that the counts agree with what --fix reports."""
    note = f" ({follow_ons_fixed} follow-on)" if follow_ons_fixed else ""
    if not findings:
        return f"Fixed {fixed} finding{'s' if fixed != 1 else ''}{note}, none remain." if fixed else "All checks passed."
    by_code: dict[str, int] = {}
    for f in findings:
        by_code[f.code] = by_code.get(f.code, 0) + 1
    counts = ", ".join(f"{c}: {n}" for c, n in sorted(by_code.items()))
    safe = sum(1 for f in findings if f.fixable and f.fix.safety == "safe")  # type: ignore[union-attr]
    unsafe = sum(1 for f in findings if f.fixable and f.fix.safety == "unsafe")  # type: ignore[union-attr]
    with_fix, with_unsafe = follow_on_counts(findings)
    n = len(findings)
    out = f"Found {n} finding{'s' if n != 1 else ''} ({counts})."
    if safe:
        out += f" {safe} fixable with --fix{_then(with_fix)}."
    if unsafe:
        out += f" {unsafe} more fixable with --unsafe-fixes{_then(with_unsafe)}."
    elif with_unsafe:
        k = sum(with_unsafe.values())
        out += f" With --unsafe-fixes, {k} more follow-on fix{'es' if k != 1 else ''} ({_codes(with_unsafe)})."
    if fixed:
        out = f"Fixed {fixed}{note}; " + out[0].lower() + out[1:]
    return out


def _codes(counts: dict) -> str:
    return ", ".join(f"{c}: {k}" for c, k in sorted(counts.items()))


def _then(counts: dict) -> str:
    n = sum(counts.values())
    return f", then {n} follow-on fix{'es' if n != 1 else ''} ({_codes(counts)})" if n else ""


def follow_on_counts(findings: list[Finding]) -> tuple[dict, dict]:
    """The follow-on fixes the fixes of `findings` reveal, by code: (those --fix makes, those
    it makes only with --unsafe-fixes). One fix revealed by several programs counts once."""
    safe: dict = {}
    unsafe: dict = {}
    seen = set()
    for f in findings:
        if not f.fixable:
            continue
        for o in f.fix.follow_ons:  # type: ignore[union-attr]
            key = (o.code, o.path, o.line, o.description)
            if key in seen:
                continue
            seen.add(key)
            table = safe if f.fix.safety == "safe" and o.safety == "safe" else unsafe  # type: ignore[union-attr]
            table[o.code] = table.get(o.code, 0) + 1
    return safe, unsafe


def statistics(findings: list[Finding], unsafe: bool = False) -> str:
    """`--statistics` for people: count, code, name and how many `--fix` fixes, one rule a
    line, most frequent first (plain columns, never cut to a terminal's width). Unsafe
    fixes are counted as fixable only with `--unsafe-fixes` (as ruff counts them); without
    it they are named as such."""
    rows = []
    for row in statistics_rows(findings, unsafe):
        notes = []
        if row["fixable"]:
            notes.append(f"{row['fixable']} fixable")
        if not unsafe and row["fixable_unsafe"]:
            notes.append(f"{row['fixable_unsafe']} fixable with --unsafe-fixes")
        rows.append([str(row["count"]), row["code"], row["name"], ", ".join(notes)])
    return plain_table(rows)


def statistics_rows(findings: list[Finding], unsafe: bool = False) -> list[dict]:
    """Per rule, most frequent first: `code`, `name`, `count`, `fixable` (what `--fix`
    applies: safe fixes, and unsafe ones with `unsafe`), `fixable_safe`, `fixable_unsafe`."""
    rows: dict[str, dict] = {}
    for f in findings:
        row = rows.setdefault(f.code, {"code": f.code, "name": f.name, "count": 0, "fixable": 0, "fixable_safe": 0, "fixable_unsafe": 0})
        row["count"] += 1
        if f.fixable:
            kind = "fixable_safe" if f.fix.safety == "safe" else "fixable_unsafe"  # type: ignore[union-attr]
            row[kind] += 1
            row["fixable"] += 1 if kind == "fixable_safe" or unsafe else 0
    return sorted(rows.values(), key=lambda r: (-r["count"], r["code"]))


def plain_table(rows: list[list[str]], header: Optional[list[str]] = None) -> str:
    """Left-aligned columns (a number column right-aligned), two spaces apart."""
    table = ([header] if header else []) + rows
    if not table:
        return ""
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    numeric = [all(r[i].isdigit() for r in rows) and bool(rows) for i in range(len(table[0]))]
    out = []
    for r in table:
        cells = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric)]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out) + "\n"
