"""RPL2xx: seeding across process boundaries (RPL201, RPL202).

Two extraction hooks feed the rules. In modules that import Hydra, `_module_statement`
records what each module-level statement binds, reads and calls, so that RPL201 moves
statements into the Hydra main function only when nothing left behind depends on them.
In every module, `_handoff` records the calls that hand a function to other processes
(`handoff` events), tracking the pools and executors those calls are made on.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from typing import Iterable, Optional

from repro_lint import catalog, extract
from repro_lint.syntax import get_arg
from repro_lint.findings import Finding, Fix, Related
from repro_lint.fix.edits import MoveStatements
from repro_lint.model import MAIN_SCOPE, MODULE_SCOPE, Event, ModuleInfo
from repro_lint.rules import Context, location, rule, sentences
from repro_lint.rules.seeding import source_label

# Statements of the `else:` of a `__main__` guard: they run on import, never moved.
_MAIN_ELSE = "<main-else>"
_FACTS = "rpl201"
_DEFS = ("FunctionDef", "AsyncFunctionDef", "ClassDef")


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
        # every method name the hook cares about: other method calls return at once
        self.method_names = frozenset().union(
            *(p.methods for p in self.pools.values()), self.context_pools, self.context_processes, [self.remote_method]
        )

    def starts_jobs(self, api: str) -> bool:
        """Whether a hand-off runs its callable in a new job (submitit) rather than a forked or
        spawned worker process."""
        return api in self.jobs


@functools.lru_cache(maxsize=1)
def _cat() -> _Catalog:
    return _Catalog()


# -- extraction: module-level statements of Hydra apps (RPL201) ----------------------------
class _StatementNames:
    """What one module-level statement binds at module level, loads anywhere, reads back
    (determinism settings) and calls at module level; for a Hydra main `def`, its locals."""

    def __init__(self, ex: extract.Extractor) -> None:
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
        readers = _cat().readers
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


def _module_statement(ex: extract.Extractor, stmt: ast.stmt) -> None:
    gate = getattr(ex, "_rpl201_hydra", None)
    if gate is None:
        # only modules that import Hydra can define a Hydra main: skip the walk elsewhere
        roots = {name.split(".", 1)[0] for name in ex.m.hydra_main}
        gate = any(q and q.split(".", 1)[0] in roots for q in ex.r.scope.bindings.values())
        ex._rpl201_hydra = gate  # type: ignore[attr-defined]
    if not gate:
        return
    facts = ex.info.extra.setdefault(_FACTS, {"stmts": [], "main_locals": {}})
    if ex._is_main_guard(stmt):
        assert isinstance(stmt, ast.If)
        for sub in stmt.body:
            _record_statement(ex, facts, sub, MAIN_SCOPE)
        for sub in stmt.orelse:
            _record_statement(ex, facts, sub, _MAIN_ELSE)
        return
    _record_statement(ex, facts, stmt, MODULE_SCOPE)


def _record_statement(ex: extract.Extractor, facts: dict, stmt: ast.stmt, scope: str) -> None:
    names = _StatementNames(ex)
    names.walk(stmt)
    facts["stmts"].append(
        (scope, type(stmt).__name__, ex.span(stmt), frozenset(names.binds), frozenset(names.loads),
         frozenset(names.reads), frozenset(names.calls))
    )
    if names.main_locals is not None:
        facts["main_locals"][stmt.name] = frozenset(names.main_locals - names.main_globals)  # type: ignore[attr-defined]


# -- extraction: hand-offs to other processes (RPL202) ---------------------------------------
def _chain(node: ast.AST) -> Optional[str]:
    """`p`, `self.pool`: the dotted text of a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _receivers(ex: extract.Extractor) -> dict:
    """Names bound to pools, executors and multiprocessing contexts, per scope."""
    recv = getattr(ex, "_rpl202_receivers", None)
    if recv is None:
        recv = {}
        ex._rpl202_receivers = recv  # type: ignore[attr-defined]
    return recv


def _receiver_key(ex: extract.Extractor, text: str) -> tuple:
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


def _bind(ex: extract.Extractor, call: ast.Call, what: tuple) -> None:
    target = _bound_target(ex.stmt_node, call)
    text = _chain(target) if target is not None else None
    if text:
        _receivers(ex)[_receiver_key(ex, text)] = what


def _lookup(ex: extract.Extractor, text: str) -> Optional[tuple]:
    recv = _receivers(ex)
    hit = recv.get(_receiver_key(ex, text))
    if hit is None and "." not in text:
        hit = recv.get((MODULE_SCOPE, text)) or recv.get((MAIN_SCOPE, text))
    return hit


def _initializer(ex: extract.Extractor, call: ast.Call, pool: _Pool) -> Optional[str]:
    if pool.init_arg < 0 and not pool.init_kw:
        return None
    arg = get_arg(call, pool.init_arg, pool.init_kw)
    return _callable(ex, arg) if arg is not None else None


def _callable(ex: extract.Extractor, node: Optional[ast.AST]) -> Optional[str]:
    """Qualified name of the function an argument hands over (`functools.partial` unwrapped)."""
    if isinstance(node, ast.Call) and node.args and (ex.r.qualify(node.func) or "") in _cat().partials:
        node = node.args[0]
    if isinstance(node, (ast.Name, ast.Attribute)):
        return ex.r.qualify(node)
    return None


def _receiver(ex: extract.Extractor, node: ast.AST) -> Optional[tuple]:
    """("pool", _Pool, initializer) or ("context",) for what a method is called on."""
    cat = _cat()
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


def _instance(ex: extract.Extractor, node: Optional[ast.AST]) -> Optional[str]:
    """The project callee whose result `node` is (`Trainer(args)`, or a name bound to it in
    this scope): maybe an instance of a project class, whose `__call__` runs when handed off."""
    if isinstance(node, ast.Call):
        qual = ex.r.qualify(node.func)
        return qual if qual and qual.split(".", 1)[0] not in ex.m.external_roots else None
    if isinstance(node, ast.Name) and ex.r.qualify(node) is None:
        return ex.call_results.get(node.id)
    return None


def _record(ex: extract.Extractor, call: ast.Call, api: str, fn: Optional[ast.AST], init: Optional[str], decorated: bool = False) -> None:
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


def _handoff(ex: extract.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    cat = _cat()
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
    cat = _cat()
    quals = [*cat.calls, *cat.pools, *cat.context_factories]
    return frozenset([*(q.rpartition(".")[2] for q in quals), *cat.method_names])


extract.CALL_HOOKS.append(_handoff)
extract.CALL_HOOK_NAMES[_handoff] = _handoff_names
extract.MODULE_STMT_HOOKS.append(_module_statement)


# -- RPL201 ------------------------------------------------------------------------------------
@dataclass
class _Stmt:
    scope: str
    kind: str
    span: tuple
    binds: frozenset
    loads: frozenset
    reads: frozenset
    calls: frozenset

    def contains(self, line: int, col: int) -> bool:
        return (self.span[0], self.span[1]) <= (line, col) <= (self.span[2], self.span[3])


@dataclass
class _Candidate:
    stmt: _Stmt
    at: object  # Event or span: where the finding is reported
    seeds: set = field(default_factory=set)
    settings: set = field(default_factory=set)
    what: list = field(default_factory=list)

    def pos(self) -> tuple:
        at = self.at
        return (at.line, at.col) if isinstance(at, Event) else (at[0], at[1])  # type: ignore[index, union-attr]


def _setting_names(ev: Event) -> set:
    return {ev.data["name"]} if ev.kind == "flag" else set(ev.data["sets"])


def _main_effects(ctx: Context, info: ModuleInfo, main: str) -> tuple[set, set]:
    """Sources the Hydra main function seeds and settings it makes, itself or through callees."""
    index = ctx.index
    seeds: set = set()
    settings: set = set()
    for mod, scope in index.reach([(info.module, main)]):
        if mod == info.module and scope in (MODULE_SCOPE, MAIN_SCOPE):
            continue  # the module importing itself (`from train import Workspace`) is not the main's code
        mi = index.modules[mod]
        for ev in mi.events.get(scope, ()):
            if ev.kind in ("seed", "seedcand"):
                seeds.update(index.seed_sources(mi, ev))
            elif ev.kind in ("flag", "switch"):
                settings |= _setting_names(ev)
    return seeds, settings


class _Rpl201:
    """RPL201 for one module: the candidates, what already runs in the main, the move."""

    def __init__(self, ctx: Context, info: ModuleInfo) -> None:
        self.ctx = ctx
        self.info = info
        facts = info.extra[_FACTS]
        self.stmts = sorted((_Stmt(*rec) for rec in facts["stmts"]), key=lambda s: s.span)
        self.by_span = {s.span: s for s in self.stmts}
        self.main_locals: dict = facts["main_locals"]
        self.mains = list(info.hydra_mains)
        self.main_refs = {(info.module, q) for q in self.mains}
        self._launch: dict[str, bool] = {}

    def launches(self, key: str) -> bool:
        """Whether calling project function `key` runs the Hydra main (it is the launch)."""
        hit = self._launch.get(key)
        if hit is None:
            refs = self.ctx.index.reach([self.ctx.index.scope_of(key)], include_imports=False)
            hit = self._launch[key] = bool(self.main_refs & set(refs))
        return hit

    def containing(self, line: int, col: int) -> Optional[_Stmt]:
        for st in self.stmts:
            if st.contains(line, col):
                return st
        return None

    def project_calls(self, scope: str):
        """Calls of project functions made by module-level statements (not references)."""
        for call, keys in self.ctx.index.callees(self.info, scope):
            st = self.containing(call[2], call[3])
            if st is None or tuple(call[2:6]) not in st.calls:
                continue
            keys = [k for k in keys if not self.launches(k)]
            if keys:
                yield st, call, keys

    def candidates(self) -> list[_Candidate]:
        index = self.ctx.index
        info = self.info
        found: dict[tuple, _Candidate] = {}

        def add(st: Optional[_Stmt], at, seeds=(), settings=(), what=""):
            if st is None or st.scope not in (MODULE_SCOPE, MAIN_SCOPE):
                return
            cand = found.get(st.span)
            if cand is None:
                cand = found[st.span] = _Candidate(st, at)
            cand.seeds.update(seeds)
            cand.settings.update(settings)
            if what and what not in cand.what:
                cand.what.append(what)
            pos = (at.line, at.col) if isinstance(at, Event) else (at[0], at[1])
            if pos < cand.pos():
                cand.at = at

        for scope in (MODULE_SCOPE, MAIN_SCOPE):
            for ev in info.events.get(scope, ()):
                if ev.kind in ("seed", "seedcand"):
                    srcs = index.seed_sources(info, ev)
                    if srcs:
                        add(self.by_span.get(ev.stmt), ev, seeds=srcs, what=f"`{ev.data.get('api') or ev.data['target']}(...)` seeds {_sources(srcs)}")
                elif ev.kind == "flag":
                    add(self.by_span.get(ev.stmt), ev, settings=_setting_names(ev), what=f"`{ev.data['name']}` is set")
                elif ev.kind == "switch":
                    add(self.by_span.get(ev.stmt), ev, settings=_setting_names(ev), what=f"`{ev.data['api']}(...)` is called")
            for st, call, keys in self.project_calls(scope):
                seeds: set = set()
                for key in keys:
                    seeds |= index.effects(key).seeds
                if seeds:
                    name = call[0] or call[1]
                    add(st, tuple(call[2:6]), seeds=seeds, what=f"`{name.rsplit('.', 1)[-1]}(...)` seeds {_sources(seeds)}")
        return sorted(found.values(), key=lambda c: c.stmt.span)

    def draws_in(self, st: _Stmt) -> set:
        """Sources a module-level statement draws from, itself or through project calls."""
        out: set = set()
        for ev in self.info.events.get(st.scope, ()):
            if ev.kind == "draw" and ev.stmt == st.span:
                out.add(ev.data["source"])
        for _, call, keys in self.project_calls(st.scope):
            if st.contains(call[2], call[3]) and tuple(call[2:6]) in st.calls:
                for key in keys:
                    eff = self.ctx.index.effects(key)
                    out |= eff.draws - eff.seeds
        return out

    def blocker(self, cand: _Candidate, moved: set, main: str, main_def: Optional[_Stmt], prelude: set) -> Optional[tuple]:
        """(reason, statement) when moving `cand` would change what other code sees."""
        st = cand.stmt
        local = self.main_locals.get(main, frozenset())
        bound_before: set = set()
        for other in self.stmts:
            if other.span in moved and other.span < st.span:
                bound_before |= other.binds
        clash = sorted((st.loads - prelude - bound_before - st.binds) & local)
        if clash:
            return (f"`{main}` has its own local `{clash[0]}`", main_def)
        for other in self.stmts:
            if other.span in moved or other is st or other is main_def:
                continue
            used = sorted(st.binds & other.loads)
            if used:
                return (f"`{used[0]}` is used on line {other.span[0]}", other)
            if other.span <= st.span or other.scope not in (MODULE_SCOPE, MAIN_SCOPE):
                continue
            read = sorted(cand.settings & other.reads)
            if read:
                what = f"`{read[0]}`" if "." in read[0] else f"the {read[0]} setting"
                return (f"line {other.span[0]} reads {what} back", other)
            drawn = sorted(cand.seeds & self.draws_in(other))
            if drawn:
                return (f"line {other.span[0]} draws from {drawn[0]} after it", other)
        return None

    def prelude(self, moved: list[_Stmt]) -> tuple[list[str], set]:
        """Imports that give the main function its own reference to torch state."""
        roots = _cat().reimport
        bound: set = set()
        loads: set = set()
        for st in moved:
            bound |= st.binds
            loads |= st.loads
        lines: list[str] = []
        names: set = set()
        for name in sorted(loads - bound):
            qual = self.info.exports.get(name)
            if not qual or qual.split(".", 1)[0] not in roots:
                continue
            if "." in qual:
                parent, last = qual.rsplit(".", 1)
                line = f"from {parent} import {last}" + (f" as {name}" if name != last else "")
            else:
                line = f"import {qual}" + (f" as {name}" if name != qual else "")
            lines.append(line)
            names.add(name)
        lines.sort(key=lambda text: (text.startswith("from "), text))  # `import` lines first, as isort does
        return lines, names

    def findings(self) -> Iterable[Finding]:
        ctx = self.ctx
        info = self.info
        cands = self.candidates()
        if not cands:
            return
        covered_seeds: Optional[set] = None
        covered_settings: Optional[set] = None
        for main in self.mains:
            seeds, settings = _main_effects(ctx, info, main)
            covered_seeds = seeds if covered_seeds is None else covered_seeds & seeds
            covered_settings = settings if covered_settings is None else covered_settings & settings
        cands = [c for c in cands if (c.seeds - (covered_seeds or set())) or (c.settings - (covered_settings or set()))]
        if not cands:
            return
        main = self.mains[0]
        main_def = next(
            (s for s in self.stmts if s.scope == MODULE_SCOPE and s.kind in _DEFS[:2] and main in s.binds), None
        )
        blocked: dict[tuple, tuple] = {}
        if len(self.mains) > 1:
            for c in cands:
                blocked[c.stmt.span] = ("the module defines more than one Hydra main function", None)
        elif "." in main or main_def is None:
            for c in cands:
                blocked[c.stmt.span] = (f"`{main}` is not a module-level function", None)
        for c in cands:
            if c.stmt.kind in _DEFS:
                blocked.setdefault(c.stmt.span, ("it is part of a class or function definition", None))
            elif _suppressed(info, c.pos()[0]):
                # `# noqa: RPL201` keeps the statement where it is; the others still move
                blocked.setdefault(c.stmt.span, ("suppressed", None))
        moved = {c.stmt.span for c in cands if c.stmt.span not in blocked}
        # a statement that stays behind can make another one stay: repeat until nothing changes
        changed = True
        while changed:
            changed = False
            _, prelude_names = self.prelude([c.stmt for c in cands if c.stmt.span in moved])
            for c in cands:
                if c.stmt.span not in moved:
                    continue
                why = self.blocker(c, moved, main, main_def, prelude_names)
                if why is not None:
                    moved.discard(c.stmt.span)
                    blocked[c.stmt.span] = why
                    changed = True
        fix = None
        if moved:
            to_move = [c.stmt for c in cands if c.stmt.span in moved]
            lines, _ = self.prelude(to_move)
            n = len(to_move)
            fix = Fix(
                f"move {'this statement' if n == 1 else f'these {n} statements'} to the start of `{main}`"
                + (f" (with `{'; '.join(lines)}` inside it)" if lines else ""),
                "safe",
                (MoveStatements(tuple(st.span for st in to_move), main, "\n".join(lines)),),
            )
        main_fn = info.functions.get(main)
        for c in cands:
            yield self.finding(c, main, main_fn, blocked.get(c.stmt.span), fix if c.stmt.span in moved else None)

    def finding(self, cand: _Candidate, main: str, main_fn, why: Optional[tuple], fix: Optional[Fix]) -> Finding:
        info = self.info
        where = "at module level" if cand.stmt.scope == MODULE_SCOPE else "in the `__main__` block"
        lost = " and ".join(w for w, on in (("seed", cand.seeds), ("determinism setting", cand.settings)) if on)
        message = f"{'; '.join(cand.what)} {where} of a Hydra app, outside its `@hydra.main` function `{main}`"
        help = (
            f"launchers that run `{main}` in other processes ({_cat().launchers}) never run this code there, "
            f"so the {lost} is lost and runs with the same parameters differ; set it inside `{main}`"
        )
        related = []
        if main_fn is not None:
            related.append(Related(location(info, (main_fn.line, main_fn.col, main_fn.line, main_fn.col)), f"`{main}` is the Hydra main function"))
        if why is not None:
            reason, other = why
            help += f". Not moved automatically: {reason}"
            if other is not None and other.span[0] != (main_fn.line if main_fn else -1):
                related.append(Related(location(info, other.span), reason))
        return self.ctx.finding("RPL201", info, cand.at, message, related, fix, help=sentences(help))  # type: ignore[arg-type]


def _suppressed(info: ModuleInfo, line: int) -> bool:
    if line not in info.noqa:
        return False
    codes = info.noqa[line]
    return codes is None or any("RPL201".startswith(c) for c in codes)


def _sources(srcs: Iterable[str]) -> str:
    order = {"python": 0, "numpy": 1, "torch": 2}
    names = sorted(set(srcs), key=lambda s: (order.get(s, 9), s))
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


@rule("RPL201", per="module")
def seed_outside_hydra_main(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    if not info.hydra_mains or info.is_test or _FACTS not in info.extra:
        return
    yield from _Rpl201(ctx, info).findings()


# -- RPL202 ------------------------------------------------------------------------------------
def _handoff_message(name: str, api: str, missing: list[str]) -> tuple[str, str]:
    """The message and the help of an RPL202 finding."""
    cat = _cat()
    labels = [source_label(s) for s in missing]
    rngs = f"{labels[0]} RNG" if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]} RNGs"
    message = f"`{name}` draws from {rngs} without seeding {'it' if len(labels) == 1 else 'them'}, and `{api}` runs it in other processes"
    advice = f"seed inside `{name}` (e.g. from a per-task seed passed as an argument)"
    if cat.starts_jobs(api):
        return message, sentences(f"`{api}` runs it in separate jobs, which start unseeded, so results change from run to run", advice)
    copied = [s for s in missing if s not in cat.fork_reseeded]
    reseeded = [source_label(s) for s in missing if s in cat.fork_reseeded]
    fork = []
    if copied:
        streams = "stream" if len(copied) == 1 else "streams"
        fork.append(f"under fork every worker repeats the parent's {_sources(copied)} {streams} (the same numbers in every worker)")
    if reseeded:
        fork.append(f"under fork {' and '.join(reseeded)} is reseeded from OS entropy in every worker")
    return message, sentences(
        f"{'; '.join(fork)}; under spawn every worker starts unseeded, so results change from run to run", advice
    )


def _instance_call(index, qual: str, info: ModuleInfo) -> tuple[str, ...]:
    """The `__call__` an instance of the project class `qual` runs when called, if any."""
    cls = index.class_key(qual, info)
    for base in index.class_bases(cls) if cls else ():
        if f"{base}.__call__" in index.functions:
            return (f"{base}.__call__",)
    return ()


@rule("RPL202", per="module")
def seed_outside_worker(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    index = ctx.index
    cat = _cat()
    order = {s: i for i, s in enumerate(index.m.sources)}
    for _, ev in info.all_events("handoff"):
        if ev.data.get("instance"):
            keys = _instance_call(index, ev.data["target"], info)
        else:
            keys = index.resolve(ev.data["target"], info)
        if not keys:
            continue
        keys = (*keys, *(k for q in ev.data.get("instances", ()) for k in _instance_call(index, q, info)))
        if ev.data["decorated"] and not any(set(index.functions[k][1].decorators or ()) & cat.remote_decorators for k in keys):
            continue
        draws: set = set()
        seeds: set = set()
        for key in keys:
            eff = index.effects(key)
            draws |= eff.draws
            seeds |= eff.seeds
        init = ev.data["initializer"]
        if init:
            for key in index.resolve(init, info):
                seeds |= index.effects(key).seeds
        missing = sorted(draws - seeds, key=lambda s: order.get(s, 99))
        if not missing:
            continue
        fn_info, fn = index.functions[keys[0]]
        name = fn.qual.rsplit(".", 1)[-1] if fn.class_name is None else fn.qual
        related = [Related(location(fn_info, (fn.line, fn.col, fn.line, fn.col)), f"`{name}` is defined here")]
        message, help = _handoff_message(name, ev.data["api"], missing)
        yield ctx.finding("RPL202", info, ev, message, related, help=help)
