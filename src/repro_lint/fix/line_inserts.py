"""Fixes that only insert lines of simple statements, placed from `ast` on the text.

Most fixes insert a few one-line statements after a statement, at the start of the
`__main__` block or below the imports (with the `SEED` constant), naming modules the file
already imports. `apply.Planner` does that on a libcst tree, whose parse was most of a fix's
cost. `LinePlanner` is the same planner (the same templates, the same checks for code already
there, the same order and blank lines of what goes at one point) on `ast_layout.AstLayout`:
where libcst writes such an insertion as the inserted lines, at the block's indentation, in
the file's line ending, right below the statement before them, it writes them so. Anything
else (a new import, an edit of an expression, a line to wrap, blank lines the layout rules
would change in the next statement, a commented-out copy to drop) makes `plan` answer None,
and the caller uses `Planner`.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from repro_lint.core.edits import InsertStatements, SeedSpec
from repro_lint.fix.apply import ROOT_NAME, SEED_NAME, FixError, Planner
from repro_lint.fix.ast_import_block import import_block
from repro_lint.fix.ast_layout import NEWLINE, AstLayout, Block, Statement, Unsupported
from repro_lint.fix.imports import LOCAL, PROJECT, Context, Imports
from repro_lint.fix.style import Style

_SIMPLE_INSERTS = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Pass, ast.Delete, ast.Assert)


_CONSTANT, _STATEMENTS = 1, 3  # (`apply`'s groups: what goes first at one point)


@dataclass
class _Lines:
    group: int
    order: int
    seq: int
    codes: list  # the statements, one line each, without indentation or line end
    style: str  # "section" (below the imports) or "plain"


class _KnownImports(Imports):
    """`Imports` that never reads the module's statements (it has no libcst tree to read)."""

    def from_import(self, module: str, name: str, ctx: Context):
        if self.section(module) not in (PROJECT, LOCAL) or name in self.layout.module_bindings:
            return None
        if any(imp.name == name for imp in self.new) or any(
            name in self.layout.functions[q].bindings for q in ctx.functions if q in self.layout.functions
        ):
            return None
        raise Unsupported("a name that may join a from-import")


class LinePlanner(Planner):
    def __init__(self, text: str, default_seed: str, project_roots: frozenset, aliases: dict, style: Optional[Style] = None) -> None:
        self.layout = AstLayout.of(text)  # type: ignore[assignment]
        self.default_seed = default_seed
        self.style = style or Style()
        self.text = text
        self.lines = text.splitlines()
        self.imports = _KnownImports(self.layout, project_roots, aliases, self.style, self.lines)  # type: ignore[arg-type]
        self.points: dict = {}  # (id(block), index) -> (block, index, [_Lines])
        self.keys: set = set()
        self.seen_edits: set = set()
        self.seq = 0
        self.seed_constant: Optional[str] = None
        self.import_end = import_block(self.layout)[1]

    # -- what `Planner` does on libcst, for the edits handled here --------------------------
    def _statement_context(self, st: Statement, after: bool) -> Context:  # type: ignore[override]
        line = st.end[0] + 1 if after else st.start[0]
        if st.function is not None:
            return Context(self._functions(st.function), line, st.top, True)
        if st.block.module:
            return Context((), line, st.index + (1 if after else 0), False)
        return Context((), line, st.top, False)

    def _seed_expression(self, spec: SeedSpec) -> str:
        if spec.expr is not None:
            return spec.expr
        if [b for b in self.layout.module_bindings.get(SEED_NAME, ()) if not b.in_main]:
            return SEED_NAME
        if self.seed_constant is None:
            self.seed_constant = spec.value
            codes = _one_line_statements(f"{SEED_NAME} = {spec.value}\n")
            self._add_lines(self.layout.module, self.import_end, _Lines(_CONSTANT, 0, self._next(), codes, "section"))  # type: ignore[arg-type]
        return SEED_NAME

    def _add_lines(self, block: Block, index: int, item: _Lines) -> None:
        self.points.setdefault((id(block), index), (block, index, []))[2].append(item)

    def _insert(self, edit: InsertStatements, spec, code: str) -> None:
        if edit.key:
            if edit.key in self.keys:
                return
            self.keys.add(edit.key)
        if edit.guard:
            raise Unsupported("a guard")
        layout: AstLayout = self.layout  # type: ignore[assignment]
        style = "plain"
        if edit.where == "after" and edit.anchor is not None:
            st = layout.statement_at(edit.anchor)
            if st is None or not st.node.simple or st.node.is_import:
                raise Unsupported("the anchor")
            block, index, ctx = st.block, st.index + 1, self._statement_context(st, True)
        elif edit.where == "main-start" and layout.main_block is not None:
            block, index, ctx = layout.main_block, 0, Context((), 0, layout.main_index, False)
        elif edit.where == "after-imports":
            index = self.import_end
            if "{seed}" in edit.code:
                # (as `Planner._insert`: code that uses a module constant assigned below the imports goes after it)
                root = ROOT_NAME.match(self._seed(spec, Context((), 0, index, True)))
                at = self._assigned_at(root.group(0)) if root else None
                if at is not None and at >= index and not self._defined_before(root.group(0), index):
                    index = at + 1
            block, ctx, style = layout.module, self._module_level(index), "section"
        else:
            raise Unsupported(edit.where)
        text, local = self.expand(edit.code, spec, ctx, local_ok=True, code=code)
        if local or self.imports.new or self.imports.from_names:
            raise Unsupported("an import to add")
        codes = _one_line_statements(text)
        if any(len(block.indent) + len(c) > self.style.line_length for c in codes):
            raise Unsupported("a line to wrap")
        if self._already_in(block, codes):
            return
        point = self.points.get((id(block), index))
        if not edit.key and point is not None and any(item.codes == codes for item in point[2]):
            return
        self._add_lines(block, index, _Lines(_STATEMENTS, edit.order, self._next(), codes, style))

    def _already_in(self, block: Block, codes: list) -> bool:
        """`Planner._already_there` for one-line simple statements."""
        if any(c.strip() not in self.text for c in codes):
            return False
        layout: AstLayout = self.layout  # type: ignore[assignment]
        present = set()
        for line in block.lines:
            if line.simple:
                (l1, c1), (l2, _) = line.start, line.end
                present.add(layout.text[layout.starts[l1 - 1] + c1:layout.starts[l2]].strip())
        return all(c.strip() in present for c in codes)

    def _unsupported(self, *_args) -> None:
        raise Unsupported("an edit of an expression, a move or a function")

    _add_keyword = _replace = _move = _ensure_function = _wrap = _add_dict_items = _unsupported  # type: ignore[assignment]

    # -- writing -----------------------------------------------------------------------------
    def build(self) -> str:
        layout: AstLayout = self.layout  # type: ignore[assignment]
        match = NEWLINE.search(layout.text)
        newline = match.group(0) if match else "\n"
        inserts = []
        for block, index, items in self.points.values():
            at = self._line_after(block, index)
            blanks, codes = self._assembled(block, index, sorted(items, key=lambda i: (i.group, i.order, i.seq)))
            nxt = block.lines[index] if index < len(block.lines) else None
            if nxt is not None:
                self._check_next(block, index, nxt, at, codes, blanks[0])
            text = "".join(newline * blank + block.indent + code + newline for blank, code in zip(blanks, codes))
            inserts.append((layout.starts[at], text))
        out = []
        pos = 0
        for offset, text in sorted(inserts, key=lambda x: x[0]):
            out.append(layout.text[pos:offset])
            out.append(text)
            pos = offset
        out.append(layout.text[pos:])
        return "".join(out)

    def _assembled(self, block: Block, index: int, items: list) -> tuple[list, list]:
        """The blank lines above each inserted line, and the lines: `_Transformer._assemble`
        for one-line simple statements."""
        prev = block.lines[index - 1] if index > 0 else None
        if block.module and prev is not None and prev.is_def:
            raise Unsupported("a statement after a definition")
        blanks: list = []
        codes: list = []
        prev_group = None
        for item in items:
            for j, code in enumerate(item.codes):
                if not codes and item.style == "section" and prev is not None:
                    lines_after = self.style.lines_after_imports
                    blank = (lines_after if lines_after >= 0 else 1) if prev.is_import else 1
                elif codes and j == 0 and block.module and prev_group == _CONSTANT and item.group != _CONSTANT:
                    blank = 1  # `SEED = 0`, then a blank line, then what uses it
                else:
                    blank = 0
                blanks.append(blank)
                codes.append(code)
            prev_group = item.group
        return blanks, codes

    def _line_after(self, block: Block, index: int) -> int:
        """The 1-based line below which statements inserted at `index` of `block` go: the
        statement before them, or the block's header."""
        layout: AstLayout = self.layout  # type: ignore[assignment]
        if index > 0:
            prev = block.lines[index - 1]
            if not prev.simple:
                # (the lines below a block are its own or the next statement's, as their indentation says)
                nxt = block.lines[index] if index < len(block.lines) else None
                if nxt is None or _first_line(nxt) != prev.end[0] + 1:
                    raise Unsupported("lines below a block")
            return prev.end[0]
        if block.module:
            raise Unsupported("the start of the module")
        line = block.lines[0].start[0] - 1  # (the block's first statement's own lines stay below)
        while line > block.header_line and _blank_or_comment(layout.line_text(line)):
            line -= 1
        if line != block.header_line:
            raise Unsupported("a header of several lines")
        return line

    def _check_next(self, block: Block, index: int, nxt, at: int, codes: list, first_blank: int) -> None:
        """Raise where `Planner` would change the next statement's lines: blank lines before
        a definition or below the imports, a commented-out copy of an inserted line dropped."""
        layout: AstLayout = self.layout  # type: ignore[assignment]
        leading = [layout.line_text(n) for n in range(at + 1, _first_line(nxt))]
        blank = 0
        for line in leading:
            if line.strip(" \t\f\r\n"):
                break
            blank += 1
        if block.module and nxt.is_def and blank == 0:
            raise Unsupported("blank lines before a definition")
        prev = block.lines[index - 1] if index > 0 else None
        if block.module and index == self.import_end and prev is not None and prev.is_import and 1 < blank <= first_blank:
            raise Unsupported("blank lines below the imports")
        texts = {c.strip() for c in codes}
        for line in leading:
            stripped = line.strip()
            if stripped.startswith("#") and stripped.lstrip("#").strip() in texts:
                raise Unsupported("a commented-out copy")


def _first_line(line) -> int:
    """The first line of a statement, its decorators included."""
    node = line.nodes[0]
    return min([line.start[0], *(d.lineno for d in getattr(node, "decorator_list", ()))])


def _blank_or_comment(line: str) -> bool:
    stripped = line.strip(" \t\f\r\n")
    return not stripped or stripped.startswith("#")


def _one_line_statements(text: str) -> list:
    """The lines of inserted code, where each is one simple statement that libcst writes back
    as it reads (no comments, blank lines, continuations or semicolons)."""
    if any(ch in text for ch in "#\\;\r\t\f"):
        raise Unsupported("code to insert")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or any(not ln.strip() or ln[:1] == " " for ln in lines):
        raise Unsupported("code to insert")
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError) as exc:
        raise Unsupported("code to insert") from exc
    if len(body) != len(lines) or any(
        not isinstance(s, _SIMPLE_INSERTS) or s.lineno != i + 1 or s.end_lineno != i + 1 for i, s in enumerate(body)
    ):
        raise Unsupported("code to insert")
    return lines


def plan(text: str, default_seed: str, project_roots: frozenset, aliases: dict, style: Style, fixes: list) -> Optional[str]:
    """The text with `fixes` ((Fix, rule code) pairs) applied, where they only insert lines
    this module places; None otherwise."""
    if not all(isinstance(e, (InsertStatements, SeedSpec)) for fix, _ in fixes for e in fix.edits):
        return None
    try:
        planner = LinePlanner(text, default_seed, project_roots, aliases, style)
        for fix, code in fixes:
            planner.add(fix, code)
        return planner.build()
    except (Unsupported, FixError):
        return None

