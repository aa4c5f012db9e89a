"""Where things are in a libcst tree, in the `ast` layer's coordinates.

Detection reports positions as 1-based lines and 0-based character columns; libcst's
`PositionProvider` uses the same convention, so spans map to nodes by equality or
containment. One visit records what the edit operations need: the statements of every
block (module, indented blocks) with their positions, expressions by span, functions by
qualified name (as the walk names them: `Class.method`, `outer.inner`), the `__main__`
block, and the names each scope binds (for reusing import aliases safely).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from repro_lint.fix.positions import SourcePositions, Unpaired
from repro_lint.fix.scopes import SETUP_CALLS, Binding, FunctionFacts, Pos

__all__ = ["Binding", "BodyStatement", "FunctionFacts", "Layout", "Pos"]


@dataclass
class BodyStatement:
    node: cst.BaseStatement
    block: cst.CSTNode  # cst.Module, cst.IndentedBlock
    index: int
    start: Pos
    end: Pos
    function: Optional[str]  # innermost enclosing function (None at module level / class body)
    top: int  # index of the module-level statement that holds it


def _positions(module: cst.Module) -> dict:
    """Every node's position (libcst's `PositionProvider`, over the module as parsed: it is
    parsed for this alone, so no copy is made). Asked through the metadata wrapper, the
    provider's answer comes with a visit of every node for batched providers, none of which
    is asked for here: the provider is run by itself where this libcst allows it."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    gen = getattr(PositionProvider(), "_gen", None)
    if gen is not None:
        try:
            return gen(wrapper)
        except Exception:  # pragma: no cover - another libcst's internals: the public way
            pass
    return wrapper.resolve(PositionProvider)


def is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def is_import_line(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and bool(stmt.body) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def is_main_guard(stmt: cst.CSTNode) -> bool:
    if not isinstance(stmt, cst.If) or not isinstance(stmt.test, cst.Comparison):
        return False
    test = stmt.test
    if len(test.comparisons) != 1 or not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = [test.left, test.comparisons[0].comparator]
    names = [s for s in sides if isinstance(s, cst.Name) and s.value == "__name__"]
    strings = [s for s in sides if isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__"]
    return bool(names and strings)


def dotted(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    return ""


def target_names(node: cst.CSTNode):
    """Names bound by an assignment target."""
    if isinstance(node, cst.Name):
        yield node.value
    elif isinstance(node, (cst.Tuple, cst.List)):
        for el in node.elements:
            yield from target_names(el.value)
    elif isinstance(node, cst.StarredElement):
        yield from target_names(node.value)


class Layout(cst.CSTVisitor):
    """Index of a parsed module. Build with `Layout.of(module)`; use `.module` afterwards
    (the metadata wrapper works on its own copy of the tree)."""

    @classmethod
    def of(cls, module: cst.Module, text: Optional[str] = None) -> "Layout":
        """The layout of `module`; with its `text`, statement positions come from `ast`
        (`fix/positions.py`) and expressions are found when asked, else every node's
        position from libcst's provider."""
        layout = cls(module)
        source = SourcePositions.of(text, module) if text is not None else None
        if source is not None:
            layout.source = source
            layout._into_expressions = ":=" in text  # (`:=` binds names in expressions)
            if layout._into_expressions:
                module.visit(layout)
            else:
                layout._walk(module)
            return layout
        layout._index_every_node()
        module.visit(layout)
        return layout

    def _index_every_node(self) -> None:
        """Every node's position, from libcst's provider: where `ast` does not pair with the
        tree, or an expression's text does not tell it apart."""
        positions = _positions(self.module)
        layout = self
        # expressions by span, from the positions of every node (a visit of every node cost
        # half of a fix's time): a node's position is recorded after its children's, so
        # reversing the nodes of one span puts the outermost first
        expressions: dict[tuple, list] = {}
        walrus = False
        base = cst.BaseExpression
        for node, rng in positions.items():
            if isinstance(node, base):
                start, end = rng.start, rng.end
                expressions.setdefault((start.line, start.column, end.line, end.column), []).append(node)
                walrus = walrus or type(node) is cst.NamedExpr
        for nodes in expressions.values():
            if len(nodes) > 1:
                nodes.reverse()
        layout.expressions = expressions
        layout.node_positions = positions
        # the visit reads statements and what binds names; expressions bind none but `:=`
        layout._into_expressions = walrus

    def __init__(self, module: cst.Module) -> None:
        super().__init__()
        self.module = module
        self.statements: list[BodyStatement] = []
        self.expressions: dict[tuple, list[cst.BaseExpression]] = {}
        self.functions: dict[str, FunctionFacts] = {}
        self.module_bindings: dict[str, list[Binding]] = {}
        self.main_guard: Optional[cst.If] = None
        self.main_index = -1
        self.positions: dict[int, tuple[Pos, Pos]] = {}
        self._scopes: list[tuple[str, Optional[FunctionFacts]]] = []  # ("function"|"class", facts)
        self._names: list[str] = []
        self._top = 0
        self._top_index = {id(stmt): i for i, stmt in enumerate(module.body)}
        self._in_main = False
        self._main_guards: set[int] = set()
        self._type_checking = 0  # depth of `if TYPE_CHECKING:` blocks: their imports do not run
        self._into_expressions = True
        self.node_positions: dict = {}  # every node -> its CodeRange (`of`, without the text)
        self.source: Optional[SourcePositions] = None  # statement positions from `ast` (`of`, with the text)
        self._line = 0  # the line of the statement being visited (what a binding records)

    # -- helpers ---------------------------------------------------------------------
    def _pos(self, node: cst.CSTNode) -> tuple[Pos, Pos]:
        if self.source is not None:
            return self.source.statements[id(node)]
        rng = self.node_positions[node]
        return (rng.start.line, rng.start.column), (rng.end.line, rng.end.column)

    def _function(self) -> Optional[FunctionFacts]:
        for kind, facts in reversed(self._scopes):
            if kind == "function":
                return facts
            return None  # a class body is not its enclosing function's scope
        return None

    def _bind(self, name: str, kind: str = "other", module: Optional[str] = None, node: Optional[cst.CSTNode] = None) -> None:
        if node is None:
            line = 0
        elif self.source is not None:
            line = self._line  # (the statement's line: a name it binds is bound there)
        else:
            line = self._pos(node)[0][0]
        if self._scopes and self._scopes[-1][0] == "class":
            return
        if self._type_checking and kind != "other":
            kind = "typing"  # the name is the module's for type checkers only: nothing binds it at run time
        fn = self._function()
        binding = Binding(name, kind, module, line, self._top, self._in_main)
        if fn is not None:
            fn.bindings.setdefault(name, []).append(binding)
        elif not self._scopes:
            self.module_bindings.setdefault(name, []).append(binding)

    def _record_block(self, block: cst.CSTNode, body) -> None:
        fn = self._function()
        for i, stmt in enumerate(body):
            start, end = self._pos(stmt)
            self.positions[id(stmt)] = (start, end)
            top = i if isinstance(block, cst.Module) else self._top
            self.statements.append(BodyStatement(stmt, block, i, start, end, fn.qual if fn else None, top))

    # -- visiting --------------------------------------------------------------------
    def _walk(self, node: cst.CSTNode) -> None:
        """What `node.visit(self)` does when expressions are not entered, without libcst's
        visit (which rebuilds every node it passes, whitespace included: it was half of a
        layout's cost): the same `visit_`/`leave_` calls in the same order, over the nodes
        that hold statements or bind names."""
        if self.on_visit(node):
            for child in _inner(node):
                self._walk(child)
        self.on_leave(node)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.source is not None:
            span = self.source.statements.get(id(node))
            if span is not None:
                self._line = span[0][0]
        if not self._scopes:
            self._top = self._top_index.get(id(node), self._top)
        if not self._into_expressions and isinstance(node, cst.BaseExpression):
            return False  # (expressions are indexed by `of`; they bind no names)
        return super().on_visit(node)

    def visit_Module(self, node: cst.Module) -> None:
        self._record_block(node, node.body)
        for i, stmt in enumerate(node.body):
            if is_main_guard(stmt):
                self._main_guards.add(id(stmt))
                if self.main_guard is None:  # the first of several: where the main body starts
                    self.main_guard = stmt  # type: ignore[assignment]
                    self.main_index = i

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._record_block(node, node.body)

    def visit_If(self, node: cst.If) -> None:
        if id(node) in self._main_guards:
            self._in_main = True
        if dotted(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            self._type_checking += 1

    def leave_If(self, node: cst.If) -> None:
        if id(node) in self._main_guards:
            self._in_main = False
        if dotted(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            self._type_checking -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name.value, node=node)
        self._scopes.append(("class", None))
        self._names.append(node.name.value)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.pop()
        self._names.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value, node=node)
        parents = tuple(f.qual for k, f in reversed(self._scopes) if k == "function" and f is not None)
        self._names.append(node.name.value)
        qual = ".".join(self._names)
        facts = FunctionFacts(node, qual, parents)
        self.functions[qual] = facts
        self._scopes.append(("function", facts))
        params = node.params
        for p in [*params.posonly_params, *params.params, *params.kwonly_params]:
            self._bind(p.name.value, node=p)
        for p in (params.star_arg, params.star_kwarg):
            if isinstance(p, cst.Param):
                self._bind(p.name.value, node=p)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.pop()
        self._names.pop()

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = alias.evaluated_name
            if alias.asname is not None:
                self._bind(alias.evaluated_alias or name, "import", name, node)
            else:
                root = name.split(".", 1)[0]
                self._bind(root, "import", root, node)
                if root != name:  # `import a.b` also makes `a.b` usable
                    self._bind(root, "import-sub", name, node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            # `from random import *` binds names nobody lists here, among them, as often,
            # the module's own name (`random.random`): a new `import random` would be shadowed
            if node.module is not None and not node.relative:
                leaf = dotted(node.module).rpartition(".")[2]
                self._bind(leaf, "other", None, node)
            return
        base = dotted(node.module) if node.module is not None else ""
        absolute = not node.relative
        for alias in node.names:
            name = alias.evaluated_name
            local = alias.evaluated_alias or name
            self._bind(local, "from" if absolute and base else "other", f"{base}.{name}" if absolute and base else None, node)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        for name in target_names(node.target):
            self._bind(name, node=node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        for name in target_names(node.target):
            self._bind(name, node=node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        for name in target_names(node.target):
            self._bind(name, node=node)

    def visit_For(self, node: cst.For) -> None:
        for name in target_names(node.target):
            self._bind(name, node=node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            for name in target_names(node.asname.name):
                self._bind(name, node=node)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            for name in target_names(node.name.name):
                self._bind(name, node=node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        for name in target_names(node.target):
            self._bind(name, node=node)

    def visit_Global(self, node: cst.Global) -> None:
        fn = self._function()
        if fn is not None:
            fn.globals.update(n.name.value for n in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.visit_Global(node)  # type: ignore[arg-type]

    # -- queries ---------------------------------------------------------------------
    def statement_at(self, span: tuple) -> Optional[BodyStatement]:
        """The innermost block statement that holds the span (a statement or an expression)."""
        start, end = (span[0], span[1]), (span[2], span[3])
        best = None
        for st in self.statements:
            if st.start <= start and end <= st.end:
                if best is None or (st.start, _neg(st.end)) >= (best.start, _neg(best.end)):
                    best = st
        return best

    def expression_at(self, span: tuple, kind: type = cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """The outermost expression of type `kind` with exactly this span."""
        if self.source is not None:
            st = self.statement_at(span)
            if st is None:
                return None
            found = self.source.expression(st.node, span, kind)
            if not isinstance(found, Unpaired):
                return found
            self._index_every_node()  # the texts do not tell it apart: the provider does
        for node in self.expressions.get(tuple(span[:4]), ()):
            if isinstance(node, kind):
                return node
        return None

    def import_block(self) -> tuple[int, int]:
        """(first, end) indices of the module's leading import section, after the docstring.

        The section holds import lines, `try:`/`if` blocks made only of imports, and the
        set-up statements scripts put between imports (`warnings.filterwarnings(...)`,
        `sys.path.insert(...)`, `os.environ[...] = ...`, constants); it ends after its last
        import. It may begin with module metadata (`__all__ = [...]`); with no imports it is
        empty and starts after the docstring (`__future__` imports are imports)."""
        body = self.module.body
        start = 1 if body and is_docstring(body[0]) else 0
        end = start
        i = start
        while i < len(body):
            stmt = body[i]
            if is_import_line(stmt) or _is_import_block(stmt):
                i += 1
                end = i
            elif _is_dunder_assignment(stmt) or _is_setup_statement(stmt) or _is_pass_block(stmt):
                i += 1
            else:
                break
        if end == start:
            return start, start
        first = start
        while first < end and _is_dunder_assignment(body[first]):
            first += 1
        return first, end

    def definitions_start(self, end: int) -> int:
        """Where a new module-level function goes: after the import section (`end`) and the
        compatibility blocks that follow it (`try:` importing something, with fallbacks or
        patches beside the imports), which belong with the imports in a reader's eye."""
        body = self.module.body
        i = end
        while i < len(body) and _is_import_shim(body[i]):
            i += 1
        return i


def _inner(node: cst.CSTNode) -> list:
    """The children of `node`, in libcst's visit order, that are or hold statements or the
    nodes `Layout` visits (`AssignTarget`, `WithItem`, `ExceptHandler`); the rest is
    expressions and whitespace, which bind no names without `:=`."""
    if isinstance(node, (cst.Module, cst.IndentedBlock, cst.SimpleStatementSuite, cst.SimpleStatementLine)):
        return list(node.body)
    if isinstance(node, cst.Assign):
        return list(node.targets)
    if isinstance(node, (cst.If, cst.For, cst.While)):
        return [node.body] if node.orelse is None else [node.body, node.orelse]
    if isinstance(node, (cst.Try, cst.TryStar)):
        out = [node.body, *node.handlers]
        return out + [n for n in (node.orelse, node.finalbody) if n is not None]
    if isinstance(node, cst.With):
        return [*node.items, node.body]
    if isinstance(node, cst.Match):
        return list(node.cases)
    if isinstance(node, (cst.Else, cst.Finally, cst.ExceptHandler, cst.ExceptStarHandler, cst.MatchCase, cst.FunctionDef, cst.ClassDef)):
        return [node.body]
    return []


def _is_import_shim(stmt: cst.CSTNode) -> bool:
    """A `try:` or `if` block at module level whose body imports something (and may do more)."""
    if not isinstance(stmt, (cst.Try, cst.If)) or not isinstance(stmt.body, cst.IndentedBlock):
        return False
    return any(is_import_line(s) for s in stmt.body.body)


def _is_pass_block(stmt: cst.CSTNode) -> bool:
    """An `if` whose body does nothing Python sees: in a notebook, an install step guarded by a
    switch (`if INSTALL:` then `%pip install ...`, whose magic line reads as `pass`)."""
    if not isinstance(stmt, cst.If) or stmt.orelse is not None or not isinstance(stmt.body, cst.IndentedBlock):
        return False
    return all(
        isinstance(line, cst.SimpleStatementLine) and all(isinstance(small, cst.Pass) for small in line.body)
        for line in stmt.body.body
    )


def _is_import_block(stmt: cst.CSTNode) -> bool:
    """`try:` or `if` (`TYPE_CHECKING`, a version test) blocks made only of imports."""
    if not isinstance(stmt, (cst.Try, cst.If)) or not isinstance(stmt.body, cst.IndentedBlock):
        return False
    return all(is_import_line(s) for s in stmt.body.body)


def _is_setup_statement(stmt: cst.CSTNode) -> bool:
    """A set-up statement scripts put between their imports (a version check among them,
    `assert timm.__version__ == "0.3.2"`): it draws nothing and is not where a program's work
    starts."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Assert):
            continue
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            if not dotted(small.value.func).startswith(SETUP_CALLS):
                return False
        elif isinstance(small, cst.Assign):
            for target in small.targets:
                node = target.target
                if isinstance(node, cst.Subscript):
                    if dotted(node.value) != "os.environ":
                        return False
                elif not (
                    # a constant, or a library setting (`torch.backends.cuda.matmul.allow_tf32 = True`),
                    # or what a set-up call gives (`_logger = logging.getLogger(__name__)`)
                    isinstance(node, (cst.Name, cst.Attribute))
                    and (
                        isinstance(small.value, (cst.SimpleString, cst.Integer, cst.Float, cst.Name))
                        or isinstance(small.value, cst.Call) and dotted(small.value.func).startswith(SETUP_CALLS)
                    )
                ):
                    return False
        else:
            return False
    return True


def _is_dunder_assignment(stmt: cst.CSTNode) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target] if isinstance(small, cst.AnnAssign) else []
    return bool(targets) and all(isinstance(t, cst.Name) and t.value.startswith("__") and t.value.endswith("__") for t in targets)


def _neg(pos: Pos) -> Pos:
    return (-pos[0], -pos[1])


def function_body_start(fn: cst.FunctionDef) -> int:
    """Index in the function's body where statements go first: after its docstring and its
    `global`/`nonlocal` declarations (which read best before any other statement)."""
    body = fn.body
    if not isinstance(body, cst.IndentedBlock):
        return 0
    index = 1 if body.body and is_docstring(body.body[0]) else 0
    while index < len(body.body) and _is_declaration(body.body[index]):
        index += 1
    return index


def _is_declaration(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Global, cst.Nonlocal)) for s in stmt.body)
