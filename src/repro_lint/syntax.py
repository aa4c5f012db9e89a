"""Small helpers over `ast` trees that the extraction pass and the rule families share."""

from __future__ import annotations

import ast
from typing import Any, Optional

_LITERAL_TYPES = (int, float, str, bool, type(None))


# Child fields that can hold expressions, per node type; leaves are never pushed.
# A hand-rolled walk: `ast.walk` costs about three times as much on large trees.
_NOT_CHILD = {"ctx", "type_comment", "id", "arg", "attr", "name", "names", "module", "level", "kind", "is_async", "conversion", "op", "ops", "value_str"}
_FIELDS = {
    cls: tuple(f for f in cls._fields if f not in _NOT_CHILD)
    for cls in (getattr(ast, n) for n in dir(ast))
    if isinstance(cls, type) and issubclass(cls, ast.AST)
}
LEAVES = (ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del, ast.alias)


def iter_calls(node: ast.AST) -> list[ast.Call]:
    """Every Call node under `node` (including `node`), in no particular order."""
    out: list[ast.Call] = []
    stack = [node]
    pop = stack.pop
    push = stack.append
    fields = _FIELDS
    leaves = LEAVES
    AST = ast.AST
    Call = ast.Call
    Attribute = ast.Attribute
    while stack:
        n = pop()
        t = type(n)
        # the two commonest nodes, unrolled; children are pushed in the generic order
        if t is Call:
            out.append(n)  # type: ignore[arg-type]
            push(n.func)  # type: ignore[attr-defined]
            for x in n.args:  # type: ignore[attr-defined]
                if type(x) not in leaves:
                    push(x)
            for kw in n.keywords:  # type: ignore[attr-defined]
                if type(kw.value) not in leaves:
                    push(kw.value)
            continue
        if t is Attribute:
            v = n.value  # type: ignore[attr-defined]
            if type(v) not in leaves:
                push(v)
            continue
        for f in fields.get(t, ()):
            v = getattr(n, f, None)
            if v is None:
                continue
            if type(v) is list:
                for x in v:
                    if isinstance(x, AST) and type(x) not in leaves:
                        push(x)
            elif isinstance(v, AST) and type(v) not in leaves:
                push(v)
    return out


def literal(node: Optional[ast.AST]) -> Any:
    """The value of a literal expression, or the `NOT_LITERAL` marker."""
    if isinstance(node, ast.Constant) and isinstance(node.value, _LITERAL_TYPES):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        if isinstance(node.operand.value, (int, float)):
            return -node.operand.value
    return NOT_LITERAL


class _NotLiteral:
    def __repr__(self) -> str:
        return "NOT_LITERAL"

    def __reduce__(self):
        return (_not_literal, ())


def _not_literal():
    return NOT_LITERAL


NOT_LITERAL = _NotLiteral()


def get_arg(call: ast.Call, position: int, keyword: str) -> Optional[ast.AST]:
    """The argument node passed by position or keyword, or None."""
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if 0 <= position < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return call.args[position]
    return None


def has_kwargs(call: ast.Call) -> bool:
    return any(kw.arg is None for kw in call.keywords)


def call_order(node: ast.Call) -> tuple[int, int]:
    return (node.lineno, node.col_offset)
