"""What `layout.Layout` knows of a module, read from `ast` and the text alone (no libcst tree).

Parsing a file with libcst was most of the cost of fixing it; the insertions most fixes make
need only where statements are, what each scope binds, and the text around them. This walk
visits the statements in the order `Layout`'s walk does and records the same facts: the
statements of every block (a line of simple statements is one, as libcst holds it; the
statements of a one-line suite are none), functions by qualified name, the names each scope
binds with the line and module-level statement `Layout` gives them, the `__main__` block.
Where the text holds something the two readings could disagree on, it raises `Unsupported`
and the caller uses libcst.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Optional

from repro_lint.fix.scopes import Binding, FunctionFacts, Pos

NEWLINE = re.compile(r"\r\n|\r|\n")  # (the line ends Python's tokenizer knows)
# characters `str.splitlines` takes for line ends and Python does not: lines would not agree
_ODD_LINE_ENDS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_MAIN = ('"__main__"', "'__main__'")


class Unsupported(Exception):
    """The text needs libcst to be edited exactly as libcst edits it."""


@dataclass(eq=False)
class Line:
    """A statement of a block as libcst holds it: a compound statement, or the simple
    statements of one line."""

    nodes: list
    start: Pos
    end: Pos
    simple: bool

    @property
    def is_import(self) -> bool:
        return self.simple and all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in self.nodes)

    @property
    def is_def(self) -> bool:
        return not self.simple and isinstance(self.nodes[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))


@dataclass(eq=False)
class Block:
    """The module, or an indented block: its statements and their indentation."""

    lines: list
    module: bool
    indent: str = ""
    header_line: int = 0  # (an indented block) the line its header ends on


@dataclass
class Statement:
    """`layout.BodyStatement`, with a `Line` for the node."""

    node: Line
    block: Block
    index: int
    start: Pos
    end: Pos
    function: Optional[str]
    top: int


@dataclass
class AstLayout:
    text: str
    lines: list  # the text's lines, with their ends
    starts: list  # offset of each line's start, then the text's end
    module: Block = field(default=None)  # type: ignore[assignment]
    statements: list = field(default_factory=list)
    functions: dict = field(default_factory=dict)
    module_bindings: dict = field(default_factory=dict)
    main_guard: Optional[ast.If] = None
    main_block: Optional[Block] = None  # the `__main__` block's body (None: a one-line suite)
    main_index: int = -1
    # the indentation of the first indented block (libcst's default for blocks it writes)
    first_indent: Optional[str] = None

    @classmethod
    def of(cls, text: str) -> "AstLayout":
        if (
            not text.endswith(("\n", "\r")) or ":=" in text or _ODD_LINE_ENDS.search(text)
            or text.count("\r") != text.count("\r\n")
        ):
            raise Unsupported("text")
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            raise Unsupported("parse") from exc
        lines = text.splitlines(keepends=True)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
        layout = cls(text, lines, starts)
        _Walk(layout).module(tree)
        return layout

    def col(self, line: int, byte_col: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def statement_at(self, span: tuple) -> Optional[Statement]:
        """The innermost block statement that holds the span (as `Layout.statement_at`)."""
        start, end = (span[0], span[1]), (span[2], span[3])
        best = None
        for st in self.statements:
            if st.start <= start and end <= st.end:
                if best is None or (st.start, _neg(st.end)) >= (best.start, _neg(best.end)):
                    best = st
        return best

    def line_text(self, n: int) -> str:
        return self.lines[n - 1] if 0 < n <= len(self.lines) else ""


def first_line(line: Line) -> int:
    """The first line of a statement, its decorators included."""
    node = line.nodes[0]
    return min([line.start[0], *(d.lineno for d in getattr(node, "decorator_list", ()))])


def lines_above(layout: AstLayout, block: Block, index: int) -> list:
    """The text lines between the statement at `index` of `block` and the one before it (the
    blank and comment lines libcst gives the statement as its leading lines, where the one
    before is a simple statement)."""
    if index == 0 or not block.lines[index - 1].simple:
        raise Unsupported("the lines above a block's first statement or below a block")
    return [layout.line_text(n) for n in range(block.lines[index - 1].end[0] + 1, first_line(block.lines[index]))]


def is_blank(line: str) -> bool:
    return not line.strip(" \t\r\n")


def is_suite(layout: AstLayout, body: list) -> bool:
    """Whether a body is a one-line suite (`if x: y = 1`): its first statement does not
    start its line."""
    first = body[0]
    return bool(layout.line_text(first.lineno).encode("utf-8")[: first.col_offset].strip())


def statement_lines(layout: AstLayout, body: list) -> list:
    """The statements of a block grouped as libcst holds them (`Line`s)."""
    return _Walk(layout).lines_of(body)


def _neg(pos: Pos) -> Pos:
    return (-pos[0], -pos[1])


def _target_names(node: ast.AST):
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, (ast.Tuple, ast.List)):
        for el in node.elts:
            yield from _target_names(el)
    elif isinstance(node, ast.Starred):
        yield from _target_names(node.value)


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


_SIMPLE = (
    ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Pass, ast.Delete, ast.Return, ast.Raise, ast.Assert,
    ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom, ast.Break, ast.Continue,
)


class _Walk:
    """`Layout`'s walk over `ast`: the same bindings, in the same order, with the same lines."""

    def __init__(self, layout: AstLayout) -> None:
        self.layout = layout
        self.scopes: list = []  # ("function" | "class", FunctionFacts | None)
        self.names: list = []
        self.top = 0
        self.line = 0
        self.in_main = False
        self.type_checking = 0
        self.main_guards: set = set()
        self.blocks: dict = {}  # id(ast body) -> its Block
        self.indents: list = [""]  # the indentation of the blocks the walk is in

    # -- positions -----------------------------------------------------------------------
    def span(self, first: ast.AST, last: ast.AST) -> tuple:
        col = self.layout.col
        end_line = last.end_lineno or last.lineno  # type: ignore[attr-defined]
        end_col = last.end_col_offset if last.end_col_offset is not None else last.col_offset  # type: ignore[attr-defined]
        return (first.lineno, col(first.lineno, first.col_offset)), (end_line, col(end_line, end_col))  # type: ignore[attr-defined]

    def is_suite(self, body: list) -> bool:
        return is_suite(self.layout, body)

    def lines_of(self, body: list) -> list:
        """The statements of a block grouped as libcst holds them."""
        out: list = []
        group: list = []
        for stmt in body:
            simple = isinstance(stmt, _SIMPLE)
            if group and simple and stmt.lineno == group[-1].end_lineno:
                group.append(stmt)
                continue
            if group:
                out.append(self._line(group))
                group = []
            if simple:
                group = [stmt]
            else:
                start, end = self.span(stmt, stmt)
                out.append(Line([stmt], start, end, False))
        if group:
            out.append(self._line(group))
        return out

    def _line(self, group: list) -> Line:
        last = group[-1]
        rest = self.layout.line_text(last.end_lineno).encode("utf-8")[last.end_col_offset:]
        if b";" in rest.split(b"#", 1)[0] or rest.rstrip().endswith(b"\\"):
            raise Unsupported("statements joined across lines")
        start, end = self.span(group[0], last)
        return Line(group, start, end, True)

    # -- scopes ----------------------------------------------------------------------------
    def function(self) -> Optional[FunctionFacts]:
        for kind, facts in reversed(self.scopes):
            if kind == "function":
                return facts
            return None
        return None

    def bind(self, name: str, kind: str = "other", module: Optional[str] = None) -> None:
        if self.scopes and self.scopes[-1][0] == "class":
            return
        if self.type_checking and kind != "other":
            kind = "typing"
        fn = self.function()
        binding = Binding(name, kind, module, self.line, self.top, self.in_main)
        if fn is not None:
            fn.bindings.setdefault(name, []).append(binding)
        elif not self.scopes:
            self.layout.module_bindings.setdefault(name, []).append(binding)

    # -- walking ---------------------------------------------------------------------------
    def module(self, tree: ast.Module) -> None:
        layout = self.layout
        lines = self.lines_of(tree.body)
        layout.module = Block(lines, True)
        for i, line in enumerate(lines):
            if not line.simple and self._is_main_guard(line.nodes[0]):
                self.main_guards.add(id(line.nodes[0]))
                if layout.main_guard is None:
                    layout.main_guard = line.nodes[0]
                    layout.main_index = i
        self._record(layout.module)
        for i, line in enumerate(lines):
            self.top = i
            self._enter(line)
        if layout.main_guard is not None and not self.is_suite(layout.main_guard.body):
            layout.main_block = self.blocks[id(layout.main_guard.body)]

    def _is_main_guard(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
            if isinstance(node, ast.If) and "__name__" in ast.dump(node.test):
                raise Unsupported("a test of __name__")
            return False
        test = node.test
        sides = [test.left, *test.comparators]
        names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
        strings = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
        if names and strings and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            text = self._segment(strings[0])
            if text not in _MAIN:
                raise Unsupported("a main guard's string")  # (libcst takes only one plain string)
            return True
        if "__name__" in ast.dump(test):
            raise Unsupported("a test of __name__")
        return False

    def _segment(self, node: ast.AST) -> str:
        if node.lineno != node.end_lineno:  # type: ignore[attr-defined]
            return ""
        raw = self.layout.line_text(node.lineno).encode("utf-8")
        return raw[node.col_offset:node.end_col_offset].decode("utf-8", "replace")  # type: ignore[attr-defined]

    def _record(self, block: Block) -> None:
        fn = self.function()
        for i, line in enumerate(block.lines):
            top = i if block.module else self.top
            self.layout.statements.append(Statement(line, block, i, line.start, line.end, fn.qual if fn else None, top))

    def _enter(self, line: Line) -> None:
        self.line = line.start[0]
        for node in line.nodes:
            self._visit(node)

    def _body(self, body: list, owner_line: int) -> None:
        """A body: a block of statements (recorded, each entered), or a one-line suite (its
        statements visited for the names they bind only)."""
        if self.is_suite(body):
            for node in body:
                self._visit(node)
            return
        lines = self.lines_of(body)
        first = lines[0]
        indent = self.layout.line_text(first.start[0])[: first.start[1]]
        if indent.strip(" \t") or not indent.startswith(self.indents[-1]) or indent == self.indents[-1]:
            raise Unsupported("indentation")  # (libcst writes a block's indentation after its parent's)
        block = Block(lines, False, indent, owner_line)
        if self.layout.first_indent is None:
            self.layout.first_indent = indent
        self.blocks[id(body)] = block
        self._record(block)
        self.indents.append(indent)
        for line in lines:
            self._enter(line)
        self.indents.pop()

    def _visit(self, node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.bind(node.name)
            parents = tuple(f.qual for k, f in reversed(self.scopes) if k == "function" and f is not None)
            self.names.append(node.name)
            facts = FunctionFacts(node, ".".join(self.names), parents)
            self.layout.functions[facts.qual] = facts
            self.scopes.append(("function", facts))
            args = node.args
            for p in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                self.bind(p.arg)
            for p in (args.vararg, args.kwarg):
                if p is not None:
                    self.bind(p.arg)
            self._body(node.body, node.lineno)
            self.scopes.pop()
            self.names.pop()
        elif isinstance(node, ast.ClassDef):
            self.bind(node.name)
            self.scopes.append(("class", None))
            self.names.append(node.name)
            self._body(node.body, node.lineno)
            self.scopes.pop()
            self.names.pop()
        elif isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                if alias.asname is not None:
                    self.bind(alias.asname, "import", name)
                else:
                    root = name.split(".", 1)[0]
                    self.bind(root, "import", root)
                    if root != name:
                        self.bind(root, "import-sub", name)
        elif isinstance(node, ast.ImportFrom):
            self._import_from(node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in _target_names(target):
                    self.bind(name)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            for name in _target_names(node.target):
                self.bind(name)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            for name in _target_names(node.target):
                self.bind(name)
            self._body(node.body, node.lineno)
            if node.orelse:
                self._body(node.orelse, node.lineno)
        elif isinstance(node, ast.While):
            self._body(node.body, node.lineno)
            if node.orelse:
                self._body(node.orelse, node.lineno)
        elif isinstance(node, ast.If):
            self._if(node)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    for name in _target_names(item.optional_vars):
                        self.bind(name)
            self._body(node.body, node.lineno)
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self._body(node.body, node.lineno)
            for handler in node.handlers:
                # (libcst binds the name of an `except` handler, not of an `except*` one)
                if handler.name is not None and isinstance(node, ast.Try):
                    self.bind(handler.name)
                self._body(handler.body, handler.lineno)
            if node.orelse:
                self._body(node.orelse, node.lineno)
            if node.finalbody:
                self._body(node.finalbody, node.lineno)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            fn = self.function()
            if fn is not None:
                fn.globals.update(node.names)
        elif hasattr(ast, "Match") and isinstance(node, ast.Match):  # type: ignore[attr-defined]
            for case in node.cases:
                self._body(case.body, node.lineno)
        elif not isinstance(node, _SIMPLE):
            raise Unsupported(type(node).__name__)

    def _import_from(self, node: ast.ImportFrom) -> None:
        if len(node.names) == 1 and node.names[0].name == "*":
            if node.module is not None and not node.level:
                self.bind(node.module.rpartition(".")[2], "other", None)
            return
        base = node.module or ""
        absolute = not node.level
        for alias in node.names:
            local = alias.asname or alias.name
            self.bind(local, "from" if absolute and base else "other", f"{base}.{alias.name}" if absolute and base else None)

    def _if(self, node: ast.If) -> None:
        main = id(node) in self.main_guards
        typing = _dotted(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        if main:
            self.in_main = True
        if typing:
            self.type_checking += 1
        self._body(node.body, node.lineno)
        orelse = node.orelse
        if len(orelse) == 1 and isinstance(orelse[0], ast.If) and self._is_elif(orelse[0]):
            # an `elif`: libcst holds it in place of a block, entered as a statement
            self.line = orelse[0].lineno
            self._if(orelse[0])
        elif orelse:
            self._body(orelse, node.lineno)
        if main:
            self.in_main = False
        if typing:
            self.type_checking -= 1

    def _is_elif(self, node: ast.If) -> bool:
        raw = self.layout.line_text(node.lineno).encode("utf-8")
        return raw[node.col_offset:].startswith(b"elif")
