"""Adding items to a dict display in the display's own layout, within the line length.

- one item per line (`{\\n    "a": 1,\\n    "b": 2,\\n}`): each new item gets a line of its own,
  indented like the others, with a trailing comma when the last item had one; a comment at
  the end of the last item's line stays there;
- on one line: the items are appended there while the line stays within the project's line
  length; past it the display is laid out one item per line with a trailing comma (as black
  writes an exploded collection), its closing brace on a line of its own;
- an empty display `{}` gets its items on its line.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from repro_lint.fix.calls import _has_comment, _leading, _relative  # (the layout is read as for calls)


def _ws(indent: bool, rest: str) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(), empty_lines=[], indent=indent, last_line=cst.SimpleWhitespace(rest),
    )


def _plain(ws):
    """Whitespace after a comma, without the comment it may carry (it must not be copied)."""
    if isinstance(ws, cst.ParenthesizedWhitespace):
        return ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return ws


def _multiline(node: cst.Dict) -> bool:
    if isinstance(node.lbrace.whitespace_after, cst.ParenthesizedWhitespace):
        return True
    return any(
        isinstance(e.comma, cst.Comma) and isinstance(e.comma.whitespace_after, cst.ParenthesizedWhitespace) for e in node.elements
    )


def item_text(key: str, value: str) -> str:
    return f"{key}: {value}"


def plan(node: cst.Dict, span: tuple, lines: list, stmt_line: int, added: list, limit: int, unit: str) -> Optional[tuple]:
    """None to add the items in the display's own layout; else (body, close, indent) of the
    one-item-per-line layout it is given (the whitespace after the statement's indentation
    of the item lines and of the closing brace, and whether that indentation comes first)."""
    if _multiline(node) or not lines or span[0] > len(lines) or stmt_line > len(lines):
        return None
    line = lines[span[0] - 1].rstrip("\r\n")
    extra = sum(len(a) + 2 for a in added) - (0 if node.elements else 2)
    if len(line) + extra <= limit or _has_comment(node):
        return None
    indent, base = _relative(_leading(lines[span[0] - 1]), _leading(lines[stmt_line - 1]))
    return (base + unit, base, indent)


def with_items(node: cst.Dict, items: list, layout: Optional[tuple] = None) -> cst.Dict:
    """`node` with the `(key, value)` expression pairs added."""
    elements = list(node.elements)
    new = [
        cst.DictElement(key=k, value=v, whitespace_before_colon=cst.SimpleWhitespace(""), whitespace_after_colon=cst.SimpleWhitespace(" "))
        for k, v in items
    ]
    if not new:
        return node
    if layout is not None:
        body, close, indent = layout
        out = []
        for element in elements + new:
            out.append(element.with_changes(comma=cst.Comma(whitespace_after=_ws(indent, body))))
        out[-1] = out[-1].with_changes(comma=cst.Comma(whitespace_after=_ws(indent, close)))
        return node.with_changes(
            lbrace=node.lbrace.with_changes(whitespace_after=_ws(indent, body)),
            elements=out,
            rbrace=node.rbrace.with_changes(whitespace_before=cst.SimpleWhitespace("")),
        )
    if not elements:
        for i, element in enumerate(new[:-1]):
            new[i] = element.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return node.with_changes(elements=new)
    if len(elements) >= 2 and isinstance(elements[-2].comma, cst.Comma):
        between = _plain(elements[-2].comma.whitespace_after)
    elif isinstance(node.lbrace.whitespace_after, cst.ParenthesizedWhitespace):
        between = _plain(node.lbrace.whitespace_after)
    else:
        between = cst.SimpleWhitespace(" ")
    last = elements[-1]
    close = node.rbrace.whitespace_before
    first_between = between
    if (
        isinstance(close, cst.ParenthesizedWhitespace) and close.first_line.comment is not None
        and isinstance(between, cst.ParenthesizedWhitespace)
    ):
        # a comment at the end of the last item's line stays on that line
        first_between = between.with_changes(first_line=close.first_line)
        close = close.with_changes(first_line=cst.TrailingWhitespace())
    between = _plain(between)
    if isinstance(last.comma, cst.Comma):
        # a trailing comma: the new items take it, each on a line like the others
        elements[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=first_between))
        for i, element in enumerate(new):
            ws = last.comma.whitespace_after if i == len(new) - 1 else between
            new[i] = element.with_changes(comma=cst.Comma(whitespace_after=ws))
    else:
        elements[-1] = last.with_changes(comma=cst.Comma(whitespace_after=first_between))
        for i, element in enumerate(new[:-1]):
            new[i] = element.with_changes(comma=cst.Comma(whitespace_after=between))
    return node.with_changes(elements=elements + new, rbrace=node.rbrace.with_changes(whitespace_before=close))
