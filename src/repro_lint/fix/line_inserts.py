"""Fixes that insert lines, add imports, functions and keyword arguments, or replace an
assigned value, placed from `ast` on the text.

Most fixes insert a few one-line statements after a statement, at the start of the
`__main__` block or below the imports (with the `SEED` constant), add the imports they need
and the documented `seed_worker` function, pass a keyword argument to a call, or flip a
flag's value. `apply.Planner` does that on a libcst tree, whose parse was most of a fix's
cost. `LinePlanner` is the same planner (the same templates, the same checks for code already
there, the same order and blank lines of what goes at one point, the same place for a new
import, `ast_imports`) on `ast_layout.AstLayout`: where libcst writes such an edit as the
inserted lines, at the block's indentation, in the file's line ending, right below the
statement before them (below a compound statement: where none of the lines between it and
the next statement is indented as its blocks; at the module's start: below its header of
comments), a keyword as `ast_calls` places it, a value as its new text, it writes them so.
Anything else (another edit of an expression, a line to wrap, a function in another
indentation than libcst's default, a local import) makes `plan` answer None, and the caller
uses `Planner`.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from repro_lint.core.edits import AddKeyword, EnsureFunction, InsertStatements, ReplaceExpression, SeedSpec
from repro_lint.fix.ast_calls import added_length, keyword_edit
from repro_lint.fix.ast_imports import AstImports
from repro_lint.fix.ast_import_block import definitions_start, import_block
from repro_lint.fix.ast_layout import NEWLINE, AstLayout, Block, Statement, Unsupported, first_line, is_blank
from repro_lint.fix.imports import LOCAL, OTHER, PROJECT, Context
from repro_lint.fix.planning import CONSTANT, DIRECTIVE, FUNCTION, IMPORTS, ROOT_NAME, SEED_NAME, STATEMENTS, FixError, PlannerBase
from repro_lint.fix.style import Style

_SIMPLE_INSERTS = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Pass, ast.Delete, ast.Assert)
_BODY_FIELDS = frozenset(["body", "orelse", "finalbody", "handlers", "cases"])


@dataclass
class _Lines:
    group: int
    order: int  # (imports: their section)
    seq: int
    codes: list  # the statements without indentation or line end (a function's lines joined by "\n")
    style: str  # "import", "section" (below the imports) or "plain"
    name: str = ""  # (imports) the module, for their order
    is_def: bool = False


@dataclass
class _Piece:
    """An inserted statement: the blank lines above it (or the text of the lines moved above
    it), its code, and its kind ("import", "def", "statement")."""

    blank: int
    code: str
    kind: str
    above: Optional[str] = None


class _KnownImports(AstImports):
    """`AstImports` that never joins a from-import (the statement's names would be edited)."""

    def from_import(self, module: str, name: str, ctx: Context):
        if self.section(module) not in (PROJECT, LOCAL) or name in self.layout.module_bindings:
            return None
        if any(imp.name == name for imp in self.new) or any(
            name in self.layout.functions[q].bindings for q in ctx.functions if q in self.layout.functions
        ):
            return None
        raise Unsupported("a name that may join a from-import")


class LinePlanner(PlannerBase):
    def __init__(self, text: str, default_seed: str, project_roots: frozenset, aliases: dict, style: Optional[Style] = None) -> None:
        self.layout = AstLayout.of(text)  # type: ignore[assignment]
        self.default_seed = default_seed
        self.style = style or Style()
        self.text = text
        self.lines = text.splitlines()
        start, self.import_end = import_block(self.layout)  # type: ignore[arg-type]
        self.had_imports = start != self.import_end
        self.imports = _KnownImports(self.layout, project_roots, aliases, self.style, self.lines, (start, self.import_end))  # type: ignore[arg-type]
        self.points: dict = {}  # (id(block), index) -> (block, index, [_Lines])
        self.keys: set = set()
        self.seen_edits: set = set()
        self.seq = 0
        self.seed_constant: Optional[str] = None
        self.calls: dict = {}  # span -> the ast call that gets keywords
        self.keywords: dict = {}  # span -> [(name, value code)]
        self.unsafe_keywords: set = set()
        self.replacements: dict = {}  # span -> (offset, offset, text) of a replaced value

    # -- what `Planner` does on libcst, for the edits handled here --------------------------
    def _statement_context(self, st: Statement, after: bool) -> Context:  # type: ignore[override]
        line = st.end[0] + 1 if after else st.start[0]
        if st.function is not None:
            return Context(self._functions(st.function), line, st.top, True)
        if st.block.module:
            return Context((), line, st.index + (1 if after else 0), False)
        return Context((), line, st.top, False)

    def _expression_context(self, span: tuple) -> Context:
        st = self.layout.statement_at(span)
        if st is None:
            raise Unsupported("an expression outside the statements")
        ctx = self._statement_context(st, after=False)  # type: ignore[arg-type]
        return Context(ctx.functions, span[0], ctx.top, ctx.late)

    def _seed_expression(self, spec: SeedSpec) -> str:
        if spec.expr is not None:
            return spec.expr
        if [b for b in self.layout.module_bindings.get(SEED_NAME, ()) if not b.in_main]:
            return SEED_NAME
        if self.seed_constant is None:
            self.seed_constant = spec.value
            codes = _one_line_statements(f"{SEED_NAME} = {spec.value}\n")
            self._add_lines(self.layout.module, self.import_end, _Lines(CONSTANT, 0, self._next(), codes, "section"))  # type: ignore[arg-type]
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
        if local or self.imports.from_names:
            raise Unsupported("a local import to add")
        codes = _one_line_statements(text)
        if any(len(block.indent) + len(c) > self.style.line_length for c in codes):
            raise Unsupported("a line to wrap")
        if self._already_in(block, codes):
            return
        point = self.points.get((id(block), index))
        if not edit.key and point is not None and any(item.codes == codes for item in point[2]):
            return
        self._add_lines(block, index, _Lines(STATEMENTS, edit.order, self._next(), codes, style))

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

    def _ensure_function(self, edit: EnsureFunction, spec, code: str) -> None:
        key = f"function:{edit.name}"
        if edit.name in self.layout.module_bindings or key in self.keys:
            return
        self.keys.add(key)
        layout: AstLayout = self.layout  # type: ignore[assignment]
        at = definitions_start(layout, self.import_end)
        text, _ = self.expand(edit.code, spec, Context((), 0, at, True), local_ok=False, code=code)
        if layout.first_indent not in (None, "    "):
            raise Unsupported("a file indented otherwise than the function's code")
        self._add_lines(layout.module, at, _Lines(FUNCTION, 0, self._next(), [_function_code(text)], "section", is_def=True))

    def _add_keyword(self, edit: AddKeyword, spec, code: str, unsafe: bool = False) -> None:
        span = tuple(edit.call)
        call = self._call_at(span)
        self.calls[span] = call
        pending = self.keywords.setdefault(span, [])
        if any(k.arg == edit.name for k in call.keywords):
            return
        at = next((i for i, (n, _) in enumerate(pending) if n == edit.name), None)
        if at is not None and (not unsafe or (span, edit.name) in self.unsafe_keywords):
            return
        value, _ = self.expand(edit.value, spec, self._expression_context(span), local_ok=False, code=code)
        _check_expression(value)
        if unsafe:
            self.unsafe_keywords.add((span, edit.name))
        if at is not None:
            pending[at] = (edit.name, value)  # (as `Planner._add_keyword`: the unsafe fix's value)
            return
        pending.append((edit.name, value))

    def _call_at(self, span: tuple) -> ast.Call:
        """The call whose span is `span`, in the statement that holds it (its header only,
        for a compound statement)."""
        layout: AstLayout = self.layout  # type: ignore[assignment]
        st = layout.statement_at(span)
        if st is None:
            raise Unsupported("no statement there")
        col = layout.col
        for node in _header_nodes(st.node.nodes):
            if isinstance(node, ast.Call) and node.lineno == span[0] and node.end_lineno == span[2]:
                if (col(node.lineno, node.col_offset), col(node.end_lineno, node.end_col_offset)) == (span[1], span[3]):
                    return node
        raise Unsupported("no call there")

    def _replace(self, edit: ReplaceExpression, spec, code: str) -> None:
        """`Planner._replace` for the whole value of an assignment on one line, the last
        thing on its line but a comment (no parentheses around it): the value's text is
        replaced, and the comment that described an old literal value goes with it."""
        layout: AstLayout = self.layout  # type: ignore[assignment]
        span = tuple(edit.span)
        st = layout.statement_at(span)
        if st is None or not st.node.simple or st.start[0] != st.end[0] or span[0] != span[2] or span[0] != st.start[0]:
            raise Unsupported("an expression to replace")
        col = layout.col
        node = next(
            (
                n.value for n in st.node.nodes
                if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and n.value is not None
                and (col(n.value.lineno, n.value.col_offset), col(n.value.end_lineno, n.value.end_col_offset)) == (span[1], span[3])  # type: ignore[arg-type]
            ),
            None,
        )
        line = layout.line_text(span[0])
        after = line[span[3]:].rstrip("\r\n")
        if node is None or not line[:span[1]].rstrip(" \t").endswith("=") or after.strip(" \t")[:1] not in ("", "#"):
            raise Unsupported("an expression to replace")
        value, _ = self.expand(edit.code, spec, self._expression_context(span), local_ok=False, code=code)
        _check_expression(value)
        end = span[3]
        comment = after.strip(" \t")
        if comment and _is_literal(node) and value != line[span[1]:span[3]] and not DIRECTIVE.search(comment):
            end += len(after)  # (the comment that described the old value, and the spaces before it)
        base = layout.starts[span[0] - 1]
        self.replacements[span] = (base + span[1], base + end, value)

    def _unsupported(self, *_args) -> None:
        raise Unsupported("an edit of an expression or a move")

    _move = _wrap = _add_dict_items = _unsupported  # type: ignore[assignment]

    # -- writing -----------------------------------------------------------------------------
    def build(self) -> str:
        layout: AstLayout = self.layout  # type: ignore[assignment]
        match = NEWLINE.search(layout.text)
        newline = match.group(0) if match else "\n"
        edits = self._keyword_edits() + list(self.replacements.values())
        for imp in self.imports.new:
            index = self.imports.placement(imp)
            section = self.imports.layout_section(imp)
            self._add_lines(layout.module, index, _Lines(IMPORTS, section, 0, [imp.code], "import", imp.module.lower()))  # type: ignore[arg-type]
        apart = self.imports.separates_sections() if self.imports.new else True
        for block, index, items in self.points.values():
            at = self._line_after(block, index)
            imports = sorted((i for i in items if i.group == IMPORTS), key=lambda i: (i.order, i.name))
            others = sorted((i for i in items if i.group != IMPORTS), key=lambda i: (i.group, i.order, i.seq))
            pieces = self._assembled(block, index, imports, others, apart)
            nxt = block.lines[index] if index < len(block.lines) else None
            end, below = at, ""
            if nxt is not None:
                end = first_line(nxt) - 1
                below = self._next_lines(block, index, nxt, at, imports, others, pieces, apart, newline)
            text = "".join(
                (p.above if p.above is not None else newline * p.blank)
                + block.indent + p.code.replace("\n", newline + block.indent) + newline
                for p in pieces
            )
            edits.append((layout.starts[at], layout.starts[end], text + below))
        out = []
        pos = 0
        for start, stop, text in sorted(edits, key=lambda e: e[0]):
            if start < pos:
                raise Unsupported("edits that meet")
            out.append(layout.text[pos:start])
            out.append(text)
            pos = stop
        out.append(layout.text[pos:])
        return "".join(out)

    def _keyword_edits(self) -> list:
        """The keywords to add, as (offset, offset, text) edits: `Planner._plan_layouts` and
        `calls.with_keywords` where `ast_calls` places them."""
        added: dict = {}
        per_line: dict = {}
        for span, call in self.calls.items():
            pending = self.keywords.get(span)
            if not pending:
                continue
            texts = [f"{name}={value}" for name, value in pending]
            added[span] = texts
            if span[0] == span[2]:
                per_line[span[0]] = per_line.get(span[0], 0) + added_length(call, texts)
        layout: AstLayout = self.layout  # type: ignore[assignment]
        limit = self.style.line_length
        return [
            keyword_edit(layout, self.calls[span], span, texts, limit, per_line.get(span[0], 0) if span[0] == span[2] else 0)
            for span, texts in added.items()
        ]

    def _assembled(self, block: Block, index: int, imports: list, others: list, apart: bool) -> list:
        """The statements inserted at a point, with the blank lines above each:
        `_Transformer._assemble` for the edits placed here."""
        prev = block.lines[index - 1] if index > 0 else None
        out: list = []
        if imports:
            prev_section = self.imports.section_of_statement(prev)
            for item in imports:
                blank = 1 if prev is not None and prev_section != item.order and apart else 0
                out.append(_Piece(blank, item.codes[0], "import"))
                prev_section = item.order
        prev_import = bool(imports) or (prev is not None and prev.is_import)
        prev_def = not imports and prev is not None and prev.is_def
        first = True
        prev_group = None
        for item in others:
            for j, code in enumerate(item.codes):
                if block.module and item.is_def:
                    blank = 2 if prev is not None or out else 0
                elif block.module and prev_def:
                    blank = 2
                elif first and item.style == "section" and (prev is not None or out):
                    lines_after = self.style.lines_after_imports
                    blank = (lines_after if lines_after >= 0 else 1) if prev_import else 1
                elif not block.module and prev_import:
                    blank = 1  # (code after a function's own imports stands apart from them)
                elif j == 0 and block.module and prev_group == CONSTANT and item.group != CONSTANT:
                    blank = 1  # `SEED = 0`, then a blank line, then what uses it
                else:
                    blank = 0
                out.append(_Piece(blank, code, "def" if item.is_def else "statement"))
                prev_def, prev_import, first = item.is_def, False, False
            prev_group = item.group
        return out

    def _line_after(self, block: Block, index: int) -> int:
        """The 1-based line below which statements inserted at `index` of `block` go: the
        statement before them, or the block's header."""
        layout: AstLayout = self.layout  # type: ignore[assignment]
        if index > 0:
            prev = block.lines[index - 1]
            if not prev.simple:
                self._below_block(block, index, prev.end[0])
            return prev.end[0]
        if block.module:
            if not block.lines:
                raise Unsupported("an empty module")
            # (libcst's module header holds every line above the first statement: they stay above)
            return first_line(block.lines[0]) - 1
        line = block.lines[0].start[0] - 1  # (the block's first statement's own lines stay below)
        while line > block.header_line and _blank_or_comment(layout.line_text(line)):
            line -= 1
        if line != block.header_line:
            raise Unsupported("a header of several lines")
        return line

    def _below_block(self, block: Block, index: int, end: int) -> None:
        """Check that none of the lines below a compound statement that ends on line `end`, up
        to the next statement, is one of the statement's blocks' own (libcst gives those blocks
        the lines up to the last one indented as one of them, the others to the next
        statement): each is blank, or a comment indented no deeper than `block`. Statements
        inserted after the compound one then go right below line `end`, as libcst writes them."""
        layout: AstLayout = self.layout  # type: ignore[assignment]
        nxt = block.lines[index] if index < len(block.lines) else None
        n = end + 1
        while n <= len(layout.lines) and (nxt is None or n < first_line(nxt)):
            line = layout.line_text(n)
            rest = line.lstrip(" \t")
            ws = line[: len(line) - len(rest)]
            if rest.rstrip("\r\n") == "" and ws == "" or rest.startswith("#") and block.indent.startswith(ws):
                n += 1
            elif nxt is None and not _blank_or_comment(line):
                break  # (the code after the block's last statement: another block's)
            else:
                raise Unsupported("lines below a block")

    def _next_lines(
        self, block: Block, index: int, nxt, at: int, imports: list, others: list, pieces: list, apart: bool, newline: str,
    ) -> str:
        """The lines between the inserted statements and the next statement, as `_assemble`
        leaves them (its blank lines set, a commented-out copy of an inserted line dropped);
        a first new import that joins the next one's section takes them above it."""
        layout: AstLayout = self.layout  # type: ignore[assignment]
        leading = [layout.line_text(n) for n in range(at + 1, first_line(nxt))]
        prefix = 0
        while prefix < len(leading) and is_blank(leading[prefix]):
            prefix += 1
        prev = block.lines[index - 1] if index > 0 else None
        last = pieces[-1].kind if pieces else ""
        if block.module and imports and not others and not self.had_imports and index == self.import_end:
            if self.imports.section_of_statement(nxt) == OTHER:
                raise Unsupported("a new import section")
        if block.module and (last == "def" and prefix < 2 or nxt.is_def and prefix == 0):
            leading = [newline, newline] + leading[prefix:]
        elif (
            block.module and others and index == self.import_end and prev is not None and prev.is_import
            and 1 < prefix <= pieces[len(imports)].blank and not nxt.is_def and last != "def"
        ):
            leading = [newline] + leading[prefix:]  # (the statements added below the imports took the blank lines after them)
        elif not block.module and last == "import" and not nxt.is_import and prefix < 1:
            leading = [newline] + leading
        elif not others and imports and (block.module or nxt.is_import):
            nxt_section = self.imports.section_of_statement(nxt)
            if nxt_section != OTHER and nxt_section != imports[-1].order and prefix < 1 and apart:
                leading = [newline] + leading
            elif nxt_section == imports[-1].order:
                # joining the section of the next import: its blank line and comments move up
                # to the first new import of that section
                first = next(j for j, item in enumerate(imports) if item.order == nxt_section)
                moved = [newline] + leading if first > 0 and prefix < 1 and apart else leading
                pieces[first].above = "".join(moved)
                return ""
        texts = {p.code.strip() for p in pieces if p.kind != "def"}
        return "".join(
            line for line in leading if not (line.strip().startswith("#") and line.strip().lstrip("#").strip() in texts)
        )


def _header_nodes(nodes: list):
    """The nodes of statements, without the bodies of compound ones, outermost first."""
    queue: list = []
    for stmt in nodes:
        queue.extend(v for f, v in ast.iter_fields(stmt) if f not in _BODY_FIELDS)
    i = 0
    while i < len(queue):
        n = queue[i]
        i += 1
        if isinstance(n, list):
            queue.extend(n)
        elif isinstance(n, ast.AST):
            yield n
            queue.extend(ast.iter_child_nodes(n))


def _is_literal(node: ast.AST) -> bool:
    """`apply._is_literal` on `ast`: a value a fix flips, which a comment may describe."""
    if isinstance(node, ast.UnaryOp):
        return _is_literal(node.operand)
    if isinstance(node, ast.JoinedStr):
        raise Unsupported("an f-string")  # (libcst's concatenation of one with a plain string is a literal)
    return isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (bool, int, float, str, bytes)))


def _check_expression(code: str) -> None:
    """An expression libcst writes back as it reads: one line, no comment or continuation."""
    if not code or code != code.strip() or any(ch in code for ch in "#\\\n\r\t\f"):
        raise Unsupported("an expression to add")
    try:
        ast.parse(code, mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise Unsupported("an expression to add") from exc


def _function_code(text: str) -> str:
    """The lines of a function to add, joined by "\\n", where libcst writes it back as it reads
    (one definition, indented by four spaces a level, without comments, strings, blank lines
    or continuations)."""
    if any(ch in text for ch in "#\\\r\t\f'\"") or not text.endswith("\n"):
        raise Unsupported("a function's code")
    lines = text[:-1].split("\n")
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError) as exc:
        raise Unsupported("a function's code") from exc
    if (
        len(body) != 1 or not isinstance(body[0], ast.FunctionDef) or body[0].decorator_list
        or body[0].lineno != 1 or body[0].end_lineno != len(lines) or lines[0][:1] == " "
        or any(not ln.strip() or (len(ln) - len(ln.lstrip(" "))) % 4 for ln in lines)
    ):
        raise Unsupported("a function's code")
    return "\n".join(lines)


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
    """The text with `fixes` ((Fix, rule code) pairs) applied, where this module places
    all their edits; None otherwise."""
    if not all(isinstance(e, (InsertStatements, SeedSpec, AddKeyword, EnsureFunction, ReplaceExpression)) for fix, _ in fixes for e in fix.edits):
        return None
    try:
        planner = LinePlanner(text, default_seed, project_roots, aliases, style)
        for fix, code in fixes:
            planner.add(fix, code)
        return planner.build()
    except (Unsupported, FixError):
        return None

