"""`imports.Imports` on `layout.Layout`: where a new import goes, read from libcst's tree, and
the names a from-import gets (`with_names`)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from repro_lint.fix.imports import LOCAL, OTHER, PROJECT, Context, Imports
from repro_lint.fix.layout import dotted, is_docstring, is_import_line


class CstImports(Imports):
    def from_import(self, module: str, name: str, ctx: Context) -> Optional[tuple[cst.ImportFrom, int]]:
        """The file's own module-level `from module import ...` (a project module) that `name`
        can join, so that code inserted at `ctx` names it as the file names that module's
        other functions, and its line; None when there is none usable there, or `name` is taken."""
        if self.section(module) not in (PROJECT, LOCAL) or name in self.layout.module_bindings:
            return None
        if any(imp.name == name for imp in self.new) or any(
            name in self.layout.functions[q].bindings for q in ctx.functions if q in self.layout.functions
        ):
            return None
        body = self.layout.module.body
        for bindings in self.layout.module_bindings.values():
            for b in bindings:
                if b.kind != "from" or b.in_main or not b.module or b.module.rpartition(".")[0] != module:
                    continue
                if not (ctx.late or b.top < ctx.top) or not isinstance(body[b.top], cst.SimpleStatementLine):
                    continue
                for small in body[b.top].body:  # type: ignore[attr-defined]
                    if (
                        isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None
                        and dotted(small.module) == module and not isinstance(small.names, cst.ImportStar)
                    ):
                        return small, b.line
        return None

    # -- what placing reads of the module -----------------------------------------------
    def _import_block(self) -> tuple[int, int]:
        return self.layout.import_block()

    def _statements(self) -> list:
        return self.layout.module.body

    @staticmethod
    def _has_lines_above(stmt) -> bool:
        """Whether blank or comment lines stand between the statement and the one before it."""
        return any(isinstance(e, cst.EmptyLine) for e in getattr(stmt, "leading_lines", ()))

    @staticmethod
    def _has_blank_above(stmt) -> bool:
        return any(isinstance(e, cst.EmptyLine) and e.comment is None for e in getattr(stmt, "leading_lines", ()))

    def statement_section(self, stmt: cst.CSTNode) -> tuple[int, str, str]:
        """(section, "import"/"from"/"", module name) of a statement of the import block."""
        if not is_import_line(stmt):
            return OTHER, "", ""
        first = stmt.body[0]  # type: ignore[attr-defined]
        if isinstance(first, cst.Import):
            name = first.names[0].evaluated_name
            return self.section(name), "import", name
        name = dotted(first.module) if first.module is not None else ""
        return self.section(name, len(first.relative)), "from", name

    def _line_key(self, stmt: cst.CSTNode, kind: str, module: str) -> tuple:
        alias = ""
        first = stmt.body[0]  # type: ignore[attr-defined]
        if kind == "import" and first.names[0].asname is not None:
            alias = first.names[0].evaluated_alias or ""
        return self._sort_key(kind, module, alias)

    def place_in_body(self, body: list, end: int, stmt: cst.CSTNode) -> tuple[int, int, str]:
        """Where an import statement goes among the import lines just before index `end` of
        a function's body (its own imports): (index, section, sort name)."""
        section, kind, module = self.statement_section(stmt)
        start = end
        while start > 0 and is_import_line(body[start - 1]):
            start -= 1
        run = [(i, *self.statement_section(body[i])) for i in range(start, end)]
        run = [(i, sec, k, m, self._line_key(body[i], k, m)) for i, sec, k, m in run]
        if not run:
            return end, section, module.lower()
        return self._place_in_run(run, section, self._line_key(stmt, kind, module)), section, module.lower()

    def section_of_statement(self, stmt: Optional[cst.CSTNode]) -> int:
        if stmt is None:
            return -1
        if is_docstring(stmt):
            return OTHER
        return self.statement_section(stmt)[0]


def _name_order(name: str) -> tuple:
    """isort's order of the names of a from-import: constants, classes, then the others."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return (kind, name.lower())


def with_names(node: cst.ImportFrom, names: list) -> cst.ImportFrom:
    """`from m import a, b` with `names` added: at their sorted places when the statement's
    names are sorted, else at the end; separated as its names are."""
    aliases = list(node.names)  # type: ignore[arg-type]
    have = [a.evaluated_name for a in aliases]
    ordered = have == sorted(have, key=_name_order)
    parens = node.lpar is not None
    for name in names:
        pos = len(aliases)
        if ordered:
            pos = next((i for i, a in enumerate(aliases) if _name_order(a.evaluated_name) > _name_order(name)), len(aliases))
        new = cst.ImportAlias(name=cst.Name(name))
        if pos < len(aliases):  # before a name: the separator that follows it is the one before
            new = new.with_changes(comma=aliases[pos - 1].comma if parens and pos > 0 else cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            if parens and pos == 0:
                new = new.with_changes(comma=aliases[0].comma)
            aliases.insert(pos, new)
        else:  # last: the old last takes the separator between names, the new one its ending
            between = aliases[-2].comma if parens and len(aliases) > 1 else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            new = new.with_changes(comma=aliases[-1].comma if parens else cst.MaybeSentinel.DEFAULT)
            aliases[-1] = aliases[-1].with_changes(comma=between)
            aliases.append(new)
    return node.with_changes(names=aliases)
