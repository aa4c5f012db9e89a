"""RPL3xx: data loading (RPL301 dataloader-without-generator, RPL302 dataloader-without-worker-init-fn).

Extraction hooks record, per file, every call that may build a loader or draw a random
order/split ("loader" events) together with symbolic descriptions of its arguments, plus the
bindings those descriptions refer to (names, `self.x` attributes, class attributes, argparse
defaults). The rules resolve the descriptions against these facts and the project index:
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
from typing import Any, Iterable, Optional

from repro_lint import catalog, extract
from repro_lint.extract import NOT_LITERAL, Extractor, literal
from repro_lint.findings import Finding, Fix
from repro_lint.fix.edits import AddKeyword, EnsureFunction
from repro_lint.model import MAIN_SCOPE, MODULE_SCOPE, ModuleInfo
from repro_lint.rules import Context, rule
from repro_lint.rules.seeding import seed_spec

FACTS = "dataloading"  # key in ModuleInfo.extra
UNKNOWN = ("unknown",)
_MAX_DEPTH = 8  # bound on following bindings through bindings (cycles, long chains)
_MAX_KEYS = 64  # larger dict literals are data tables, not keyword sets: not described
_MAX_BRANCHES = 64  # possible key sets of one dict followed through conditional updates
_KEYS = ("shuffle", "num_workers")  # keywords that make a call of a project class worth recording


@functools.lru_cache(maxsize=1)
def _cat() -> dict:
    data = catalog.load("dataloading")
    random_params = {}
    for item in data["random-calls"]:
        for name in item["names"]:
            random_params[name] = tuple(item["parameters"])
    return {
        "loaders": frozenset(data["loaders"]),
        "loader_params": tuple(data["loader-parameters"]),
        "random": random_params,
        "partials": frozenset(data["partials"]),
        "worker_seeders": frozenset(data["worker-seeders"]["names"]),
        "workers_arg": int(data["worker-seeders"]["workers-arg"]),
        "workers_kw": data["worker-seeders"]["workers-kw"],
        "held": frozenset(data["held-generators"]),
        "torch_gens": frozenset(data["torch-generators"]),
        "gen_seed_method": data["generator-seed-method"],
        "initial_seed": frozenset(data["initial-seed"]),
        "argparse": data["argparse-method"],
        "fix": data["fix"],
    }


# =====================================================================================
# Extraction
# =====================================================================================
class _State:
    """Per-file state the hooks need while the walk is under way (not stored)."""

    __slots__ = ("dicts", "gens")

    def __init__(self) -> None:
        # `**kwargs` dicts per scope: name -> list of possible key->desc dicts, or None (unknown)
        self.dicts: dict[str, dict[str, Optional[list[dict]]]] = {}
        # torch.Generator objects per scope: name -> seeded yet
        self.gens: dict[str, dict[str, bool]] = {}


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
    fn = ex.func
    if fn is None or not fn.class_name or not fn.params:
        return None
    return fn.qual.rpartition(".")[0]


def _self_name(ex: Extractor) -> Optional[str]:
    return ex.func.params[0] if _class_of_method(ex) else None


def _desc(ex: Extractor, node: Optional[ast.AST], depth: int = 0) -> tuple:
    if node is None or depth > _MAX_DEPTH:
        return UNKNOWN
    lit = literal(node)
    if lit is not NOT_LITERAL:
        return ("lit", lit)
    t = type(node)
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
        return ("any", (_desc(ex, node.body, depth + 1), _desc(ex, node.orelse, depth + 1)))
    if t is ast.Dict and len(node.keys) <= _MAX_KEYS:
        keys = [literal(k) if k is not None else None for k in node.keys]
        if all(isinstance(k, str) for k in keys):
            return ("dict", tuple((k, _desc(ex, v, depth + 1)) for k, v in zip(keys, node.values)))
        return UNKNOWN
    if t is ast.Call:
        qual = ex.r.qualify(node.func)
        part = _partial_desc(ex, node, depth, qual)
        if part is not None:
            return part
        return ("call", qual)
    return UNKNOWN


def _partial_desc(ex: Extractor, node: ast.Call, depth: int, qual: Optional[str]) -> Optional[tuple]:
    if qual not in _cat()["partials"] or not node.args or isinstance(node.args[0], ast.Starred):
        return None
    target = _desc(ex, node.args[0], depth + 1)
    args = tuple(_desc(ex, a, depth + 1) for a in node.args[1:])
    starred = any(isinstance(a, ast.Starred) for a in node.args)
    kws = {kw.arg: _desc(ex, kw.value, depth + 1) for kw in node.keywords if kw.arg}
    known = not starred and not extract.has_kwargs(node)
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
                b[key] = _desc(ex, v)
        return branches
    if isinstance(node, ast.Call) and not node.args and (
        ex.r.qualify(node.func) in ("dict", "builtins.dict") or isinstance(node.func, ast.Name) and node.func.id == "dict" and ex.r.qualify(node.func) is None
    ):
        if extract.has_kwargs(node):
            return None
        return [{kw.arg: _desc(ex, kw.value) for kw in node.keywords}]
    if isinstance(node, ast.IfExp):
        a = _dict_branches(ex, node.body)
        b = _dict_branches(ex, node.orelse)
        return None if a is None or b is None else a + b
    if isinstance(node, ast.Name):
        known = _state(ex).dicts.get(ex.scope, {}).get(node.id)
        return [dict(b) for b in known] if known is not None else None
    return None


def _set_dict(ex: Extractor, stmt: ast.stmt, name: str, branches: Optional[list[dict]]) -> None:
    """Record a new state of dict `name`; a change under a condition may not happen."""
    dicts = _state(ex).dicts.setdefault(ex.scope, {})
    if branches is None and name not in dicts:
        return  # the common case: not a dict, never was one
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
    if old is not None and method == "update" and not extract.has_kwargs(node):
        upd: Optional[list[dict]] = [{}]
        if len(node.args) == 1:
            upd = _dict_branches(ex, node.args[0])
        elif node.args:
            upd = None
        if upd is not None:
            kws = {kw.arg: _desc(ex, kw.value) for kw in node.keywords}
            new = [{**b, **u, **kws} for b in old for u in upd]
    elif old is not None and method == "setdefault" and node.args:
        key = literal(node.args[0])
        if isinstance(key, str):
            value = _desc(ex, node.args[1]) if len(node.args) > 1 else ("lit", None)
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
def _on_call(ex: Extractor, node: ast.Call, qual: Optional[str]) -> None:
    cat = _cat()
    func = node.func
    if qual is None and type(func) is ast.Attribute:
        method = func.attr
        if method == cat["gen_seed_method"] and isinstance(func.value, ast.Name):
            gens = _state(ex).gens.get(ex.scope)
            if gens is not None and func.value.id in gens:
                gens[func.value.id] = True
        elif method == cat["argparse"]:
            _argparse(ex, node)
        if _state(ex).dicts.get(ex.scope):
            _dict_method(ex, node)
    if qual is not None:
        if qual in cat["initial_seed"]:
            scopes = _facts(ex)["initial_seed"]
            if ex.scope not in scopes:
                scopes.append(ex.scope)
            return
        if qual in cat["worker_seeders"]:
            arg = extract.get_arg(node, cat["workers_arg"], cat["workers_kw"])
            if arg is not None and literal(arg) is True:
                ex.add("workerseed", node, api=qual)
            return
    target = _call_target(ex, node, qual)
    if target is None:
        return
    starred = any(isinstance(a, ast.Starred) for a in node.args)
    gens = _state(ex).gens.get(ex.scope, {})
    ex.add(
        "loader", node,
        target=target,
        args=tuple(_desc(ex, a) for a in node.args) if not starred else (),
        starred=starred,
        kws={kw.arg: _desc(ex, kw.value) for kw in node.keywords if kw.arg},
        kwargs=_kwargs_of(ex, node),
        gens=tuple(name for name, seeded in gens.items() if seeded),
    )


def _call_target(ex: Extractor, node: ast.Call, qual: Optional[str]) -> Optional[tuple]:
    """How the callee of a possible loader call is described, or None when it is not one."""
    cat = _cat()
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
        bound = names.get(ex.scope, {}).get(func.id)
        if bound is None and ex.scope != MODULE_SCOPE:
            bound = names.get(MODULE_SCOPE, {}).get(func.id)
    elif type(func) is ast.Attribute and isinstance(func.value, ast.Name) and func.value.id == _self_name(ex):
        bound = _facts(ex)["self"].get(_class_of_method(ex), {}).get(func.attr)
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
    return (
        len(node.args) > 2
        or extract.has_kwargs(node)
        or any(kw.arg in _KEYS for kw in node.keywords)
    )


def _argparse(ex: Extractor, node: ast.Call) -> None:
    dest = None
    for kw in node.keywords:
        if kw.arg == "dest":
            value = literal(kw.value)
            dest = value if isinstance(value, str) else None
            break
    else:
        opts = [literal(a) for a in node.args]
        opts = [o for o in opts if isinstance(o, str)]
        longs = [o for o in opts if o.startswith("--")]
        if longs:
            dest = longs[0][2:].replace("-", "_")
        elif opts and not opts[0].startswith("-"):
            dest = opts[0]
        elif opts:
            dest = opts[0].lstrip("-").replace("-", "_")
    if not dest:
        return
    default = next((kw.value for kw in node.keywords if kw.arg == "default"), None)
    # without a default the value is whatever the command line says (or an action's
    # implicit default, which users switch on): unknown
    desc = _desc(ex, default) if default is not None else UNKNOWN
    _facts(ex)["argparse"].setdefault(dest, []).append(desc)


def _on_assign(ex: Extractor, stmt: ast.stmt) -> None:
    value = getattr(stmt, "value", None)
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]  # type: ignore[attr-defined]
    aug = isinstance(stmt, ast.AugAssign)
    if value is None:
        return  # a bare annotation binds nothing
    facts = _facts(ex)
    for target in targets:
        if isinstance(target, ast.Name):
            desc = UNKNOWN if aug else _desc(ex, value)
            if ex.class_stack:
                # a class attribute: `num_workers = 0` in a config class, `loader_cls = DataLoader`
                cls = ".".join(ex.prefix)
                facts["self"].setdefault(cls, {}).setdefault(target.id, []).append(desc)
                facts["classattr"].setdefault(target.id, []).append(desc)
                _held(ex, cls, target.id, value, stmt)
                continue
            facts["names"].setdefault(ex.scope, {}).setdefault(target.id, []).append(desc)
            _set_dict(ex, stmt, target.id, None if aug else _dict_branches(ex, value))
            _track_generator(ex, target.id, value, desc)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == _self_name(ex):
            cls = _class_of_method(ex)
            desc = UNKNOWN if aug else _desc(ex, value)
            facts["self"].setdefault(cls, {}).setdefault(target.attr, []).append(desc)
            _held(ex, cls, target.attr, value, stmt)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            _item_assign(ex, stmt, target, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            # `train_ds, val_ds = random_split(ds, ...)`: the parts hold the same dataset
            wraps = isinstance(value, ast.Call) and ex.r.qualify(value.func) in _cat()["random"] and value.args
            for elt in target.elts:
                if isinstance(elt, ast.Name):
                    desc = ("any", (_desc(ex, value.args[0]),)) if wraps else UNKNOWN  # type: ignore[union-attr]
                    facts["names"].setdefault(ex.scope, {}).setdefault(elt.id, []).append(desc)
                    _set_dict(ex, stmt, elt.id, None)


def _item_assign(ex: Extractor, stmt: ast.stmt, target: ast.Subscript, value: ast.AST) -> None:
    name = target.value.id  # type: ignore[attr-defined]
    key = literal(target.slice)
    aug = isinstance(stmt, ast.AugAssign)
    desc = UNKNOWN if aug else _desc(ex, value)
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
    if type(func) is ast.Attribute and func.attr == _cat()["gen_seed_method"] and type(func.value) is ast.Call:
        inner, _ = _generator_call(ex, func.value)
        return inner, inner is not None
    if desc is not None and desc[0] == "call":
        return desc[1], False  # already qualified
    return ex.r.qualify(func), False


def _track_generator(ex: Extractor, name: str, value: ast.AST, desc: tuple) -> None:
    qual, seeded = _generator_call(ex, value, desc)
    if qual in _cat()["torch_gens"]:
        _state(ex).gens.setdefault(ex.scope, {})[name] = seeded
    else:
        gens = _state(ex).gens.get(ex.scope)
        if gens:
            gens.pop(name, None)


def _held(ex: Extractor, cls: Optional[str], attr: str, value: ast.AST, stmt: ast.stmt) -> None:
    """A generator object stored on the instance (or class): workers do not reseed it."""
    if cls is None:
        return
    qual, _ = _generator_call(ex, value)
    if qual in _cat()["held"]:
        _facts(ex)["held"].setdefault(cls, []).append((attr, qual, stmt.lineno))


def _on_finish(ex: Extractor) -> None:
    """Names, argparse defaults and class attributes are read only to resolve this file's own
    loader calls: without any, they are dropped (most files of a large project)."""
    facts = ex.info.extra.get(FACTS)
    if facts is None or any(ev.kind == "loader" for evs in ex.info.events.values() for ev in evs):
        return
    for key in ("names", "argparse", "classattr"):
        facts[key] = {}


extract.CALL_HOOKS.append(_on_call)
extract.ASSIGN_HOOKS.append(_on_assign)
extract.FINISH_HOOKS.append(_on_finish)


# =====================================================================================
# Resolution (rule time)
# =====================================================================================
class _Target:
    """What a call builds: a DataLoader, or a call that draws a random order or split."""

    __slots__ = ("kind", "api", "params", "fixable", "pre_args", "pre_kws", "kwargs_known")

    def __init__(self, kind: str, api: str, params: Optional[tuple], fixable: Optional[frozenset] = None) -> None:
        self.kind = kind  # "loader" or "random"
        self.api = api
        self.params = params  # positional parameter names; None when positions are unknown
        self.fixable = fixable  # keywords the callee accepts; None means any
        self.pre_args: tuple = ()
        self.pre_kws: dict = {}
        self.kwargs_known = True


class _Resolver:
    """Resolves value and target descriptions of one module against the facts and index."""

    def __init__(self, ctx: Context, info: ModuleInfo) -> None:
        self.ctx = ctx
        self.index = ctx.index
        self.info = info
        self.facts = info.extra.get(FACTS) or {"names": {}, "self": {}, "argparse": {}, "classattr": {}, "held": {}, "initial_seed": []}

    # -- literal values ------------------------------------------------------------
    def values(self, desc: tuple, depth: int = 0) -> Optional[set]:
        """The possible literal values of a description, or None when unknown."""
        if depth > _MAX_DEPTH:
            return None
        kind = desc[0]
        if kind == "lit":
            return {desc[1]}
        if kind == "any":
            out: set = set()
            for d in desc[1]:
                sub = self.values(d, depth + 1)
                if sub is None:
                    return None
                out |= sub
            return out
        bindings = self._bindings(desc)
        if not bindings:
            return self._foreign_constant(desc)
        return self.values(("any", tuple(bindings)), depth + 1)

    def _bindings(self, desc: tuple) -> Optional[list]:
        """Every description bound to a name/attribute description in this file."""
        kind = desc[0]
        facts = self.facts
        if kind == "name":
            name, scope = desc[1], desc[2]
            fn = self.info.functions.get(scope)
            if fn is not None and name in fn.params:
                return None  # a parameter: whatever the caller passes
            local = len(desc) > 3 and desc[3]
            for s in (scope,) if local else (scope, MODULE_SCOPE, MAIN_SCOPE):
                hit = facts["names"].get(s, {}).get(name)
                if hit:
                    return hit
            if name in self.info.constants and not local:
                return [("lit", self.info.constants[name])]
            return None
        if kind == "self":
            return self._class_attr(desc[1], desc[2])
        if kind == "attr":
            # `args.workers` / `cfg.num_workers`: argparse defaults and config class
            # attributes of the same file
            hits = facts["argparse"].get(desc[1], []) + facts["classattr"].get(desc[1], [])
            return hits or None
        if kind == "item":
            # `CONFIG["num_workers"]` of a dict literal bound in this file
            out = []
            for b in self._bindings(("name", desc[1], desc[3])) or ():
                if b[0] != "dict":
                    return None
                out.extend(v for k, v in b[1] if k == desc[2])
            return out or None
        return None

    def _class_attr(self, cls: Optional[str], attr: str) -> Optional[list]:
        """`self.attr` bindings in the class and its project base classes."""
        if cls is None:
            return None
        key = f"{self.info.module}.{cls}" if self.info.module else cls
        if key not in self.index.classes:
            return list(self.facts["self"].get(cls, {}).get(attr, ())) or None
        return self._class_attr_of(key, attr)

    def _class_attr_of(self, key: str, attr: str) -> Optional[list]:
        out: list = []
        for base in self.index.class_bases(key):
            hit = self.index.classes.get(base)
            if hit is None:
                continue
            binfo, bcls = hit
            facts = binfo.extra.get(FACTS)
            if facts:
                out.extend(facts["self"].get(bcls.qual, {}).get(attr, ()))  # type: ignore[attr-defined]
        return out or None

    def _foreign_constant(self, desc: tuple) -> Optional[set]:
        """A qualified constant: `Config.num_workers` of a project class, or a module
        constant (`from config import NUM_WORKERS`, `config.NUM_WORKERS`)."""
        if desc[0] != "qual":
            return None
        mod, _, name = desc[1].rpartition(".")
        if not mod:
            return None
        if self.class_key(mod) is not None:
            bound = self._class_attr_of(self.class_key(mod), name)
            return self.values(("any", tuple(bound))) if bound else None
        key = self.index.module_of(mod, self.info)
        if key is None or not (key == mod or key.endswith("." + mod)):
            return None
        other = self.index.modules[key]
        return {other.constants[name]} if name in other.constants else None

    # -- classes -------------------------------------------------------------------
    def class_key(self, qual: str, ctx_info: Optional[ModuleInfo] = None) -> Optional[str]:
        info = ctx_info or self.info
        for cand in self.index._candidates(qual, info):
            if cand in self.index.classes:
                return cand
            mod, _, name = cand.rpartition(".")
            other = self.index.modules.get(mod)
            if other is not None:
                target = other.exports.get(name)
                if target and target != cand and target in self.index.classes:
                    return target
        return None

    def dataset_classes(self, desc: tuple, depth: int = 0) -> list[str]:
        """Project classes the dataset described by `desc` may be an instance of."""
        if depth > _MAX_DEPTH:
            return []
        kind = desc[0]
        if kind == "call" and desc[1]:
            key = self.class_key(desc[1])
            return [key] if key else []
        if kind == "any":
            return [k for d in desc[1] for k in self.dataset_classes(d, depth + 1)]
        if kind in ("name", "self"):
            return [k for d in self._bindings(desc) or () for k in self.dataset_classes(d, depth + 1)]
        return []

    def held_generators(self, key: str) -> list[tuple[str, str, str, int]]:
        """(class, attribute, constructor, line) of generator objects the class's instances hold."""
        out = []
        for base in self.index.class_bases(key):
            hit = self.index.classes.get(base)
            if hit is None:
                continue
            binfo, bcls = hit
            for attr, api, line in (binfo.extra.get(FACTS) or {}).get("held", {}).get(bcls.qual, ()):  # type: ignore[attr-defined]
                out.append((bcls.name, attr, api, line))  # type: ignore[attr-defined]
        return out

    # -- call targets --------------------------------------------------------------
    def target(self, desc: tuple, depth: int = 0) -> Optional[_Target]:
        if depth > _MAX_DEPTH:
            return None
        cat = _cat()
        kind = desc[0]
        if kind == "qual":
            qual = desc[1]
            if qual in cat["loaders"]:
                return _Target("loader", "DataLoader", cat["loader_params"])
            if qual in cat["random"]:
                return _Target("random", qual.rsplit(".", 1)[-1], cat["random"][qual])
            return self._project_target(qual, depth)
        if kind == "partial":
            inner = self.target(desc[1], depth + 1)
            if inner is None:
                return None
            out = _Target(inner.kind, inner.api, inner.params, inner.fixable)
            out.pre_args = inner.pre_args + desc[2]
            out.pre_kws = {**inner.pre_kws, **desc[3]}
            out.kwargs_known = inner.kwargs_known and desc[4]
            return out
        if kind == "any":
            found = [self.target(d, depth + 1) for d in desc[1]]
            if not found or any(t is None for t in found):
                return None  # bound to something else too: not only a loader
            first = found[0]
            for other in found[1:]:
                same = (other.kind, other.params, other.pre_args, other.pre_kws, other.kwargs_known) == (
                    first.kind, first.params, first.pre_args, first.pre_kws, first.kwargs_known)
                if not same and (other.kind != first.kind or other.pre_args or other.pre_kws or first.pre_args or first.pre_kws):
                    return None  # different partials: the call's arguments are not one set
                merged = _Target(first.kind, first.api, first.params if same else None, _meet(first.fixable, other.fixable))
                merged.pre_args, merged.pre_kws, merged.kwargs_known = first.pre_args, first.pre_kws, first.kwargs_known
                first = merged
            return first
        if kind in ("name", "self"):
            bound = self._bindings(desc)
            return self.target(("any", tuple(bound)), depth + 1) if bound else None
        return None

    def _project_target(self, qual: str, depth: int) -> Optional[_Target]:
        key = self.class_key(qual)
        if key is None:
            # `Holder.loader_cls(...)`: a class attribute of a project class
            owner, _, attr = qual.rpartition(".")
            okey = self.class_key(owner) if owner else None
            if okey is None:
                return None
            bound = self._class_attr_of(okey, attr)
            return self.target(("any", tuple(bound)), depth + 1) if bound else None
        bases = self.index.class_bases(key)
        loaders = _cat()["loaders"]
        if not any(b in loaders for b in bases):
            return None
        name = self.index.classes[key][1].name  # type: ignore[attr-defined]
        # a project class in the hierarchy with its own __init__ has its own signature
        for base in bases:
            if base in self.index.classes and f"{base}.__init__" in self.index.functions:
                init = self.index.functions[f"{base}.__init__"][1]
                return _Target("loader", name, None, frozenset(init.params[1:]))
        return _Target("loader", name, _cat()["loader_params"])


def _meet(a: Optional[frozenset], b: Optional[frozenset]) -> Optional[frozenset]:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


class _Call:
    """The arguments of one loader call, merged with what a partial already bound."""

    def __init__(self, target: _Target, ev) -> None:
        self.target = target
        args = target.pre_args + ev.data["args"]
        named: dict = {}
        if target.params is not None:
            for name, desc in zip(target.params, args):
                named[name] = desc
        named.update(target.pre_kws)
        named.update(ev.data["kws"])
        self.named = named
        kwargs = ev.data["kwargs"]
        self.known = not ev.data["starred"] and target.kwargs_known and kwargs != "unknown"
        self.branches: list[dict] = [named] if not isinstance(kwargs, list) else [{**b, **named} for b in kwargs]
        # keys a `**` dict may bring: adding them as keywords too would raise a TypeError
        self.star_keys = set().union(*kwargs) if isinstance(kwargs, list) and kwargs else set()


def _given(branch: dict, key: str) -> bool:
    desc = branch.get(key)
    return desc is not None and desc != ("lit", None)


# =====================================================================================
# Rules
# =====================================================================================
def _loader_calls(ctx: Context, info: ModuleInfo):
    res = _Resolver(ctx, info)
    for scope, ev in info.all_events("loader"):
        target = res.target(ev.data["target"])
        if target is None:
            continue
        call = _Call(target, ev)
        if not call.known:
            continue  # `*args` or `**kwargs` we cannot read: they may pass anything
        yield res, scope, ev, call


def _entry_program(ctx: Context, info: ModuleInfo):
    for program in ctx.programs:
        if program.entry is info:
            return program
    return None


def _span(ev) -> tuple:
    return (ev.line, ev.col, ev.end_line, ev.end_col)


# -- RPL301 ---------------------------------------------------------------------------
@rule("RPL301", per="module")
def dataloader_without_generator(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    fixes = _cat()["fix"]
    for res, scope, ev, call in _loader_calls(ctx, info):
        target = call.target
        if not any(_draws_order(res, call, b) and not _given(b, "generator") for b in call.branches):
            continue
        fix = None
        if "generator" not in call.star_keys and (target.fixable is None or "generator" in target.fixable):
            if ev.data["gens"]:
                fix = Fix(
                    f"pass the seeded generator `{ev.data['gens'][-1]}`", "safe",
                    (AddKeyword(_span(ev), "generator", ev.data["gens"][-1]),),
                )
            else:
                fix = Fix(
                    "pass `generator=torch.Generator().manual_seed(<seed>)`", "safe",
                    (AddKeyword(_span(ev), "generator", fixes["generator"]), seed_spec(ctx, _entry_program(ctx, info), info, scope)),
                )
        if target.kind == "loader":
            what = f"`{target.api}` shuffles without `generator=`: its order (and its workers' base seed)"
        elif target.api == "random_split":
            what = "`random_split` without `generator=`: its split"
        else:
            what = f"`{target.api}` without `generator=`: its order"
        yield ctx.finding(
            "RPL301", info, ev,
            f"{what} is drawn from torch's global generator, so it changes whenever other code "
            "draws from that generator first",
            fix=fix,
        )


def _draws_order(res: _Resolver, call: _Call, branch: dict) -> bool:
    if call.target.kind == "random":
        return True
    if _given(branch, "sampler") or _given(branch, "batch_sampler"):
        return False  # the sampler decides the order (a random one is reported itself)
    desc = branch.get("shuffle")
    if desc is None:
        return False
    values = res.values(desc)
    return values is None or any(v not in (False, None, 0) for v in values)


# -- RPL302 ---------------------------------------------------------------------------
@rule("RPL302", per="module")
def dataloader_without_worker_init_fn(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    for res, scope, ev, call in _loader_calls(ctx, info):
        target = call.target
        if target.kind != "loader":
            continue
        workers = _workers(res, call)
        if workers is None:
            continue
        if (info.module, scope) in _worker_seeded_scopes(ctx):
            continue
        held = []
        dataset = call.named.get("dataset")
        if dataset is not None:
            for key in dict.fromkeys(res.dataset_classes(dataset)):
                held.extend(res.held_generators(key))
        # the documented seed_worker does not reseed the dataset's own generator: a fix
        # would silence the finding and leave the duplicated draws in place
        fix = None if held else _worker_fix(ctx, res, ev, call)
        yield ctx.finding("RPL302", info, ev, _worker_message(target, workers, held), fix=fix)


def _workers(res: _Resolver, call: _Call) -> Optional[str]:
    """How the call's workers are described when some branch has them without worker_init_fn."""
    for branch in call.branches:
        if _given(branch, "worker_init_fn"):
            continue
        desc = branch.get("num_workers")
        if desc is None:
            continue
        values = res.values(desc)
        if values is None:
            return "a `num_workers` that may be non-zero"
        nonzero = sorted((v for v in values if v != 0), key=repr)
        if nonzero:
            return f"num_workers={nonzero[0]!r}" if len(values) == 1 else "a `num_workers` that may be non-zero"
    return None


def _worker_seeded_scopes(ctx: Context) -> set:
    """Scopes reached by a program that calls Lightning's `seed_everything(workers=True)`
    (computed once per check: every module's loaders ask)."""
    cached = ctx.__dict__.get("_worker_seeded_scopes")
    if cached is not None:
        return cached
    out: set = set()
    for program in ctx.programs:
        if any(True for _ in program.events("workerseed")):
            out |= program.scope_set
    ctx.__dict__["_worker_seeded_scopes"] = out
    return out


def _worker_message(target: _Target, workers: str, held: list) -> str:
    if held:
        cls, attr, api, line = held[0]
        return (
            f"`{target.api}` with {workers} has no `worker_init_fn=` and its dataset `{cls}` holds its own "
            f"generator (`self.{attr} = {api}(...)`, line {line}): workers do not reseed it, so under fork "
            "every worker gets an identical copy and repeats the same random draws; reseed it per worker "
            "in a `worker_init_fn` (e.g. from `torch.initial_seed()` via `torch.utils.data.get_worker_info().dataset`)"
        )
    return (
        f"`{target.api}` with {workers} has no `worker_init_fn=`: since PyTorch 1.9 workers reseed "
        "`random`, numpy's global RNG and torch from the loader's base seed, but not generator objects "
        "a dataset holds, other libraries' RNGs, or anything on torch < 1.9; a `worker_init_fn` seeds those per worker"
    )


def _worker_fix(ctx: Context, res: _Resolver, ev, call: _Call) -> Optional[Fix]:
    target = call.target
    if "worker_init_fn" in call.star_keys or target.fixable is not None and "worker_init_fn" not in target.fixable:
        return None
    fixes = _cat()["fix"]
    info = res.info
    reuse = _existing_worker_seeder(ctx, info)
    span = _span(ev)
    if reuse is not None:
        return Fix(f"pass the project's worker seeding function `{reuse}`", "safe", (AddKeyword(span, "worker_init_fn", reuse),))
    name = fixes["worker-function"]
    if name in info.exports and name not in info.functions:
        return Fix(f"pass `{name}` as `worker_init_fn`", "safe", (AddKeyword(span, "worker_init_fn", name),))
    return Fix(
        f"pass `worker_init_fn={name}` and add the documented `{name}` function", "safe",
        (AddKeyword(span, "worker_init_fn", name), EnsureFunction(name, fixes["worker-code"].strip() + "\n")),
    )


def _worker_seeders(ctx: Context) -> list[tuple[str, ModuleInfo, str]]:
    """Project functions that seed workers from torch.initial_seed(): (key, module, name).
    Found once per check: every loader without `worker_init_fn` asks."""
    cached = ctx.__dict__.get("_worker_seeders")
    if cached is not None:
        return cached
    index = ctx.index
    need = set(_cat()["fix"]["worker-seeds"])
    out: list[tuple[str, ModuleInfo, str]] = []
    for mod in index.modules.values():
        facts = mod.extra.get(FACTS)
        if not facts or not facts["initial_seed"]:
            continue
        for scope in facts["initial_seed"]:
            fn = mod.functions.get(scope)
            if fn is None or fn.class_name or "." in fn.qual or not fn.params:
                continue
            key = f"{mod.module}.{fn.qual}" if mod.module else fn.qual
            if need <= index.effects(key).seeds:
                out.append((key, mod, fn.qual))
    ctx.__dict__["_worker_seeders"] = out
    return out


def _existing_worker_seeder(ctx: Context, info: ModuleInfo) -> Optional[str]:
    """How this module can name a project function that seeds workers from torch.initial_seed()."""
    index = ctx.index
    found = [(0 if mod is info else 1, key, mod, qual) for key, mod, qual in _worker_seeders(ctx)]
    if not found:
        return None
    found.sort(key=lambda f: (f[0], f[1]))
    _, key, mod, name = found[0]
    if mod is info:
        return name
    for local, qual in info.exports.items():
        if qual == key or index.resolve(qual, info) == (key,):
            return local
    if not mod.module:
        return None
    return f"{{mod:{mod.module}}}.{name}"
