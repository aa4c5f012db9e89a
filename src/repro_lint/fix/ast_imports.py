"""`imports.Imports` on `ast_layout.AstLayout`: where a new import goes, told from `ast` and
the text as `Imports` tells it from libcst's tree (the same sections, sort keys, runs and
groups; the blank and comment lines above a statement read from the text)."""

from __future__ import annotations

import ast
from typing import Optional

from repro_lint.fix.ast_layout import AstLayout, Line, Unsupported, is_blank, lines_above
from repro_lint.fix.imports import OTHER, Imports
from repro_lint.fix.style import Style


class AstImports(Imports):
    def __init__(
        self, layout: AstLayout, project_roots: frozenset, aliases: dict, style: Style, lines: list, block: tuple[int, int],
    ) -> None:
        super().__init__(layout, project_roots, aliases, style, lines)  # type: ignore[arg-type]
        self.block = block
        self.index = {id(line): i for i, line in enumerate(layout.module.lines)}

    def _import_block(self) -> tuple[int, int]:
        return self.block

    def _statements(self) -> list:
        return self.layout.module.lines  # type: ignore[attr-defined]

    def _above(self, line: Line) -> list:
        i = self.index.get(id(line))
        if i is None:
            raise Unsupported("a statement outside the module's block")
        return lines_above(self.layout, self.layout.module, i)  # type: ignore[arg-type]

    def _has_lines_above(self, line: Line) -> bool:  # type: ignore[override]
        return bool(self._above(line))

    def _has_blank_above(self, line: Line) -> bool:  # type: ignore[override]
        return any(is_blank(text) for text in self._above(line))

    def statement_section(self, line: Line) -> tuple[int, str, str]:  # type: ignore[override]
        if not line.is_import:
            return OTHER, "", ""
        first = line.nodes[0]
        if isinstance(first, ast.Import):
            name = first.names[0].name
            return self.section(name), "import", name
        name = first.module or ""
        return self.section(name, first.level), "from", name

    def _line_key(self, line: Line, kind: str, module: str) -> tuple:  # type: ignore[override]
        alias = ""
        first = line.nodes[0]
        if kind == "import" and first.names[0].asname is not None:
            alias = first.names[0].asname
        return self._sort_key(kind, module, alias)

    def section_of_statement(self, line: Optional[Line]) -> int:  # type: ignore[override]
        # (a docstring is no import line: OTHER, as `Imports` says of it)
        return -1 if line is None else self.statement_section(line)[0]
