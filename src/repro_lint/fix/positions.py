"""Positions of a libcst tree's statements and expressions, read from `ast` instead of
libcst's `PositionProvider`.

The provider generates the code of the whole module, token by token, to know where each
node is: that was a third of a fix's time, for the few nodes a fix touches. `ast` knows where
every statement is (in C), and a libcst tree holds its statements in the same order: walking
both in document order pairs them. Expressions are looked up only when an edit names one, in
the statement that holds it, by their source text (and their rank among equal texts).
Columns are 0-based characters, as libcst's and the facts' are (`ast` counts UTF-8 bytes).
When the two trees do not pair (a syntax the running `ast` does not know), `None` tells the
caller to use the provider.
"""

from __future__ import annotations

import ast
from typing import Iterator, Optional

import libcst as cst

Pos = tuple[int, int]
Span = tuple[Pos, Pos]


class Unpaired(Exception):
    """The libcst and `ast` trees of a text do not pair statement for statement."""


class SourcePositions:
    """The statement positions of one text, and its expressions on demand."""

    def __init__(self, text: str, tree: ast.Module, module: cst.Module) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.tree = tree
        self.module = module
        self.statements: dict[int, Span] = {}  # id(libcst statement) -> its span
        self.parents: dict[int, Optional[cst.CSTNode]] = {}  # id(statement) -> enclosing statement
        self.owners: dict[int, Optional[cst.CSTNode]] = {}  # id(block) -> the statement it is the body of
        self.ast_of: dict[int, list] = {}  # id(libcst statement) -> its ast statements
        self.lines_of: dict[int, cst.CSTNode] = {}  # id(small statement) -> its line

    @classmethod
    def of(cls, text: str, module: cst.Module) -> Optional["SourcePositions"]:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        out = cls(text, tree, module)
        spans = iter(_ast_statements(tree.body))
        try:
            out._pair(module.body, spans, None, module)
            if next(spans, None) is not None:
                raise Unpaired("ast has more statements")
        except (Unpaired, StopIteration):
            return None
        return out

    # -- statements --------------------------------------------------------------------
    def _col(self, line: int, byte_col: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> Span:
        end_line = node.end_lineno or node.lineno  # type: ignore[attr-defined]
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset  # type: ignore[attr-defined]
        return (node.lineno, self._col(node.lineno, node.col_offset)), (end_line, self._col(end_line, end_col))  # type: ignore[attr-defined]

    def _pair(self, body, spans: Iterator[ast.stmt], parent: Optional[cst.CSTNode], block: cst.CSTNode) -> None:
        self.owners[id(block)] = parent
        for stmt in body:
            self.parents[id(stmt)] = parent
            if isinstance(stmt, cst.SimpleStatementLine):
                nodes = [next(spans) for _ in stmt.body] or [next(spans)]
                self.statements[id(stmt)] = (self.span(nodes[0])[0], self.span(nodes[-1])[1])
                self.ast_of[id(stmt)] = nodes
                for small in stmt.body:
                    self.lines_of[id(small)] = stmt
                continue
            node = next(spans)
            if not _same_kind(stmt, node):
                raise Unpaired(f"{type(stmt).__name__} against {type(node).__name__}")
            self.statements[id(stmt)] = self.span(node)
            self.ast_of[id(stmt)] = [node]
            for inner, inner_block in _bodies(stmt):
                if isinstance(inner_block, cst.SimpleStatementSuite):
                    for _ in inner_block.body:
                        next(spans)
                    self.owners[id(inner_block)] = stmt
                else:
                    self._pair(inner, spans, stmt, inner_block)

    # -- expressions -------------------------------------------------------------------
    def expression(self, holder: cst.CSTNode, span: tuple, kind: type) -> "Optional[cst.BaseExpression] | Unpaired":
        """The outermost expression of type `kind` that has exactly `span` in the statement
        `holder`; None when there is none; `Unpaired` when the texts do not tell the nodes
        apart (the caller then asks the provider)."""
        whole = isinstance(holder, cst.SimpleStatementLine)
        found = self._ast_at(holder, span, whole)
        if found is None and not whole:
            # in a body the statement does not list as a block's (a one-line suite, an
            # `elif` test, a decorator of a nested definition): the whole statement is read
            whole = True
            found = self._ast_at(holder, span, whole)
        if found is None:
            return Unpaired("no ast expression there")
        target, rank, total = found
        text = _squeezed(self.segment(span))
        types = _CST_TYPES.get(type(target), (cst.BaseExpression,))
        candidates = [
            n for n in _expressions(holder, whole) if isinstance(n, kind) and isinstance(n, types) and _squeezed(self._bare(n)) == text
        ]
        if len(candidates) != total:
            return Unpaired(f"{len(candidates)} nodes of text {text!r} against {total}")
        return candidates[rank]

    def _ast_at(self, holder: cst.CSTNode, span: tuple, whole: bool) -> Optional[tuple[ast.AST, int, int]]:
        """(the outermost ast expression with `span` in the statement, its rank among the
        expressions of the statement with the same source text, how many there are)."""
        nodes = self.ast_of.get(id(holder))
        if nodes is None:
            return None
        exprs: list[tuple[Span, ast.AST]] = []
        for root in nodes:
            for n in ast.walk(root) if whole else _walk_header(root):
                if isinstance(n, ast.expr):
                    exprs.append((self.span(n), n))
        want = ((span[0], span[1]), (span[2], span[3]))
        hits = [n for s, n in exprs if s == want]
        if not hits:
            return None
        target = hits[0]  # (ast.walk is breadth first: the outermost comes first)
        text = _squeezed(self.segment(span))
        same = sorted(s for s, n in exprs if type(n) is type(target) and _squeezed(self.segment((*s[0], *s[1]))) == text)
        return target, same.index(want), len(same)

    def segment(self, span: tuple) -> str:
        (l1, c1, l2, c2) = span[:4]
        if l1 == l2:
            return self.lines[l1 - 1][c1:c2]
        return self.lines[l1 - 1][c1:] + "".join(self.lines[l1:l2 - 1]) + self.lines[l2 - 1][:c2]

    def _bare(self, node: cst.CSTNode) -> str:
        if getattr(node, "lpar", None):
            node = node.with_changes(lpar=[], rpar=[])
        return self.module.code_for_node(node)


def _ast_statements(body: list) -> Iterator[ast.stmt]:
    """Every statement of `body`, nested ones included, in document order (an `elif` is an
    `if` in the `orelse` of the one before, as libcst has it too)."""
    for stmt in body:
        yield stmt
        inner = getattr(stmt, "body", None)
        if isinstance(inner, list):
            yield from _ast_statements(inner)
        for handler in getattr(stmt, "handlers", ()):
            yield from _ast_statements(handler.body)
        for case in getattr(stmt, "cases", ()):
            yield from _ast_statements(case.body)
        yield from _ast_statements(getattr(stmt, "orelse", None) or [])
        yield from _ast_statements(getattr(stmt, "finalbody", None) or [])


def _bodies(stmt: cst.CSTNode) -> Iterator[tuple[list, cst.CSTNode]]:
    """The statement lists a compound statement holds, in document order, with their block."""
    def of(suite):
        return (suite.body, suite)

    if isinstance(stmt, cst.If):
        yield of(stmt.body)
        orelse = stmt.orelse
        if isinstance(orelse, cst.If):
            yield [orelse], _ElifBlock(orelse)
        elif isinstance(orelse, cst.Else):
            yield of(orelse.body)
    elif isinstance(stmt, (cst.Try, cst.TryStar)):
        yield of(stmt.body)
        for handler in stmt.handlers:
            yield of(handler.body)
        if stmt.orelse is not None:
            yield of(stmt.orelse.body)
        if stmt.finalbody is not None:
            yield of(stmt.finalbody.body)
    elif isinstance(stmt, (cst.For, cst.While)):
        yield of(stmt.body)
        if stmt.orelse is not None:
            yield of(stmt.orelse.body)
    elif isinstance(stmt, (cst.With, cst.FunctionDef, cst.ClassDef)):
        yield of(stmt.body)
    elif isinstance(stmt, cst.Match):
        for case in stmt.cases:
            yield of(case.body)


class _ElifBlock:
    """Stands for the (absent) block of an `elif`: the If in `orelse` is paired in place."""

    def __init__(self, node: cst.If) -> None:
        self.node = node


def _same_kind(stmt: cst.CSTNode, node: ast.stmt) -> bool:
    expected = _KINDS.get(type(stmt))
    return expected is None or isinstance(node, expected)


_KINDS: dict = {
    cst.If: ast.If, cst.For: (ast.For, ast.AsyncFor), cst.While: ast.While, cst.With: (ast.With, ast.AsyncWith),
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef), cst.ClassDef: ast.ClassDef, cst.Try: ast.Try,
}
if hasattr(ast, "TryStar"):
    _KINDS[cst.TryStar] = ast.TryStar  # type: ignore[attr-defined]
if hasattr(ast, "Match"):
    _KINDS[cst.Match] = ast.Match  # type: ignore[attr-defined]


_BODY_FIELDS = frozenset(["body", "orelse", "finalbody", "handlers", "cases"])


def _walk_header(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a compound statement's header (its test, target, items, decorators,
    arguments), breadth first, without its bodies."""
    todo = [v for f, v in ast.iter_fields(stmt) if f not in _BODY_FIELDS]
    queue: list = []
    for v in todo:
        queue.extend(v if isinstance(v, list) else [v])
    i = 0
    while i < len(queue):
        n = queue[i]
        i += 1
        if isinstance(n, ast.AST):
            yield n
            queue.extend(ast.iter_child_nodes(n))


def _squeezed(text: str) -> str:
    """A text without its whitespace: a multi-line expression's continuation lines are
    indented in the file, not in the code libcst makes of the node alone."""
    return "".join(text.split())


def _expressions(node: cst.CSTNode, whole: bool = False) -> Iterator[cst.CSTNode]:
    """The expression nodes under a statement, in document order, without the names that are
    not expressions in `ast` (an attribute's name, a keyword's name, an import's names), and
    without the bodies of a compound statement unless `whole`."""
    children = _whole_children if whole else _children
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.BaseExpression):
            yield n
        stack.extend(reversed(list(children(n))))


def _whole_children(n: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The children of `n`, bodies included, but for names `ast` holds as strings."""
    if isinstance(n, (cst.Attribute, cst.Arg)):
        yield n.value
        return
    if isinstance(n, (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal)):
        return
    if isinstance(n, (cst.FunctionDef, cst.ClassDef)):
        skip = n.name
    elif isinstance(n, cst.Param):
        skip = n.name
    elif isinstance(n, cst.ExceptHandler):
        skip = n.name
    else:
        skip = None
    for child in n.children:
        if child is not skip:
            yield child


def _children(n: cst.CSTNode) -> Iterator[cst.CSTNode]:
    if isinstance(n, cst.Attribute):
        yield n.value
        return
    if isinstance(n, cst.Arg):
        yield n.value
        return
    if isinstance(n, (cst.Import, cst.ImportFrom, cst.IndentedBlock, cst.SimpleStatementSuite, cst.Else, cst.Finally, cst.Global, cst.Nonlocal)):
        return
    if isinstance(n, cst.ExceptHandler):
        if n.type is not None:
            yield n.type
        return
    if isinstance(n, (cst.FunctionDef, cst.ClassDef)):
        for d in n.decorators:
            yield d.decorator
        if isinstance(n, cst.FunctionDef):
            yield n.params
            if n.returns is not None:
                yield n.returns.annotation
        else:
            for a in (*n.bases, *n.keywords):
                yield a.value
        return
    if isinstance(n, cst.Param):
        if n.annotation is not None:
            yield n.annotation.annotation
        if n.default is not None:
            yield n.default
        return
    if isinstance(n, cst.Lambda):
        yield n.params
        yield n.body
        return
    if isinstance(n, (cst.If, cst.While)):
        yield n.test
        return
    if isinstance(n, (cst.Try, cst.TryStar)):
        return  # (its handlers' types are not the header `ast` reads)
    if isinstance(n, cst.Match):
        yield n.subject
        return
    if isinstance(n, cst.For):
        yield n.target
        yield n.iter
        return
    if isinstance(n, cst.With):
        for item in n.items:
            yield item.item
            if item.asname is not None:
                yield item.asname.name
        return
    yield from n.children


_CST_TYPES: dict = {
    ast.Call: (cst.Call,),
    ast.Attribute: (cst.Attribute,),
    ast.Name: (cst.Name,),
    ast.BinOp: (cst.BinaryOperation,),
    ast.UnaryOp: (cst.UnaryOperation,),
    ast.Compare: (cst.Comparison,),
    ast.Subscript: (cst.Subscript,),
    ast.Dict: (cst.Dict,),
    ast.List: (cst.List,),
    ast.Tuple: (cst.Tuple,),
    ast.Set: (cst.Set,),
    ast.IfExp: (cst.IfExp,),
    ast.Lambda: (cst.Lambda,),
    ast.JoinedStr: (cst.FormattedString, cst.ConcatenatedString),
    ast.Constant: (cst.Name, cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float, cst.Imaginary, cst.Ellipsis),
}
