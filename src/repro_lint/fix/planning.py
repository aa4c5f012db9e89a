"""What planning a file's fixes shares whatever the module is read with (`apply.Planner` on
libcst's tree, `line_inserts.LinePlanner` on `ast` and the text): the templates' placeholders,
the seed, the names a module-level statement can use, and the dispatch of edits. No libcst
here: a run whose fixes are all placed from `ast` never imports it."""

from __future__ import annotations

import re
from typing import Optional

from repro_lint.core.edits import (
    AddDictItems,
    AddKeyword,
    EnsureFunction,
    InsertStatements,
    MoveStatements,
    ReplaceExpression,
    SeedSpec,
    WrapStatements,
)
from repro_lint.core.findings import Fix
from repro_lint.fix.imports import Context

SEED_NAME = "SEED"
_PLACEHOLDER = re.compile(r"\{(seed|mod:([A-Za-z_][\w.]*)|attr:([A-Za-z_][\w.]*))\}((?:\.[A-Za-z_]\w*)*)")
ROOT_NAME = re.compile(r"^[A-Za-z_]\w*")
# an expression that binds tighter than `+`: a name, attribute, call or subscript (no spaces)
_OPERAND = re.compile(r"[\w.]+(\([^()\s]*\)|\[[^\[\]\s]*\])*")
# the groups of what goes in at one point, first to last
IMPORTS, CONSTANT, FUNCTION, STATEMENTS = range(4)
# a comment that tells a tool something: it stays when the value it follows is replaced
DIRECTIVE = re.compile(r"#\s*(noqa|type:|pragma|pylint:|fmt:|isort:|nosec|mypy:|pyright:|ruff:)", re.IGNORECASE)


class FixError(Exception):
    """A fix that cannot be applied to this file (reported with the rule code)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class PlannerBase:
    """Collects the edits of one round for one file. A subclass reads the module (`layout`,
    `imports`) and implements the edit operations."""

    layout: object
    imports: object
    default_seed: str
    seen_edits: set
    seq: int

    # -- contexts and templates ------------------------------------------------------
    def _functions(self, qual: Optional[str]) -> tuple:
        if qual is None:
            return ()
        fn = self.layout.functions.get(qual)  # type: ignore[attr-defined]
        return (qual, *(fn.parents if fn else ()))

    def _module_level(self, index: int) -> Context:
        return Context((), 0, index, False)

    def _seed(self, spec: Optional[SeedSpec], ctx: Context) -> str:
        spec = spec or SeedSpec(None, self.default_seed)
        seed = self._seed_expression(spec)
        if not spec.offset:
            return seed
        offset = spec.offset
        if "{" in offset:  # `{mod:torch.distributed}.get_rank()`: the file's own import of it
            offset, _ = self.expand(offset, None, ctx, local_ok=False)
        if not _OPERAND.fullmatch(seed):
            seed = f"({seed})"  # (`args.seed or 0` + rank would add to 0 alone)
        return f"{seed} + {offset}"

    def _seed_expression(self, spec: SeedSpec) -> str:
        raise NotImplementedError

    def expand(self, template: str, spec: Optional[SeedSpec], ctx: Context, local_ok: bool, code: str = "") -> tuple[str, list]:
        """Fill in `{seed}` and `{mod:X}`; returns the code and local import statements to put first."""
        local: list[str] = []

        def fill(match: re.Match) -> str:
            tail = match.group(4)
            if match.group(1) == "seed":
                expr = self._seed(spec, ctx)
                root = ROOT_NAME.match(expr)
                if root and not ctx.late and not self._defined_before(root.group(0), ctx.top):
                    raise FixError(code, f"the seed `{expr}` is defined only after line {ctx.line or 1}, where it is needed")
                return expr + tail
            # `{mod:torch}.backends.cudnn` and `{attr:torch.backends.cudnn}` alike: the file's own
            # import of the longest dotted prefix first (`import torch.backends.cudnn as cudnn` or
            # `from torch.backends import cudnn` make them read `cudnn`), else the module's name
            if match.group(3):
                module, *parts = match.group(3).split(".")
            else:
                module, parts = match.group(2), []
            parts += tail.split(".")[1:]
            imports = self.imports
            for n in range(len(parts), 0, -1):
                expr = imports.bound(".".join([module, *parts[:n]]), ctx)  # type: ignore[attr-defined]
                if expr is not None:
                    return ".".join([expr, *parts[n:]])
            if parts and imports.join_from_import(module, parts[0], ctx):  # type: ignore[attr-defined]
                return ".".join(parts)
            expr, stmt = imports.ref(module, ctx, local_ok)  # type: ignore[attr-defined]
            if stmt and stmt not in local:
                local.append(stmt)
            return ".".join([expr, *parts])

        return _PLACEHOLDER.sub(fill, template), local

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    # -- edits -----------------------------------------------------------------------
    def add(self, fix: Fix, code: str) -> None:
        spec = next((e for e in fix.edits if isinstance(e, SeedSpec)), None)
        for edit in fix.edits:
            if isinstance(edit, SeedSpec):
                continue
            try:
                ident = hash(edit) and edit
            except TypeError:  # an edit holding a list: compare by value
                ident = repr(edit)
            if ident in self.seen_edits:
                continue  # the same edit carried by several findings
            self.seen_edits.add(ident)
            if isinstance(edit, AddKeyword):
                self._add_keyword(edit, spec, code, fix.safety == "unsafe")
            elif isinstance(edit, ReplaceExpression):
                self._replace(edit, spec, code)
            elif isinstance(edit, InsertStatements):
                self._insert(edit, spec, code)
            elif isinstance(edit, MoveStatements):
                self._move(edit, spec, code)
            elif isinstance(edit, EnsureFunction):
                self._ensure_function(edit, spec, code)
            elif isinstance(edit, WrapStatements):
                self._wrap(edit, spec, code)
            elif isinstance(edit, AddDictItems):
                self._add_dict_items(edit, spec, code)
            else:
                raise FixError(code, f"unknown edit operation {type(edit).__name__}")

    def _add_keyword(self, edit: AddKeyword, spec, code: str, unsafe: bool = False) -> None:
        raise NotImplementedError

    def _replace(self, edit: ReplaceExpression, spec, code: str) -> None:
        raise NotImplementedError

    def _insert(self, edit: InsertStatements, spec, code: str) -> None:
        raise NotImplementedError

    def _move(self, edit: MoveStatements, spec, code: str) -> None:
        raise NotImplementedError

    def _ensure_function(self, edit: EnsureFunction, spec, code: str) -> None:
        raise NotImplementedError

    def _wrap(self, edit: WrapStatements, spec, code: str) -> None:
        raise NotImplementedError

    def _add_dict_items(self, edit: AddDictItems, spec, code: str) -> None:
        raise NotImplementedError

    # -- what a module-level name is at a point ----------------------------------------
    def _assigned_at(self, name: str) -> Optional[int]:
        """Module-level statement index of the first assignment of a module constant."""
        tops = [b.top for b in self.layout.module_bindings.get(name, ()) if not b.in_main and b.kind == "other"]  # type: ignore[attr-defined]
        return min(tops) if tops else None

    def _defined_before(self, name: str, top: int) -> bool:
        """False when `name` is a module constant assigned only at or after module statement `top`."""
        bindings = [b for b in self.layout.module_bindings.get(name, ()) if not b.in_main]  # type: ignore[attr-defined]
        return not bindings or any(b.top < top for b in bindings)
