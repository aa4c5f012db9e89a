"""Applying fixes to one file's text with libcst, keeping its formatting and comments.

Every edit operation of `repro_lint.core.edits` is implemented here, once, for every rule.
All edits of a round are located in the original tree (positions of the `ast` layer),
planned, and applied in one transformation:
- statements to insert are gathered per insertion point (a block and an index in it) and
  come out as one block: new imports first, then the `SEED` constant, added functions,
  and inserted statements by `order`, then by the order of the findings;
- an `InsertStatements` with a `key` is inserted once however many findings ask for it;
- statements moved into a function keep their comments, and the edits inside them;
- blank lines follow the file's layout: a blank line between the imports and what is
  added after them, two around added functions, none inside bodies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from repro_lint.fix import calls
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
from repro_lint.fix import dicts
from repro_lint.fix.cst_imports import CstImports, with_names
from repro_lint.fix.imports import OTHER, Context
from repro_lint.fix.planning import CONSTANT, DIRECTIVE, FUNCTION, IMPORTS, ROOT_NAME, SEED_NAME, STATEMENTS, FixError, PlannerBase
from repro_lint.fix.splice import TopLevel
from repro_lint.fix.layout import BodyStatement, Layout, function_body_start, is_import_line
from repro_lint.fix.style import Style

@dataclass
class _Item:
    group: int
    order: int
    seq: int
    stmts: list
    style: str  # "import", "section" (after the imports), "before" (an anchor), "plain"
    section: int = OTHER
    name: str = ""
    guard: str = ""


@dataclass
class _Point:
    block: cst.CSTNode
    index: int
    items: list = field(default_factory=list)


def _blank() -> cst.EmptyLine:
    return cst.EmptyLine(indent=False, whitespace=cst.SimpleWhitespace(""), comment=None)


def _blank_prefix(stmt: cst.CSTNode) -> int:
    n = 0
    for line in getattr(stmt, "leading_lines", ()):
        if line.comment is not None:
            break
        n += 1
    return n


def _with_blank_prefix(stmt, n: int):
    lines = list(stmt.leading_lines)
    rest = lines[_blank_prefix(stmt):]
    return stmt.with_changes(leading_lines=[_blank() for _ in range(n)] + rest)


def _is_def(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, (cst.FunctionDef, cst.ClassDef))


def _parse_statements(code: str, fix_code: str) -> list:
    try:
        return list(cst.parse_module(code if code.endswith("\n") else code + "\n").body)
    except cst.ParserSyntaxError as exc:
        raise FixError(fix_code, f"fix code does not parse: {code.strip()!r} ({exc.message})") from exc


def _parse_expression(code: str, fix_code: str) -> cst.BaseExpression:
    try:
        return cst.parse_expression(code)
    except cst.ParserSyntaxError as exc:
        raise FixError(fix_code, f"fix code does not parse: {code!r} ({exc.message})") from exc


class Planner(PlannerBase):
    """Collects the edits of one round for one file, then applies them all at once, on
    libcst's tree."""

    def __init__(self, text: str, default_seed: str, project_roots: frozenset, aliases: dict, style: Optional[Style] = None) -> None:
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError as exc:
            raise FixError("RPL001", f"cannot parse the file to fix it: {exc.message}") from exc
        self.layout = Layout.of(module, text)
        self.module = self.layout.module
        self.default_seed = default_seed
        self.style = style or Style()
        self.text = text
        self.lines = text.splitlines()
        self.imports = CstImports(self.layout, project_roots, aliases, self.style, self.lines)
        self.calls: dict[int, tuple] = {}  # id -> (original call, span) of calls that get keywords
        self.layouts: dict[int, Optional[calls.CallLayout]] = {}
        self.stale_comments: set = set()  # ids of statements whose trailing comment described a replaced value
        self.points: dict[tuple, _Point] = {}
        self.removals: dict[int, set] = {}
        self.blocks: dict[int, cst.CSTNode] = {}
        self.keywords: dict[int, list] = {}
        self.unsafe_keywords: set = set()  # (call id, keyword) added by an unsafe fix
        self.replacements: dict[int, cst.BaseExpression] = {}
        self.holders: dict[int, cst.CSTNode] = {}  # id(edited expression) -> the statement that holds it
        self.moved: dict[int, cst.BaseStatement] = {}  # id -> statement moved into a function
        self.wrapped: dict[int, cst.BaseStatement] = {}  # id -> a new compound statement holding statements moved into it
        self.dict_items: dict[int, tuple] = {}  # id -> (original dict display, span, [(key, value)]) of displays that get items
        self.dict_layouts: dict[int, Optional[tuple]] = {}
        self.keys: set = set()
        self.seen_edits: set = set()
        self.seed_constant: Optional[str] = None
        self.seq = 0
        start, self.import_end = self.layout.import_block()
        self.had_imports = start != self.import_end

    def _statement_context(self, st: BodyStatement, after: bool) -> Context:
        line = st.end[0] + 1 if after else st.start[0]
        if st.function is not None:
            return Context(self._functions(st.function), line, st.top, True)
        if isinstance(st.block, cst.Module):
            return Context((), line, st.index + (1 if after else 0), False)
        return Context((), line, st.top, False)

    def _seed_expression(self, spec: SeedSpec) -> str:
        if spec.expr is not None:
            return spec.expr
        bindings = [b for b in self.layout.module_bindings.get(SEED_NAME, ()) if not b.in_main]
        if bindings:
            return SEED_NAME
        if self.seed_constant is None:
            self.seed_constant = spec.value
            stmts = _parse_statements(f"{SEED_NAME} = {spec.value}\n", "seed")
            self._add_item(self.module, self.import_end, _Item(CONSTANT, 0, self._next(), stmts, "section"))
        return SEED_NAME

    # -- points ----------------------------------------------------------------------
    def _add_item(self, block: cst.CSTNode, index: int, item: _Item) -> None:
        self.blocks[id(block)] = block
        point = self.points.setdefault((id(block), index), _Point(block, index))
        point.items.append(item)

    def _body_start(self, qual: str, code: str) -> tuple[cst.CSTNode, int, Context]:
        fn = self.layout.functions.get(qual)
        if fn is None:
            raise FixError(code, f"function `{qual}` not found")
        body = fn.node.body
        index = function_body_start(fn.node)
        if isinstance(body, cst.IndentedBlock):
            # after the function's own leading imports, so that the names they bind are usable
            while index < len(body.body) and is_import_line(body.body[index]):
                index += 1
        first = body.body[index] if isinstance(body, cst.IndentedBlock) and index < len(body.body) else None
        line = self.layout.positions[id(first)][0][0] if first is not None and id(first) in self.layout.positions else 0
        return body, index, Context(self._functions(qual), line, 0, True)

    # -- edits -----------------------------------------------------------------------
    def _expression_context(self, span: tuple) -> Context:
        st = self.layout.statement_at(span)
        if st is None:
            return self._module_level(len(self.module.body))
        ctx = self._statement_context(st, after=False)
        return Context(ctx.functions, span[0], ctx.top, ctx.late)

    def _add_keyword(self, edit: AddKeyword, spec, code: str, unsafe: bool = False) -> None:
        call = self.layout.expression_at(edit.call, cst.Call)
        if call is None:
            raise FixError(code, f"call at {edit.call[0]}:{edit.call[1] + 1} not found")
        assert isinstance(call, cst.Call)
        self.calls[id(call)] = (call, edit.call)
        pending = self.keywords.setdefault(id(call), [])
        if any(a.keyword is not None and a.keyword.value == edit.name for a in call.args):
            return
        at = next((i for i, (n, _) in enumerate(pending) if n == edit.name), None)
        if at is not None and (not unsafe or (id(call), edit.name) in self.unsafe_keywords):
            return
        value, _ = self.expand(edit.value, spec, self._expression_context(edit.call), local_ok=False, code=code)
        if unsafe:
            self.unsafe_keywords.add((id(call), edit.name))
        if at is not None:
            # a safe fix's value (`deterministic="warn"`) gives way to the unsafe fix asked for
            # with it (`deterministic=True`): with `--unsafe-fixes` the stronger one is wanted
            pending[at] = (edit.name, _parse_expression(value, code))
            return
        pending.append((edit.name, _parse_expression(value, code)))

    def _replace(self, edit: ReplaceExpression, spec, code: str) -> None:
        node = self.layout.expression_at(edit.span)
        if node is None:
            raise FixError(code, f"expression at {edit.span[0]}:{edit.span[1] + 1} not found")
        value, _ = self.expand(edit.code, spec, self._expression_context(edit.span), local_ok=False, code=code)
        new = _parse_expression(value, code)
        st = self.layout.statement_at(edit.span)
        if not (st is not None and _assigned_value(st.node, node)):
            new = _parenthesised(node, new)
        self.replacements[id(node)] = new
        if st is not None:
            self.holders[id(node)] = st.node
        if _is_literal(node) and self.module.code_for_node(new) != self.module.code_for_node(node).strip("()"):
            st = self.layout.statement_at(edit.span)
            if st is not None and isinstance(st.node, cst.SimpleStatementLine):
                self.stale_comments.add(id(st.node))

    def _insert(self, edit: InsertStatements, spec, code: str) -> None:
        if edit.key:
            if edit.key in self.keys:
                return
            self.keys.add(edit.key)
        style = "plain"
        if edit.where in ("after", "before"):
            if edit.anchor is None:
                raise FixError(code, f"`{edit.where}` insertion without an anchor")
            st = self.layout.statement_at(edit.anchor)
            if st is None:
                raise FixError(code, f"statement at line {edit.anchor[0]} not found")
            after = edit.where == "after"
            block, index, ctx = st.block, st.index + (1 if after else 0), self._statement_context(st, after)
            style = "plain" if after else "before"
        elif edit.where == "body-start":
            if not edit.function:
                raise FixError(code, "`body-start` insertion without a function")
            block, index, ctx = self._body_start(edit.function, code)
        elif edit.where == "main-start":
            guard = self.layout.main_guard
            if guard is None:
                raise FixError(code, "no `if __name__ == \"__main__\":` block")
            block, index, ctx = guard.body, 0, Context((), 0, self.layout.main_index, False)
        elif edit.where == "after-imports":
            index = self.import_end
            if "{seed}" in edit.code:
                # code that uses a module constant assigned below the imports goes after it
                root = ROOT_NAME.match(self._seed(spec, Context((), 0, index, True)))
                at = self._assigned_at(root.group(0)) if root else None
                if at is not None and at >= index and not self._defined_before(root.group(0), index):
                    index = at + 1
            block, ctx, style = self.module, self._module_level(index), "section"
        else:
            raise FixError(code, f"unknown insertion point `{edit.where}`")
        guard = edit.guard
        if guard:
            inside = self._same_guard(block, index, guard)
            if inside is not None:
                # an `if` with the same condition right there (the user's, or one a previous
                # run added): the statements join its end instead of a second `if`
                block, index, guard, style = inside, len(inside.body), "", "plain"
        text, local = self.expand(edit.code, spec, ctx, local_ok=True, code=code)
        stmts = _parse_statements("".join(s + "\n" for s in local) + text, code)
        indent = self._block_indent(block)
        stmts = [calls.wrap_statement(self.module, s, indent, self.style.line_length, self.module.default_indent) for s in stmts]
        if self._already_there(block, stmts):
            return
        stmts = self._local_imports_apart(block, index, stmts)
        if not stmts:
            return
        point = self.points.get((id(block), index))
        if not edit.key and point is not None and any(
            [self.module.code_for_node(s) for s in it.stmts] == [self.module.code_for_node(s) for s in stmts] for it in point.items
        ):
            return
        self._add_item(block, index, _Item(STATEMENTS, edit.order, self._next(), stmts, style, guard=guard))

    def _local_imports_apart(self, block: cst.CSTNode, index: int, stmts: list) -> list:
        """Statements to insert at `index` of a function's body right after its own imports:
        their leading imports join those imports at their sorted place (as the import sorter
        wants a function's import block too); the rest is returned."""
        body = getattr(block, "body", ())
        if not isinstance(block, cst.IndentedBlock) or not (0 < index <= len(body)) or not is_import_line(body[index - 1]):
            return stmts
        while stmts and is_import_line(stmts[0]) and len(stmts[0].body) == 1:
            stmt = _with_blank_prefix(stmts.pop(0), 0)
            at, section, name = self.imports.place_in_body(list(body), index, stmt)
            self._add_item(block, at, _Item(IMPORTS, section, 0, [stmt], "import", section, name))
        return stmts

    def _same_guard(self, block: cst.CSTNode, index: int, guard: str) -> Optional[cst.IndentedBlock]:
        """The body of an `if <guard>:` (no `else`) just before or at `index` in `block`."""
        body = getattr(block, "body", ())
        if not isinstance(body, (list, tuple)):
            return None
        for j in (index - 1, index):
            stmt = body[j] if 0 <= j < len(body) else None
            if (
                isinstance(stmt, cst.If) and stmt.orelse is None and isinstance(stmt.body, cst.IndentedBlock)
                and self.module.code_for_node(stmt.test).strip() == guard.strip()
            ):
                return stmt.body
        return None

    def _already_there(self, block: cst.CSTNode, stmts: list) -> bool:
        """Whether the block already holds every statement to insert (the fix was applied,
        but the finding stays: inserting again would never settle)."""
        body = getattr(block, "body", ())
        if not isinstance(body, (list, tuple)):
            return False
        # (a compound statement equals only a compound one: the code of a block's loops and
        # functions, its largest statements, is not made to compare simple ones)
        # A simple statement's code is a slice of the text (its line without the indentation),
        # so one that is not in the text is in no block: no need to generate the block's code.
        if any(isinstance(s, cst.SimpleStatementLine) and _code(self.module, s) not in self.text for s in stmts):
            return False
        simple = all(isinstance(s, cst.SimpleStatementLine) for s in stmts)
        present = {_code(self.module, s) for s in body if not simple or isinstance(s, cst.SimpleStatementLine)}
        return all(_code(self.module, s) in present for s in stmts)

    def _move(self, edit: MoveStatements, spec, code: str) -> None:
        block, index, ctx = self._body_start(edit.function, code)
        moved = []
        for span in edit.stmts:
            st = self.layout.statement_at(span)
            if st is None or st.start != (span[0], span[1]):
                raise FixError(code, f"statement at line {span[0]} not found")
            if id(st.node) in self.moved:
                continue
            self.moved[id(st.node)] = st.node
            self.blocks[id(st.block)] = st.block
            self.removals.setdefault(id(st.block), set()).add(st.index)
            moved.append(st.node)
        stmts = []
        if edit.prelude:
            text, local = self.expand(edit.prelude, spec, ctx, local_ok=True, code=code)
            stmts = self._local_imports_apart(block, index, _parse_statements("".join(s + "\n" for s in local) + text, code))
        self._add_item(block, index, _Item(STATEMENTS, -1, self._next(), stmts + moved, "plain"))

    def _wrap(self, edit: WrapStatements, spec, code: str) -> None:
        found = [self.layout.statement_at(span) for span in edit.stmts]
        if not found or any(st is None or st.start != (span[0], span[1]) for st, span in zip(found, edit.stmts)):
            raise FixError(code, f"statements at line {edit.stmts[0][0] if edit.stmts else 0} not found")
        first = found[0]
        if any(st.block is not first.block or st.index != first.index + i for i, st in enumerate(found)):  # type: ignore[union-attr]
            raise FixError(code, f"the statements at line {edit.stmts[0][0]} are not one run of a block")
        if any(id(st.node) in self.moved for st in found):  # type: ignore[union-attr]
            return
        text, local = self.expand(edit.header, spec, self._statement_context(first, after=False), local_ok=True, code=code)
        header = _parse_statements("".join(s + "\n" for s in local) + text + "\n    pass\n", code)
        holder = header[-1]
        if not isinstance(holder, (cst.With, cst.If, cst.For, cst.While, cst.Try)) or not isinstance(holder.body, cst.IndentedBlock):
            raise FixError(code, f"`{edit.header}` does not start a block")
        nodes = [st.node for st in found]  # type: ignore[union-attr]
        lead = list(getattr(nodes[0], "leading_lines", ()))
        nodes[0] = nodes[0].with_changes(leading_lines=[])
        holder = holder.with_changes(body=holder.body.with_changes(body=nodes), leading_lines=lead)
        for st in found:
            self.moved[id(st.node)] = st.node  # type: ignore[union-attr]
            self.removals.setdefault(id(first.block), set()).add(st.index)  # type: ignore[union-attr]
        self.blocks[id(first.block)] = first.block
        self.wrapped[id(holder)] = holder
        self._add_item(first.block, first.index, _Item(STATEMENTS, -1, self._next(), [*header[:-1], holder], "plain"))

    def _add_dict_items(self, edit: AddDictItems, spec, code: str) -> None:
        node = self.layout.expression_at(edit.dict, cst.Dict)
        if node is None:
            raise FixError(code, f"dict at {edit.dict[0]}:{edit.dict[1] + 1} not found")
        assert isinstance(node, cst.Dict)
        _, _, pending = self.dict_items.setdefault(id(node), (node, edit.dict, []))
        present = {self.module.code_for_node(e.key).strip() for e in node.elements if isinstance(e, cst.DictElement)}
        present |= {self.module.code_for_node(k).strip() for k, _ in pending}
        ctx = self._expression_context(edit.dict)
        for key, value in edit.items:
            k, _ = self.expand(key, spec, ctx, local_ok=False, code=code)
            if k.strip() in present:
                continue
            present.add(k.strip())
            v, _ = self.expand(value, spec, ctx, local_ok=False, code=code)
            pending.append((_parse_expression(k, code), _parse_expression(v, code)))

    def _ensure_function(self, edit: EnsureFunction, spec, code: str) -> None:
        key = f"function:{edit.name}"
        if edit.name in self.layout.module_bindings or key in self.keys:
            return
        self.keys.add(key)
        at = self.layout.definitions_start(self.import_end)
        ctx = Context((), 0, at, True)
        text, _ = self.expand(edit.code, spec, ctx, local_ok=False, code=code)
        stmts = _parse_statements(text, code)
        self._add_item(self.module, at, _Item(FUNCTION, 0, self._next(), stmts, "section"))

    # -- applying --------------------------------------------------------------------
    def _block_indent(self, block: cst.CSTNode) -> str:
        """The indentation of a block's statements, as the file writes it."""
        for stmt in getattr(block, "body", ()) if isinstance(block, cst.IndentedBlock) else ():
            pos = self.layout.positions.get(id(stmt))
            if pos is not None and pos[0][0] <= len(self.lines):
                line = self.lines[pos[0][0] - 1]
                return line[: len(line) - len(line.lstrip(" \t"))]
        return ""

    def blank_after_imports(self, stmt: cst.CSTNode) -> int:
        """Blank lines between the import block and the statement after it (isort's rule)."""
        if _is_def(stmt):
            return max(2, self.style.lines_after_imports)
        return self.style.lines_after_imports if self.style.lines_after_imports >= 0 else 1

    def _plan_layouts(self) -> None:
        added: dict[int, list] = {}
        per_line: dict[int, int] = {}  # what the keywords add to each line (calls on one line)
        for oid, (call, span) in self.calls.items():
            pending = self.keywords.get(oid)
            if not pending:
                continue
            added[oid] = [calls.keyword_text(name, self.module.code_for_node(value)) for name, value in pending]
            if span[0] == span[2]:
                per_line[span[0]] = per_line.get(span[0], 0) + calls.added_length(call, added[oid])
        for oid, texts in added.items():
            call, span = self.calls[oid]
            st = self.layout.statement_at(span)
            self.layouts[oid] = calls.plan(
                self.module, call, span, self.lines, st.start[0] if st is not None else span[0], texts,
                self.style.line_length, self.module.default_indent, per_line.get(span[0], 0) if span[0] == span[2] else 0,
            )

    def _plan_dict_layouts(self) -> None:
        for oid, (node, span, pending) in self.dict_items.items():
            if not pending:
                continue
            st = self.layout.statement_at(span)
            added = [dicts.item_text(self.module.code_for_node(k), self.module.code_for_node(v)) for k, v in pending]
            self.dict_layouts[oid] = dicts.plan(
                node, span, self.lines, st.start[0] if st is not None else span[0], added, self.style.line_length, self.module.default_indent,
            )

    def build(self) -> str:
        self._plan_layouts()
        self._plan_dict_layouts()
        for imp in self.imports.new:
            index = self.imports.placement(imp)
            stmt = cst.parse_statement(imp.code + "\n")
            section = self.imports.layout_section(imp)
            self._add_item(self.module, index, _Item(IMPORTS, section, 0, [stmt], "import", section, imp.module.lower()))
        if self.moved:
            inner = _Transformer(self, blocks=False)
            for point in self.points.values():
                for item in point.items:
                    item.stmts = [
                        _strip_blank_lines(s.visit(inner)) if id(s) in self.moved
                        else s.visit(inner) if id(s) in self.wrapped else s
                        for s in item.stmts
                    ]
        if self.layout.source is not None and not self.layout.node_positions:
            pruned = _Transformer(self, blocks=True, statements=self._edited_statements())
            out = self.module.visit(pruned)
            if self._edited_ids() <= pruned.applied:
                return self._written(out)
            # (an edit the pruned walk did not reach: a kind `_edited_statements` does not know)
            return self._written(self.module.visit(_Transformer(self, blocks=True)))
        return self.module.visit(_Transformer(self, blocks=True, only=self._edited_spans())).code

    def _written(self, out: cst.Module) -> str:
        """`out.code`, with the statements left alone copied from the text (`splice`)."""
        source = self.layout.source
        top = TopLevel.of(self.text, self.module, source.ast_of) if source is not None else None
        return top.code(out) if top is not None else out.code

    def _edited_ids(self) -> set:
        """The ids of the nodes the edits change."""
        ids = {oid for oid, pending in self.keywords.items() if pending}
        ids.update(self.replacements, self.stale_comments, self.imports.from_names, self.blocks)
        ids.update(oid for oid, (_, _, pending) in self.dict_items.items() if pending)
        return ids

    def _edited_statements(self) -> set:
        """The ids of the statements that hold an edit, and of those that hold them: the
        transformer enters no other statement."""
        source = self.layout.source
        nodes: list = []
        for oid, pending in self.keywords.items():
            if pending and oid in self.calls:
                st = self.layout.statement_at(self.calls[oid][1])
                if st is not None:
                    nodes.append(st.node)
        nodes += [self.holders[oid] for oid in self.replacements if oid in self.holders]
        for _, span, pending in self.dict_items.values():
            st = self.layout.statement_at(span) if pending else None
            if st is not None:
                nodes.append(st.node)
        ids = set(self.stale_comments) | set(self.moved)
        ids.update(id(source.lines_of[oid]) for oid in self.imports.from_names if oid in source.lines_of)  # type: ignore[union-attr]
        for oid in self.blocks:
            owner = source.owners.get(oid)  # type: ignore[union-attr]
            if owner is not None:
                nodes.append(owner)
        out: set = set()
        todo = [id(n) for n in nodes] + list(ids)
        parents = source.parents  # type: ignore[union-attr]
        while todo:
            oid = todo.pop()
            if oid in out:
                continue
            out.add(oid)
            parent = parents.get(oid)
            if parent is not None:
                todo.append(id(parent))
        return out

    def _edited_spans(self) -> list:
        """The spans of the nodes the edits change: the transformer visits only the subtrees
        that hold one (a visit of every node was a third of a fix's time)."""
        ids = self._edited_ids() | set(self.moved)
        spans = []
        for node, rng in self.layout.node_positions.items():
            if id(node) in ids:
                spans.append(((rng.start.line, rng.start.column), (rng.end.line, rng.end.column)))
        return spans


def _code(module: cst.Module, stmt: cst.CSTNode) -> str:
    """A statement's code without the blank lines and comments above it."""
    if hasattr(stmt, "leading_lines"):
        stmt = stmt.with_changes(leading_lines=[])
    return module.code_for_node(stmt).strip()


def _strip_blank_lines(stmt):
    lines = [ln for ln in stmt.leading_lines if ln.comment is not None]
    return stmt.with_changes(leading_lines=lines)


class _Transformer(cst.CSTTransformer):
    def __init__(self, plan: Planner, blocks: bool, only: Optional[list] = None, statements: Optional[set] = None) -> None:
        super().__init__()
        self.plan = plan
        self.with_blocks = blocks
        self.only = only  # the spans of the edited nodes: other subtrees are left as they are
        self.positions = plan.layout.node_positions
        # (with statement positions from `ast`) the statements entered: those that hold an edit
        self.statements = statements
        self.known = plan.layout.source.statements if plan.layout.source is not None else {}
        self.applied: set = set()  # ids of the edited nodes the walk reached

    def on_visit(self, node) -> bool:
        if self.statements is not None:
            return id(node) not in self.known or id(node) in self.statements
        only = self.only
        if only is None:
            return True
        rng = self.positions.get(node)
        if rng is None:
            return True
        start, end = (rng.start.line, rng.start.column), (rng.end.line, rng.end.column)
        return any(start <= a and b <= end for a, b in only)

    def on_leave(self, original, updated):
        plan = self.plan
        oid = id(original)
        self.applied.add(oid)
        if oid in plan.keywords and plan.keywords[oid]:
            updated = calls.with_keywords(updated, plan.keywords[oid], plan.module.default_indent, plan.layouts.get(oid))
        if oid in plan.dict_items and plan.dict_items[oid][2]:
            updated = dicts.with_items(updated, plan.dict_items[oid][2], plan.dict_layouts.get(oid))
        if oid in plan.stale_comments:
            updated = _without_stale_comment(updated)
        if oid in plan.replacements:
            updated = _replacement(updated, plan.replacements[oid])
        if oid in plan.imports.from_names:
            updated = with_names(updated, plan.imports.from_names[oid])
        if self.with_blocks and oid in plan.blocks:
            updated = self._block(original, updated)
        return updated

    def _block(self, original, updated):
        plan = self.plan
        points = {index: p for (bid, index), p in plan.points.items() if bid == id(original)}
        removed = plan.removals.get(id(original), set())
        is_module = isinstance(original, cst.Module)
        if isinstance(updated, cst.SimpleStatementSuite):
            small = list(updated.body)
            small[-1] = small[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            body = [cst.SimpleStatementLine(body=small)]
            header = updated.trailing_whitespace
        else:
            body = list(updated.body)
            header = None
        out: list = []
        pending_blank = 0  # blank lines of removed statements, handed to the next one kept
        for index in range(len(body) + 1):
            nxt = body[index] if index < len(body) else None
            point = points.get(index)
            if point is not None:
                inserted, nxt = self._assemble(point, out, nxt, is_module)
                out.extend(inserted)
            if nxt is None:
                continue
            if index in removed:
                pending_blank = max(pending_blank, _blank_prefix(nxt))
                continue
            if pending_blank and _blank_prefix(nxt) < pending_blank and out:
                nxt = _with_blank_prefix(nxt, pending_blank)
            pending_blank = 0
            out.append(nxt)
        if not out and not is_module:
            out = [cst.SimpleStatementLine(body=[cst.Pass()])]
        if header is not None:
            return cst.IndentedBlock(body=out, header=header)
        return updated.with_changes(body=out)

    def _assemble(self, point: _Point, before: list, nxt, is_module: bool):
        """The statements inserted at a point, with tidy blank lines; and the next statement
        (its blank lines adjusted)."""
        imports = sorted((i for i in point.items if i.group == IMPORTS), key=lambda i: (i.section, i.name))
        others = _guarded(sorted((i for i in point.items if i.group != IMPORTS), key=lambda i: (i.group, i.order, i.seq)))
        sections = self.plan.imports
        out: list = []
        prev = before[-1] if before else None
        prev_section = sections.section_of_statement(prev) if is_module or is_import_line(prev) else -1
        apart = sections.separates_sections()
        for item in imports:
            stmt = item.stmts[0]
            blank = 1 if prev is not None and prev_section != item.section and apart else 0
            out.append(_with_blank_prefix(stmt, blank))
            prev, prev_section = stmt, item.section
        first_other = True
        prev_group = None
        for item in others:
            for j, stmt in enumerate(item.stmts):
                if is_module and _is_def(stmt):
                    blank = 2 if (prev is not None) else 0
                elif is_module and prev is not None and _is_def(prev):
                    blank = 2
                elif first_other and item.style == "section" and prev is not None:
                    blank = self.plan.blank_after_imports(stmt) if is_import_line(prev) else 1
                elif not is_module and prev is not None and is_import_line(prev) and not is_import_line(stmt):
                    # code after a function's own imports stands apart from them, as formatters want
                    blank = 1
                elif j == 0 and is_module and prev_group == CONSTANT and item.group != CONSTANT:
                    blank = 1  # `SEED = 0`, then a blank line, then what uses it
                elif first_other and item.style == "before" and nxt is not None:
                    blank = _blank_prefix(nxt)
                    nxt = _with_blank_prefix(nxt, 0)
                else:
                    blank = -1  # keep its own lines (moved statements keep their comments)
                if blank >= 0:
                    stmt = _with_blank_prefix(stmt, blank)
                out.append(stmt)
                prev = stmt
                first_other = False
            prev_group = item.group
        if nxt is not None and out:
            last = out[-1]
            if (
                is_module and imports and not others and not self.plan.had_imports
                and point.index == self.plan.import_end and sections.section_of_statement(nxt) == OTHER
            ):
                # a new import block: the blank lines after it are isort's
                nxt = _with_blank_prefix(nxt, self.plan.blank_after_imports(nxt))
            elif is_module and (_is_def(last) and _blank_prefix(nxt) < 2 or _is_def(nxt) and _blank_prefix(nxt) == 0):
                nxt = _with_blank_prefix(nxt, 2)
            elif (
                is_module and others and point.index == self.plan.import_end and before and is_import_line(before[-1])
                and 1 < _blank_prefix(nxt) <= _blank_prefix(out[len(imports)]) and not _is_def(nxt) and not _is_def(last)
            ):
                # the statements added below the imports took the blank lines after them
                nxt = _with_blank_prefix(nxt, 1)
            elif not is_module and is_import_line(last) and not is_import_line(nxt) and _blank_prefix(nxt) < 1:
                nxt = _with_blank_prefix(nxt, 1)
            elif not others and imports and (is_module or is_import_line(nxt)):
                nxt_section = sections.section_of_statement(nxt)
                if nxt_section != OTHER and nxt_section != imports[-1].section and _blank_prefix(nxt) < 1 and apart:
                    nxt = _with_blank_prefix(nxt, 1)
                elif nxt_section == imports[-1].section:
                    # joining the section of the next import: its blank line and header comments
                    # move up to the first new import of that section
                    first = next(j for j, item in enumerate(imports) if item.section == nxt_section)
                    moved = out[first].with_changes(leading_lines=list(nxt.leading_lines))
                    if first > 0 and _blank_prefix(moved) < 1 and apart:
                        moved = _with_blank_prefix(moved, 1)  # still apart from the new import of the section before
                    out[first] = moved
                    nxt = nxt.with_changes(leading_lines=[])
        if nxt is not None and out:
            nxt = _without_commented_copies(nxt, out)
        return out, nxt


def _without_commented_copies(nxt, inserted: list):
    """The next statement without the comment lines above it that spell a statement just
    inserted (`# random.seed(seed)` under a new `random.seed(seed)`): the user's commented-out
    copy of what the fix now does."""
    lines = getattr(nxt, "leading_lines", ())
    if not any(line.comment is not None for line in lines):
        return nxt
    texts = {cst.Module(body=[stmt]).code.strip() for stmt in inserted if isinstance(stmt, cst.SimpleStatementLine)}
    kept = [line for line in lines if line.comment is None or line.comment.value.lstrip("#").strip() not in texts]
    return nxt if len(kept) == len(lines) else nxt.with_changes(leading_lines=kept)


def _guarded(items: list) -> list:
    """Items inserted under the same guard become one `if <guard>:` holding their
    statements, where the first of them goes."""
    out: list = []
    shared: dict = {}
    for item in items:
        if not item.guard:
            out.append(item)
            continue
        first = shared.get(item.guard)
        if first is None:
            first = shared[item.guard] = _Item(item.group, item.order, item.seq, [], item.style, item.section, item.name, item.guard)
            out.append(first)
        first.stmts.extend(item.stmts)
    for guard, item in shared.items():
        node = cst.parse_statement(f"if {guard}:\n    pass\n")
        assert isinstance(node, cst.If) and isinstance(node.body, cst.IndentedBlock)
        body = [_with_blank_prefix(s, 0) for s in item.stmts]
        item.stmts = [node.with_changes(body=node.body.with_changes(body=body, indent=None))]
    return out


_ATOMIC = (
    cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
    cst.Integer, cst.Float, cst.Imaginary, cst.List, cst.Tuple, cst.Dict, cst.Set, cst.Ellipsis,
    cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp,
)


def _replacement(updated: cst.BaseExpression, new: cst.BaseExpression) -> cst.BaseExpression:
    lpar = getattr(updated, "lpar", ())
    if lpar:
        return new.with_changes(lpar=updated.lpar, rpar=updated.rpar)  # type: ignore[attr-defined]
    return new


def _parenthesised(old: cst.CSTNode, new: cst.BaseExpression) -> cst.BaseExpression:
    """`new` in parentheses where it takes the place of an atom inside a larger expression
    (an operand, a receiver): what the atom bound tightly, the new expression might not."""
    if isinstance(old, _ATOMIC) and not isinstance(new, _ATOMIC) and not getattr(old, "lpar", ()):
        return new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return new


def _assigned_value(stmt: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Whether `node` is the whole value of an assignment statement (`x = <node>`): any
    expression stands there without parentheses."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    return any(isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and small.value is node for small in stmt.body)


_LITERAL = (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)


def _is_literal(node: cst.CSTNode) -> bool:
    """A value a fix flips (`True` -> `False`, a wrong string): what a comment may describe."""
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation):
        return _is_literal(node.expression)
    return isinstance(node, _LITERAL)


def _without_stale_comment(stmt):
    """A statement whose value was flipped, without the trailing comment that described the
    old value (`benchmark = True  # faster`); tool directives (`# noqa`, `# type:`) stay."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return stmt
    trailing = stmt.trailing_whitespace
    if trailing.comment is None or DIRECTIVE.search(trailing.comment.value):
        return stmt
    return stmt.with_changes(trailing_whitespace=trailing.with_changes(whitespace=cst.SimpleWhitespace(""), comment=None))
