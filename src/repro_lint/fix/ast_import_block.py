"""`Layout.import_block` on `ast_layout.AstLayout`: the module's leading import section, with
the same kinds of statements in it (`layout.py` tells them on libcst nodes, this on `ast`)."""

from __future__ import annotations

import ast
import io
import tokenize

from repro_lint.fix.ast_layout import AstLayout, Line, Unsupported, is_suite, statement_lines
from repro_lint.fix.scopes import SETUP_CALLS


def import_block(layout: AstLayout) -> tuple[int, int]:
    """(first, end) indices of the module's leading import section, after the docstring."""
    lines = layout.module.lines
    start = 1 if lines and _is_docstring(lines[0]) else 0
    end = start
    i = start
    while i < len(lines):
        line = lines[i]
        if line.is_import or _is_import_block(layout, line):
            i += 1
            end = i
        elif _is_dunder_assignment(line) or _is_setup_statement(layout, line) or _is_pass_block(layout, line):
            i += 1
        else:
            break
    if end == start:
        return start, start
    first = start
    while first < end and _is_dunder_assignment(lines[first]):
        first += 1
    return first, end


def definitions_start(layout: AstLayout, end: int) -> int:
    """`Layout.definitions_start`: where a new module-level function goes, after the import
    section (`end`) and the `try:`/`if` blocks importing something that follow it."""
    lines = layout.module.lines
    i = end
    while i < len(lines) and _is_import_shim(layout, lines[i]):
        i += 1
    return i


def _is_import_shim(layout: AstLayout, line: Line) -> bool:
    node = line.nodes[0]
    if line.simple or not isinstance(node, (ast.Try, ast.If)):
        return False
    lines = _body_lines(layout, node)
    return lines is not None and any(inner.is_import for inner in lines)


def _is_docstring(line: Line) -> bool:
    node = line.nodes[0]
    if line.simple and isinstance(node, ast.Expr) and isinstance(node.value, ast.JoinedStr):
        raise Unsupported("an f-string statement")  # (libcst: a docstring when a plain string is joined to it)
    return (
        line.simple and len(line.nodes) == 1 and isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant) and isinstance(node.value.value, (str, bytes))
    )


def _body_lines(layout: AstLayout, node: ast.AST):
    """The statements of an `if`'s or `try`'s body as libcst holds them; None for a suite."""
    body = node.body  # type: ignore[attr-defined]
    return None if is_suite(layout, body) else statement_lines(layout, body)


def _is_import_block(layout: AstLayout, line: Line) -> bool:
    node = line.nodes[0]
    if line.simple or not isinstance(node, (ast.Try, ast.If)):
        return False
    lines = _body_lines(layout, node)
    return lines is not None and all(inner.is_import for inner in lines)


def _is_pass_block(layout: AstLayout, line: Line) -> bool:
    node = line.nodes[0]
    if line.simple or not isinstance(node, ast.If) or node.orelse:
        return False
    lines = _body_lines(layout, node)
    return lines is not None and all(inner.simple and all(isinstance(n, ast.Pass) for n in inner.nodes) for inner in lines)


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _is_dunder_assignment(line: Line) -> bool:
    if not line.simple or len(line.nodes) != 1:
        return False
    small = line.nodes[0]
    targets = small.targets if isinstance(small, ast.Assign) else [small.target] if isinstance(small, ast.AnnAssign) else []
    return bool(targets) and all(isinstance(t, ast.Name) and t.id.startswith("__") and t.id.endswith("__") for t in targets)


def _constant_value(layout: AstLayout, node: ast.AST) -> bool:
    """What libcst holds as a string, an integer, a float or a name (`True`, `None`)."""
    if isinstance(node, ast.Name):
        return True
    if not isinstance(node, ast.Constant):
        return False
    value = node.value
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, (str, bytes)):
        return _string_tokens(layout, node) == 1  # (two literals side by side are one constant in ast)
    return False


def _string_tokens(layout: AstLayout, node: ast.AST) -> int:
    first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    raw = "".join(layout.line_text(n) for n in range(first, last + 1)).encode("utf-8")
    segment = raw[node.col_offset: len(raw) - len(layout.line_text(last).encode("utf-8")) + node.end_col_offset]  # type: ignore[attr-defined]
    try:
        tokens = list(tokenize.tokenize(io.BytesIO(b"(" + segment + b")").readline))
    except (tokenize.TokenError, SyntaxError) as exc:
        raise Unsupported("a string") from exc
    return sum(1 for t in tokens if t.type == tokenize.STRING)


def _is_setup_statement(layout: AstLayout, line: Line) -> bool:
    if not line.simple:
        return False
    for small in line.nodes:
        if isinstance(small, ast.Assert):
            continue
        if isinstance(small, ast.Expr) and isinstance(small.value, ast.Call):
            if not _dotted(small.value.func).startswith(SETUP_CALLS):
                return False
        elif isinstance(small, ast.Assign):
            for node in small.targets:
                if isinstance(node, ast.Subscript):
                    if _dotted(node.value) != "os.environ":
                        return False
                elif not (
                    isinstance(node, (ast.Name, ast.Attribute))
                    and (
                        _constant_value(layout, small.value)
                        or isinstance(small.value, ast.Call) and _dotted(small.value.func).startswith(SETUP_CALLS)
                    )
                ):
                    return False
        else:
            return False
    return True
