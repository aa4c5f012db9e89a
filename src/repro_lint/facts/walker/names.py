"""Name resolution: turn the names at a call site into qualified names.

`import numpy as np` makes `np.random.rand` resolve to `numpy.random.rand`;
`from torch.utils.data import DataLoader as DL` makes `DL` resolve to
`torch.utils.data.DataLoader`. Bindings are tracked per scope (module, function),
including imports inside functions and plain aliases (`Loader = DataLoader`).
"""

from __future__ import annotations

import ast
from typing import Optional

# A name bound to something we cannot resolve (a parameter, an assignment of a call
# result). It shadows outer bindings of the same name.
UNKNOWN = ""


def resolve_relative(module: str, is_package: bool, level: int, target: Optional[str]) -> str:
    """Absolute module name for `from .target import x` inside `module`."""
    if level == 0:
        return target or ""
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    base = ".".join(parts)
    if target:
        return f"{base}.{target}" if base else target
    return base


class Scope:
    """Bindings of one scope; lookups fall back to the enclosing scope."""

    __slots__ = ("bindings", "parent")

    def __init__(self, parent: Optional["Scope"] = None) -> None:
        self.bindings: dict[str, str] = {}
        self.parent = parent

    def lookup(self, name: str) -> Optional[str]:
        scope: Optional[Scope] = self
        while scope is not None:
            hit = scope.bindings.get(name)
            if hit is not None:
                return hit or None  # UNKNOWN shadows but resolves to nothing
            scope = scope.parent
        return None


_Name = ast.Name
_Attribute = ast.Attribute


class Resolver:
    """Resolves expressions to qualified names within one module."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.is_package = is_package
        self.scope = Scope()
        # modules whose names `from m import *` brings in, in import order: which names
        # they are is known only with the other modules' facts (`ProjectIndex`)
        self.star_imports: list[str] = []

    # -- binding ---------------------------------------------------------------
    def bind_import(self, node: ast.AST, scope: Optional[Scope] = None) -> list[str]:
        """Record the names an import binds; return the qualified names imported."""
        scope = scope or self.scope
        imported: list[str] = []
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    scope.bindings[alias.asname] = alias.name
                else:
                    top = alias.name.split(".", 1)[0]
                    scope.bindings[top] = top
                imported.append(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = resolve_relative(self.module, self.is_package, node.level, node.module)
            for alias in node.names:
                if alias.name == "*":
                    imported.append(base)
                    if base and base not in self.star_imports:
                        self.star_imports.append(base)
                    continue
                qual = f"{base}.{alias.name}" if base else alias.name
                scope.bindings[alias.asname or alias.name] = qual
                imported.append(qual)
        return imported

    def is_unbound(self, name: str) -> bool:
        """Whether no scope binds `name` (not even to something unknown)."""
        scope: Optional[Scope] = self.scope
        while scope is not None:
            if name in scope.bindings:
                return False
            scope = scope.parent
        return True

    def bind(self, name: str, qualified: Optional[str], scope: Optional[Scope] = None) -> None:
        (scope or self.scope).bindings[name] = qualified or UNKNOWN

    # -- lookup ----------------------------------------------------------------
    def qualify(self, node: ast.AST) -> Optional[str]:
        """Qualified name of a Name/Attribute chain, or None when unknown."""
        # exact type checks: this runs for every call and argument of a project
        if type(node) is _Name:
            return self.scope.lookup(node.id)  # type: ignore[attr-defined]
        attrs: list[str] = []
        while type(node) is _Attribute:
            attrs.append(node.attr)  # type: ignore[attr-defined]
            node = node.value  # type: ignore[attr-defined]
        if type(node) is not _Name:
            return None
        base = self.scope.lookup(node.id)
        if base is None:
            return None
        if attrs:
            attrs.reverse()
            return base + "." + ".".join(attrs)
        return base

    def push(self) -> Scope:
        self.scope = Scope(self.scope)
        return self.scope

    def pop(self) -> None:
        assert self.scope.parent is not None
        self.scope = self.scope.parent
