"""Keyword arguments added to a call, placed on the text from `ast`: what `calls.plan` and
`calls.with_keywords` make of the call on libcst's tree, for the layouts told apart here.

- a call on one line: the keywords appended there while the line stays within the line
  length; past it, the call wrapped as black wraps it (its arguments on one indented line of
  their own when the call closes its line and they fit there, else one argument per line
  with a trailing comma);
- one argument per line, the first below `(`: a line of its own for each new keyword;
- the arguments on one line of their own between `(` and `)` (`f(\\n    a, b\\n)`): appended
  there while that line stays within the line length, else one argument per line.

libcst writes an argument back as the text it was read from; here each argument is its slice
of the text, taken only where nothing but spaces and commas stands between the arguments and
the brackets (no parentheses around one, no comment, no continuation). Anything else raises
`Unsupported` (the caller uses libcst).
"""

from __future__ import annotations

import ast
import re

from repro_lint.fix.ast_layout import NEWLINE, AstLayout, Unsupported

_NL = r"(?:\r\n|\n|\r)"
_COMMA = re.compile(r"[ \t]*,([ \t]*)")
_OPEN = re.compile(r"\([ \t]*" + _NL + r"(?:[ \t]*" + _NL + r")*[ \t]*")  # `(`, then the first argument on a line below
_BREAK = re.compile(r"[ \t]*,[ \t]*" + _NL + r"(?:[ \t]*" + _NL + r")*([ \t]*)")  # a comma, then the next argument below
_TRAILING_COMMA = re.compile(r"[ \t]*,[ \t]*" + _NL + r"(?:[ \t]*" + _NL + r")*[ \t]*\)")
_CLOSE = re.compile(r"[ \t]*" + _NL + r"(?:[ \t]*" + _NL + r")*([ \t]*)\)")  # the line break before `)` on a line of its own
_CLOSERS = re.compile(r"[)\]}]")


def added_length(call: ast.Call, texts: list) -> int:
    """`calls.added_length`: what adding the keyword texts adds to the call's line."""
    return sum(len(t) for t in texts) + 2 * (len(texts) - (0 if call.args or call.keywords else 1))


def keyword_edit(layout: AstLayout, call: ast.Call, span: tuple, texts: list, limit: int, line_extra: int) -> tuple:
    """The keyword texts `texts` added to the call at `span`, as an edit of the text
    (offset, offset, new text). `line_extra`: what all keywords added to calls on the call's
    line add to it (a call on one line)."""
    if span[0] > len(layout.lines) or span[2] > len(layout.lines):
        raise Unsupported("a call past the text")
    if span[0] != span[2]:
        if _one_per_line(layout, call, span):
            return _keyword_lines(layout, call, span, texts)
        return _own_line(layout, call, span, texts, limit)
    line = layout.line_text(span[0]).rstrip("\r\n")
    extra = max(added_length(call, texts), line_extra)
    if len(line) + extra <= limit:
        return _keyword_insert(layout, call, span, texts)
    if line_extra != added_length(call, texts):
        raise Unsupported("keywords for several calls of a line to wrap")
    return _wrapped(layout, call, span, texts, limit, extra)


def _offset(layout: AstLayout, line: int, byte_col: int) -> int:
    return layout.starts[line - 1] + layout.col(line, byte_col)


def _arguments(call: ast.Call) -> list:
    if any(isinstance(a, ast.GeneratorExp) for a in call.args):
        raise Unsupported("a generator argument")
    return sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))


def _keyword_insert(layout: AstLayout, call: ast.Call, span: tuple, texts: list) -> tuple:
    """Keywords appended to a call on one line (it stays within the line length)."""
    line = layout.line_text(span[0])
    col = layout.col
    close = span[3] - 1
    if line[close:close + 1] != ")":
        raise Unsupported("a call's brackets")
    args = _arguments(call)
    base = layout.starts[span[0] - 1]
    if not args:
        func = call.func
        if func.end_lineno != span[0] or line[col(span[0], func.end_col_offset):close] != "(":  # type: ignore[arg-type]
            raise Unsupported("a call's brackets")
        return (base + close, base + close, ", ".join(texts))
    last = args[-1]
    end = col(span[0], last.end_col_offset)  # type: ignore[arg-type]
    if last.end_lineno != span[0] or line[end:close].strip(" \t"):
        raise Unsupported("what follows the last argument")
    return (base + end, base + end, "".join("," + _between(layout, args, span[0]) + t for t in texts))


def _between(layout: AstLayout, args: list, line_no: int) -> str:
    """The spaces after the comma before the last argument (one space when it is the only one):
    `calls.with_keywords` separates the new ones so."""
    if len(args) < 2:
        return " "
    before, last = args[-2], args[-1]
    line = layout.line_text(line_no)
    match = _COMMA.fullmatch(line[layout.col(line_no, before.end_col_offset):layout.col(line_no, last.col_offset)])
    if match is None or before.end_lineno != line_no or last.lineno != line_no:
        raise Unsupported("what stands between the arguments")
    return match.group(1)


def _one_per_line(layout: AstLayout, call: ast.Call, span: tuple) -> bool:
    """Whether the call's arguments are one per line, the first below `(`."""
    args = _arguments(call)
    if len(args) < 2 or call.func.end_lineno != span[0]:
        return False
    text = layout.text
    if not _OPEN.fullmatch(text[_offset(layout, span[0], call.func.end_col_offset):_offset(layout, args[0].lineno, args[0].col_offset)]):  # type: ignore[arg-type]
        return False
    return all(
        _BREAK.fullmatch(text[_offset(layout, a.end_lineno, a.end_col_offset):_offset(layout, b.lineno, b.col_offset)])  # type: ignore[arg-type]
        for a, b in zip(args, args[1:])
    )


def _keyword_lines(layout: AstLayout, call: ast.Call, span: tuple, texts: list) -> tuple:
    """Keywords added to a call whose arguments are one per line, the first below `(`:
    each on a line of its own, indented as the last argument, after it (`calls.plan`
    leaves such a call in its layout whatever its length)."""
    text = layout.text
    start, stop = _offset(layout, span[0], call.func.end_col_offset), layout.starts[span[2] - 1] + span[3]  # type: ignore[arg-type]
    args = _arguments(call)
    if "#" in text[start:stop]:
        raise Unsupported("a call's layout")
    indent = ""
    for before, arg in zip(args, args[1:]):
        match = _BREAK.fullmatch(text[_offset(layout, before.end_lineno, before.end_col_offset):_offset(layout, arg.lineno, arg.col_offset)])  # type: ignore[arg-type]
        if match is None:
            raise Unsupported("arguments that share a line")
        indent = match.group(1)
    newline = _newline(layout)
    end = _offset(layout, args[-1].end_lineno, args[-1].end_col_offset)  # type: ignore[arg-type]
    rest = text[end:stop]
    if _TRAILING_COMMA.fullmatch(rest):
        # (the last argument's comma ends its line: the new ones go on the lines below it)
        at = end + NEWLINE.search(rest).end()  # type: ignore[union-attr]
        return (at, at, "".join(indent + t + "," + newline for t in texts))
    if rest.strip(" \t\r\n") == ")":
        return (end, end, "".join("," + newline + indent + t for t in texts))
    raise Unsupported("what follows the last argument")


def _newline(layout: AstLayout) -> str:
    """libcst's default newline: the text's first line end."""
    match = NEWLINE.search(layout.text)
    return match.group(0) if match else "\n"


def _leading(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _brackets(layout: AstLayout, call: ast.Call, span: tuple) -> tuple[int, int]:
    """The offsets of the call's `(` and `)`, where no comment or continuation stands between them."""
    text = layout.text
    if call.func.end_lineno != span[0]:
        raise Unsupported("a call's brackets")
    start = _offset(layout, span[0], call.func.end_col_offset)  # type: ignore[arg-type]
    close = layout.starts[span[2] - 1] + span[3] - 1
    opening = start + len(text[start:close]) - len(text[start:close].lstrip(" \t"))
    if text[opening:opening + 1] != "(" or text[close:close + 1] != ")" or "#" in text[opening:close] or "\\" in text[opening:close]:
        raise Unsupported("a call's brackets")
    return opening, close


def _argument_texts(layout: AstLayout, args: list, line_no: int) -> list:
    """Each argument's text (`calls.arg_text`), all on line `line_no`, from the text: only
    spaces and one comma between two of them (nothing libcst would write otherwise)."""
    out = []
    line = layout.line_text(line_no)
    col = layout.col
    for i, arg in enumerate(args):
        if arg.lineno != line_no or arg.end_lineno != line_no:
            raise Unsupported("an argument over several lines")
        start, end = col(line_no, arg.col_offset), col(line_no, arg.end_col_offset)
        piece = line[start:end]
        if isinstance(arg, ast.Starred) and col(line_no, arg.value.col_offset) != start + 1:
            raise Unsupported("spaces after a star")
        if isinstance(arg, ast.keyword) and arg.arg is None and col(line_no, arg.value.col_offset) != start + 2:
            raise Unsupported("spaces after a star")
        if i + 1 < len(args) and not _COMMA.fullmatch(line[end:col(line_no, args[i + 1].col_offset)]):
            raise Unsupported("what stands between the arguments")
        out.append(piece)
    return out


def _wrapped(layout: AstLayout, call: ast.Call, span: tuple, texts: list, limit: int, extra: int) -> tuple:
    """A call on one line that the keywords would take past the line length, wrapped as
    `calls.plan` and `calls.relayout` wrap it: its arguments on one indented line of their
    own ("hug"), or one per line ("explode"), `)` on a line of its own."""
    st = layout.statement_at(span)
    if st is None:
        raise Unsupported("a call outside the statements")
    stmt_ws = _leading(layout.line_text(st.start[0]))
    if st.block.indent != stmt_ws:
        raise Unsupported("a statement that does not start its line")  # (libcst indents from its block)
    opening, close = _brackets(layout, call, span)
    args = _arguments(call)
    line = layout.line_text(span[0]).rstrip("\r\n")
    pieces = _argument_texts(layout, args, span[0])
    before_args = layout.text[opening + 1:_offset(layout, span[0], args[0].col_offset)] if args else ""
    after_args = layout.text[_offset(layout, span[0], args[-1].end_col_offset):close] if args else layout.text[opening + 1:close]  # type: ignore[arg-type]
    if before_args.strip(" \t") or after_args.strip(" \t") not in ("", ","):
        raise Unsupported("what stands inside the brackets")
    trailing_comma = "," in after_args
    lead = _leading(line)
    unit = layout.first_indent or "    "  # (libcst's default indentation: the first indented block's)
    newline = _newline(layout)
    hug = (
        not _CLOSERS.search(line[span[3]:].split("#", 1)[0]) and not trailing_comma
        and len(lead) + len(unit) + len(", ".join(pieces)) + extra <= limit
    )
    if hug:
        inner = newline + lead + unit + ", ".join([*pieces, *texts]) + newline + lead
    else:
        inner = newline + "".join(lead + unit + t + "," + newline for t in [*pieces, *texts]) + lead
    return (opening + 1, close, inner)


def _own_line(layout: AstLayout, call: ast.Call, span: tuple, texts: list, limit: int) -> tuple:
    """Keywords added to a call whose arguments stand on one line of their own between `(`
    and `)` (each bracket ending or starting its line): appended to that line while it
    stays within the line length and follows `(` and comes before `)` directly, else the
    call with one argument per line (`calls.plan`'s "explode" with the call's own
    indentation of arguments and `)`)."""
    opening, close = _brackets(layout, call, span)
    args = _arguments(call)
    if not args:
        raise Unsupported("a call without arguments")
    text = layout.text
    line_no = args[0].lineno
    pieces = _argument_texts(layout, args, line_no)
    first = _offset(layout, line_no, args[0].col_offset)
    last_end = _offset(layout, line_no, args[-1].end_col_offset)  # type: ignore[arg-type]
    close_match = _CLOSE.fullmatch(text[last_end:close + 1])
    if not _OPEN.fullmatch(text[opening:first]) or close_match is None:
        raise Unsupported("a call's layout")
    st = layout.statement_at(span)
    if st is None:
        raise Unsupported("a call outside the statements")
    arg_ws, close_ws = _leading(layout.line_text(line_no)), close_match.group(1)
    if not arg_ws.startswith(st.block.indent) or not close_ws.startswith(st.block.indent):
        raise Unsupported("indentation of the arguments")  # (libcst writes them from its block's)
    args_line = layout.line_text(line_no).rstrip("\r\n")
    if line_no == span[0] + 1 and span[2] == line_no + 1 and len(args_line) + added_length(call, texts) <= limit:
        return (last_end, last_end, "".join("," + _between(layout, args, line_no) + t for t in texts))
    newline = _newline(layout)
    return (opening + 1, close, newline + "".join(arg_ws + t + "," + newline for t in [*pieces, *texts]) + close_ws)
