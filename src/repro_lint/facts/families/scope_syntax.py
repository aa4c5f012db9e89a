"""The syntax of whole bodies, for families whose facts need more than the call a hook is
given: a sampler's epoch loop further down the function, a checkpoint dict built over several
statements, the name a seed was assigned from.

The walk hands each module-level statement to `remember` before it walks it (a function or
class statement holds its whole body). A family's call hook keeps the calls it cares about
with `keep`; its finish hook, once the file is walked, reads them back (`kept`) and looks at
the bodies they are in (`body_of`), which by then hold every statement. Nothing here is
stored in the facts: the trees are let go with the extractor.
"""

from __future__ import annotations

import ast
import collections
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from repro_lint.facts.hooks import Family
from repro_lint.facts.model import MAIN_SCOPE, Event
from repro_lint.facts.syntax import dotted_chain

_TOP = "_scope_syntax_top"
_KEPT = "_scope_syntax_kept"
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# statements whose bodies hold statements of the same scope
_NESTED_BODIES = ("body", "orelse", "finalbody")
_BLOCK_FIELDS = frozenset([*_NESTED_BODIES, "handlers", "cases"])


@dataclass
class Kept:
    """A call a hook kept, with where it is: its scope, and the function walked then (None at
    module level and in the `__main__` block)."""

    node: ast.Call
    event: Optional[Event]
    scope: str
    func: Any


def remember(ex: Any, stmt: ast.stmt) -> None:
    ex.__dict__.setdefault(_TOP, []).append(stmt)


def keep(ex: Any, family: str, node: ast.Call, event: Optional[Event] = None) -> None:
    """Keep `node` (and the event recorded for it) for `family`'s finish hook."""
    ex.__dict__.setdefault(_KEPT, {}).setdefault(family, []).append(Kept(node, event, ex.scope, ex.func))


def kept(ex: Any, family: str) -> list[Kept]:
    return ex.__dict__.get(_KEPT, {}).get(family, [])


def top_statements(ex: Any) -> list[ast.stmt]:
    return ex.__dict__.get(_TOP, [])


def body_of(ex: Any, scope: str, func: Any) -> list[ast.stmt]:
    """The statements of a scope: the module level (without its `__main__` blocks), the
    `__main__` block, or a function's body."""
    top = top_statements(ex)
    if func is None:
        if scope == MAIN_SCOPE:
            return [s for stmt in top if ex._is_main_guard(stmt) for s in stmt.body]  # type: ignore[attr-defined]
        return [stmt for stmt in top if not ex._is_main_guard(stmt)]
    node = function_node(ex, func)
    return node.body if node is not None else []


def function_node(ex: Any, func: Any) -> Optional[ast.AST]:
    """The `def` of a function the walk met (by its line and name)."""
    line = func.line
    for stmt in top_statements(ex):
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            # (`ast.walk` of the statement, but into those parts alone that span the line: a
            # `def` lies inside each node that holds it; `match_case` and a few others have
            # no position and are entered)
            queue = collections.deque([stmt])
            while queue:
                node = queue.popleft()
                if isinstance(node, _FUNCTIONS) and node.lineno == line and node.name == func.name:
                    return node
                for child in ast.iter_child_nodes(node):
                    start = getattr(child, "lineno", None)
                    if start is None or start <= line <= (child.end_lineno or start):  # type: ignore[attr-defined]
                        queue.append(child)
    return None


def class_node(ex: Any, func: Any) -> Optional[ast.ClassDef]:
    """The class a method belongs to (its innermost `class` statement)."""
    if func is None or func.class_name is None:
        return None
    best = None
    for stmt in top_statements(ex):
        if stmt.lineno <= func.line <= (stmt.end_lineno or stmt.lineno):
            for node in ast.walk(stmt):
                if (
                    isinstance(node, ast.ClassDef) and node.name == func.class_name
                    and node.lineno <= func.line <= (node.end_lineno or node.lineno)
                    and (best is None or node.lineno > best.lineno)
                ):
                    best = node
    return best


def methods_of(cls: ast.ClassDef) -> list:
    return [s for s in cls.body if isinstance(s, _FUNCTIONS)]


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body, nested blocks included, but not those of functions and
    classes defined in it (another scope), in source order."""
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
            continue
        inner: list = []
        for field in _NESTED_BODIES:
            inner.extend(getattr(stmt, field, ()) or ())
        for handler in getattr(stmt, "handlers", ()) or ():
            inner.extend(handler.body)
        for case in getattr(stmt, "cases", ()) or ():
            inner.extend(case.body)
        stack.extend(reversed(inner))


def nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of a body's statements (not inside functions or classes defined there)."""
    for stmt in statements(body):
        if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
            continue
        for field, value in ast.iter_fields(stmt):
            if field in _BLOCK_FIELDS:
                continue
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, ast.AST):
                    yield from ast.walk(v)


def enclosing(body: list[ast.stmt], target: ast.AST) -> list[ast.stmt]:
    """The statements of `body` that hold `target`, outermost first (the last holds it directly)."""
    line = getattr(target, "lineno", 0)
    chain: list[ast.stmt] = []
    level = body
    while True:
        found = None
        for stmt in level:
            if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno) and any(n is target for n in ast.walk(stmt)):
                found = stmt
                break
        if found is None:
            return chain
        chain.append(found)
        if isinstance(found, (*_FUNCTIONS, ast.ClassDef)):
            return chain
        inner: list = []
        for field in _NESTED_BODIES:
            inner.extend(getattr(found, field, ()) or ())
        for handler in getattr(found, "handlers", ()) or ():
            inner.extend(handler.body)
        for case in getattr(found, "cases", ()) or ():
            inner.extend(case.body)
        level = inner


dotted = dotted_chain  # (`self.sampler`, `loader`)


def assigned_targets(stmt: ast.stmt) -> list[ast.expr]:
    """The targets a statement binds (tuples unpacked): assignments, `for`, `with ... as`."""
    if isinstance(stmt, ast.Assign):
        raw = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        raw = [stmt.target]
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        raw = [stmt.target]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        raw = [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    else:
        return []
    out: list[ast.expr] = []
    while raw:
        t = raw.pop()
        if isinstance(t, (ast.Tuple, ast.List)):
            raw.extend(t.elts)
        elif isinstance(t, ast.Starred):
            raw.append(t.value)
        else:
            out.append(t)
    return out


FAMILY = Family(order=1, statement_hooks=(remember,))
