"""RPL2xx data across process boundaries, the extraction side (the rules are in `processes.py`).

Two extraction hooks feed the rules. In modules that import Hydra, `_module_statement`
records what each module-level statement binds, reads and calls, so that RPL201 moves
statements into the Hydra main function only when nothing left behind depends on them.
In every module, `_handoff` records the calls that hand a function to other processes
(`handoff` events), tracking the pools and executors those calls are made on.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Optional

from repro_lint.core import catalog
from repro_lint.facts.hooks import Family
from repro_lint.facts.walker import extractor
from repro_lint.facts.model import MAIN_SCOPE, MODULE_SCOPE
from repro_lint.facts.syntax import dotted_chain, get_arg

# Statements of the `else:` of a `__main__` guard: they run on import, never moved.
_MAIN_ELSE = "<main-else>"
FACTS = "rpl201"  # ModuleInfo.extra key: the module-level statements of a Hydra app
DEFS = ("FunctionDef", "AsyncFunctionDef", "ClassDef")


# -- the catalog, compiled ----------------------------------------------------------------
@dataclass(frozen=True)
class _Pool:
    label: str
    methods: frozenset
    kw: str
    init_arg: int
    init_kw: str


class _Catalog:
    def __init__(self) -> None:
        data = catalog.load("processes")
        hydra = data["hydra"]
        self.launchers: str = hydra["launchers"]
        self.reimport = tuple(hydra["reimport-modules"])
        self.readers: dict[str, str] = dict(hydra.get("setting-readers", {}))
        self.calls = {c["name"]: (c["label"], int(c["arg"]), c["kw"]) for c in data["handoff-calls"]}
        self.pools: dict[str, _Pool] = {}
        by_label: dict[str, _Pool] = {}
        for spec in data["pools"]:
            pool = _Pool(spec["label"], frozenset(spec["methods"]), spec["kw"], int(spec["initializer-arg"]), spec["initializer-kw"])
            by_label[pool.label] = pool
            for name in spec["constructors"]:
                self.pools[name] = pool
        ctxs = data["contexts"]
        self.context_factories = frozenset(ctxs["factories"])
        self.context_pools = {attr: by_label[label] for attr, label in ctxs["pool-attributes"].items()}
        self.context_processes = {attr: self.calls[name] for attr, name in ctxs["process-attributes"].items()}
        self.partials = frozenset(data["wrappers"]["partial"])
        self.remote_decorators = frozenset(data["remote"]["decorators"])
        self.remote_method: str = data["remote"]["method"]
        self.fork_reseeded = frozenset(data["fork"]["reseeded-in-child"])
        # hand-offs whose callable runs in a new job that imports nothing of the parent's state
        self.jobs = frozenset(k for k, v in data.get("training-launchers", {}).items() if v == "nothing")
        self.training_launchers = frozenset(data.get("training-launchers", {}))
        # every method name the hook cares about: other method calls return at once
        self.method_names = frozenset().union(
            *(p.methods for p in self.pools.values()), self.context_pools, self.context_processes, [self.remote_method]
        )

    def starts_jobs(self, api: str) -> bool:
        """Whether a hand-off runs its callable in a new job (submitit) rather than a forked or
        spawned worker process."""
        return api in self.jobs


@functools.lru_cache(maxsize=1)
def process_catalog() -> _Catalog:
    return _Catalog()


# -- extraction: module-level statements of Hydra apps (RPL201) ----------------------------
class _StatementNames:
    """What one module-level statement binds at module level, loads anywhere, reads back
    (determinism settings) and calls at module level; for a Hydra main `def`, its locals."""

    def __init__(self, ex: extractor.Extractor) -> None:
        self.ex = ex
        self.binds: set[str] = set()
        self.loads: set[str] = set()
        self.reads: set[str] = set()
        self.calls: set[tuple] = set()
        self.main_locals: Optional[set[str]] = None
        self.main_globals: set[str] = set()

    def walk(self, root: ast.stmt) -> None:
        ex = self.ex
        flags = ex.m.flags
        readers = process_catalog().readers
        hydra_main = ex.m.hydra_main
        # (node, set that names bound here go to or None, runs at module level)
        stack: list[tuple[ast.AST, Optional[set], bool]] = [(root, self.binds, True)]
        while stack:
            node, sink, top = stack.pop()
            t = type(node)
            if t is ast.Name:
                if type(node.ctx) is ast.Load:  # type: ignore[attr-defined]
                    self.loads.add(node.id)  # type: ignore[attr-defined]
                elif sink is not None:
                    sink.add(node.id)  # type: ignore[attr-defined]
                continue
            if t is ast.FunctionDef or t is ast.AsyncFunctionDef or t is ast.ClassDef:
                if sink is not None:
                    sink.add(node.name)  # type: ignore[attr-defined]
                header: list[ast.AST] = list(node.decorator_list)  # type: ignore[attr-defined]
                inner: Optional[set] = None
                if t is ast.ClassDef:
                    header += [*node.bases, *(k.value for k in node.keywords)]  # type: ignore[attr-defined]
                else:
                    args = node.args  # type: ignore[attr-defined]
                    header += [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
                    if node is root and any(
                        (ex.r.qualify(d.func if isinstance(d, ast.Call) else d) or "") in hydra_main for d in node.decorator_list  # type: ignore[attr-defined]
                    ):
                        params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
                        inner = {a.arg for a in params if a is not None}
                        self.main_locals = inner
                for h in header:
                    stack.append((h, sink, top))
                for b in node.body:  # type: ignore[attr-defined]
                    stack.append((b, inner, False))
                continue
            if t is ast.Lambda:
                for d in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:  # type: ignore[attr-defined]
                    stack.append((d, sink, top))
                stack.append((node.body, None, False))  # type: ignore[attr-defined]
                continue
            if t is ast.Import or t is ast.ImportFrom:
                if sink is not None:
                    for alias in node.names:  # type: ignore[attr-defined]
                        if alias.name != "*":
                            sink.add(alias.asname or alias.name.split(".", 1)[0])
                continue
            if t is ast.Global or t is ast.Nonlocal:
                if sink is not None and sink is self.main_locals:
                    self.main_globals.update(node.names)  # type: ignore[attr-defined]
                continue
            if t is ast.ExceptHandler and node.name and sink is not None:  # type: ignore[attr-defined]
                sink.add(node.name)  # type: ignore[attr-defined]
            elif t in (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp):
                sink = None  # comprehension variables stay in the comprehension
            elif top and t is ast.Call:
                self.calls.add(ex.span(node))
                reader = readers.get(ex.r.qualify(node.func) or "")  # type: ignore[attr-defined]
                if reader:
                    self.reads.add(reader)
            elif top and t is ast.Attribute and type(node.ctx) is ast.Load:  # type: ignore[attr-defined]
                qual = ex.r.qualify(node)
                if qual in flags:
                    self.reads.add(qual)
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)):
                    stack.append((child, sink, top))


def _module_statement(ex: extractor.Extractor, stmt: ast.stmt) -> None:
    gate = getattr(ex, "_rpl201_hydra", None)
    if gate is None:
        # only modules that import Hydra can define a Hydra main: skip the walk elsewhere
        roots = {name.split(".", 1)[0] for name in ex.m.hydra_main}
        gate = any(q and q.split(".", 1)[0] in roots for q in ex.r.scope.bindings.values())
        ex._rpl201_hydra = gate  # type: ignore[attr-defined]
    if not gate:
        return
    facts = ex.info.extra.setdefault(FACTS, {"stmts": [], "main_locals": {}})
    if ex._is_main_guard(stmt):
        assert isinstance(stmt, ast.If)
        for sub in stmt.body:
            _record_statement(ex, facts, sub, MAIN_SCOPE)
        for sub in stmt.orelse:
            _record_statement(ex, facts, sub, _MAIN_ELSE)
        return
    _record_statement(ex, facts, stmt, MODULE_SCOPE)


def _record_statement(ex: extractor.Extractor, facts: dict, stmt: ast.stmt, scope: str) -> None:
    names = _StatementNames(ex)
    names.walk(stmt)
    facts["stmts"].append(
        (scope, type(stmt).__name__, ex.span(stmt), frozenset(names.binds), frozenset(names.loads),
         frozenset(names.reads), frozenset(names.calls))
    )
    if names.main_locals is not None:
        facts["main_locals"][stmt.name] = frozenset(names.main_locals - names.main_globals)  # type: ignore[attr-defined]


# -- extraction: hand-offs to other processes (RPL202) ---------------------------------------
_chain = dotted_chain  # (`p`, `self.pool`)


def _receivers(ex: extractor.Extractor) -> dict:
    """Names bound to pools, executors and multiprocessing contexts, per scope."""
    recv = getattr(ex, "_rpl202_receivers", None)
    if recv is None:
        recv = {}
        ex._rpl202_receivers = recv  # type: ignore[attr-defined]
    return recv


def _receiver_key(ex: extractor.Extractor, text: str) -> tuple:
    # `self.pool` is set in one method and used in another: attributes are module-wide
    return ("<attr>", text) if "." in text else (ex.scope, text)


def _bound_target(stmt: Optional[ast.stmt], call: ast.Call) -> Optional[ast.AST]:
    """What `call` is bound to in `stmt`: `x = call`, `x: T = call`, `with call as x`."""
    if stmt is None:
        return None
    for node in ast.walk(stmt):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.context_expr is call:
                    return item.optional_vars
        elif isinstance(node, ast.Assign) and node.value is call and len(node.targets) == 1:
            return node.targets[0]
        elif isinstance(node, ast.AnnAssign) and node.value is call:
            return node.target
    return None


def _bind(ex: extractor.Extractor, call: ast.Call, what: tuple) -> None:
    target = _bound_target(ex.stmt_node, call)
    text = _chain(target) if target is not None else None
    if text:
        _receivers(ex)[_receiver_key(ex, text)] = what


def _lookup(ex: extractor.Extractor, text: str) -> Optional[tuple]:
    recv = _receivers(ex)
    hit = recv.get(_receiver_key(ex, text))
    if hit is None and "." not in text:
        hit = recv.get((MODULE_SCOPE, text)) or recv.get((MAIN_SCOPE, text))
    return hit


def _initializer(ex: extractor.Extractor, call: ast.Call, pool: _Pool) -> Optional[str]:
    if pool.init_arg < 0 and not pool.init_kw:
        return None
    arg = get_arg(call, pool.init_arg, pool.init_kw)
    return _callable(ex, arg) if arg is not None else None


def _callable(ex: extractor.Extractor, node: Optional[ast.AST]) -> Optional[str]:
    """Qualified name of the function an argument hands over (`functools.partial` unwrapped)."""
    if isinstance(node, ast.Call) and node.args and (ex.r.qualify(node.func) or "") in process_catalog().partials:
        node = node.args[0]
    if isinstance(node, (ast.Name, ast.Attribute)):
        return ex.r.qualify(node)
    return None


def _receiver(ex: extractor.Extractor, node: ast.AST) -> Optional[tuple]:
    """("pool", _Pool, initializer) or ("context",) for what a method is called on."""
    cat = process_catalog()
    if isinstance(node, ast.Call):
        qual = ex.r.qualify(node.func) or ""
        pool = cat.pools.get(qual)
        if pool is not None:
            return ("pool", pool, _initializer(ex, node, pool))
        if qual in cat.context_factories:
            return ("context",)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in cat.context_pools and _receiver(ex, func.value) == ("context",):
            pool = cat.context_pools[func.attr]
            return ("pool", pool, _initializer(ex, node, pool))
        return None
    text = _chain(node)
    return _lookup(ex, text) if text else None


def _instance(ex: extractor.Extractor, node: Optional[ast.AST]) -> Optional[str]:
    """The project callee whose result `node` is (`Trainer(args)`, or a name bound to it in
    this scope): maybe an instance of a project class, whose `__call__` runs when handed off."""
    if isinstance(node, ast.Call):
        qual = ex.r.qualify(node.func)
        return qual if qual and qual.split(".", 1)[0] not in ex.m.external_roots else None
    if isinstance(node, ast.Name) and ex.r.qualify(node) is None:
        return ex.call_results.get(node.id)
    return None


def _record(ex: extractor.Extractor, call: ast.Call, api: str, fn: Optional[ast.AST], init: Optional[str], decorated: bool = False) -> None:
    target = _callable(ex, fn) if not decorated else (ex.r.qualify(fn) if fn is not None else None)
    instance = None if target or decorated else _instance(ex, fn)
    # callable instances among the other arguments (`mp.spawn(run, args=(trainer,))`) run there too
    others = [a for a in [*call.args, *(k.value for k in call.keywords)] if a is not fn]
    others = [e for a in others for e in (a.elts if isinstance(a, (ast.Tuple, ast.List)) else (a,))]
    instances = tuple(dict.fromkeys(q for q in map(lambda a: _instance(ex, a), others) if q))
    if target or instance:
        ex.add(
            "handoff", call, api=api, target=target or instance, initializer=init, decorated=decorated,
            instance=instance is not None, instances=instances,
        )
    elif fn is not None and api in process_catalog().training_launchers:
        # a job whose callable is not known here (`executor.submit(task)`, `task` built from a
        # class the caller passed in): the program may train there, not in this process
        ex.add("handoff", call, api=api, target=None, initializer=init, decorated=decorated, instance=False, instances=instances)


def _handoff(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    cat = process_catalog()
    if qual is not None:
        spec = cat.calls.get(qual)
        if spec is not None:
            _record(ex, node, spec[0], get_arg(node, spec[1], spec[2]), None)
            return
        pool = cat.pools.get(qual)
        if pool is not None:
            _bind(ex, node, ("pool", pool, _initializer(ex, node, pool)))
            return
        if qual in cat.context_factories:
            _bind(ex, node, ("context",))
            return
    func = node.func
    if type(func) is not ast.Attribute:
        return
    attr = func.attr  # type: ignore[attr-defined]
    if attr not in cat.method_names:
        return
    what = _receiver(ex, func.value)  # type: ignore[attr-defined]
    if what is None:
        if attr == cat.remote_method:
            # `f.remote(...)`: a hand-off when `f` turns out to be decorated with `ray.remote`
            _record(ex, node, f"{_chain(func.value) or 'f'}.{attr}", func.value, None, decorated=True)  # type: ignore[attr-defined]
        return
    if what[0] == "context":
        pool = cat.context_pools.get(attr)
        if pool is not None:
            _bind(ex, node, ("pool", pool, _initializer(ex, node, pool)))
            return
        spec = cat.context_processes.get(attr)
        if spec is not None:
            _record(ex, node, spec[0], get_arg(node, spec[1], spec[2]), None)
        return
    pool = what[1]
    if attr in pool.methods:
        _record(ex, node, f"{pool.label}.{attr}", get_arg(node, 0, pool.kw), what[2])


@functools.lru_cache(maxsize=1)
def _handoff_names() -> frozenset:
    cat = process_catalog()
    quals = [*cat.calls, *cat.pools, *cat.context_factories]
    return frozenset([*(q.rpartition(".")[2] for q in quals), *cat.method_names])


FAMILY = Family(order=30, call_hooks=(_handoff,), call_names={_handoff: _handoff_names}, statement_hooks=(_module_statement,))
