"""RPL3xx: data loading (RPL301 dataloader-without-generator, RPL302 dataloader-without-worker-init-fn).

What a module's loaders are (the descriptions `facts/families/dataloader.py` records, resolved
against every file's facts and the project index) is `analysis/loaders.py`.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, Sequence

from repro_lint.core import catalog
from repro_lint.core.findings import Finding, Fix, Related
from repro_lint.core.edits import AddKeyword, EnsureFunction, InsertStatements
from repro_lint.facts.model import ModuleInfo
from repro_lint.analysis.context import Context, line_words, location, sentences, unfixed
from repro_lint.rules.registry import rule
from repro_lint.analysis import placement
from repro_lint.analysis.torch_target import reseeds_workers, targets_before
from repro_lint.facts.families.dataloader import INITIAL_SEED, loader_catalog
from repro_lint.analysis.loaders import LoaderCall, LoaderResolver, LoaderTarget, given, loader_calls, worker_draw_sources, workers_of
from repro_lint.analysis.messages import MAX_RELATED


def _span(ev) -> tuple:
    return (ev.line, ev.col, ev.end_line, ev.end_col)


# -- RPL301 ---------------------------------------------------------------------------
@rule("RPL301", per="module")
def dataloader_without_generator(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    fixes = loader_catalog()["fix"]
    for res, scope, ev, call in loader_calls(ctx, info):
        target = call.target
        if not any(_draws_order(res, call, b) and not given(b, "generator") for b in call.branches):
            continue
        fix = None
        why = placement.not_editable(info) or ""
        since = catalog.load("dataloading")["generator-keyword-since"]
        old = targets_before(ctx, since, module=info) if not why else ""
        if old:
            why = f"the project targets torch releases before {since} ({old}), whose `{target.api}` has no `generator=`"
        if not why and "generator" not in call.star_keys and (target.fixable is None or "generator" in target.fixable):
            if ev.data["gens"]:
                fix = Fix(
                    f"pass the seeded generator `{ev.data['gens'][-1]}`", "safe",
                    (AddKeyword(_span(ev), "generator", ev.data["gens"][-1]),),
                )
            else:
                spec = placement.made_once(ctx, info, scope, ev, loops=ev.data.get("loops", ()), generator=True, source="torch")
                if isinstance(spec, str):
                    why = spec
                elif isinstance(spec, placement.Hoisted):
                    fix, why = _hoisted_fix(info, ev, spec)
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


def _hoisted_fix(info: ModuleInfo, ev, place: "placement.Hoisted") -> tuple[Optional[Fix], str]:
    """A loader built on every iteration of a loop: a generator made once before the loop and
    passed to it (one made in the call would restart every iteration: every epoch the same
    order), or why there is none."""
    name = ev.data.get("free_name")
    if not name:
        return None, "the loader is built in a loop, and every name the fix would give a generator made before it is taken"
    fixes = loader_catalog()["fix"]
    initial = place.seed is placement.INITIAL_SEED
    value = fixes["generator-initial-seed"] if initial else fixes["generator"]
    code = fixes["generator-statement"].replace("{name}", name).replace("{value}", value)
    loop = place.anchor
    edits: tuple = (
        InsertStatements("before", code, anchor=loop, key=f"generator:{loop[0]}:{loop[1]}:{name}"),
        AddKeyword(_span(ev), "generator", name),
    )
    if initial:
        seed = "`torch.initial_seed()` (the seed the program gave torch)"
    else:
        seed = f"`{place.seed.expr}`" if place.seed.expr else f"a new constant `SEED = {place.seed.value}`"
        edits += (place.seed,)
    return Fix(
        f"make `{name} = torch.Generator().manual_seed(...)`, seeded with {seed}, once before the loop on "
        f"{line_words(info, loop[0])} and pass `generator={name}` (the loader is built on every iteration: a generator "
        "made there would restart each time, and every epoch would shuffle the same way)", "safe", edits,
    ), ""


def _draws_order(res: LoaderResolver, call: LoaderCall, branch: dict) -> bool:
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
    return not any(given(branch, key) and not res.may_be_none(branch[key]) for key in ("sampler", "batch_sampler"))


# -- RPL302 ---------------------------------------------------------------------------
@rule("RPL302", per="module")
def dataloader_without_worker_init_fn(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    lightning = _lightning_programs(ctx)
    res: Optional[LoaderResolver] = None
    for scope, ev, call, workers in _unseeded_worker_loaders(ctx, info):
        if res is None:
            res = LoaderResolver(ctx, info)
        held = _held(res, call)
        programs = placement.programs_reaching(ctx, info, scope)
        if programs and all(id(p) in lightning for p in programs) and not held:
            # reported once, at the program's `seed_everything` call, where the fix goes (a
            # generator the dataset holds is Lightning's workers' no more than torch's)
            continue
        reseeded = reseeds_workers(ctx, module=info)
        if reseeded and not held:
            continue  # the workers reseed the global RNGs themselves (spec, large repositories 8)
        if not held and _reseeded_in_every_release(ctx, res, call):
            continue  # older releases reseed python's and torch's RNGs in workers too
        if placement.not_editable(info):
            fix = None
        elif held:
            # the documented seed_worker does not reseed the dataset's own generator: the fix
            # gives each worker's copy a seed of its own
            fix = _reseed_fix(res, ev, call, held, globals_too=not reseeded)
        else:
            fix = _worker_fix(ctx, res, ev, call)
        message, help = _worker_message(call.target, workers, held)
        yield ctx.finding("RPL302", info, ev, message, fix=fix, help=help)
    program = ctx.program_of(info)
    if program is not None and id(program) in lightning and not reseeds_workers(ctx, program=program):
        finding = _lightning_finding(ctx, program, lightning[id(program)])
        if finding is not None:
            yield finding


def _reseeded_in_every_release(ctx: Context, res: "LoaderResolver", call: "LoaderCall") -> bool:
    """Whether the loader's workers are seen to draw, and only from RNGs that every release's
    workers reseed (python's and torch's), so that a `worker_init_fn` changes nothing. (Seen
    to draw nothing, they may draw through objects handed to the dataset, an augmentation
    library's numpy draws among them: the loader stays reported.)"""
    sources = worker_draw_sources(ctx, res, call)
    return bool(sources) and sources <= frozenset(catalog.load("dataloading")["workers-reseed-always"])


def _held(res: "LoaderResolver", call: "LoaderCall") -> list:
    """The generator objects the loader's dataset holds: (class, attribute, constructor, line)."""
    held: list = []
    dataset = call.named.get("dataset")
    if dataset is not None:
        for key in dict.fromkeys(res.dataset_classes(dataset)):
            held.extend(res.held_generators(key))
    return held


def catalog_since() -> str:
    """The first release whose workers reseed the global RNGs themselves."""
    return catalog.load("dataloading")["workers-reseed-globals-since"]


def _reseed_fix(res: "LoaderResolver", ev, call: "LoaderCall", held: list, globals_too: bool = False) -> Optional[Fix]:
    """A `worker_init_fn` that gives the generator objects the dataset holds a seed of each
    worker's own (from `torch.initial_seed()`, which differs per worker and follows the
    loader's base seed); with `globals_too` (a release whose workers do not reseed them),
    numpy's and Python's global RNGs as well."""
    target = call.target
    if "worker_init_fn" in call.star_keys or target.fixable is not None and "worker_init_fn" not in target.fixable:
        return None
    fixes = loader_catalog()["fix"]
    lines = fixes["reseed-lines"]
    attrs = list(dict.fromkeys((attr, api) for _, attr, api, _ in held))
    if any(api not in lines for _, api in attrs):
        return None
    name = fixes["reseed-function"]
    if name in res.info.functions or name in res.info.exports:
        return None  # a function of that name exists: the user's, not this one
    body = [lines[api].replace("{attr}", attr) for attr, api in attrs]
    if globals_too:
        body += fixes["reseed-globals-lines"]
    code = fixes["reseed-code"].strip().replace("{lines}", "\n".join(body))
    objects = ", ".join(f"`{attr}`" for attr, _ in attrs) + (" and numpy's and Python's global RNGs" if globals_too else "")
    return Fix(
        f"pass `worker_init_fn={name}`, which gives the dataset's {objects} a seed of each worker's own", "safe",
        (AddKeyword(_span(ev), "worker_init_fn", name), EnsureFunction(name, code + "\n")),
    )


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
        for res, scope, ev, call in loader_calls(ctx, info):
            if call.target.kind != "loader":
                continue
            workers = workers_of(res, call)
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


def _worker_message(target: LoaderTarget, workers: str, held: list) -> tuple[str, str]:
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
    since = catalog_since()
    return (
        f"`{target.api}` with {workers} has no `worker_init_fn=`, and this project targets PyTorch releases before {since}",
        sentences(
            f"before {since} workers do not reseed numpy's global RNG: every worker (and every epoch's workers) "
            "repeats the same numpy draws; a `worker_init_fn` seeds it per worker"
        ),
    )


def _worker_fix(ctx: Context, res: LoaderResolver, ev, call: LoaderCall) -> Optional[Fix]:
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
