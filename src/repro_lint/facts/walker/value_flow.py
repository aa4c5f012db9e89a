"""Where a local variable's value goes in the function that binds it, for a drawn value kept
under a name: copied into a module's parameter only (`dt = torch.rand(n)`, ...,
`self.proj.bias.copy_(inv_dt)`: the parameter's initial value), or handed only to calls that
name or trace (`example = torch.rand(1, 3, s, s)`, then `torch.jit.trace(model, example)`: a
draw that changes no result). Any other use, or a use this cannot follow, answers "neither".
"""

from __future__ import annotations

import ast
from typing import Callable, Optional

_Name = ast.Name
_Load = ast.Load
_Call = ast.Call
_Assign = ast.Assign
_Expr = ast.Expr
# statements whose body runs inside them: only their headers are uses at their level
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# a chain of names the value passes through before its end (`dt` -> `inv_dt`)
_MAX_NAMES = 8

# What a call does with the values passed to it, as the caller classifies it: "parameter",
# "naming", or None (anything else, or not known).
Classify = Callable[[ast.Call], Optional[str]]
# Whether a call is a library function's (`torch.log`, `math.sqrt`): a value computed by such
# calls, and by methods of the tracked values (tensors: `dt.clamp(...)`), only computes.
LibraryCall = Callable[[ast.Call], bool]


def _headers(stmt: ast.stmt) -> list:
    t = type(stmt)
    if t is ast.If or t is ast.While:
        return [stmt.test]  # type: ignore[attr-defined]
    if t is ast.For or t is ast.AsyncFor:
        return [stmt.target, stmt.iter]  # type: ignore[attr-defined]
    if t is ast.With or t is ast.AsyncWith:
        return list(stmt.items)  # type: ignore[attr-defined]
    return [h.type for h in stmt.handlers if h.type is not None]  # type: ignore[attr-defined]


def _bodies(stmt: ast.stmt) -> list:
    out = [*getattr(stmt, "body", ()), *getattr(stmt, "orelse", ()), *getattr(stmt, "finalbody", ())]
    for handler in getattr(stmt, "handlers", ()):
        out.extend(handler.body)
    return out


def _reads(node: ast.AST, names: set) -> bool:
    return any(type(n) is _Name and n.id in names and type(n.ctx) is _Load for n in ast.walk(node))  # type: ignore[attr-defined]


def _computes(value: ast.expr, tracked: set, library: LibraryCall) -> bool:
    """Whether an assignment's value only computes from what it reads: no call into the
    project or unknown code."""
    for node in ast.walk(value):
        if type(node) is not _Call:
            continue
        func = node.func  # type: ignore[attr-defined]
        if type(func) is ast.Attribute and _reads(func.value, tracked):  # type: ignore[attr-defined]
            continue
        if not library(node):  # type: ignore[arg-type]
            return False
    return True


def value_end(body: list, name: str, origin: ast.stmt, classify: Classify, library: LibraryCall) -> Optional[str]:
    """"parameter" or "naming" when every use of `name` (bound by `origin`) in `body`, and of
    names bound from it, ends in calls `classify` says so of; None for anything else."""
    tracked = {name}
    ends: set = set()
    pending = [name]
    while pending:
        if len(tracked) > _MAX_NAMES:
            return None
        current = {pending.pop()}
        stack = list(reversed(body))
        while stack:
            stmt = stack.pop()
            if stmt is origin:
                continue
            t = type(stmt)
            if isinstance(stmt, _SCOPES):
                if _reads(stmt, current):
                    return None  # (a closure: where it runs is not followed)
                continue
            if isinstance(stmt, _COMPOUND):
                if any(_reads(h, current) for h in _headers(stmt)):
                    return None
                stack.extend(reversed(_bodies(stmt)))
                continue
            if not _reads(stmt, current):
                continue
            value = stmt.value if t is _Assign or t is _Expr else None  # type: ignore[attr-defined]
            if type(value) is _Call:
                kind = classify(value)  # type: ignore[arg-type]
                if kind is not None and not _reads(value.func, current):  # type: ignore[attr-defined]
                    ends.add(kind)
                    continue
            if t is _Assign and len(stmt.targets) == 1 and type(stmt.targets[0]) is _Name and _computes(value, tracked, library):  # type: ignore[attr-defined]
                target = stmt.targets[0].id  # type: ignore[attr-defined]
                if target not in tracked:
                    tracked.add(target)
                    pending.append(target)
                continue
            return None
    return ends.pop() if len(ends) == 1 else None
