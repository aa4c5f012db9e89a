"""Ensure-import: how code inserted at some point can name a module, importing it if needed.

An existing import is reused (`import numpy as np` makes `{mod:numpy}` read `np`), if it
runs before the inserted code and no local name shadows it there. Otherwise a new import
goes into the module's leading import block, in its style: in the section it belongs to
(`__future__`, standard library, third party, project), at its alphabetical place when
that section is sorted, with the conventional alias (`np`) when that name is free.

`Imports` reads the module through a few methods, given on libcst's tree by
`cst_imports.CstImports` and on `ast` by `ast_imports.AstImports` (no libcst here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from repro_lint.fix.scopes import Binding
from repro_lint.fix.style import Style
from repro_lint.core.stdlib import stdlib_module_names

FUTURE, STDLIB, THIRD_PARTY, PROJECT, LOCAL, OTHER = range(6)


@dataclass(frozen=True)
class Context:
    """Where inserted code runs: enclosing functions (innermost first, empty at module
    level), its line, the index of the module-level statement it runs before (or within),
    and whether it runs only after the whole module has executed (inside a function)."""

    functions: tuple = ()
    line: int = 0
    top: int = 0
    late: bool = False


@dataclass
class NewImport:
    module: str
    alias: Optional[str]
    name: str  # the local name it binds

    @property
    def code(self) -> str:
        return f"import {self.module} as {self.alias}" if self.alias else f"import {self.module}"

    @property
    def expr(self) -> str:
        return self.alias or self.module


def _bound_module(b: Binding) -> Optional[str]:
    """The module a binding makes its name refer to (None: not a module we know)."""
    if b.kind == "import-sub":
        return b.module.split(".", 1)[0] if b.module else None
    return b.module if b.kind in ("import", "typing") else None


class Imports:
    def __init__(self, layout, project_roots: frozenset, aliases: dict, style: Optional[Style] = None, lines: Optional[list] = None) -> None:
        self.layout = layout
        self.lines = lines or []  # the file's lines, for the length of an import line that grows
        self.from_names: dict[int, list] = {}  # id of a `from m import ...` -> names it gets
        self.style = style or Style()
        self.project_roots = project_roots
        self.aliases = aliases
        self.new: list[NewImport] = []
        # new imports placed in a group that mixes sections (`_merged_group`): the section
        # they are laid out in there
        self.joined: dict[str, int] = {}

    # -- naming a module -------------------------------------------------------------
    def ref(self, module: str, ctx: Context, local_ok: bool) -> tuple[str, Optional[str]]:
        """(expression naming `module` at `ctx`, a local import statement to insert first or None)."""
        for name, expr, binding in self._existing(module):
            if not (ctx.late or binding.top < ctx.top):
                continue
            verdict = self._shadow(name, ctx, module)
            if verdict == "free":
                return expr, None
            if verdict == "local-import" and local_ok:
                return expr, self._local_import(name, module, binding)
        for imp in self.new:
            if imp.module == module and self._shadow(imp.name, ctx, module) == "free":
                return imp.expr, None
        local = self._local(module, ctx)
        if local is not None:
            name, binding = local
            if any(b.line < ctx.line for b in self.layout.functions[ctx.functions[0]].bindings[name]):
                return name, None
            if local_ok:
                return name, self._local_import(name, module, binding)
        imp = self._plan(module, ctx)
        self.new.append(imp)
        return imp.expr, None

    def bound(self, module: str, ctx: Context) -> Optional[str]:
        """An expression naming `module` through an import the file already has, usable at
        `ctx` (at module level, or the enclosing function's own earlier import); None when it
        has none."""
        for name, expr, binding in self._existing(module):
            if (ctx.late or binding.top < ctx.top) and self._shadow(name, ctx, module) == "free":
                return expr
        local = self._local(module, ctx)
        if local is not None and any(b.line < ctx.line for b in self.layout.functions[ctx.functions[0]].bindings[local[0]]):
            return local[0]
        return None

    def from_import(self, module: str, name: str, ctx: Context) -> Optional[tuple]:
        """The file's own module-level `from module import ...` (a project module) that `name`
        can join, and its line; None when there is none usable there, or `name` is taken."""
        raise NotImplementedError

    def join_from_import(self, module: str, name: str, ctx: Context) -> bool:
        """Name a project module's function as the file names that module's others: `name`
        joins the file's `from module import a, b` (at its sorted place when the names are
        sorted). Not when the statement's line would grow past the line length it keeps to."""
        found = self.from_import(module, name, ctx)
        if found is None:
            return False
        node, line_no = found
        pending = self.from_names.setdefault(id(node), [])
        if name in pending:
            return True
        if node.lpar is None:
            line = self.lines[line_no - 1] if 0 < line_no <= len(self.lines) else ""
            longer = len(line) + sum(len(", " + n) for n in [*pending, name])
            if longer > self.style.line_length >= len(line):
                if not pending:
                    del self.from_names[id(node)]
                return False
        elif len(node.names) < 2:  # (the separator to repeat is between two names)
            if not pending:
                del self.from_names[id(node)]
            return False
        pending.append(name)
        return True

    def _existing(self, module: str):
        """Module-level imports that name `module`, best first: (name, expression, binding)."""
        found = []
        for name, bindings in self.layout.module_bindings.items():
            for b in bindings:
                if b.in_main or b.module is None or b.kind == "typing":
                    continue
                if b.module != module:
                    continue
                if b.kind == "import-sub":
                    found.append((1, b.top, name, module, b))
                else:
                    found.append((0 if b.kind == "import" else 2, b.top, name, name, b))
        found.sort(key=lambda f: (f[0], f[1]))
        return [(name, expr, b) for _, _, name, expr, b in found]

    def _local(self, module: str, ctx: Context) -> Optional[tuple[str, Binding]]:
        """A name that the innermost function binds only by importing `module`."""
        if not ctx.functions or ctx.functions[0] not in self.layout.functions:
            return None
        fn = self.layout.functions[ctx.functions[0]]
        for name, bindings in sorted(fn.bindings.items()):
            if name in fn.globals:
                continue
            if all(b.kind in ("import", "import-sub", "from") for b in bindings):
                usable = [b for b in bindings if b.module == module and b.kind != "import-sub"]
                if usable:
                    return name, usable[0]
        return None

    def _shadow(self, name: str, ctx: Context, module: str) -> str:
        """"free" when `name` at ctx is the module-level name; "local-import" when the
        innermost function imports the same module under that name only later; else "taken"."""
        for depth, qual in enumerate(ctx.functions):
            fn = self.layout.functions.get(qual)
            if fn is None:
                continue
            if name in fn.globals:
                return "free"
            bindings = fn.bindings.get(name)
            if not bindings:
                continue
            if depth == 0 and all(b.module == module and b.kind in ("import", "import-sub", "from") for b in bindings):
                return "free" if any(b.line < ctx.line for b in bindings) else "local-import"
            return "taken"
        return "free"

    @staticmethod
    def _local_import(name: str, module: str, binding: Binding) -> str:
        if binding.kind == "import-sub":
            return f"import {module}"
        if binding.kind == "from":
            parent, _, leaf = module.rpartition(".")
            return f"from {parent} import {leaf}" + (f" as {name}" if name != leaf else "")
        return f"import {module}" + (f" as {name}" if name != module else "")

    def _taken(self, name: str, ctx: Context, module: str) -> bool:
        """Whether binding `name` to `module` would clash with another use of the name."""
        bindings = self.layout.module_bindings.get(name, ())
        if any(_bound_module(b) != module for b in bindings) or any(imp.name == name for imp in self.new):
            return True
        return any(name in self.layout.functions[q].bindings for q in ctx.functions if q in self.layout.functions)

    def _plan(self, module: str, ctx: Context) -> NewImport:
        root = module.split(".", 1)[0]
        conventional = self.aliases.get(module)
        if conventional and not self._taken(conventional, ctx, module):
            return NewImport(module, conventional, conventional)
        if not self._taken(root, ctx, root if "." in module else module):
            return NewImport(module, None, root)
        alias = "_" + module.replace(".", "_")
        while self._taken(alias, ctx, module):
            alias = "_" + alias
        return NewImport(module, alias, alias)

    # -- placing new imports ---------------------------------------------------------
    # (what placing reads of the module: on libcst's tree in `cst_imports`, on `ast` in `ast_imports`)
    def _import_block(self) -> tuple[int, int]:
        """The module's import block: (index of its first statement, index past its last)."""
        raise NotImplementedError

    def _statements(self) -> list:
        """The module's statements, as the import block's indexes count them."""
        raise NotImplementedError

    def _has_lines_above(self, stmt) -> bool:
        """Whether blank or comment lines stand between the statement and the one before it."""
        raise NotImplementedError

    def _has_blank_above(self, stmt) -> bool:
        raise NotImplementedError

    def section(self, module: str, level: int = 0) -> int:
        """The isort section of a module: the project's settings first, then the usual
        classification (standard library, the project's own top-level modules)."""
        root = module.split(".", 1)[0]
        if level:
            return LOCAL
        if root == "__future__":
            return FUTURE
        if _listed(module, self.style.known_local_folder):
            return LOCAL
        if _listed(module, self.style.known_first_party):
            return PROJECT
        if _listed(module, self.style.known_third_party):
            return THIRD_PARTY
        if root in stdlib_module_names():
            return STDLIB
        if root in self.project_roots:
            return PROJECT
        return THIRD_PARTY

    def statement_section(self, stmt) -> tuple[int, str, str]:
        """(section, "import"/"from"/"", module name) of a statement of the import block."""
        raise NotImplementedError

    def _sort_key(self, kind: str, module: str, alias: str = "") -> tuple:
        """isort's order within a section: `import x` lines before `from x import y` lines
        (unless `force-sort-within-sections`), then by module name, case-insensitively and
        with numbers in their natural order."""
        name = (_natural(module.lower()), _natural(module), alias)
        rank = 0 if kind == "import" else 1
        return (name, rank) if self.style.force_sort_within_sections else (rank, name)

    def _line_key(self, stmt, kind: str, module: str) -> tuple:
        raise NotImplementedError

    def _runs(self) -> list[list[tuple]]:
        """The import block's runs of consecutive import lines (a `try:` block or other
        statement between imports ends a run, as it ends the sorter's block), each line as
        (index, section, kind, module, sort key)."""
        start, end = self._import_block()
        body = self._statements()
        runs: list[list[tuple]] = [[]]
        for i in range(start, end):
            section, kind, module = self.statement_section(body[i])
            if section == OTHER:
                if runs[-1]:
                    runs.append([])
                continue
            runs[-1].append((i, section, kind, module, self._line_key(body[i], kind, module)))
        return [r for r in runs if r]

    def placement(self, imp: NewImport) -> int:
        """Index in the module body before which the new import goes.

        In a section that is sorted, at its sorted place; in one that is not, next to the
        section's `import` lines (at their sorted place if those are in order), without
        moving the user's lines; a section the block lacks goes between the sections
        before and after it."""
        start, end = self._import_block()
        runs = self._runs()
        if not runs:
            return start
        mine = self.section(imp.module)
        if mine == FUTURE:
            return runs[0][0][0]
        # of the runs holding the section, the one with most of its lines: a statement that
        # splits the block early (`warnings.simplefilter(...)` after `import warnings`)
        # leaves a prelude, and the section's main group comes after it
        holding = [r for r in runs if any(ln[1] == mine for ln in r)]
        run = max(holding, key=lambda r: sum(ln[1] == mine for ln in r)) if holding else runs[0]
        key = self._sort_key("import", imp.module, imp.alias or "")
        merged = self._merged_group(run, mine)
        if merged is not None:
            at = next((ln for ln in merged if ln[4] > key), None)
            # it joins that group: laid out as the line it goes before (or after) is
            self.joined[imp.module] = (at or merged[-1])[1]
            return at[0] if at is not None else merged[-1][0] + 1
        return self._place_in_run(run, mine, key)

    def separates_sections(self) -> bool:
        """Whether the import block keeps its sections apart with blank lines (False when two
        lines of different sections follow each other directly: the project does not)."""
        body = self._statements()
        for run in self._runs():
            for a, b in zip(run, run[1:]):
                if (
                    a[1] != b[1] and a[1] != FUTURE and b[0] == a[0] + 1  # (`from __future__` lines say little)
                    and not self._has_lines_above(body[b[0]])
                ):
                    return False
        return True

    def layout_section(self, imp: NewImport) -> int:
        """The section a new import is laid out in: its own, or that of the group it joins."""
        return self.joined.get(imp.module, self.section(imp.module))

    def _merged_group(self, run: list, mine: int) -> Optional[list]:
        """A group of import lines (between blank lines) that holds the new import's section
        interleaved with another, all in one sorted order: the project's sorter takes them
        as one section (its own modules unknown to it), so the new line goes at its sorted
        place among all of them."""
        body = self._statements()
        groups: list[list] = [[]]
        for ln in run:
            stmt = body[ln[0]]
            if groups[-1] and self._has_blank_above(stmt):
                groups.append([])
            groups[-1].append(ln)
        for group in groups:
            sections = [ln[1] for ln in group]
            if mine in sections and sections != sorted(sections) and [ln[4] for ln in group] == sorted(ln[4] for ln in group):
                return group
        return None

    def _place_in_run(self, run: list, mine: int, key: tuple) -> int:
        same = [ln for ln in run if ln[1] == mine]
        if same:
            pool = same
            if [ln[4] for ln in same] != sorted(ln[4] for ln in same):
                plain = [ln for ln in same if ln[2] == "import"]
                if not plain or [ln[4] for ln in plain] != sorted(ln[4] for ln in plain):
                    return (plain or same)[-1][0] + 1
                pool = plain
            for ln in pool:
                if ln[4] > key:
                    return ln[0]
            return pool[-1][0] + 1
        for ln in run:
            if ln[1] > mine:
                return ln[0]
        return run[-1][0] + 1


    def section_of_statement(self, stmt) -> int:
        """The section of a statement of the import block (-1 for none, OTHER for code)."""
        raise NotImplementedError


def _listed(module: str, names: frozenset) -> bool:
    """Whether the module or a package above it is listed (`known-first-party = ["pkg"]`)."""
    parts = module.split(".")
    return any(".".join(parts[:i]) in names for i in range(1, len(parts) + 1))


def _natural(text: str) -> tuple:
    """Sort key with digit runs compared as numbers (`v2` before `v10`)."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part)
