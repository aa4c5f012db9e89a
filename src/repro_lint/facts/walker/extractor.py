"""The one pass over a file's syntax tree that every rule shares.

`extract()` parses a file once with `ast` and walks it once, resolving names through
`names.Resolver` and matching calls against the catalogs (`matchers.Matchers`). It
records what each scope does as `model.Event`s plus the calls that build the call graph.
What each call records is in `calls.py`, what assignments record in
`assignments.py`; rule families that need more facts declare hooks (`facts/hooks.py`)
instead of walking trees again.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import hashlib
import operator
import warnings
from sys import intern
from typing import Any, Optional

from repro_lint.facts.walker.assignments import AssignmentFacts
from repro_lint.facts.walker.calls import CallFacts, names_cuda
from repro_lint.facts.walker.callables import CallableValues
from repro_lint.core.deep_stack import run_deep
from repro_lint.facts.hooks import call_hook_table, hook_set, registry
from repro_lint.facts.matchers import Matchers
from repro_lint.facts.model import (
    TYPING_SCOPE,
    INSTANCE,
    LIGHT_HOOKS,
    MADE_UNKNOWN,
    MAIN_SCOPE,
    MODULE_SCOPE,
    REF_REGISTERED,
    RETURNS_MADE,
    STAR_IMPORTS,
    ClassInfo,
    Event,
    FunctionInfo,
    ModuleInfo,
)
from repro_lint.facts.walker.module_body import ModuleFacts
from repro_lint.facts.walker.names import UNKNOWN, Resolver
from repro_lint.facts.sourcetext import decode_source, lines_with, non_ascii_lines, parse_noqa
from repro_lint.facts.syntax import (
    LEAF_TYPES,
    call_order,
    get_arg,
    iter_calls,
    literal,
    negated,
)

# Statements without nested bodies: only their expressions are searched for calls.
_SIMPLE_STATEMENTS = frozenset([ast.Expr, ast.Return, ast.Raise, ast.Assert, ast.Delete, ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal])
_TRY_STATEMENTS = frozenset([ast.Try, getattr(ast, "TryStar", ast.Try)])
_MATCH_STATEMENT = getattr(ast, "Match", None)  # Python 3.10+
_Name = ast.Name
_Constant = ast.Constant
_Expr = ast.Expr
_Attribute = ast.Attribute
_NO_NAMES: frozenset = frozenset()
# ModuleInfo.extra key: per scope, the (first, last) lines of `with torch.no_grad():` blocks
NO_GRAD_SPANS = "no_grad_spans"
# info.extra key: {scope: [(first line, last line, class names)]}: the bodies of `if
# isinstance(x, Cls):` (or `elif`) tests naming project classes (not the library's: resolved
# names whose package is not external), which run only on an object of such a class
ISINSTANCE_BODIES = "isinstance_bodies"
# Events that record the `if` they sit in (see `Extractor.guards`).
_GUARDED = frozenset(["seed", "seedcand", "flag", "switch", "env"])


class _Else:
    """The `else` branch of an `if` on the guard stack: it runs where `test` is false."""

    __slots__ = ("test",)

    def __init__(self, test: ast.expr) -> None:
        self.test = test


def _type_checking(test: ast.expr) -> int:
    """1 for the test of an `if` whose body only type checkers run: it names `TYPE_CHECKING`
    (alone, or with a lazy module's flag: `TYPE_CHECKING or DIFFUSERS_SLOW_IMPORT`)."""
    for node in ast.walk(test):
        if type(node) is ast.Name and node.id == "TYPE_CHECKING" or type(node) is ast.Attribute and node.attr == "TYPE_CHECKING":
            return 0 if type(test) is ast.UnaryOp else 1  # (`if not TYPE_CHECKING:` runs)
    return 0


def _names_state(text: str, words: tuple) -> bool:
    """Whether a text that holds one of the words that save an RNG state holds one other than
    as part of a pickling method's name (`__getstate__`, the only one most files hold)."""
    return any(w in text for w in words if w != "getstate") or text.count("getstate") > text.count("__getstate__")


def _on_lines(lines: set[int], node: ast.AST) -> bool:
    """Whether one of `lines` is among those `node` spans."""
    return any(n in lines for n in range(node.lineno, (node.end_lineno or node.lineno) + 1))  # type: ignore[attr-defined]


# the events that become local ones where the RNG state is kept local (`Extractor.add`)
_LOCALISED = frozenset(["seed", "seedcand", "draw"])
_SOURCE_ORDER = operator.attrgetter("line", "col")
_NO_GRAD = ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode", "torch.set_grad_enabled")


class Extractor(AssignmentFacts, CallFacts, CallableValues, ModuleFacts):
    """The walk of one file: statements, scopes and bindings (calls: `CallFacts`)."""

    def __init__(self, info: ModuleInfo, text: str, matchers: Matchers, hooks: Optional[tuple] = None) -> None:
        self.info = info
        self.m = matchers
        self.r = Resolver(info.module, info.is_package)
        # lines as the parser counts them: only "\n", "\r\n" and "\r" end one (str.splitlines
        # also splits at form feeds and other separators, which shifts every later line)
        # (only the lines that are not all ASCII are kept, by index: the byte columns of the
        # others are character columns)
        ascii_text = text.isascii()
        self.lines: Optional[dict[int, str]] = None if ascii_text else non_ascii_lines(text)
        self.scope = MODULE_SCOPE
        # RNG state kept local where the walk is (spec, large repositories 2): inside a
        # `with torch.random.fork_rng():` block every source is (`rng_local` counts the
        # blocks), between a body's save and restore of a source's state that source is
        # (`local_sources`); seeds and draws there become "localseed" and "localdraw"
        self.rng_local = 0
        self.local_sources: frozenset = frozenset()
        self.typing_only = 0  # inside `if TYPE_CHECKING:` (imports there never run)
        # (a test can name `TYPE_CHECKING` only on a line of it where the text does, or where a
        # name may be spelt in other characters that the parser normalises to it (a line not
        # all ASCII): most files have none, and looking through every `if` test for it took 3%
        # of a check of torch's sources)
        self.type_checking_lines = lines_with(text, "TYPE_CHECKING") if "TYPE_CHECKING" in text else set()
        if self.lines:
            self.type_checking_lines.update(i + 1 for i in self.lines)
        self.looks_local = any(w in text for w in matchers.local_words) and _names_state(text, matchers.local_words)
        self.stmt_node: Optional[ast.stmt] = None  # the statement in the scope's own body
        # the span of the statement that events were last added in, and that statement: the
        # events of one statement share one tuple (and keep sharing it packed or cached)
        self._stmt_span: Optional[tuple] = None
        self._stmt_spanned: Optional[ast.stmt] = None
        self.no_grad = 0
        # the `if` whose body is being walked, innermost last (None: an `else` branch);
        # seeds and flags record theirs, so that a fix can repeat the user's condition
        self.guards: list[Optional[ast.expr]] = []
        # the innermost `if` around the statement and its side: (line of the `if`, 0 in its
        # body, 1 in its `else`, the `if`'s last line when that side leaves the function, else
        # 0), for the guarded events (the other side of a user's switch, a test-only branch)
        self.branches: list[tuple[int, int, int]] = []
        # the `for` statements around the one being walked in its scope, innermost last (for
        # hooks that ask what a loop variable holds: `for p in net.parameters(): p.copy_(...)`)
        self.for_loops: list[ast.stmt] = []
        # the `for`/`while` statements whose body holds the statement being walked, in its
        # scope, outermost first (what runs there runs once per iteration: a fix that makes
        # an object meant to last, a loader's generator, goes before them)
        self.loop_stmts: list[ast.stmt] = []
        self.module_node: Optional[ast.Module] = None  # the tree `run` walks
        self.func: Optional[FunctionInfo] = None
        call_hooks, self.assign_hooks, self.finish_hooks, light = hooks or hook_set(b"", full=True)
        if light:
            info.extra[LIGHT_HOOKS] = light
        self.hooks_for, self.hooks_any, self.hooks_for_plain, self.hooks_any_plain, self.hook_literals = call_hook_table(call_hooks)
        self.statement_hooks = registry().statement_hooks
        self.class_stack: list[str] = []
        self.prefix: list[str] = []  # enclosing classes and functions, for qualified names
        self.torch_used_scopes: set[str] = set()
        self.cudnn_scopes: set[str] = set()  # scopes with a "cudnn" event
        # the statement whose naming places (`_names_only`) were last worked out, and their nodes
        self._naming_stmt: Optional[ast.stmt] = None
        self._naming_ids: set = set()
        # module-level functions that hand parameters on to a `naming-sinks` call (an
        # `onnx_export(model, model_args, ...)` helper): {name: {parameter: [position, uses,
        # uses by sink calls]}}
        self.naming_params: dict = {}
        self.func_node: Optional[ast.AST] = None  # the syntax of the function `func` is
        # names bound to optimizer objects, per scope (for `opt.step()`)
        self.optimizer_names: set[str] = set()
        # names bound to the result of calling a project name (maybe an instance of a project
        # class), per scope: the callee's qualified name
        self.call_results: dict[str, str] = {}
        # the value each local name of the scope was last bound to (a node of the tree being
        # walked), for hooks that ask what made a value (`receiver_root`): kept as it is, as
        # most are never asked about
        self.local_values: dict[str, ast.AST] = {}
        # the module level's, which functions see for names they do not bind (`_receiver`)
        self.module_values = self.local_values
        # in a nested function, the enclosing functions' values (a closure's free names)
        self.outer_values: Optional[collections.ChainMap] = None
        # (class, attribute) -> what made the object its instances keep there (`self.x = X()`)
        self.attribute_makers: dict[tuple[str, str], Optional[str]] = {}
        # the call an assignment stores (`x = f(...)`) and its callee as the call's visit
        # resolved it: the target and the assignment hooks ask for it again (`callee_of`)
        self.value_call: Optional[ast.Call] = None
        self.stmt_call: Optional[ast.expr] = None  # the value of the expression statement walked last
        self.value_qual: Optional[str] = None
        # dicts of callables bound in a body as the walk goes, (scope, name) -> the
        # callables' qualified names (`models = {"a": NetA, "b": NetB}` in `main`)
        self.local_registries: dict[tuple[str, str], tuple[str, ...]] = {}

    def callee_of(self, call: ast.Call) -> Optional[str]:
        """The qualified name of what `call` calls (`Resolver.qualify` of its function)."""
        if call is self.value_call:
            return self.value_qual
        return self.r.qualify(call.func)

    # -- positions ---------------------------------------------------------------
    def col(self, line: int, col: int) -> int:
        """Convert an `ast` UTF-8 byte column to a character column."""
        if self.lines is None:
            return col
        text = self.lines.get(line - 1)
        if text is None:
            return col
        return len(text.encode("utf-8")[:col].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> tuple[int, int, int, int]:
        line = node.lineno  # type: ignore[attr-defined]
        end_line = node.end_lineno  # type: ignore[attr-defined]
        if end_line is None or end_line == line:
            end_line = line  # one int object for both: facts of a large project add up
        end_col = node.end_col_offset  # type: ignore[attr-defined]
        if end_col is None:
            end_col = node.col_offset  # type: ignore[attr-defined]
        if self.lines is None:  # an ASCII file: byte columns are character columns
            return (line, node.col_offset, end_line, end_col)
        return (line, self.col(line, node.col_offset), end_line, self.col(end_line, end_col))

    def add(self, kind: str, node: ast.AST, **data: Any) -> Event:
        if (self.rng_local or self.local_sources) and kind in _LOCALISED:
            kind = self._localised(kind, data)
        if self.guards and kind in _GUARDED:
            data["guard"] = self._guard()
            data["branch"] = self.branches[-1]
        line, col, end_line, end_col = self.span(node)
        stmt = self.stmt_node
        if stmt is None:
            stmt_span = (line, col, end_line, end_col)
        elif stmt is self._stmt_spanned:
            stmt_span = self._stmt_span
        else:
            stmt_span = self._stmt_span = self.span(stmt)
            self._stmt_spanned = stmt
        ev = Event(kind, line, col, end_line, end_col, stmt_span, data)
        events = self.info.events.get(self.scope)
        if events is None:
            events = self.info.events[self.scope] = []
        events.append(ev)
        return ev

    def _local_context(self, qual: str) -> bool:
        """A `with` item whose block keeps the RNG state local: `torch.random.fork_rng(...)`, or
        a project context manager named like a seeder (`with numpy_seed(seed):` saves the
        state, seeds, and restores it when the block ends)."""
        if qual in self.m.local_contexts:
            return True
        return qual.split(".", 1)[0] not in self.m.external_roots and self.m.looks_like_seeder(qual)

    def _localised(self, kind: str, data: dict) -> str:
        """The kind of a seed or draw made where the RNG state is kept local."""
        if kind == "draw":
            return "localdraw" if self.rng_local or data["source"] in self.local_sources else kind
        if self.rng_local:
            return "localseed"
        sources = data.get("sources")
        return "localseed" if sources and set(sources) <= self.local_sources else kind

    def add_call(self, target: Optional[str], method: Optional[str], node: ast.AST) -> None:
        # names repeat across a project: interned, each is held once however often it is called
        if target is not None:
            target = intern(target)
        if self.lines is None:  # ASCII: byte columns are character columns (span() inlined)
            line = node.lineno  # type: ignore[attr-defined]
            end = node.end_lineno  # type: ignore[attr-defined]
            call = (target, method, line, node.col_offset, line if end == line else end, node.end_col_offset)  # type: ignore[attr-defined]
        else:
            call = (target, method, *self.span(node))
        calls = self.info.calls.get(self.scope)
        if calls is None:  # (not setdefault: it would make a list for every call)
            calls = self.info.calls[self.scope] = []
        calls.append(call)

    def text_of(self, node: ast.AST) -> str:
        try:
            return ast.unparse(node)
        except Exception:  # pragma: no cover - unparse handles every parsed tree
            return ""

    # -- module ------------------------------------------------------------------
    def run(self, tree: ast.Module) -> None:
        body = tree.body
        self.module_node = tree
        self._prebind(body)
        self._module_registries(body)
        self._module_layout(body)
        for stmt in body:
            for hook in self.statement_hooks:
                hook(self, stmt)
            if self._is_main_guard(stmt):
                assert isinstance(stmt, ast.If)
                if self.info.main_block is None:  # the first of several: where the main body starts
                    self.info.main_block = (stmt.lineno, stmt.end_lineno or stmt.lineno, stmt.body[0].lineno)
                self.scope = MAIN_SCOPE
                self._visit_header(stmt.test)
                self._visit_body(stmt.body)
                self._visit_body(stmt.orelse)
                self.scope = MODULE_SCOPE
                continue
            self._mark_module_work(stmt)
            self.stmt_node = stmt
            self._visit_stmt(stmt)
        for events in self.info.events.values():
            events.sort(key=_SOURCE_ORDER)
        for hook in self.finish_hooks:
            hook(self)
        # module-level bindings, so that re-exports (`from .utils import set_seed`) resolve
        self.info.exports = {k: v for k, v in self.r.scope.bindings.items() if v}
        if self.r.star_imports:
            self.info.extra[STAR_IMPORTS] = tuple(self.r.star_imports)

    # -- statements --------------------------------------------------------------
    def _visit_body(self, body: list[ast.stmt]) -> None:
        visit = self._visit_stmt
        windows = self._state_windows(body) if self.looks_local else None
        if windows:
            outer = self.local_sources
            for i, stmt in enumerate(body):
                self.stmt_node = stmt
                self.local_sources = outer | frozenset(src for src, (first, last) in windows.items() if first <= i <= last)
                visit(stmt)
            self.local_sources = outer
            return
        for stmt in body:
            self.stmt_node = stmt
            visit(stmt)

    def _state_windows(self, body: list[ast.stmt]) -> dict[str, tuple[int, int]]:
        """Per source, the statements of `body` from the first that saves its state
        (`state = np.random.get_state()`) to the last that restores it after that: what they
        seed and draw stays there."""
        saves: dict[str, int] = {}
        restores: dict[str, int] = {}
        m = self.m
        attrs = m.state_call_attrs
        qualify = self.r.qualify
        for i, stmt in enumerate(body):
            # the calls in no particular order (`iter_calls`, several times faster than
            # `ast.walk`), those whose method is none of the state calls' left out at once
            found = []
            for node in iter_calls(stmt):
                func = node.func
                if type(func) is _Attribute and func.attr not in attrs:
                    continue
                qual = qualify(func)
                if qual is not None and (qual in m.state_saves or qual in m.state_restores):
                    found.append(qual)
            if not found:
                continue
            new = {m.state_saves[q] for q in found if q in m.state_saves} - saves.keys()
            if any(m.state_restores.get(q) in new for q in found):
                # saved and restored first in this one statement: whether the restore counts
                # depends on which comes first in `ast.walk`'s order
                found = [q for node in ast.walk(stmt) if type(node) is ast.Call and (q := qualify(node.func)) is not None]  # type: ignore[attr-defined]
            for qual in found:
                src = m.state_saves.get(qual)
                if src is not None:
                    saves.setdefault(src, i)
                src = m.state_restores.get(qual)
                if src is not None and src in saves:
                    restores[src] = i
        return {src: (saves[src], last) for src, last in restores.items()}

    def _visit_stmts(self, body: list[ast.stmt]) -> None:
        """Nested statements: they stay attributed to the enclosing direct statement."""
        visit = self._visit_stmt
        for stmt in body:
            visit(stmt)

    def _visit_stmt(self, stmt: ast.stmt) -> None:
        t = type(stmt)
        if t in _SIMPLE_STATEMENTS:  # the commonest case first (`_visit_header`, written out)
            if t is ast.Return and self.func is not None:
                v = stmt.value  # type: ignore[attr-defined]
                tv = type(v)
                if tv is _Name or tv is _Attribute:
                    self._returned(v)
                if tv is _Name or tv is ast.Call or tv is ast.IfExp:
                    self._returned_made(v)
            # (a call that is a statement of its own: its value is not used)
            self.stmt_call = stmt.value if t is _Expr else None  # type: ignore[attr-defined]
            # (at module level, a stored lambda's body runs later: see `iter_calls`)
            calls = iter_calls(stmt.value if t is _Expr else stmt, self.scope != MODULE_SCOPE)  # type: ignore[attr-defined]
            if len(calls) > 1:
                calls.sort(key=call_order)
            for sub in calls:
                self._visit_call(sub)
            return
        # the commonest statements after the simple ones first: assignments, then `if`
        if t is ast.Assign or t is ast.AnnAssign or t is ast.AugAssign:
            self._visit_assign(stmt)
        elif t is ast.If:
            test = stmt.test  # type: ignore[attr-defined]
            if type(test) is _Constant and type(test.value) in (bool, int):  # type: ignore[attr-defined]
                # `if True:  # args.distributed:` (a switch the author pinned): the other side
                # never runs, and what it holds is not part of the program
                self._visit_stmts(stmt.body if test.value else stmt.orelse)  # type: ignore[attr-defined]
                return
            self._visit_header(stmt.test)  # type: ignore[attr-defined]
            if stmt.body:  # type: ignore[attr-defined]
                self._isinstance_body(stmt)  # type: ignore[arg-type]
            self.guards.append(stmt.test)  # type: ignore[attr-defined]
            end = stmt.end_lineno or stmt.lineno
            self.branches.append((stmt.lineno, 0, end if self._leaves(stmt.body) else 0))  # type: ignore[attr-defined]
            marked = self.type_checking_lines
            typing = _type_checking(stmt.test) if marked and _on_lines(marked, stmt.test) else 0  # type: ignore[attr-defined]
            self.typing_only += typing
            self._visit_stmts(stmt.body)  # type: ignore[attr-defined]
            self.typing_only -= typing
            # the `else` branch runs under the negated condition (`if args.seed is None: ...
            # else: torch.manual_seed(args.seed)` seeds where `args.seed is not None`)
            self.guards[-1] = _Else(stmt.test)  # type: ignore[attr-defined]
            self.branches[-1] = (stmt.lineno, 1, end if self._leaves(stmt.orelse) else 0)  # type: ignore[attr-defined]
            self._visit_stmts(stmt.orelse)  # type: ignore[attr-defined]
            self.guards.pop()
            self.branches.pop()
        elif t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            if self.func is not None:
                # nested function: callable by name from the enclosing body
                self.r.bind(stmt.name, ".".join(filter(None, [self.info.module, *self.prefix, stmt.name])))  # type: ignore[attr-defined]
            self._visit_function(stmt)  # type: ignore[arg-type]
        elif t is ast.ClassDef:
            self._visit_class(stmt)  # type: ignore[arg-type]
        elif t is ast.Import or t is ast.ImportFrom:
            if self.scope == MODULE_SCOPE and not self.class_stack and self.func is None:
                imported = self.r.bind_import(stmt, self.r.scope)
            else:
                imported = self.r.bind_import(stmt)
            line, col, end_line, end_col = self.span(stmt)
            scope = TYPING_SCOPE if self.typing_only else self.scope
            for qual in imported:
                self.info.imports.append((qual, line, col, end_line, end_col, scope))
        elif t is ast.While:
            self._loop(stmt)
            self._visit_header(stmt.test)  # type: ignore[attr-defined]
            self.loop_stmts.append(stmt)
            self._visit_stmts(stmt.body)  # type: ignore[attr-defined]
            self.loop_stmts.pop()
            self._visit_stmts(stmt.orelse)  # type: ignore[attr-defined]
        elif t is ast.For or t is ast.AsyncFor:
            self._loop(stmt)
            self._visit_header(stmt.iter)  # type: ignore[attr-defined]
            self._bind_targets(stmt.target)  # type: ignore[attr-defined]
            self.for_loops.append(stmt)
            self.loop_stmts.append(stmt)
            self._visit_stmts(stmt.body)  # type: ignore[attr-defined]
            self.loop_stmts.pop()
            self.for_loops.pop()
            self._visit_stmts(stmt.orelse)  # type: ignore[attr-defined]
        elif t is ast.With or t is ast.AsyncWith:
            grad_off = 0
            local_rng = 0
            for item in stmt.items:  # type: ignore[attr-defined]
                self._visit_header(item.context_expr)
                expr = item.context_expr
                target = expr.func if isinstance(expr, ast.Call) else expr
                qual = self.r.qualify(target)
                if qual in _NO_GRAD and not (qual == "torch.set_grad_enabled" and isinstance(expr, ast.Call) and literal(get_arg(expr, 0, "mode")) is not False):
                    grad_off = 1
                if qual is not None and isinstance(expr, ast.Call) and self._local_context(qual):
                    local_rng = 1
                if item.optional_vars is not None:
                    self._bind_targets(item.optional_vars)
            if grad_off:  # where in this scope no gradient flows (read by RPL405)
                self.info.extra.setdefault(NO_GRAD_SPANS, {}).setdefault(self.scope, []).append((stmt.lineno, stmt.end_lineno))
            self.no_grad += grad_off
            self.rng_local += local_rng
            self._visit_stmts(stmt.body)  # type: ignore[attr-defined]
            self.no_grad -= grad_off
            self.rng_local -= local_rng
        elif t in _TRY_STATEMENTS:
            self._visit_stmts(stmt.body)  # type: ignore[attr-defined]
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                self._visit_stmts(handler.body)
            self._visit_stmts(stmt.orelse)  # type: ignore[attr-defined]
            self._visit_stmts(stmt.finalbody)  # type: ignore[attr-defined]
        elif t is _MATCH_STATEMENT:
            self._visit_header(stmt.subject)  # type: ignore[attr-defined]
            for case in stmt.cases:  # type: ignore[attr-defined]
                self._visit_stmts(case.body)
        else:
            self._visit_header(stmt)

    def _guard(self) -> Optional[tuple[str, frozenset]]:
        """The condition under which the current statement runs, as (source text, names it
        reads); in an `else` branch, the negation of its `if`'s condition."""
        tests = [t.test if type(t) is _Else else t for t in self.guards]
        texts = [self.text_of(t) for t in tests]
        texts = [negated(x) if type(g) is _Else else x for g, x in zip(self.guards, texts)]
        if len(texts) > 1:
            texts = [
                f"({x})" if type(t) in (ast.BoolOp, ast.IfExp, ast.NamedExpr, ast.Lambda) and type(g) is not _Else else x
                for g, t, x in zip(self.guards, tests, texts)
            ]
        names = frozenset(n.id for t in tests for n in ast.walk(t) if type(n) is _Name)  # type: ignore[attr-defined]
        return (" and ".join(texts), names)

    def _leaves(self, body: list) -> bool:
        """Whether a block ends by leaving its function (`return`, `raise`, or a call the
        catalog lists as ending the process, `sys.exit(...)`)."""
        if not body:
            return False
        last = body[-1]
        if type(last) is ast.Return or type(last) is ast.Raise:
            return True
        if type(last) is _Expr and type(last.value) is ast.Call:  # type: ignore[attr-defined]
            func = last.value.func  # type: ignore[attr-defined]
            qual = self.r.qualify(func) or (func.id if type(func) is _Name and self.r.is_unbound(func.id) else None)
            return qual in self.m.exit_calls
        return False

    def _loop(self, stmt: ast.stmt) -> None:
        """Where a loop is: what is called inside it runs more than once (fixes never put a
        program's seeding there)."""
        loops = self.info.loops.get(self.scope)
        if loops is None:
            loops = self.info.loops[self.scope] = []
        loops.append((stmt.lineno, stmt.end_lineno or stmt.lineno))

    def _isinstance_body(self, stmt: ast.If) -> None:
        test = stmt.test
        if type(test) is ast.BoolOp and type(test.op) is ast.And:
            test = next((v for v in test.values if type(v) is ast.Call), test)  # type: ignore[assignment]
        if type(test) is not ast.Call or type(test.func) is not _Name or test.func.id != "isinstance" or len(test.args) != 2:  # type: ignore[attr-defined]
            return
        kinds = test.args[1]  # type: ignore[attr-defined]
        parts = kinds.elts if type(kinds) is ast.Tuple else [kinds]  # type: ignore[attr-defined]
        names = []
        roots = self.m.external_roots
        for part in parts:
            qual = self.r.qualify(part) if type(part) is _Name or type(part) is _Attribute else None
            if qual is None or qual.split(".", 1)[0] in roots or not self.r.is_unbound("isinstance"):
                return  # a library's class, or one the test does not name: any object may pass
            names.append(qual)
        end = stmt.body[-1].end_lineno or stmt.body[-1].lineno
        self.info.extra.setdefault(ISINSTANCE_BODIES, {}).setdefault(self.scope, []).append((stmt.body[0].lineno, end, tuple(names)))

    def _visit_header(self, node: ast.AST) -> None:
        """Find the calls in an expression (or simple statement)."""
        t = type(node)
        if t in LEAF_TYPES:  # a bare name or constant (defaults, tests, bases)
            return
        if t is _Expr:  # a statement that is an expression (most often a call)
            node = node.value  # type: ignore[attr-defined]
        calls = iter_calls(node, self.scope != MODULE_SCOPE)
        if len(calls) > 1:
            calls.sort(key=call_order)
        for sub in calls:
            self._visit_call(sub)

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for dec in node.decorator_list:
            self._visit_header(dec)
            made = self._receiver(dec.func.value) if type(dec) is ast.Call and type(dec.func) is ast.Attribute else None  # type: ignore[attr-defined]
            if made is not None and made.startswith(INSTANCE):
                # `@trainer.on(Events.EPOCH_STARTED)`: an object keeps the function to call it
                # later (an event handler): reached, as a function handed over is, where the
                # object is the project's (`model.index`)
                name = ".".join([*self.prefix, node.name])
                self.add_call(f"{self.info.module}.{name}" if self.info.module else name, REF_REGISTERED + made[len(INSTANCE):], dec)
        args = node.args
        for default in args.defaults:
            self._visit_header(default)
            if type(default) is _Constant and names_cuda(default):
                self._uses_device()  # (`def main(device="cuda")`: where the function is defined)
        for default in args.kw_defaults:
            if default is not None:
                self._visit_header(default)
                if type(default) is _Constant and names_cuda(default):
                    self._uses_device()
        prefix = [*self.prefix, node.name]
        qual = ".".join(prefix)
        decorators = []
        hydra_path = None
        hydra_name = None
        is_hydra = False
        no_grad = False
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            dq = self.r.qualify(target) or ""
            decorators.append(dq)
            if dq in self.m.hydra_main:
                is_hydra = True
                if isinstance(dec, ast.Call):
                    cp = literal(get_arg(dec, 0, "config_path"))
                    hydra_path = cp if isinstance(cp, str) else None
                    cn = literal(get_arg(dec, 1, "config_name"))
                    hydra_name = cn if isinstance(cn, str) else None
            if dq in _NO_GRAD:
                no_grad = True
        body = node.body
        doc_end = 0
        head = body[0]
        if type(head) is _Expr and type(head.value) is _Constant and type(head.value.value) is str:  # type: ignore[attr-defined]
            doc_end = head.end_lineno or head.lineno
        first = body[1] if doc_end and len(body) > 1 else body[0]
        args = node.args
        # tuples (most often the shared empty one): one of each is kept per function of a project
        if args.posonlyargs or args.kwonlyargs:
            params = tuple([a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]])
        else:
            params = tuple([a.arg for a in args.args])
        ascii_cols = self.lines is None  # byte columns are character columns
        info = FunctionInfo(  # positional: one is made for every function of a project
            qual,
            node.name,
            node.lineno,
            node.col_offset if ascii_cols else self.col(node.lineno, node.col_offset),
            node.end_lineno,
            params,
            tuple(decorators) if decorators else (),
            hydra_path,
            self.class_stack[-1] if self.class_stack else None,
            doc_end,
            first.lineno,
            first.col_offset if ascii_cols else self.col(first.lineno, first.col_offset),
            no_grad,
            type(node) is ast.AsyncFunctionDef,
        )
        self.info.functions[qual] = info
        if is_hydra and not self.class_stack:
            self.info.hydra_mains.append(qual)
        if is_hydra:
            info.hydra_config_path = hydra_path if hydra_path is not None else ""
            info.hydra_config_name = hydra_name
        # walk the body in its own scope
        saved = (self.scope, self.stmt_node, self.func, self.class_stack, self.no_grad, self.optimizer_names, self.prefix, self.call_results, self.guards, self.local_values, self.rng_local, self.local_sources, self.for_loops)
        self.rng_local = 0  # (a function's body runs when it is called, not in the block it is defined in)
        self.local_sources = frozenset()
        self.guards = []
        self.for_loops = []
        self.prefix = prefix
        self.scope = qual
        self.func = info
        self.class_stack = []
        self.no_grad = 1 if no_grad else 0
        self.optimizer_names = set()
        self.call_results = {}
        saved_outer = self.outer_values
        if saved[2] is not None:  # defined in a function: its free names are the enclosing one's
            self.outer_values = collections.ChainMap(saved[9], *(saved_outer.maps if saved_outer else ()))
        self.local_values = {}
        bindings = self.r.push().bindings
        for name in params:
            bindings[name] = UNKNOWN
        if args.vararg is not None:
            bindings[args.vararg.arg] = UNKNOWN
        if args.kwarg is not None:
            bindings[args.kwarg.arg] = UNKNOWN
        saved_node, self.func_node = self.func_node, node
        saved_loops, self.loop_stmts = self.loop_stmts, []
        self._visit_body(body)
        self.loop_stmts = saved_loops
        self.func_node = saved_node
        made = self.info.extra.get(RETURNS_MADE, {}).get(qual)
        if made is not None and all(m == MADE_UNKNOWN for m in made):
            del self.info.extra[RETURNS_MADE][qual]  # (nothing it returns is known: as if none)
        self.r.pop()
        self.scope, self.stmt_node, self.func, self.class_stack, self.no_grad, self.optimizer_names, self.prefix, self.call_results, self.guards, self.local_values, self.rng_local, self.local_sources, self.for_loops = saved
        self.outer_values = saved_outer

    def _visit_class(self, node: ast.ClassDef) -> None:
        for dec in node.decorator_list:
            self._visit_header(dec)
        bases = []
        for base in node.bases:
            self._visit_header(base)
            # `class Builder(Base[Config])`: a generic base is the class it subscripts
            bases.append(self.r.qualify(base.value if type(base) is ast.Subscript else base) or "")
        qual = ".".join([*self.prefix, node.name])
        methods = [s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        self.info.classes[qual] = ClassInfo(qual, node.name, node.lineno, tuple(bases), tuple(methods))
        saved_stack = self.class_stack
        saved_func = self.func
        saved_prefix = self.prefix
        self.class_stack = [*saved_stack, node.name]
        self.prefix = [*self.prefix, node.name]
        # class bodies run where the class is defined: they stay in the enclosing scope
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._visit_function(stmt)
            else:
                self._visit_stmt(stmt)
        self.class_stack = saved_stack
        self.func = saved_func
        self.prefix = saved_prefix
        build = self._seeding_base(bases)
        if build is not None and "__init__" not in methods:
            # the inherited constructor of a framework class that seeds when built (a project
            # subclass of transformers' Trainer): a method of its own, at the class line
            init = f"{qual}.__init__"
            line, col = node.lineno, self.col(node.lineno, node.col_offset)
            self.info.functions[init] = FunctionInfo(
                init, "__init__", line, col, node.end_lineno, ("self",), (), None, node.name, 0, line, col, False, False,
            )
            span = (line, col, line, col + len("class"))
            self.info.events[init] = [Event("seed", *span, span, self._build_seed(build))]


# set while `quiet_parsing` holds: warnings are off for a whole loop of files, not file by file
_QUIET: list = []


@contextlib.contextmanager
def quiet_parsing():
    """Warnings the parser gives about checked files (invalid escapes, ...) kept out of the
    run, for many files at once (entering `catch_warnings` for each file costs more)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _QUIET.append(True)
        try:
            yield
        finally:
            _QUIET.pop()


def extract(path: str, module: str, is_package: bool, data: bytes, matchers: Matchers, digest: Optional[str] = None, full: bool = False) -> ModuleInfo:
    """Parse `data` once and return the facts of the file. Never raises for bad input.
    `digest` is the content digest when the caller has worked it out already. With `full`,
    no family's hooks are gated (`hooks.HookGate`).

    A file nested deeper than the recursion limit lets `ast` or the walk follow is done
    again with a raised limit (`deep_stack`); only when that fails too is it RPL001."""
    digest = digest or hashlib.blake2b(data, digest_size=16).hexdigest()
    parsed: list = []  # (text, tree) once parsed: a walk that went too deep is made again over it
    if len(data) <= DEEP_AT_ONCE_BYTES:
        try:
            return _extract(path, module, is_package, data, matchers, digest, full, parsed)
        except RecursionError:
            pass
    try:
        return run_deep(lambda: _extract(path, module, is_package, data, matchers, digest, full, parsed))
    except RecursionError:
        info = ModuleInfo(path, module, is_package)
        info.digest = digest
        info.error = ("syntax-error", "file is nested too deeply for Python's `ast` module to analyse", 1, 0)
        return info


# A file larger than this is parsed in the deep thread (`deep_stack`) at once: were it too
# deep for this one, the parse here would be thrown away and made again there (a 9 MB file of
# long sums: 3.3 s and 1.2 GB of syntax tree for nothing, and 0.6 GB more at the peak).
DEEP_AT_ONCE_BYTES = 1 << 20


def _extract(
    path: str, module: str, is_package: bool, data: bytes, matchers: Matchers, digest: str, full: bool = False,
    parsed: Optional[list] = None,
) -> ModuleInfo:
    """`extract` in this thread; `parsed` keeps the text and the tree once parsed (and gives
    them, when a first walk of them recursed too deep)."""
    info = ModuleInfo(path, module, is_package)
    info.digest = digest
    if parsed:
        text, tree = parsed
        parse_noqa(info, text)
        Extractor(info, text, matchers, hook_set(data, full)).run(tree)
        return info
    # what the interpreter rejects before parsing is a syntax error too (RPL001), where it is
    nul = data.find(b"\0")
    if nul >= 0:
        line, col = _position(data, nul)
        info.error = ("syntax-error", "SyntaxError: source code cannot contain null bytes", line, col)
        return info
    try:
        text = data.decode("utf-8") if data.isascii() else decode_source(data)
    except UnicodeDecodeError as exc:
        line, col = _position(data, exc.start)
        info.error = ("syntax-error", f"SyntaxError: (unicode error) {exc}", line, col)
        return info
    except (SyntaxError, LookupError) as exc:  # a coding cookie naming no codec, or contradicting a BOM
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        info.error = ("syntax-error", f"SyntaxError: {message}", 1, 0)
        return info
    try:
        if _QUIET:
            tree = ast.parse(data, filename=path)
        else:
            with warnings.catch_warnings():  # the file's own invalid escapes are not the run's warnings
                warnings.simplefilter("ignore")
                tree = ast.parse(data, filename=path)
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = (exc.offset or 1) - 1
        info.error = ("syntax-error", f"SyntaxError: {exc.msg}", line, max(col, 0))
        return info
    except (ValueError, MemoryError) as exc:
        info.error = ("syntax-error", f"cannot parse file: {exc}", 1, 0)
        return info
    if parsed is not None:
        parsed[:] = [text, tree]
    parse_noqa(info, text)
    Extractor(info, text, matchers, hook_set(data, full)).run(tree)
    return info


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """(1-based line, 0-based character column) of byte `offset`."""
    start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, len(data[start:offset].decode("utf-8", errors="replace"))
