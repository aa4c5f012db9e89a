"""What a module's DataLoaders and random samplers are, at rule time: the value and target
descriptions that `facts/families/dataloader.py` records, resolved against every file's facts
and the project index (a project subclass of DataLoader in another file, `args.workers`
whose literal default is declared further down the file), and how many workers a loader may
have. RPL301, RPL302 and RPL101 (draws that only DataLoader workers make) ask here."""

from __future__ import annotations

import weakref
from typing import Optional

from repro_lint.analysis.context import Context, program_cache
from repro_lint.facts.families.dataloader import FACTS, MAX_DEPTH, loader_catalog
from repro_lint.facts.model import MADE_CLS, MADE_UNKNOWN, MAIN_SCOPE, MODULE_SCOPE, RETURNS_MADE, ModuleInfo
from repro_lint.index.program import Program


# =====================================================================================
# Resolution (rule time)
# =====================================================================================
class LoaderTarget:
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


class LoaderResolver:
    """Resolves value and target descriptions of one module against the facts and index."""

    def __init__(self, ctx: Context, info: ModuleInfo) -> None:
        self.ctx = ctx
        self.index = ctx.index
        self.info = info
        self.facts = info.extra.get(FACTS) or {"names": {}, "self": {}, "argparse": {}, "classattr": {}, "held": {}, "initial_seed": []}

    # -- literal values ------------------------------------------------------------
    def values(self, desc: tuple, depth: int = 0) -> Optional[set]:
        """The possible literal values of a description, or None when unknown."""
        if depth > MAX_DEPTH:
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

    def may_be_none(self, desc: tuple, depth: int = 0) -> bool:
        """Whether the described value can be None: a literal None, a branch or binding that
        is, a parameter or anything else not known (only objects built by a call cannot)."""
        if depth > MAX_DEPTH:
            return True
        kind = desc[0]
        if kind == "lit":
            return desc[1] is None
        if kind in ("call", "partial", "dict"):
            return False
        if kind == "any":
            return any(self.may_be_none(d, depth + 1) for d in desc[1])
        if kind == "qual":
            values = self._foreign_constant(desc)
            return values is None or None in values
        bindings = self._bindings(desc)
        return bindings is None or any(self.may_be_none(d, depth + 1) for d in bindings)

    # -- classes -------------------------------------------------------------------
    def class_key(self, qual: str, ctx_info: Optional[ModuleInfo] = None) -> Optional[str]:
        return self.index.class_key(qual, ctx_info or self.info)

    def dataset_classes(self, desc: tuple, depth: int = 0) -> list[str]:
        """Project classes the dataset described by `desc` may be an instance of."""
        if depth > MAX_DEPTH:
            return []
        kind = desc[0]
        if kind == "call" and desc[1]:
            key = self.class_key(desc[1])
            return [key] if key else self._made_by(desc[1], self.info, depth)
        if kind == "any":
            return [k for d in desc[1] for k in self.dataset_classes(d, depth + 1)]
        if kind in ("name", "self"):
            return [k for d in self._bindings(desc) or () for k in self.dataset_classes(d, depth + 1)]
        return []

    def _made_by(self, qual: str, info: ModuleInfo, depth: int) -> list[str]:
        """The project classes of what the project functions `qual` names return
        (`build_dataset(...)` returning `CocoDetection(...)`, a few calls deep); none when
        one of them may return something else."""
        index = self.index
        out: list[str] = []
        for key in index.resolve(qual, info):
            mod, scope = index.scope_of(key)
            minfo = index.modules[mod]
            made = minfo.summary(RETURNS_MADE).get(scope, ())
            if not made:
                return []
            for m in made:
                cls = index.class_key(m, minfo) if m not in (MADE_UNKNOWN, MADE_CLS) else None
                if cls is not None:
                    out.append(cls)
                    continue
                more = self._made_by(m, minfo, depth + 1) if m not in (MADE_UNKNOWN, MADE_CLS) and depth < MAX_DEPTH else []
                if not more:
                    return []
                out.extend(more)
        return out

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
    def target(self, desc: tuple, depth: int = 0) -> Optional[LoaderTarget]:
        if depth > MAX_DEPTH:
            return None
        cat = loader_catalog()
        kind = desc[0]
        if kind == "qual":
            qual = desc[1]
            if qual in cat["loaders"]:
                return LoaderTarget("loader", "DataLoader", cat["loader_params"])
            if qual in cat["random"]:
                return LoaderTarget("random", qual.rsplit(".", 1)[-1], cat["random"][qual])
            return self._project_target(qual, depth)
        if kind == "partial":
            inner = self.target(desc[1], depth + 1)
            if inner is None:
                return None
            out = LoaderTarget(inner.kind, inner.api, inner.params, inner.fixable)
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
                merged = LoaderTarget(first.kind, first.api, first.params if same else None, _meet(first.fixable, other.fixable))
                merged.pre_args, merged.pre_kws, merged.kwargs_known = first.pre_args, first.pre_kws, first.kwargs_known
                first = merged
            return first
        if kind in ("name", "self"):
            bound = self._bindings(desc)
            return self.target(("any", tuple(bound)), depth + 1) if bound else None
        return None

    def _project_target(self, qual: str, depth: int) -> Optional[LoaderTarget]:
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
        loaders = loader_catalog()["loaders"]
        if not any(b in loaders for b in bases):
            return None
        name = self.index.classes[key][1].name  # type: ignore[attr-defined]
        # a project class in the hierarchy with its own __init__ has its own signature
        for base in bases:
            if base in self.index.classes and f"{base}.__init__" in self.index.functions:
                init = self.index.functions[f"{base}.__init__"]
                return LoaderTarget("loader", name, None, frozenset(init.params[1:]))
        return LoaderTarget("loader", name, loader_catalog()["loader_params"])


def _meet(a: Optional[frozenset], b: Optional[frozenset]) -> Optional[frozenset]:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


class LoaderCall:
    """The arguments of one loader call, merged with what a partial already bound."""

    def __init__(self, target: LoaderTarget, ev) -> None:
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


def given(branch: dict, key: str) -> bool:
    desc = branch.get(key)
    return desc is not None and desc != ("lit", None)


# =====================================================================================
# Rules
# =====================================================================================
def loader_calls(ctx: Context, info: ModuleInfo):
    res = LoaderResolver(ctx, info)
    for scope, ev in info.all_events("loader"):
        target = res.target(ev.data["target"])
        if target is None:
            continue
        call = LoaderCall(target, ev)
        if not call.known:
            continue  # `*args` or `**kwargs` we cannot read: they may pass anything
        yield res, scope, ev, call


def workers_of(res: LoaderResolver, call: LoaderCall) -> Optional[str]:
    """How the call's workers are described when some branch has them without worker_init_fn."""
    for branch in call.branches:
        if given(branch, "worker_init_fn"):
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


def may_have_workers(res: LoaderResolver, call: LoaderCall) -> bool:
    """Whether some branch of the call may give the loader worker processes."""
    for branch in call.branches:
        desc = branch.get("num_workers")
        if desc is None:
            continue
        values = res.values(desc)
        if values is None or any(v != 0 for v in values):
            return True
    return False


def worker_draw_sources(ctx: Context, res: LoaderResolver, call: LoaderCall) -> Optional[frozenset]:
    """The RNG sources the code a loader's workers run draws from (its dataset's item methods
    and a project `collate_fn`, with what they call), or None when that code is not known
    (a dataset that is not a project class)."""
    dataset = call.named.get("dataset")
    classes = res.dataset_classes(dataset) if dataset is not None else []
    if not classes:
        return None
    index = ctx.index
    starts = []
    for key in classes:
        for base in index.class_bases(key):
            if base not in index.classes:
                continue
            binfo, bcls = index.classes[base]
            starts.extend((binfo.module, f"{bcls.qual}.{name}") for name in _ITEM_METHODS if name in bcls.methods)  # type: ignore[attr-defined]
    collate = call.named.get("collate_fn")
    if collate is not None and collate[0] == "qual":
        starts.extend(index.scope_of(key) for key in index.resolve(collate[1], res.info))
    return frozenset(
        ev.data["source"]
        for mod, scope in index.reach(starts, include_imports=False)
        for ev in index.modules[mod].events.get(scope, ())
        if ev.kind == "draw"
    )


# the methods a DataLoader's workers call on its dataset (catalog `program.instance-methods`
# has the whole protocol; these are the ones that make the items)
_ITEM_METHODS = ("__getitem__", "__getitems__", "__iter__", "__next__")
# (let go of once the program's rules have run: kept to the end of the check, the answers
# took 4 MB on 38,000 files, most of them empty)
_WORKER_ONLY: "weakref.WeakKeyDictionary" = program_cache()
_NONE: frozenset = frozenset()


def worker_only_scopes(ctx: Context, program: Program, assume_seeded: bool = False) -> frozenset:
    """The scopes (module, qualified name) that only DataLoader workers run in this program:
    the item methods of the project classes its loaders with workers take, none of which a
    loader without workers takes, and the functions that only those (or functions only they
    call) call. On the releases whose workers reseed python's and numpy's global RNGs from
    their seed, in a program that seeds torch (or gives those loaders a seeded generator),
    what these draw from those sources repeats (spec, "Precision on large repositories" 8).
    With `assume_seeded`, as if the program seeded torch (what a fix that seeds it makes of them)."""
    memo = _WORKER_ONLY.get(program)
    if memo is None:
        memo = _WORKER_ONLY[program] = {}
    hit = memo.get(assume_seeded)
    if hit is not None:
        return hit
    seeded = assume_seeded or "torch" in program.seeds()
    with_workers: set = set()
    without: set = set()
    index = ctx.index
    for mod in dict.fromkeys(m for m, _ in program.scopes):
        info = index.modules[mod]
        for res, scope, ev, call in loader_calls(ctx, info):
            if call.target.kind != "loader" or (mod, scope) not in program.scope_set:
                continue
            dataset = call.named.get("dataset")
            classes = res.dataset_classes(dataset) if dataset is not None else []
            generator = all(given(branch, "generator") for branch in call.branches)
            if may_have_workers(res, call) and (seeded or generator):
                with_workers.update(classes)
            else:
                without.update(classes)
    out = set()
    for key in with_workers - without:
        for base in index.class_bases(key):
            if base not in index.classes:
                continue
            binfo, bcls = index.classes[base]
            for name in _ITEM_METHODS:
                if name in bcls.methods:  # type: ignore[attr-defined]
                    out.add((binfo.module, f"{bcls.qual}.{name}"))  # type: ignore[attr-defined]
    hit = memo[assume_seeded] = frozenset(_called_only_from(index, program, out)) if out else _NONE
    return hit


def _called_only_from(index, program: Program, roots: set) -> set:
    """`roots` and the program's functions that only they, or functions only they call, call
    (each called somewhere: a scope the program reaches by other means than a call is not)."""
    scope_set = program.scope_set
    reached = set(index.reach(list(roots), include_imports=False)) & scope_set
    if not reached - roots:
        return set(roots)
    callers: dict = {}
    for ref in program.scopes:
        info = index.modules[ref[0]]
        for _, keys in index.callees(info, ref[1]):
            for key in keys:
                callers.setdefault(index.scope_of(key), set()).add(ref)
    only = set(roots)
    changed = True
    while changed:
        changed = False
        for ref in reached - only:
            refs = callers.get(ref)
            if refs and refs <= only and ref[1] not in (MODULE_SCOPE, MAIN_SCOPE):
                only.add(ref)
                changed = True
    return only
