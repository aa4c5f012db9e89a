"""RPL3xx: data loading (RPL301 dataloader-without-generator, RPL302 dataloader-without-worker-init-fn).

The rules resolve the value descriptions that `facts/families/dataloader.py` records at extraction
(its docstring lists them) against those facts and the project index: a project subclass of
DataLoader in another file, or `args.workers` whose literal default is declared further down
the file, is only known once every file has been read.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, Sequence

from repro_lint.core.findings import Finding, Fix, Related
from repro_lint.core.edits import AddKeyword, EnsureFunction
from repro_lint.facts.model import MAIN_SCOPE, MODULE_SCOPE, ModuleInfo
from repro_lint.analysis.context import Context, location, sentences, unfixed
from repro_lint.rules.registry import rule
from repro_lint.analysis import placement
from repro_lint.facts.families import dataloader_gate  # noqa: F401  (which files are walked without the loader hooks)
from repro_lint.facts.families.dataloader import FACTS, INITIAL_SEED, MAX_DEPTH, loader_catalog
from repro_lint.analysis.messages import MAX_RELATED


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
        if depth > MAX_DEPTH:
            return None
        cat = loader_catalog()
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
        loaders = loader_catalog()["loaders"]
        if not any(b in loaders for b in bases):
            return None
        name = self.index.classes[key][1].name  # type: ignore[attr-defined]
        # a project class in the hierarchy with its own __init__ has its own signature
        for base in bases:
            if base in self.index.classes and f"{base}.__init__" in self.index.functions:
                init = self.index.functions[f"{base}.__init__"]
                return _Target("loader", name, None, frozenset(init.params[1:]))
        return _Target("loader", name, loader_catalog()["loader_params"])


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


def _span(ev) -> tuple:
    return (ev.line, ev.col, ev.end_line, ev.end_col)


# -- RPL301 ---------------------------------------------------------------------------
@rule("RPL301", per="module")
def dataloader_without_generator(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    fixes = loader_catalog()["fix"]
    for res, scope, ev, call in _loader_calls(ctx, info):
        target = call.target
        if not any(_draws_order(res, call, b) and not _given(b, "generator") for b in call.branches):
            continue
        fix = None
        why = placement.not_editable(info) or ""
        if not why and "generator" not in call.star_keys and (target.fixable is None or "generator" in target.fixable):
            if ev.data["gens"]:
                fix = Fix(
                    f"pass the seeded generator `{ev.data['gens'][-1]}`", "safe",
                    (AddKeyword(_span(ev), "generator", ev.data["gens"][-1]),),
                )
            else:
                spec = placement.seed_for(ctx, info, scope, ev.pos, generator=True)
                if isinstance(spec, str):
                    why = spec
                elif spec is placement.INITIAL_SEED:
                    fix = Fix(
                        "pass `generator=torch.Generator().manual_seed(torch.initial_seed())`: the order follows the "
                        "seed the program gave torch", "safe",
                        (AddKeyword(_span(ev), "generator", fixes["generator-initial-seed"]),),
                    )
                else:
                    seed = f"`{spec.expr}`" if spec.expr else f"a new constant `SEED = {spec.value}`"
                    fix = Fix(
                        f"pass `generator=torch.Generator().manual_seed(...)` seeded with {seed}", "safe",
                        (AddKeyword(_span(ev), "generator", fixes["generator"]), spec),
                    )
        if target.kind == "loader":
            what, consequence = f"`{target.api}` shuffles without `generator=`", "its order (and its workers' base seed)"
        elif target.api == "random_split":
            what, consequence = "`random_split` without `generator=`", "its split"
        else:
            what, consequence = f"`{target.api}` without `generator=`", "its order"
        help = sentences(
            f"{consequence} is drawn from torch's global generator, so it changes whenever other code draws from that "
            "generator first; pass a seeded `torch.Generator`", unfixed(why) if fix is None else "",
        )
        yield ctx.finding("RPL301", info, ev, what, fix=fix, help=help)


def _draws_order(res: _Resolver, call: _Call, branch: dict) -> bool:
    if call.target.kind == "random":
        return True
    desc = branch.get("shuffle")
    if desc is None:
        return False
    values = res.values(desc)
    if values is not None and all(v in (False, None, 0) for v in values):
        return False
    # a sampler decides the order (a random one is reported itself), unless it may be None:
    # `DataLoader(ds, shuffle=(sampler is None), sampler=sampler)` shuffles when it is
    return not any(_given(branch, key) and not res.may_be_none(branch[key]) for key in ("sampler", "batch_sampler"))


# -- RPL302 ---------------------------------------------------------------------------
@rule("RPL302", per="module")
def dataloader_without_worker_init_fn(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    lightning = _lightning_programs(ctx)
    res: Optional[_Resolver] = None
    for scope, ev, call, workers in _unseeded_worker_loaders(ctx, info):
        programs = placement.programs_reaching(ctx, info, scope)
        if programs and all(id(p) in lightning for p in programs):
            continue  # reported once, at the program's `seed_everything` call, where the fix goes
        if res is None:
            res = _Resolver(ctx, info)
        held = []
        dataset = call.named.get("dataset")
        if dataset is not None:
            for key in dict.fromkeys(res.dataset_classes(dataset)):
                held.extend(res.held_generators(key))
        # the documented seed_worker does not reseed the dataset's own generator: a fix
        # would silence the finding and leave the duplicated draws in place
        fix = None if held or placement.not_editable(info) else _worker_fix(ctx, res, ev, call)
        message, help = _worker_message(call.target, workers, held)
        yield ctx.finding("RPL302", info, ev, message, fix=fix, help=help)
    program = ctx.program_of(info)
    if program is not None and id(program) in lightning:
        finding = _lightning_finding(ctx, program, lightning[id(program)])
        if finding is not None:
            yield finding


def _unseeded_worker_loaders(ctx: Context, info: ModuleInfo) -> Sequence:
    """The module's DataLoaders with workers that may be non-zero and no `worker_init_fn=`
    (none reached by a program that seeds its workers through Lightning):
    (scope, event, call, how the workers are described). Worked out once per module; the
    module's resolver is not kept with them (it holds the module's loader facts decoded:
    15 MB on 38,000 files)."""
    cache = ctx.__dict__.setdefault("_unseeded_worker_loaders", {})
    hit = cache.get(info.module)
    if hit is None:
        hit = []
        for res, scope, ev, call in _loader_calls(ctx, info):
            if call.target.kind != "loader":
                continue
            workers = _workers(res, call)
            if workers is None or (info.module, scope) in _worker_seeded_scopes(ctx):
                continue
            hit.append((scope, ev, call, workers))
        # (most modules have none: the empty tuple shared, where a list each took 2.7 MB
        # on 38,000 files)
        hit = cache[info.module] = hit or ()
    return hit


def _lightning_programs(ctx: Context) -> dict:
    """Programs that seed with Lightning's `seed_everything` without `workers=True`, by id:
    the call in the entry module to add it to (worked out once per check)."""
    cached = ctx.__dict__.get("_lightning_programs")
    if cached is not None:
        return cached
    out: dict = {}
    for program in ctx.programs:
        calls = [ev for info, _, ev in program.events("workerseed")]
        if calls and not any(ev.data.get("on", True) for ev in calls):
            own = [ev for scope, ev in program.entry.all_events("workerseed")]
            if own and not program.entry.is_test:
                out[id(program)] = own[0]
    ctx.__dict__["_lightning_programs"] = out
    return out


def _lightning_finding(ctx: Context, program, ev) -> Optional[Finding]:
    """RPL302 for a Lightning program: at its `seed_everything` call, naming the loaders.
    Lightning gives every loader without a `worker_init_fn` its own rank-aware one when
    asked to with `workers=True`; a `worker_init_fn` added next to it would replace that."""
    index = ctx.index
    loaders = []
    for mod in dict.fromkeys(m for m, _ in program.scopes):
        minfo = index.modules[mod]
        for scope, lev, call, workers in _unseeded_worker_loaders(ctx, minfo):
            if (mod, scope) in program.scope_set:
                loaders.append((minfo, lev, call, workers))
    if not loaders:
        return None
    api = ev.data["api"].rpartition(".")[2]
    related = [
        Related(location(minfo, lev), f"`{call.target.api}` with {workers}, no `worker_init_fn=`")
        for minfo, lev, call, workers in loaders[:MAX_RELATED]
    ]
    n = len(loaders)
    what = f"{n} DataLoader{'s' if n != 1 else ''} with workers"
    message = f"`{api}(...)` without `workers=True`: {what} in this program get no per-worker seeding"
    help = sentences(
        "Lightning installs its rank-aware `worker_init_fn` on every loader without one only with `workers=True`; "
        "pass it rather than a `worker_init_fn` (which would replace Lightning's)"
    )
    fix = Fix(f"pass `workers=True` to `{api}`", "safe", (AddKeyword((ev.line, ev.col, ev.end_line, ev.end_col), "workers", "True"),))
    return ctx.finding("RPL302", program.entry, ev, message, related, fix=fix, help=help)


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
        if any(ev.data.get("on", True) for _, _, ev in program.events("workerseed")):
            out |= program.scope_set
    ctx.__dict__["_worker_seeded_scopes"] = out
    return out


def _worker_message(target: _Target, workers: str, held: list) -> tuple[str, str]:
    """The message and the help of an RPL302 finding."""
    if held:
        cls, attr, api, line = held[0]
        return (
            f"`{target.api}` with {workers} has no `worker_init_fn=`, and its dataset `{cls}` holds its own "
            f"generator (`self.{attr} = {api}(...)`, line {line})",
            sentences(
                "workers do not reseed it: under fork every worker gets an identical copy and repeats the same "
                "random draws; reseed it per worker in a `worker_init_fn` (e.g. from `torch.initial_seed()` via "
                "`torch.utils.data.get_worker_info().dataset`)"
            ),
        )
    return (
        f"`{target.api}` with {workers} has no `worker_init_fn=`",
        sentences(
            "since PyTorch 1.9 workers reseed `random`, numpy's global RNG and torch from the loader's base seed, "
            "but not generator objects a dataset holds, other libraries' RNGs, or anything on torch < 1.9; "
            "a `worker_init_fn` seeds those per worker"
        ),
    )


def _worker_fix(ctx: Context, res: _Resolver, ev, call: _Call) -> Optional[Fix]:
    target = call.target
    if "worker_init_fn" in call.star_keys or target.fixable is not None and "worker_init_fn" not in target.fixable:
        return None
    fixes = loader_catalog()["fix"]
    info = res.info
    reuse = _existing_worker_seeder(ctx, info)
    span = _span(ev)
    if reuse is not None:
        shown = re.sub(r"\{mod:([\w.]+)\}", r"\1", reuse)  # (the template names its module)
        return Fix(f"pass the project's worker seeding function `{shown}`", "safe", (AddKeyword(span, "worker_init_fn", reuse),))
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
    need = set(loader_catalog()["fix"]["worker-seeds"])
    out: list[tuple[str, ModuleInfo, str]] = []
    for mod in index.modules.values():
        for scope in mod.summary(INITIAL_SEED):
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
    # this module's own first, then one of the modules it imports from (it names that
    # module's functions already), then any
    imported = {imp[0].rpartition(".")[0] for imp in info.imports} | {imp[0] for imp in info.imports}
    found = [(0 if mod is info else 1 if mod.module in imported else 2, key, mod, qual) for key, mod, qual in _worker_seeders(ctx)]
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
