"""Small helpers over `ast` trees that the extraction pass and the rule families share."""

from __future__ import annotations

import ast
import operator
from typing import Any, Optional

_LITERAL_TYPES = (int, float, str, bool, type(None))


# Fields that never hold a node to search (names, operators, flags).
_NOT_CHILD = frozenset(
    {"ctx", "type_comment", "id", "arg", "attr", "name", "names", "module", "level", "kind", "is_async", "conversion", "op", "ops", "value_str", "rest", "kwd_attrs"}
)
# Nodes without calls below them (a set: membership is one hash lookup)
LEAF_TYPES = frozenset([ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del, ast.alias])
# Per node type: (fields holding one node or None, fields holding a list), learnt from the
# first node of each type (a field's kind is fixed by the grammar).
_CHILDREN: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _children_of(node: object) -> tuple[tuple[str, ...], tuple[str, ...]]:
    t = type(node)
    if not isinstance(node, ast.AST):
        spec: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    else:
        fields = [f for f in t._fields if f not in _NOT_CHILD and hasattr(node, f)]
        lists = tuple(f for f in fields if type(getattr(node, f)) is list)
        single = tuple(f for f in fields if f not in lists and (getattr(node, f) is None or isinstance(getattr(node, f), ast.AST)))
        spec = (single, lists)
    _CHILDREN[t] = spec
    return spec


def iter_calls(node: ast.AST, stored_lambdas: bool = True) -> list[ast.Call]:
    """Every Call node under `node` (including `node`), in no particular order.
    A hand-rolled walk: it runs over every expression of a project, and `ast.walk`
    costs about three times as much.

    `stored_lambdas=False` (code that runs at import): the body of a lambda stored in a
    table (an item of a list, tuple, set or dict: factories by name) is left out, as it runs
    when an item is called, not where it is written. A lambda that is `node` itself (the
    value of `name = lambda ...`, which calls through the name cannot be followed to), one
    called on the spot, and one handed to a call (`sorted(key=lambda ...)`, which may call it
    at once) are walked, and so is every lambda's default values (evaluated where it is
    written)."""
    out: list[ast.Call] = []
    lam = None if stored_lambdas else ast.Lambda  # (None: no node is of that type)
    stack = [node.args, node.body] if type(node) is lam else [node]  # type: ignore[attr-defined]
    pop = stack.pop
    push = stack.append
    found = out.append
    children = _CHILDREN
    leaves = LEAF_TYPES
    Call = ast.Call
    Attribute = ast.Attribute
    while stack:
        n = pop()
        t = type(n)
        # the two commonest nodes, unrolled
        if t is Call:
            found(n)  # type: ignore[arg-type]
            f = n.func  # type: ignore[attr-defined]
            if type(f) is Attribute:  # `obj.method(...)`: its receiver straight away
                f = f.value  # type: ignore[attr-defined]
            tf = type(f)
            if tf is lam:
                push(f.args)  # type: ignore[attr-defined]
                push(f.body)  # type: ignore[attr-defined]
            elif tf not in leaves:
                push(f)
            for x in n.args:  # type: ignore[attr-defined]
                tx = type(x)
                if tx is lam:
                    push(x.args)  # type: ignore[attr-defined]
                    push(x.body)  # type: ignore[attr-defined]
                elif tx not in leaves:
                    push(x)
            for kw in n.keywords:  # type: ignore[attr-defined]
                x = kw.value
                tx = type(x)
                if tx is lam:
                    push(x.args)  # type: ignore[attr-defined]
                    push(x.body)  # type: ignore[attr-defined]
                elif tx not in leaves:
                    push(x)
            continue
        if t is Attribute:
            v = n.value  # type: ignore[attr-defined]
            if type(v) not in leaves:
                push(v)
            continue
        if t is lam:  # a stored lambda: only its defaults run here
            push(n.args)  # type: ignore[attr-defined]
            continue
        spec = children.get(t)
        if spec is None:
            spec = _children_of(n)
        for f in spec[0]:
            v = getattr(n, f)
            if v is not None and type(v) not in leaves:
                push(v)
        for f in spec[1]:
            for x in getattr(n, f):
                if x is not None and type(x) not in leaves:
                    push(x)
    return out


def names_in(node: ast.AST) -> list[ast.Name]:
    """Every Name node under `node` (including `node`), in no particular order: what
    `ast.walk` finds of them, at a fraction of its cost (a target of every `for` and `with`)."""
    out: list[ast.Name] = []
    stack = [node]
    children = _CHILDREN
    Name = ast.Name
    while stack:
        n = stack.pop()
        t = type(n)
        if t is Name:
            out.append(n)  # type: ignore[arg-type]
            continue
        spec = children.get(t)
        if spec is None:
            spec = _children_of(n)
        for f in spec[0]:
            v = getattr(n, f)
            if v is not None:
                stack.append(v)
        for f in spec[1]:
            stack.extend(x for x in getattr(n, f) if x is not None)
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


# Source order of nodes (a C-level key: sorting runs for most statements of a project).
call_order = operator.attrgetter("lineno", "col_offset")


def argparse_dest(node: ast.Call) -> Optional[str]:
    """The attribute an `add_argument(...)` call stores its value in (`--num-workers` gives
    `num_workers`, `dest=` wins), or None when it cannot be read."""
    for kw in node.keywords:
        if kw.arg == "dest":
            value = literal(kw.value)
            return value if isinstance(value, str) and value else None
    opts = [o for o in (literal(a) for a in node.args) if isinstance(o, str)]
    longs = [o for o in opts if o.startswith("--")]
    if longs:
        return longs[0][2:].replace("-", "_") or None
    if opts and not opts[0].startswith("-"):
        return opts[0]
    if opts:
        return opts[0].lstrip("-").replace("-", "_") or None
    return None


def negated(condition: str) -> str:
    """The source of the negation of a condition, as a person writes it (`args.seed is None`
    for `args.seed is not None`, `not args.deterministic`, `not (a and b)`)."""
    text = condition.strip()
    simple = " and " not in text and " or " not in text
    for a, b in ((" is not None", " is None"), (" is None", " is not None")):
        if text.endswith(a) and simple:
            return text[: -len(a)] + b
    if text.startswith("not ") and simple:
        return text[4:]
    if text.replace(".", "").replace("_", "").isalnum():
        return f"not {text}"
    return f"not ({text})"


def assigned_targets(stmt: ast.stmt) -> list:
    """The targets a plain or annotated assignment statement binds (none for other statements)."""
    if type(stmt) is ast.Assign:
        return stmt.targets  # type: ignore[attr-defined]
    if type(stmt) is ast.AnnAssign:
        return [stmt.target]  # type: ignore[attr-defined]
    return []


def dotted_chain(node: ast.AST) -> Optional[str]:
    """`p`, `self.pool`, `loader`: the dotted text of a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
