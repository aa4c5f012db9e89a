"""Output for people: findings with their source line and a marker, then a summary."""

from __future__ import annotations

import os
from typing import IO, Optional

from repro_lint.findings import Finding


def make_console(stream: IO[str], color: Optional[bool] = None):
    from rich.console import Console

    if color is None:
        color = stream.isatty() and "NO_COLOR" not in os.environ
    return Console(
        file=stream,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        soft_wrap=True,
        emoji=False,
        markup=False,
    )


def concise(findings: list[Finding]) -> str:
    return "".join(f"{f.location.path}:{f.location.line}:{f.location.col}: {f.code} {f.message}{_fix_mark(f)}\n" for f in findings)


def _fix_mark(f: Finding) -> str:
    if not f.fixable:
        return ""
    return " [*]" if f.fix.safety == "safe" else " [-]"  # type: ignore[union-attr]


def _source_lines(path: str, cache: dict) -> list[str]:
    if path not in cache:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
            from repro_lint.sourcetext import decode_source, split_lines

            cache[path] = split_lines(decode_source(data))
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError):
            cache[path] = []
    return cache[path]


def render(findings: list[Finding], console, show_source: bool = True) -> None:
    from rich.text import Text

    lines_cache: dict[str, list[str]] = {}
    for f in findings:
        loc = f.location
        head = Text()
        head.append(f"{loc.path}:{loc.line}:{loc.col}:", style="bold")
        head.append(" ")
        head.append(f.code, style="bold red")
        head.append(f" {f.message}")
        if f.fixable:
            head.append(_fix_mark(f), style="cyan")
        console.print(head)
        if show_source:
            src = _source_lines(loc.path, lines_cache)
            if 0 < loc.line <= len(src):
                text = src[loc.line - 1].expandtabs(1)
                gutter = f"{loc.line:>4} | "
                console.print(Text(gutter, style="blue") + Text(text))
                start = max(loc.col - 1, 0)
                end = loc.end_col - 1 if loc.end_line == loc.line else len(text)
                width = max(end - start, 1)
                console.print(Text(" " * 4 + " | ", style="blue") + Text(" " * start + "^" * width, style="red"))
        for r in f.related[:5]:
            rl = r.location
            console.print(Text(f"     = related: {rl.path}:{rl.line}:{rl.col}: {r.message}", style="dim"))
        if len(f.related) > 5:
            console.print(Text(f"     = ... and {len(f.related) - 5} more related locations", style="dim"))
        if f.fix is not None and f.fixable:
            how = "--fix" if f.fix.safety == "safe" else "--unsafe-fixes"
            console.print(Text(f"     = fix ({f.fix.safety}, {how}): {f.fix.description}", style="cyan"))
        console.print()


def summary_line(findings: list[Finding], fixed: int = 0) -> str:
    if not findings:
        return "All checks passed." if not fixed else f"Fixed {fixed} finding{'s' if fixed != 1 else ''}, none remain."
    by_code: dict[str, int] = {}
    for f in findings:
        by_code[f.code] = by_code.get(f.code, 0) + 1
    counts = ", ".join(f"{c}: {n}" for c, n in sorted(by_code.items()))
    safe = sum(1 for f in findings if f.fixable and f.fix.safety == "safe")  # type: ignore[union-attr]
    unsafe = sum(1 for f in findings if f.fixable and f.fix.safety == "unsafe")  # type: ignore[union-attr]
    n = len(findings)
    out = f"Found {n} finding{'s' if n != 1 else ''} ({counts})."
    if safe:
        out += f" {safe} fixable with --fix."
    if unsafe:
        out += f" {unsafe} more fixable with --unsafe-fixes."
    if fixed:
        out = f"Fixed {fixed}; " + out[0].lower() + out[1:]
    return out


def statistics(findings: list[Finding], console) -> None:
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None)
    table.add_column("count", justify="right")
    table.add_column("code")
    table.add_column("name")
    table.add_column("fixable")
    rows: dict[str, list] = {}
    for f in findings:
        row = rows.setdefault(f.code, [0, f.name, 0])
        row[0] += 1
        row[2] += 1 if f.fixable else 0
    for code, (n, name, fixable) in sorted(rows.items(), key=lambda kv: (-kv[1][0], kv[0])):
        table.add_row(str(n), code, name, f"{fixable}" if fixable else "")
    console.print(table)
