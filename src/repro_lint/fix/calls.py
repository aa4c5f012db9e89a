"""Adding keyword arguments to a call in the call's own layout, within the line length.

A call's arguments keep the layout the file gives them:
- on one line: the keyword is appended there while the line stays within the project's
  line length; past it the call is wrapped as black and ruff format wrap it: the
  arguments on one indented line of their own (when the call closes its line and they fit
  there), else one argument per line with a trailing comma;
- one per line: the keyword gets a line of its own, with a trailing comma when the other
  arguments have one;
- on one indented line of their own (`f(\\n    a, b\\n)`): appended there while it fits,
  else one per line;
- several arguments a line over several lines (`f(\\n    a, b,\\n    c, d)`, or continued
  under the opening bracket): appended to the last line while it fits, else continued on a
  new line indented like the other continuation lines; when the last argument has a line of
  its own, the new one gets its own line too.
A call holding comments is never re-laid out: only the new argument's line is added.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import libcst as cst

_CLOSERS = re.compile(r"[)\]}]")


@dataclass(frozen=True)
class CallLayout:
    mode: str  # "hug" (arguments on one line of their own), "explode" (one per line), "break" (new argument on a new line)
    body: str = ""  # whitespace after the block's indentation on argument lines
    close: str = ""  # whitespace after the block's indentation before `)`
    indent: bool = True  # False: `body`/`close` are the whole indentation
    between: Optional[cst.BaseParenthesizableWhitespace] = None  # "break": whitespace before a new argument on a new line
    breaks: tuple = ()  # "break": for each new argument, whether it starts a new line


def _ws(indent: bool, rest: str) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(), empty_lines=[], indent=indent, last_line=cst.SimpleWhitespace(rest),
    )


def _has_comment(node: cst.CSTNode) -> bool:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Comment(self, _node: cst.Comment) -> None:
            found.append(1)

    node.visit(_Find())
    return bool(found)


def _code(module: cst.Module, node: cst.CSTNode) -> str:
    return module.code_for_node(node)


def arg_text(module: cst.Module, arg: cst.Arg) -> str:
    """An argument as it reads on one line (without its comma)."""
    return _code(module, arg.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=cst.SimpleWhitespace(""))).strip()


def keyword_text(name: str, value: str) -> str:
    return f"{name}={value}"


def _leading(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _relative(call_ws: str, stmt_ws: str) -> tuple[bool, str]:
    if call_ws.startswith(stmt_ws):
        return True, call_ws[len(stmt_ws):]
    return False, call_ws


def _closes_line(rest: str) -> bool:
    """Whether what follows a call on its line holds no closing bracket (the call's `)` is
    the line's last one, where black splits first)."""
    code = rest.split("#", 1)[0]
    return not _CLOSERS.search(code)


def _multiline(call: cst.Call) -> bool:
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return True
    for arg in call.args:
        if isinstance(arg.whitespace_after_arg, cst.ParenthesizedWhitespace):
            return True
        if isinstance(arg.comma, cst.Comma) and isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace):
            return True
    return False


def added_length(call: cst.Call, added: list) -> int:
    """How many characters adding the keyword texts `added` to `call` adds to its line."""
    return sum(len(a) for a in added) + 2 * (len(added) - (0 if call.args else 1))


def plan(
    module: cst.Module, call: cst.Call, span: tuple, lines: list, stmt_line: int, added: list, limit: int, unit: str,
    line_extra: int = 0,
) -> Optional[CallLayout]:
    """How to lay out `call` (the original node at `span`) with the keyword texts `added`;
    None: append in the call's own style, which already fits. `line_extra`: characters that
    all edits add to the call's line when it is on one line (this call's included)."""
    if not lines or span[0] > len(lines) or span[2] > len(lines) or stmt_line > len(lines):
        return None
    stmt_ws = _leading(lines[stmt_line - 1])
    extra = added_length(call, added)
    if not _multiline(call):
        line = lines[span[0] - 1]
        extra = max(extra, line_extra)
        if len(line.rstrip("\r\n")) + extra <= limit or _has_comment(call):
            return None
        indent, base = _relative(_leading(line), stmt_ws)
        args = [arg_text(module, a) for a in call.args]
        if _closes_line(line[span[3]:]) and not any(isinstance(a.comma, cst.Comma) for a in call.args[-1:]):
            hugged = len(_leading(line)) + len(unit) + len(", ".join(args)) + extra
            if hugged <= limit:
                return CallLayout("hug", base + unit, base, indent)
        return CallLayout("explode", base + unit, base, indent)
    if _has_comment(call) or not call.args:
        return None
    before = call.whitespace_before_args
    breaks = [
        a.comma.whitespace_after for a in call.args[:-1]
        if isinstance(a.comma, cst.Comma) and isinstance(a.comma.whitespace_after, cst.ParenthesizedWhitespace)
    ]
    if (
        not isinstance(before, cst.ParenthesizedWhitespace) and len(call.args) > 1 and len(breaks) == len(call.args) - 1
        and not isinstance(call.args[-1].comma, cst.Comma)
    ):
        # one per line after the first, aligned under the bracket: the new ones too, unless
        # such a line would be too long (then black's layout)
        end_line = lines[span[2] - 1].rstrip("\r\n")
        lead = len(_leading(end_line))
        closing = len(end_line) - (span[3] - 1)  # `)` and what follows it
        widths = [lead + len(text) + (closing if i == len(added) - 1 else 1) for i, text in enumerate(added)]
        if max(widths) <= limit:
            return None
        indent, base = _relative(_leading(lines[span[0] - 1]), stmt_ws)
        return CallLayout("explode", base + unit, base, indent)
    if isinstance(before, cst.ParenthesizedWhitespace):
        if len(call.args) > 1 and len(breaks) == len(call.args) - 1:
            return None  # one per line: the new argument gets its own line
        if not breaks:
            last_line = _last_arg_line(lines, span)
            if last_line is not None:
                # the arguments on one line of their own, `)` on the next: black's layout;
                # an argument that spans lines itself (a list with a trailing comma) cannot
                # share its last line: one argument per line, as black writes it
                if last_line == span[0] + 1 and len(lines[last_line - 1].rstrip("\r\n")) + extra <= limit:
                    return None
                return CallLayout("explode", before.last_line.value, _closing_ws(call), before.indent)
        breaks.insert(0, before)
    if not breaks or isinstance(call.args[-1].comma, cst.Comma):
        return None
    last_sep = call.args[-2].comma if len(call.args) > 1 else None
    if isinstance(last_sep, cst.Comma) and isinstance(last_sep.whitespace_after, cst.ParenthesizedWhitespace):
        return None  # the last argument has a line of its own: so does the new one
    # several arguments a line: fill the last line, then continue on lines indented like the others
    end_line = lines[span[2] - 1].rstrip("\r\n")
    width = len(end_line)
    margin = len(_leading(end_line)) + len(end_line) - (span[3] - 1)  # the line's indentation, and `)` with what follows
    fills = []
    for i, text in enumerate(added):
        step = len(text) + (2 if i or call.args else 0)
        if width + step <= limit:
            fills.append(False)
            width += step
        else:
            fills.append(True)
            width = margin + len(text)
            if width > limit:
                # a continuation line too long even alone (aligned under a far bracket): black's layout
                indent, base = _relative(_leading(lines[span[0] - 1]), stmt_ws)
                return CallLayout("explode", base + unit, base, indent)
    return CallLayout("break", between=breaks[-1], breaks=tuple(fills))


def _last_arg_line(lines: list, span: tuple) -> Optional[int]:
    """The line before the one holding the call's `)`, when `)` starts its line."""
    end = span[2]
    if end < 2 or lines[end - 1].strip()[:1] != ")":
        return None
    return end - 1


def _closing_ws(call: cst.Call) -> str:
    last = call.args[-1]
    ws = last.comma.whitespace_after if isinstance(last.comma, cst.Comma) else last.whitespace_after_arg
    return ws.last_line.value if isinstance(ws, cst.ParenthesizedWhitespace) else ""


def _plain_whitespace(ws):
    """Whitespace after a comma, without the comment it may carry (it must not be copied)."""
    if isinstance(ws, cst.ParenthesizedWhitespace):
        return ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return ws


def _keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        value=value, keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def relayout(call: cst.Call, layout: CallLayout) -> cst.Call:
    """The call with its arguments on one line of their own, or one per line."""
    args = [a.with_changes(whitespace_after_arg=cst.SimpleWhitespace("")) for a in call.args]
    body = _ws(layout.indent, layout.body)
    close = _ws(layout.indent, layout.close)
    out = []
    for i, arg in enumerate(args):
        last = i == len(args) - 1
        if layout.mode == "hug":
            comma = cst.MaybeSentinel.DEFAULT if last else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            arg = arg.with_changes(comma=comma, whitespace_after_arg=close if last else cst.SimpleWhitespace(""))
        else:
            arg = arg.with_changes(comma=cst.Comma(whitespace_after=close if last else body))
        if arg.star:
            arg = arg.with_changes(whitespace_after_star=cst.SimpleWhitespace(""))
        out.append(arg)
    return call.with_changes(whitespace_before_args=body, args=out)


def with_keywords(call: cst.Call, keywords: list, indent: str, layout: Optional[CallLayout] = None) -> cst.Call:
    """`call` with the keyword arguments `keywords` ((name, value expression) pairs) added."""
    args = list(call.args)
    for n, (name, value) in enumerate(keywords):
        new = _keyword(name, value)
        if not args:
            before = call.whitespace_before_args
            if isinstance(before, cst.ParenthesizedWhitespace):
                # `f(\n    # comment\n)`: the argument on its own line, `)` stays on its own
                closing = before.last_line
                call = call.with_changes(whitespace_before_args=before.with_changes(last_line=cst.SimpleWhitespace(closing.value + indent)))
                new = new.with_changes(comma=cst.Comma(whitespace_after=cst.ParenthesizedWhitespace(indent=before.indent, last_line=closing)))
            args.append(new)
            continue
        last = args[-1]
        if layout is not None and layout.mode == "break" and layout.between is not None:
            wrap = layout.breaks[n] if n < len(layout.breaks) else True
            between = _plain_whitespace(layout.between) if wrap else cst.SimpleWhitespace(" ")
        elif len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
            between = _plain_whitespace(args[-2].comma.whitespace_after)
        else:
            between = cst.SimpleWhitespace(" ")
        if isinstance(last.comma, cst.Comma):
            # a trailing comma: the new argument takes it, on a line of its own like the others
            if not isinstance(between, cst.ParenthesizedWhitespace) and isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
                between = _plain_whitespace(call.whitespace_before_args)
            after = last.comma.whitespace_after
            if isinstance(after, cst.ParenthesizedWhitespace) and isinstance(between, cst.ParenthesizedWhitespace):
                # a comment at the end of the last argument's line stays on that line
                between = between.with_changes(first_line=after.first_line)
                after = after.with_changes(first_line=cst.TrailingWhitespace())
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_before=last.comma.whitespace_before, whitespace_after=between))
            args.append(new.with_changes(comma=last.comma.with_changes(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=after)))
        else:
            # what followed the last argument (a comment, the line break before `)`) follows the new one
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=between), whitespace_after_arg=cst.SimpleWhitespace(""))
            args.append(new.with_changes(whitespace_after_arg=last.whitespace_after_arg))
    call = call.with_changes(args=args)
    if layout is not None and layout.mode in ("hug", "explode"):
        call = relayout(call, layout)
    return call


def wrap_statement(module: cst.Module, stmt: cst.CSTNode, indent: str, limit: int, unit: str) -> cst.CSTNode:
    """An inserted simple statement whose line would pass the line length, with its call
    wrapped like black wraps it (`indent`: the indentation it gets where it goes)."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return stmt
    text = module.code_for_node(stmt.with_changes(leading_lines=[])).rstrip("\r\n")
    if "\n" in text or len(indent) + len(text) <= limit:
        return stmt
    small = stmt.body[0]
    value = getattr(small, "value", None)
    if not isinstance(value, cst.Call) or not value.args or _has_comment(value):
        return stmt
    args = [arg_text(module, a) for a in value.args]
    mode = "hug" if len(indent) + len(unit) + len(", ".join(args)) <= limit else "explode"
    return stmt.with_changes(body=[small.with_changes(value=relayout(value, CallLayout(mode, unit, "", True)))])
