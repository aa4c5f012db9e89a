"""RPL3xx data loading, the extraction side: what each file says about its loaders.

Extraction hooks record, per file, every call that may build a loader or draw a random
order/split ("loader" events) together with symbolic descriptions of its arguments, plus the
bindings those descriptions refer to (names, `self.x` attributes, class attributes, argparse
defaults). The rules (`dataloader.py`) resolve the descriptions against these facts and the project index:
a project subclass of DataLoader in another file, or `args.workers` whose literal default
is declared further down the file, is only known once every file has been read.

A value description is a small tuple:
  ("lit", v)                literal
  ("qual", q)               a name/attribute resolved to a qualified name
  ("name", id, scope[, local])  a plain name bound in `scope` (else in the module, unless local)
  ("self", class, attr)     `self.attr` inside a method of `class`
  ("attr", attr)            `<something>.attr` (argparse namespaces, config objects)
  ("item", id, key, scope)  `CONFIG["key"]`
  ("any", (d, ...))         one of several (conditional expressions)
  ("dict", ((key, d), ...)) a dict literal (or one item assigned to a dict)
  ("call", q)               the result of calling `q` (None when unresolved)
  ("partial", target, args, kws, kwargs_known)   `functools.partial(target, ...)`
  ("unknown",)
"""

from __future__ import annotations

import ast
import functools
from typing import Any, Optional

from repro_lint.core import catalog
from repro_lint.facts.hooks import Family
from repro_lint.facts.walker.extractor import Extractor
from repro_lint.facts.model import MODULE_SCOPE
from repro_lint.facts.syntax import NOT_LITERAL, argparse_dest, get_arg, has_kwargs, literal

EMPTY: dict = {}  # a shared empty mapping for lookups that miss (never written to)
FACTS = "dataloading"  # key in ModuleInfo.extra
# the scopes that call torch.initial_seed(): the project's worker seeders are searched there
INITIAL_SEED = "initial_seed_scopes"
UNKNOWN = ("unknown",)
_Name = ast.Name
_Attribute = ast.Attribute
_Call = ast.Call
MAX_DEPTH = 8  # bound on following bindings through bindings (cycles, long chains)
_MAX_KEYS = 64  # larger dict literals are data tables, not keyword sets: not described
_MAX_BRANCHES = 64  # possible key sets of one dict followed through conditional updates
_KEYS = ("shuffle", "num_workers")
# expressions `_dict_branches` can read a dict from
_DICT_EXPRESSIONS = frozenset([ast.Dict, ast.Call, ast.IfExp, ast.Name])  # keywords that make a call of a project class worth recording


@functools.lru_cache(maxsize=1)
def loader_catalog() -> dict:
    data = catalog.load("dataloading")
    workers = catalog.load("frameworks")["worker-seeders"]
    random_params = {}
    for item in data["random-calls"]:
        for name in item["names"]:
            random_params[name] = tuple(item["parameters"])
    return {
        "loaders": frozenset(data["loaders"]),
        "loader_params": tuple(data["loader-parameters"]),
        "random": random_params,
        "partials": frozenset(data["partials"]),
        "worker_seeders": frozenset(workers["names"]),
        "workers_arg": int(workers["workers-arg"]),
        "workers_kw": workers["workers-kw"],
        "workers_value": workers["workers-value"],
        "held": frozenset(data["held-generators"]),
        "torch_gens": frozenset(data["torch-generators"]),
        "gen_seed_method": data["generator-seed-method"],
        "initial_seed": frozenset(data["initial-seed"]),
        "argparse": data["argparse-method"],
        "fix": data["fix"],
        "worker-keyword": data["worker-keyword"],
    }


# =====================================================================================
# Extraction
# =====================================================================================
class _State:
    """Per-file state the hooks need while the walk is under way (not stored)."""

    __slots__ = ("dicts", "gens", "self_attrs", "fn", "cls", "loaders", "names_of", "names")

    def __init__(self) -> None:
        # `**kwargs` dicts per scope: name -> list of possible key->desc dicts, or None (unknown)
        self.dicts: dict[str, dict[str, Optional[list[dict]]]] = {}
        # torch.Generator objects per scope: name -> seeded yet
        self.gens: dict[str, dict[str, bool]] = {}
        # every attribute bound in any class of the file (`facts["self"]`): the call hook
        # leaves at once for `obj.m(...)` whose `m` is none of them (most method calls)
        self.self_attrs: set[str] = set()
        # the function being walked and the class it is a method of (`_class_of_method`)
        self.fn: Any = None
        self.cls: Optional[str] = None
        self.loaders = False  # a "loader" event was recorded
        # the function (or module) whose names `names` are (`_free_name`)
        self.names_of: Any = None
        self.names: frozenset = frozenset()


def _state(ex: Extractor) -> _State:
    st = ex.__dict__.get("_dataloading")
    if st is None:
        st = ex.__dict__["_dataloading"] = _State()
    return st


def _facts(ex: Extractor) -> dict:
    facts = ex.info.extra.get(FACTS)
    if facts is None:
        facts = ex.info.extra[FACTS] = {"names": {}, "self": {}, "argparse": {}, "classattr": {}, "held": {}, "initial_seed": []}
    return facts


def _class_of_method(ex: Extractor) -> Optional[str]:
    st = ex.__dict__.get("_dataloading") or _state(ex)
    fn = ex.func
    if fn is not st.fn:  # worked out once per function walked (`self.x = ...` is common)
        st.fn = fn
        st.cls = None if fn is None or not fn.class_name or not fn.params else fn.qual.rpartition(".")[0]
    return st.cls


def _self_name(ex: Extractor) -> Optional[str]:
    return ex.func.params[0] if _class_of_method(ex) else None


def describe(ex: Extractor, node: Optional[ast.AST], depth: int = 0) -> tuple:
    if node is None or depth > MAX_DEPTH:
        return UNKNOWN
    t = type(node)
    if t is ast.Call:  # the commonest value: `x = f(...)`
        return _call_desc(ex, node, ex.r.qualify(node.func), depth)  # type: ignore[arg-type, attr-defined]
    if t is ast.Constant or t is ast.UnaryOp:  # what `literal` can read
        lit = literal(node)
        if lit is not NOT_LITERAL:
            return ("lit", lit)
    if t is ast.Name or t is ast.Attribute:
        qual = ex.r.qualify(node)
        if qual:
            return ("qual", qual)
        if t is ast.Name:
            # bound in this function (a loop variable, a `with` target, ...): never a global
            local = ex.func is not None and node.id in ex.r.scope.bindings
            return ("name", node.id, ex.scope, local)
        base = node.value
        if isinstance(base, ast.Name) and base.id == _self_name(ex):
            return ("self", _class_of_method(ex), node.attr)
        return ("attr", node.attr)
    if t is ast.Subscript and isinstance(node.value, ast.Name):
        key = literal(node.slice)
        if isinstance(key, str):
            return ("item", node.value.id, key, ex.scope)
        return UNKNOWN
    if t is ast.IfExp:
        return ("any", (describe(ex, node.body, depth + 1), describe(ex, node.orelse, depth + 1)))
    if t is ast.Dict and len(node.keys) <= _MAX_KEYS:
        keys = [literal(k) if k is not None else None for k in node.keys]
        if all(isinstance(k, str) for k in keys):
            return ("dict", tuple((k, describe(ex, v, depth + 1)) for k, v in zip(keys, node.values)))
        return UNKNOWN
    return UNKNOWN


def _call_desc(ex: Extractor, node: ast.Call, qual: Optional[str], depth: int = 0) -> tuple:
    """The description of a call whose callee resolves to `qual`."""
    if qual in (CAT or hook_catalog())["partials"]:
        part = _partial_desc(ex, node, depth, qual)
        if part is not None:
            return part
    return ("call", qual)


def _partial_desc(ex: Extractor, node: ast.Call, depth: int, qual: Optional[str]) -> Optional[tuple]:
    if qual not in loader_catalog()["partials"] or not node.args or isinstance(node.args[0], ast.Starred):
        return None
    target = describe(ex, node.args[0], depth + 1)
    args = tuple(describe(ex, a, depth + 1) for a in node.args[1:])
    starred = any(isinstance(a, ast.Starred) for a in node.args)
    kws = {kw.arg: describe(ex, kw.value, depth + 1) for kw in node.keywords if kw.arg}
    known = not starred and not has_kwargs(node)
    return ("partial", target, args, kws, known)


# -- `**kwargs` dicts built in the same scope -----------------------------------------
def _dict_branches(ex: Extractor, node: ast.AST) -> Optional[list[dict]]:
    """Possible key sets of a dict expression, or None when it is not one we can read."""
    if isinstance(node, ast.Dict):
        if len(node.keys) > _MAX_KEYS:
            return None
        branches: list[dict] = [{}]
        for k, v in zip(node.keys, node.values):
            if k is None:  # `{**other, ...}`
                inner = _dict_branches(ex, v)
                if inner is None:
                    return None
                branches = [{**b, **i} for b in branches for i in inner]
                continue
            key = literal(k)
            if not isinstance(key, str):
                return None
            for b in branches:
                b[key] = describe(ex, v)
        return branches
    if isinstance(node, ast.Call) and not node.args:
        return _dict_call_branches(ex, node, ex.r.qualify(node.func))
    if isinstance(node, ast.IfExp):
        a = _dict_branches(ex, node.body)
        b = _dict_branches(ex, node.orelse)
        return None if a is None or b is None else a + b
    if isinstance(node, ast.Name):
        known = _state(ex).dicts.get(ex.scope, {}).get(node.id)
        return [dict(b) for b in known] if known is not None else None
    return None


def _dict_call_branches(ex: Extractor, node: ast.Call, qual: Optional[str]) -> Optional[list[dict]]:
    """`dict(k=v, ...)` (a call without positional arguments whose callee resolves to `qual`)."""
    if qual in ("dict", "builtins.dict") or qual is None and type(node.func) is _Name and node.func.id == "dict":  # type: ignore[attr-defined]
        if has_kwargs(node):
            return None
        return [{kw.arg: describe(ex, kw.value) for kw in node.keywords}]
    return None


def _set_dict(ex: Extractor, stmt: ast.stmt, name: str, branches: Optional[list[dict]]) -> None:
    """Record a new state of dict `name`; a change under a condition may not happen."""
    states = _state(ex).dicts
    if branches is None and name not in states.get(ex.scope, EMPTY):
        return  # the common case: not a dict, never was one
    dicts = states.setdefault(ex.scope, {})
    if stmt is not ex.stmt_node and name in dicts:
        old = dicts[name]
        branches = None if old is None or branches is None else old + branches
    if branches is not None and len(branches) > _MAX_BRANCHES:
        branches = None  # too many combinations to be worth following
    dicts[name] = branches


def _dict_method(ex: Extractor, node: ast.Call) -> None:
    func = node.func
    if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
        return
    name = func.value.id
    dicts = _state(ex).dicts.get(ex.scope, {})
    if name not in dicts:
        return
    old = dicts[name]
    method = func.attr
    if method in ("get", "items", "keys", "values", "copy", "__getitem__", "__contains__"):
        return
    new: Optional[list[dict]] = None
    if old is not None and method == "update" and not has_kwargs(node):
        upd: Optional[list[dict]] = [{}]
        if len(node.args) == 1:
            upd = _dict_branches(ex, node.args[0])
        elif node.args:
            upd = None
        if upd is not None:
            kws = {kw.arg: describe(ex, kw.value) for kw in node.keywords}
            new = [{**b, **u, **kws} for b in old for u in upd]
    elif old is not None and method == "setdefault" and node.args:
        key = literal(node.args[0])
        if isinstance(key, str):
            value = describe(ex, node.args[1]) if len(node.args) > 1 else ("lit", None)
            new = [b if key in b else {**b, key: value} for b in old]
    stmt = ex.stmt_node
    # a method call nested under a condition may not run: keep the old states too
    nested = not (isinstance(stmt, ast.Expr) and stmt.value is node)
    if new is not None and nested:
        new = old + new  # type: ignore[operator]
    dicts[name] = new if new is None or len(new) <= _MAX_BRANCHES else None


def _kwargs_of(ex: Extractor, node: ast.Call) -> Any:
    """None without `**`; "unknown"; or the possible key->desc dicts of all `**` together."""
    stars = [kw.value for kw in node.keywords if kw.arg is None]
    if not stars:
        return None
    branches: list[dict] = [{}]
    for value in stars:
        inner = _dict_branches(ex, value)
        if inner is None:
            return "unknown"
        branches = [{**b, **i} for b in branches for i in inner]
        if len(branches) > 64:
            return "unknown"
    return branches


# -- hooks ----------------------------------------------------------------------------
CAT: dict = {}  # `loader_catalog()`, kept here once read: the hooks run for every call and assignment
# the methods of unresolved receivers the call hook acts on (a generator's seeding, argparse)
_METHODS: set = set()
# what the call hook does with a catalog callee (one lookup for every resolved call)
_INITIAL_SEED, _WORKER_SEEDER, _TARGET = 1, 2, 3
_QUALS: dict = {}


def hook_catalog() -> dict:
    if not CAT:
        cat = loader_catalog()
        _METHODS.update([cat["gen_seed_method"], cat["argparse"]])
        # a callee in several lists acts as the first of initial_seed, worker_seeders, targets
        _QUALS.update(dict.fromkeys(cat["loaders"] | frozenset(cat["random"]), _TARGET))
        _QUALS.update(dict.fromkeys(cat["worker_seeders"], _WORKER_SEEDER))
        _QUALS.update(dict.fromkeys(cat["initial_seed"], _INITIAL_SEED))
        CAT.update(cat)
    return CAT


def on_call(ex: Extractor, node: ast.Call, qual: Optional[str]) -> None:
    # runs for every call of a project: the commonest calls (methods of other objects,
    # calls into libraries, project calls passing nothing a loader rule reads) leave early,
    # before any lookup that can wait
    if not CAT:
        hook_catalog()
    if qual is not None:
        action = _QUALS.get(qual)
        if action is None:
            # maybe a project subclass of DataLoader (or a class attribute bound to one):
            # only worth keeping when the call passes what the rules read (`_worth_keeping`)
            if len(node.args) <= 2:
                for kw in node.keywords:
                    if kw.arg is None or kw.arg in _KEYS:
                        break
                else:
                    return
            if qual.partition(".")[0] in ex.m.external_roots:
                return
        elif action == _INITIAL_SEED:
            scopes = _facts(ex)["initial_seed"]
            if ex.scope not in scopes:
                scopes.append(ex.scope)
            return
        elif action == _WORKER_SEEDER:
            # `on`: workers are seeded (a literal True, or the user's own value); without it,
            # the call is where RPL302's fix switches them on
            cat = CAT
            arg = get_arg(node, cat["workers_arg"], cat["workers_kw"])
            on = arg is not None and literal(arg) not in (False, None, 0)
            ex.add("workerseed", node, api=qual, on=on)
            return
        target: Optional[tuple] = ("qual", qual)
    else:
        func = node.func
        tf = type(func)
        if tf is _Attribute:
            method = func.attr  # type: ignore[attr-defined]
            if method in _METHODS:
                recv = func.value  # type: ignore[attr-defined]
                if method == CAT["gen_seed_method"] and type(recv) is _Name:
                    st = ex.__dict__.get("_dataloading")
                    gens = st.gens.get(ex.scope) if st is not None else None
                    if gens is not None and recv.id in gens:  # type: ignore[attr-defined]
                        gens[recv.id] = True  # type: ignore[attr-defined]
                elif method == CAT["argparse"]:
                    _argparse(ex, node)
            st = ex.__dict__.get("_dataloading")
            if st is None:
                return  # no assignment walked yet: no dict to follow, no attribute bound
            if st.dicts and st.dicts.get(ex.scope):
                _dict_method(ex, node)
            # of attribute calls, only `self.attr(...)` can name a loader bound in this class
            # (most are calls of the class's own methods, never bound to anything)
            if method not in st.self_attrs:
                return
            recv = func.value  # type: ignore[attr-defined]
            fn = ex.func
            if type(recv) is not _Name or fn is None or not fn.class_name or not fn.params or recv.id != fn.params[0]:  # type: ignore[attr-defined]
                return
            if method not in ex.info.extra[FACTS]["self"].get(_class_of_method(ex), EMPTY):
                return
        elif tf is _Name:
            # an unresolved name (a builtin, a parameter, ...) is a loader only when this
            # file bound it to one
            facts = ex.info.extra.get(FACTS)
            if facts is None:
                return
            names = facts["names"]
            if func.id not in names.get(ex.scope, EMPTY) and func.id not in names.get(MODULE_SCOPE, EMPTY):  # type: ignore[attr-defined]
                return
        elif tf is not ast.Call:
            return  # `items[k](...)`, `(a or b)(...)`: nothing the rules follow
        target = _call_target(ex, node, qual)
        if target is None:
            return
    starred = any(type(a) is ast.Starred for a in node.args)
    st = ex.__dict__.get("_dataloading") or _state(ex)
    st.loaders = True
    gens = st.gens.get(ex.scope, EMPTY)
    ev = ex.add(
        "loader", node,
        target=target,
        args=tuple(describe(ex, a) for a in node.args) if not starred else (),
        starred=starred,
        kws={kw.arg: describe(ex, kw.value) for kw in node.keywords if kw.arg},
        kwargs=_kwargs_of(ex, node),
        gens=tuple(name for name, seeded in gens.items() if seeded),
    )
    if ex.loop_stmts:
        # built once per iteration of these loops: a generator for it is made before them,
        # under a name the scope does not use (RPL301's fix)
        ev.data["loops"] = tuple(ex.span(loop) for loop in ex.loop_stmts)
        ev.data["free_name"] = _free_name(ex, st)


def _free_name(ex: Extractor, st: _State) -> Optional[str]:
    """The first of the catalog's names for a new generator that the scope being walked
    neither binds nor reads (in a function, anywhere in its body; in the module body,
    anywhere in the module, whose functions may read it as a global)."""
    node = ex.func_node if ex.func is not None else ex.module_node
    if node is None:
        return None
    if st.names_of is not node:
        st.names_of, st.names = node, _names_in(node)
    return next((name for name in (CAT or hook_catalog())["fix"]["generator-names"] if name not in st.names), None)


def _names_in(node: ast.AST) -> frozenset:
    """Every name a tree binds or reads."""
    out: set = set()
    for sub in ast.walk(node):
        t = type(sub)
        if t is _Name:
            out.add(sub.id)  # type: ignore[attr-defined]
        elif t is ast.arg:
            out.add(sub.arg)  # type: ignore[attr-defined]
        elif t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            out.add(sub.name)  # type: ignore[attr-defined]
        elif t in (ast.Global, ast.Nonlocal):
            out.update(sub.names)  # type: ignore[attr-defined]
        elif t is ast.alias:
            out.add((sub.asname or sub.name).partition(".")[0])  # type: ignore[attr-defined]
        elif t is ast.ExceptHandler and sub.name:  # type: ignore[attr-defined]
            out.add(sub.name)  # type: ignore[attr-defined]
        elif isinstance(sub, getattr(ast, "MatchAs", ())) and getattr(sub, "name", None):
            out.add(sub.name)  # type: ignore[attr-defined]
    return frozenset(out)


def _call_target(ex: Extractor, node: ast.Call, qual: Optional[str]) -> Optional[tuple]:
    """How the callee of a possible loader call is described, or None when it is not one."""
    cat = CAT or hook_catalog()
    func = node.func
    if qual is not None:
        if qual in cat["loaders"] or qual in cat["random"]:
            return ("qual", qual)
        if qual.split(".", 1)[0] in ex.m.external_roots:
            return None
        # maybe a project subclass of DataLoader (or a class attribute bound to one):
        # only worth keeping when the call passes what the rules look at
        if _worth_keeping(node):
            return ("qual", qual)
        return None
    if type(func) is ast.Call:
        return _partial_desc(ex, func, 0, ex.r.qualify(func.func))
    bound: Optional[list] = None
    if type(func) is ast.Name:
        names = _facts(ex)["names"]
        bound = names.get(ex.scope, EMPTY).get(func.id)
        if bound is None and ex.scope != MODULE_SCOPE:
            bound = names.get(MODULE_SCOPE, EMPTY).get(func.id)
    elif type(func) is ast.Attribute:
        # only `self.attr(...)` can name a loader bound in this class: other receivers leave
        # before any lookup (most calls of a project are methods of other objects)
        recv = func.value
        fn = ex.func
        if type(recv) is not ast.Name or fn is None or not fn.class_name or not fn.params or recv.id != fn.params[0]:
            return None
        bound = _facts(ex)["self"].get(_class_of_method(ex), EMPTY).get(func.attr)
    if not bound or not any(_maybe_callable(d) for d in bound):
        return None
    if type(func) is ast.Name:
        return ("name", func.id, ex.scope)
    return ("self", _class_of_method(ex), func.attr)


def _maybe_callable(desc: tuple) -> bool:
    if desc[0] == "any":
        return any(_maybe_callable(d) for d in desc[1])
    return desc[0] in ("qual", "partial")


def _worth_keeping(node: ast.Call) -> bool:
    if len(node.args) > 2:
        return True
    for kw in node.keywords:  # `**kwargs`, or a keyword the rules read
        if kw.arg is None or kw.arg in _KEYS:
            return True
    return False


def _argparse(ex: Extractor, node: ast.Call) -> None:
    dest = argparse_dest(node)
    if not dest:
        return
    default = next((kw.value for kw in node.keywords if kw.arg == "default"), None)
    # without a default the value is whatever the command line says (or an action's
    # implicit default, which users switch on): unknown
    desc = describe(ex, default) if default is not None else UNKNOWN
    _facts(ex)["argparse"].setdefault(dest, []).append(desc)


def on_assign(ex: Extractor, stmt: ast.stmt) -> None:
    # runs for every assignment of a project: the common case (one name bound in a function
    # to a call or a plain value) is written out, with no helper called for it
    value = stmt.value  # type: ignore[attr-defined]
    if value is None:
        return  # a bare annotation binds nothing
    ts = type(stmt)
    targets = stmt.targets if ts is ast.Assign else (stmt.target,)  # type: ignore[attr-defined]
    aug = ts is ast.AugAssign
    cat = CAT or hook_catalog()
    facts = ex.info.extra.get(FACTS) or _facts(ex)
    st = ex.__dict__.get("_dataloading") or _state(ex)
    tv = type(value)
    scope = ex.scope
    for target in targets:
        tt = type(target)
        if tt is _Name:
            ident = target.id  # type: ignore[attr-defined]
            callee = None  # the callee of a call assigned, resolved
            if aug:
                desc = UNKNOWN
            elif tv is _Call:
                # `_assigned_callee` and `_call_desc`, written out for one target
                if len(targets) == 1 and value is ex.value_call:
                    callee = ex.value_qual
                    if callee is not None and ex.func is not None:
                        base = value.func  # type: ignore[attr-defined]
                        while type(base) is _Attribute:
                            base = base.value  # type: ignore[attr-defined]
                        if base.id == ident:  # type: ignore[attr-defined]
                            callee = None
                else:
                    callee = _assigned_callee(ex, value, ident, len(targets))  # type: ignore[arg-type]
                desc = _call_desc(ex, value, callee) if callee in cat["partials"] else ("call", callee)  # type: ignore[arg-type]
            else:
                desc = describe(ex, value)
            if ex.class_stack:
                # a class attribute: `num_workers = 0` in a config class, `loader_cls = DataLoader`
                cls = ".".join(ex.prefix)
                facts["self"].setdefault(cls, {}).setdefault(ident, []).append(desc)
                st.self_attrs.add(ident)
                facts["classattr"].setdefault(ident, []).append(desc)
                _held(ex, cls, ident, value, stmt, desc)
                continue
            names = facts["names"]
            bound = names.get(scope)
            if bound is None:
                bound = names[scope] = {}
            descs = bound.get(ident)
            if descs is None:
                bound[ident] = [desc]
            else:
                descs.append(desc)
            # only a dict expression (or a name of one) starts or changes a tracked dict
            # (a call with positional arguments is never `dict(...)`: no dict expression)
            if aug or tv not in _DICT_EXPRESSIONS:
                branches = None
            elif tv is _Call:
                branches = None if value.args else _dict_call_branches(ex, value, callee)  # type: ignore[attr-defined, arg-type]
            else:
                branches = _dict_branches(ex, value)
            if branches is not None or st.dicts and ident in st.dicts.get(scope, EMPTY):
                _set_dict(ex, stmt, ident, branches)
            # a generator made (or the name of one rebound) in this scope
            if tv is _Call:
                if desc[0] != "call" or desc[1] in cat["torch_gens"] or type(value.func) is _Attribute and value.func.attr == cat["gen_seed_method"]:  # type: ignore[attr-defined]
                    _track_generator(ex, ident, value, desc)
                    continue
            if st.gens and st.gens.get(scope):
                _track_generator(ex, ident, value, desc)
        elif tt is _Attribute:
            recv = target.value  # type: ignore[attr-defined]
            if type(recv) is _Name:
                cls = _class_of_method(ex)
                if cls and recv.id == ex.func.params[0]:  # type: ignore[union-attr]
                    desc = UNKNOWN if aug else describe(ex, value)
                    facts["self"].setdefault(cls, {}).setdefault(target.attr, []).append(desc)  # type: ignore[attr-defined]
                    st.self_attrs.add(target.attr)  # type: ignore[attr-defined]
                    _held(ex, cls, target.attr, value, stmt, desc)  # type: ignore[attr-defined]
        elif tt is ast.Subscript:
            if type(target.value) is _Name:  # type: ignore[attr-defined]
                _item_assign(ex, stmt, target, value)  # type: ignore[arg-type]
        elif tt is ast.Tuple or tt is ast.List:
            # `train_ds, val_ds = random_split(ds, ...)`: the parts hold the same dataset
            wraps = tv is ast.Call and value.args and ex.r.qualify(value.func) in CAT["random"]  # type: ignore[attr-defined]
            for elt in target.elts:  # type: ignore[attr-defined]
                if isinstance(elt, ast.Name):
                    desc = ("any", (describe(ex, value.args[0]),)) if wraps else UNKNOWN  # type: ignore[attr-defined]
                    facts["names"].setdefault(ex.scope, {}).setdefault(elt.id, []).append(desc)
                    _set_dict(ex, stmt, elt.id, None)


def _assigned_callee(ex: Extractor, call: ast.Call, ident: str, ntargets: int) -> Optional[str]:
    """The callee of `ident = call(...)` resolved as the bindings stand once `ident` is bound
    (as everything this hook describes). The walk resolved it just before (`callee_of`): the
    same answer, unless the callee is reached through `ident` itself, which a function's
    assignment has just bound to something unknown."""
    if ntargets != 1 or call is not ex.value_call:
        return ex.r.qualify(call.func)  # (more targets: more bindings since)
    qual = ex.value_qual
    if qual is not None and ex.func is not None:
        base = call.func
        while type(base) is _Attribute:
            base = base.value  # type: ignore[attr-defined]
        if base.id == ident:  # type: ignore[attr-defined]  (resolved: a chain from a name)
            return None
    return qual


def _item_assign(ex: Extractor, stmt: ast.stmt, target: ast.Subscript, value: ast.AST) -> None:
    name = target.value.id  # type: ignore[attr-defined]
    key = literal(target.slice)
    aug = isinstance(stmt, ast.AugAssign)
    desc = UNKNOWN if aug else describe(ex, value)
    if isinstance(key, str):
        _facts(ex)["names"].setdefault(ex.scope, {}).setdefault(name, []).append(("dict", ((key, desc),)))
    dicts = _state(ex).dicts.get(ex.scope, {})
    if name not in dicts:
        return
    old = dicts[name]
    if old is None or not isinstance(key, str) or aug:
        dicts[name] = None
        return
    new = [{**b, key: desc} for b in old]
    # a nested assignment may not run: both states stay possible, so their number doubles
    # with each one; past the bound the dict is no longer followed (as in _set_dict)
    both = old + new if stmt is not ex.stmt_node else new
    dicts[name] = both if len(both) <= _MAX_BRANCHES else None


def _generator_call(ex: Extractor, value: ast.AST, desc: Optional[tuple] = None) -> tuple[Optional[str], bool]:
    """(constructor, seeded) of `torch.Generator()` / `torch.Generator().manual_seed(s)` etc."""
    if type(value) is not ast.Call:
        return None, False
    func = value.func  # type: ignore[attr-defined]
    if type(func) is ast.Attribute and func.attr == (CAT or hook_catalog())["gen_seed_method"] and type(func.value) is ast.Call:
        inner, _ = _generator_call(ex, func.value)
        return inner, inner is not None
    if desc is not None and desc[0] == "call":
        return desc[1], False  # already qualified
    return ex.r.qualify(func), False


def _on_cpu(ex: Extractor, value: ast.Call) -> bool:
    """Whether `torch.Generator(...)` (or `....manual_seed(s)` on it) makes a CPU generator:
    no device, or "cpu" (`torch.device("cpu")`). A DataLoader or sampler draws its order on
    the CPU and raises with a generator on another device (`device=accelerator.device`)."""
    seed_method = (CAT or hook_catalog())["gen_seed_method"]
    while type(value.func) is ast.Attribute and value.func.attr == seed_method and type(value.func.value) is ast.Call:
        value = value.func.value
    device = get_arg(value, 0, "device")
    if device is None:
        return True
    if type(device) is ast.Call and ex.r.qualify(device.func) == "torch.device" and device.args:
        device = device.args[0]
    kind = literal(device)
    return isinstance(kind, str) and kind.split(":", 1)[0] == "cpu"


def _track_generator(ex: Extractor, name: str, value: ast.AST, desc: tuple) -> None:
    if type(value) is not ast.Call:
        gens = _state(ex).gens.get(ex.scope)
        if gens:
            gens.pop(name, None)  # rebound to something that is not a new generator
        return
    qual, seeded = _generator_call(ex, value, desc)
    if qual in (CAT or hook_catalog())["torch_gens"] and _on_cpu(ex, value):
        _state(ex).gens.setdefault(ex.scope, {})[name] = seeded
    else:
        gens = _state(ex).gens.get(ex.scope)
        if gens:
            gens.pop(name, None)


def _held(ex: Extractor, cls: Optional[str], attr: str, value: ast.AST, stmt: ast.stmt, desc: Optional[tuple] = None) -> None:
    """A generator object stored on the instance (or class): workers do not reseed it.
    `desc`: the value's description, if already made (its callee is not resolved again)."""
    if cls is None or type(value) is not ast.Call:
        return
    qual, _ = _generator_call(ex, value, desc)
    if qual in CAT["held"]:
        _facts(ex)["held"].setdefault(cls, []).append((attr, qual, stmt.lineno))


def _on_finish(ex: Extractor) -> None:
    """Names, argparse defaults and class attributes are read only to resolve this file's own
    loader calls: without any, they are dropped (most files of a large project)."""
    facts = ex.info.extra.get(FACTS)
    if facts is None:
        return
    st = ex.__dict__.get("_dataloading")
    if st is not None and st.loaders:
        return
    for key in ("names", "argparse", "classattr"):
        facts[key] = {}


FAMILY = Family(
    order=40,
    call_hooks=(on_call,),
    assign_hooks=(on_assign,),
    finish_hooks=(_on_finish,),
    summaries={INITIAL_SEED: lambda info: tuple((info.extra.get(FACTS) or EMPTY).get("initial_seed", ()))},
)
