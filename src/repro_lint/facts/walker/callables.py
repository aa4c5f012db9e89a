"""What the extraction walk records of callables kept in dicts or handed back by functions
(part of `extract.Extractor`): a call of an item of a dict of callables (`MODELS[name](...)`)
may call any of them, and a call of what a function returns (`get_dataset_fn(kind)(args)`)
any project function it returns by name. Both are recorded as calls, which the index
resolves (`ProjectIndex._resolve`, `_returned_by`) for the modules that import them.
"""

from __future__ import annotations

import ast
from sys import intern
from typing import Optional

from repro_lint.facts.model import INSTANCE, MADE_CLS, MADE_UNKNOWN, REGISTRIES, RETURNS, RETURNS_MADE

_Name = ast.Name
_Attribute = ast.Attribute
_NO_REGISTRIES: dict = {}
# larger dict literals are data tables, not registries of callables
_MAX_REGISTRY = 256


class CallableValues:
    def _module_registries(self, body: list[ast.stmt]) -> None:
        """Module-level dicts of project callables (`DiT_models = {"DiT-XL/2": DiT_XL_2, ...}`),
        read once every module-level name is bound: modules that import one call its items."""
        for stmt in body:
            if type(stmt) is ast.Assign and type(stmt.value) is ast.Dict and len(stmt.targets) == 1 and type(stmt.targets[0]) is _Name:
                quals = self._callables_in(stmt.value)
                if quals:
                    self.info.extra.setdefault(REGISTRIES, {})[stmt.targets[0].id] = quals

    def _callables_in(self, value: ast.Dict) -> tuple[str, ...]:
        """The project callables a dict literal's values name (names and dotted names that
        resolve outside the libraries the catalogs know, or that a lambda value calls), in
        order, each once."""
        if len(value.values) > _MAX_REGISTRY:
            return ()
        out: dict[str, None] = {}
        roots = self.m.external_roots
        for v in value.values:
            if type(v) is ast.Lambda and type(v.body) is ast.Call:  # type: ignore[attr-defined]
                v = v.body.func  # `lambda **kw: Net(depth=2, **kw)`: calling it calls `Net`  # type: ignore[attr-defined]
            if type(v) is _Name or type(v) is _Attribute:
                qual = self.r.qualify(v)
                if qual and qual.split(".", 1)[0] not in roots:
                    out[intern(qual)] = None
        return tuple(out)

    def _registry_call(self, container: ast.AST, node: ast.Call) -> None:
        """`MODELS[args.arch](...)`: a call of an item of a dict of callables may call any of
        them (as a method call on an object of unknown type reaches every method of its name)."""
        quals: Optional[tuple[str, ...]] = None
        if type(container) is _Name:
            name = container.id  # type: ignore[attr-defined]
            if self.local_registries:
                quals = self.local_registries.get((self.scope, name))
            if quals is None and self.r.is_unbound(name):
                quals = self.info.extra.get(REGISTRIES, _NO_REGISTRIES).get(name)
        if quals is None:
            # a dict another module defines (`from models import DiT_models`): the index
            # resolves the name to its values
            qual = self.r.qualify(container)
            if not qual or qual.split(".", 1)[0] in self.m.external_roots:
                return
            quals = (qual,)
        for qual in quals:
            self.add_call(qual, None, node)

    def _returned_made(self, value: ast.AST, depth: int = 4) -> None:
        """`return Net(cfg)` (or a name bound to such a call) in a function: what a call of
        the function gives is an object that callee made."""
        if type(value) is _Name:
            bound = self.local_values.get(value.id)  # type: ignore[attr-defined]
            if type(bound) is ast.IfExp:
                value = bound
        if type(value) is ast.IfExp:
            # `return Engine(fn) if not deterministic else DeterministicEngine(fn)`: either
            # (a few levels: `x = a if c else x` names itself)
            if depth:
                self._returned_made(value.body, depth - 1)  # type: ignore[attr-defined]
                self._returned_made(value.orelse, depth - 1)  # type: ignore[attr-defined]
                return
            value = None  # (not followed further: what it gives is not known)
        fn = self.func
        if (
            type(value) is ast.Call and type(value.func) is _Name and fn is not None and fn.class_name is not None  # type: ignore[attr-defined]
            and fn.params and value.func.id == fn.params[0]  # type: ignore[attr-defined]
            and _is_classmethod(self.func_node)  # type: ignore[attr-defined]
        ):
            qual = MADE_CLS  # `return cls(...)`: an instance of the class the method is called on
        else:
            made = self._receiver(value) if value is not None else None  # type: ignore[attr-defined]
            qual = made[len(INSTANCE):] if made is not None and made.startswith(INSTANCE) else MADE_UNKNOWN
        returns = self.info.extra.setdefault(RETURNS_MADE, {}).setdefault(self.scope, [])
        if qual not in returns:
            returns.append(intern(qual))

    def _returned(self, value: ast.AST) -> None:
        """`return get_csv_dataset` in a function: a project function handed back by name."""
        qual = self.r.qualify(value)
        if qual and qual.split(".", 1)[0] not in self.m.external_roots:
            returns = self.info.extra.setdefault(RETURNS, {}).setdefault(self.scope, [])
            if qual not in returns:
                returns.append(intern(qual))


def _is_classmethod(node: Optional[ast.AST]) -> bool:
    """Whether a function's syntax is decorated `@classmethod` (the builtin's name: the
    decorators the facts keep are the qualified ones)."""
    return any(type(d) is ast.Name and d.id == "classmethod" for d in getattr(node, "decorator_list", ()))
