"""RPL1xx: seeding of the global random number generators (RPL101–RPL104)."""

from __future__ import annotations

import re

import weakref
from typing import Iterable, Optional

from repro_lint.core import catalog
from repro_lint.facts.walker.calls import RESEEDED, reseed_owner
from repro_lint.core.findings import Finding, Fix, Related
from repro_lint.core.edits import AddKeyword, SeedSpec
from repro_lint.index.program import Program
from repro_lint.facts.model import INSTANCE, MAIN_SCOPE, MODULE_SCOPE, Event, ModuleInfo, is_reference
from repro_lint.analysis.context import Context, line_words, location, program_cache, sentences, unfixed
from repro_lint.analysis.messages import MAX_RELATED, import_bringing, source_label
from repro_lint.analysis.loaders import worker_only_scopes
from repro_lint.analysis.serving import SERVES_REQUESTS, why_not_seeded_at_start
from repro_lint.analysis.torch_target import reseeds_workers
from repro_lint.rules.registry import rule
from repro_lint.analysis import placement
from repro_lint.rules.numpy_generator import generator_fix
from repro_lint.index.seed_reach import seed_callers, seed_callers_in


# -- the seeding fix (where it goes and which seed it uses: `placement`) -------------------
def seeding_fix(ctx: Context, program: Program, source: str) -> tuple[Optional[Fix], str]:
    """Insert the seeding call of one missing source where the program starts, with the
    program's own seed; or (None, why not). A framework object the entry module builds that
    seeds when given a seed (`LightningCLI(..., seed_everything_default=...)`) is given one
    instead: it would reseed from a new random seed after a seeding call."""
    framework = _framework_seed_fix(ctx, program, source)
    if framework is not None:
        return framework, ""
    code = catalog.load("rng")["seeding-code"][source]
    order = list(ctx.index.m.sources).index(source) if source in ctx.index.m.sources else len(ctx.index.m.sources)
    place = placement.seeding_place(ctx, program, source)
    if isinstance(place, str):
        return None, place
    spec = place.seed or SeedSpec(None, str(ctx.settings.get("seed", 0)))
    seed = f"`{spec.expr}`" if spec.expr else f"a new constant `SEED = {spec.value}`"
    if spec.offset:
        # each rank draws its own samples and augmentations (DDP broadcasts rank 0's weights)
        offset = re.sub(r"\{mod:([\w.]+)\}", r"\1", spec.offset)
        seed += f" plus `{offset}` (each rank draws its own samples; DDP still broadcasts rank 0's weights)"
    if place.beside_seed:
        where = "next to the program's seeding call"
    elif place.where == "body-start" and place.function and place.module:
        where = f"at the start of `{place.function}`, in the processes that run it"
    elif spec.offset and place.where == "after":
        where = "once the process is one of the ranks"
    else:
        where = "where the program starts"
    edit = place.insert(code, key=f"seed:{source}", order=order)
    if place.caveat:  # the index cannot see all the place depends on (spec, "Fixes" 9)
        return Fix(f"seed {source} with {seed} {where}; check: {place.caveat}", "unsafe", (edit, spec), seeds=(source,)), ""
    return Fix(f"seed {source} with {seed} {where}", "safe", (edit, spec), seeds=(source,)), ""


def _framework_seed_fix(ctx: Context, program: Program, source: str) -> Optional[Fix]:
    entry = program.entry
    for info, scope, ev in program.events("seedable"):
        if info is not entry or source not in ev.data["sources"]:
            continue
        spec = placement.seed_for(ctx, info, scope, ev.pos)
        if isinstance(spec, str) or spec is placement.INITIAL_SEED:
            spec = SeedSpec(None, str(ctx.settings.get("seed", 0)))
        keyword = ev.data["keyword"]
        name = ev.data["api"].rpartition(".")[2]
        seed = f"`{spec.expr}`" if spec.expr else f"a new constant `SEED = {spec.value}`"
        edit = AddKeyword((ev.line, ev.col, ev.end_line, ev.end_col), keyword, "{seed}")
        return Fix(f"pass {keyword}= to `{name}`, with {seed}", "safe", (edit, spec))
    return None


# -- RPL101 ---------------------------------------------------------------------------
def _draws_that_count(ctx: Context, program: Program) -> dict:
    """The program's draws by source, but for parameter initialisation in a program that
    trains nothing and loads saved parameters over it (an inference script), and for
    dropout there when it also puts its model in evaluation mode."""
    draws = _without_seed_draws(program, program.draws())
    inference = _inference(ctx, program)
    # python's and numpy's draws that only DataLoader workers make, on releases whose workers
    # reseed those RNGs from a seed that follows the program's (spec, large repositories 8)
    workers = worker_only_scopes(ctx, program) if reseeds_workers(ctx, program=program) and ("python" in draws or "numpy" in draws) else ()
    if inference is None and not workers:
        return draws
    out = {}
    for source, occs in draws.items():
        kept = [
            o for o in occs
            if (inference is None or _counts(ctx.index.m, o[2].data, inference))
            and not (source in ("python", "numpy") and (o[0].module, o[1]) in workers)
        ]
        if kept:
            out[source] = kept
    return out


_IN_WORKERS = "These draws run only in DataLoader workers"


def _only_in_workers(ctx: Context, program: Program, source: str, occs: list) -> bool:
    """Whether every draw of `source` (python's or numpy's) runs only in DataLoader workers
    that a torch seed would make repeat (releases whose workers reseed those RNGs)."""
    if source not in ("python", "numpy") or not reseeds_workers(ctx, program=program):
        return False
    workers = worker_only_scopes(ctx, program, assume_seeded=True)
    return bool(workers) and all((o[0].module, o[1]) in workers for o in occs)


def _without_seed_draws(program: Program, draws: dict) -> dict:
    """The draws but those that make the run's seed: a value kept under a name that a
    seeding call of the program seeds with (`args.seed = random.randint(...)` when no seed is
    given, then `torch.manual_seed(args.seed)`): a run seeded from a fresh seed on purpose."""
    seeding = {n for _, _, ev in program.events("seed", "seedcand") for n in (*ev.data.get("names", ()), *ev.data.get("attrs", ()))}
    if not seeding:
        return draws
    out = {}
    for source, occs in draws.items():
        kept = [o for o in occs if o[2].data.get("assigned") not in seeding]
        if kept:
            out[source] = kept
    return out


_INFERENCE: "weakref.WeakKeyDictionary[Program, tuple]" = program_cache()


def _inference(ctx: Context, program: Optional[Program]) -> Optional[bool]:
    """For a program that trains nothing and loads saved parameters (`load_state_dict`, a
    library's `checkpoint-functions`) over its model's: whether it also puts the model in evaluation mode; None for any other.
    (RPL101 and RPL103 both ask.)"""
    if program is None:
        return None
    hit = _INFERENCE.get(program)
    if hit is None:
        hit = _INFERENCE[program] = (_inference_of(ctx, program),)
    return hit[0]


def _inference_of(ctx: Context, program: Program) -> Optional[bool]:
    m = ctx.index.m
    if not m.checkpoint_methods or any(True for _ in program.events("train", "runner")):
        return None
    if not program.calls_method(m.checkpoint_methods) and not any(True for _ in program.events("paramload")):
        return None
    # dropout draws only where a model runs: a program that runs none (a checkpoint
    # converter builds, loads and saves) counts it as evaluated
    return bool(m.eval_methods) and program.calls_method(m.eval_methods) or not _runs_a_model(ctx, program)


def _runs_a_model(ctx: Context, program: Program) -> bool:
    """Whether the entry module calls a project model or callable object it made (`net(x)`
    after `net = Net()`, `pipe(prompt)`): a calling method (`forward`, `__call__`) reached by
    such a call, not by an object handed over (a model's forward that calls its layers runs
    only if something runs it)."""
    index = ctx.index
    calling = index.m.calling_methods
    info = program.entry
    for mod, scope in program.scopes:
        if mod != info.module:
            continue
        for call in info.calls.get(scope, ()):
            target = call[0]
            if target is not None and call[1] in calling and target.startswith(INSTANCE) and index.call_targets(info, call):
                return True
    return False


def _counts(m, data: dict, evaluates: bool) -> bool:
    """Whether a draw (its event's data) matters in such a program: not parameter
    initialisation (an initialising API, or a draw made into a parameter), nor dropout when
    the model is evaluated."""
    api = data.get("api") or ""
    return not (data.get("initialises") or _initialises(m, api) or evaluates and (api in m.train_mode_draws or data.get("train_mode")))


def _initialises(m, api: str) -> bool:
    return api in m.parameter_inits or api.startswith(m.parameter_init_prefixes)


@rule("RPL101", per="program", apart=True)
def unseeded_global_rng(ctx: Context, program: Program) -> Iterable[Finding]:
    order = {s: i for i, s in enumerate(ctx.index.m.sources)}
    draws = _draws_that_count(ctx, program)
    seeded = program.seeds()
    missing = sorted((s for s in draws if s not in seeded), key=lambda s: order.get(s, 99))
    if not missing:
        return
    for source in missing:
        serving = why_not_seeded_at_start(ctx, program, draws[source])
        if serving is not None:
            fix, why = None, serving
        elif "torch" in missing and _only_in_workers(ctx, program, source, draws[source]):
            # the workers reseed this RNG from the loader's base seed, which torch's seed (the
            # torch finding's fix) makes repeat: a seed of its own would change nothing
            fix, why = None, (
                "These draws run only in DataLoader workers, which reseed this RNG from the loader's base seed: "
                "seeding torch (the fix of this program's torch finding) makes them repeat, and a seed of its own "
                "would change nothing."
            )
        else:
            fix, why = seeding_fix(ctx, program, source)
            if source == "numpy":  # the opt-in `numpy-fix = "generator"`, where the program allows it
                fix = generator_fix(ctx, program, draws[source]) or fix
        all_draws = sorted(draws[source], key=lambda d: (d[0].path != program.entry.path, d[0].path, d[2].line, d[2].col))
        entry_draws = [d for d in all_draws if d[0] is program.entry]
        if entry_draws:
            info, _, at = entry_draws[0]
            where: Event | tuple = at
            first_api = at.data["api"]
            others = [d for d in all_draws if d is not entry_draws[0]]
        else:
            where = import_bringing(ctx, program, {d[0].module for d in all_draws})
            info = program.entry
            first_api = all_draws[0][2].data["api"]
            others = all_draws
        related = [
            Related(location(d[0], d[2]), f"also draws from {source}: `{d[2].data['api']}`") for d in others[:MAX_RELATED]
        ]
        n = len(others) if entry_draws else len(all_draws) - 1  # (the message names the first)
        more = f"; {n} other draw{'s' if n != 1 else ''} in this program" if n else ""
        via = "" if entry_draws else f" (`{first_api}` in an imported module)"
        message = f"{source_label(source)} RNG is drawn from{via} but never seeded in this program{more}"
        if fix is None and (why.startswith(SERVES_REQUESTS) or why.startswith(_IN_WORKERS)):
            help = sentences(why, "(Not fixed automatically.)")
        else:
            help = sentences(catalog.rule_docs()["RPL101"].help or "", unfixed(why) if fix is None else "")
        yield ctx.finding("RPL101", info, where, message, related, fix, help=help)


# -- RPL102 ---------------------------------------------------------------------------
def _reached_with_intent(ctx: Context, info: ModuleInfo, scope: str) -> bool:
    """Whether a program with determinism intent reaches the scope (a generator elsewhere,
    e.g. a library's temp-file names, is unpredictable on purpose)."""
    programs = placement.programs_reaching(ctx, info, scope)
    return any(p.has_intent() for p in programs)


@rule("RPL102", per="module", apart=True)
def unseeded_generator(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    gens = {g["name"]: g for g in catalog.load("rng")["generators"]}
    for scope, ev in info.all_events("gen"):
        if not _reached_with_intent(ctx, info, scope) or _reseeded(ctx, info, scope, ev):
            continue
        api = ev.data["api"]
        fix = None
        why = ""
        if not ev.data["seed_none"]:
            target = ev.data["call"]
            inner = gens.get(api, {})
            kw = inner.get("seed-kw", "seed")
            if "bit-generator-arg" in inner:
                kw = "seed"
            spec = placement.made_once(ctx, info, scope, ev) if not placement.not_editable(info) else placement.not_editable(info)
            if isinstance(spec, str) or spec is placement.INITIAL_SEED:
                why = spec if isinstance(spec, str) else "no seed is in scope here"
            else:
                fix = Fix(f"pass a seed to `{api.rsplit('.', 1)[-1]}`", "safe", (AddKeyword(target, kw, "{seed}"), spec))
        help = sentences(
            "it draws its state from OS entropy, so it differs on every run even when the rest of the program is "
            "seeded; pass the program's seed", unfixed(why),
        )
        yield ctx.finding("RPL102", info, ev, f"`{api}` is created without a seed", fix=fix, help=help)


def _reseeded(ctx: Context, info: ModuleInfo, scope: str, ev: Event) -> bool:
    """Whether the object the generator is kept in is seeded later by its reseed method
    (`self.rng = random.Random()`, then `self.rng.seed(seed)` in another method)."""
    name = ev.data.get("assigned")
    method = ctx.index.m.reseed_methods.get(ev.data["api"])
    if not name or not method:
        return False
    owner = reseed_owner(scope, info.functions.get(scope), name)
    return (owner, name, method) in {tuple(r) for r in info.extra.get(RESEEDED, ())}


# -- RPL103 ---------------------------------------------------------------------------
def _body_items(ctx: Context, info: ModuleInfo, scopes: tuple[str, ...], inference: Optional[bool] = None):
    """Draws, seeds and project calls of a straight-line body, in source order. With
    `inference` (the body is in the entry module of a program that loads saved parameters,
    `_inference`), the draws that do not matter there are left out, the calls' too."""
    out = []
    m = ctx.index.m
    for it in placement.body_items(ctx, info, scopes):
        sources = set(it.sources)
        if inference is not None and it.kind == "draw":
            if isinstance(it.at, Event):
                if not _counts(m, it.at.data, inference):
                    continue
            else:
                sources = _counting_sources(ctx, it.keys, inference)
                if not sources:
                    continue
        out.append((it.pos, it.kind, sources, it.at, it.name, it.keys))
    return out


def _loaded_over(ctx: Context, info: ModuleInfo, scopes: tuple, draw: tuple, seed: tuple) -> Optional[bool]:
    """For a draw of a body whose model is loaded from saved parameters before the seed (a
    call between the two that loads a checkpoint, `load_state_dict`, itself or in project
    code it calls), in a body that trains nothing: whether the body also evaluates the
    model (see `_inference`); None for any other."""
    index = ctx.index
    m = index.m
    if not m.checkpoint_methods:
        return None
    calling = index.scopes_calling(m.checkpoint_methods)
    starts = []  # what the body reaches: its own scopes, and the project code it calls
    loads = False
    for scope in scopes:
        starts.append((info.module, scope))
        for call in info.calls.get(scope, ()):
            if draw < (call[2], call[3]) < seed and call[1] in m.checkpoint_methods:
                loads = True  # `model.load_state_dict(...)` in the body
        for call, keys in index.callees(info, scope):
            if is_reference(call):
                continue
            starts += [index.scope_of(k) for k in keys]
            if not loads and draw < (call[2], call[3]) < seed:
                for mod, sub in index.reach([index.scope_of(k) for k in keys], include_imports=False):
                    hit = calling(mod)
                    if hit and sub in hit:
                        loads = True
                        break
    if not loads:
        return None
    reached = index.reach(starts, include_imports=False)
    for mod, scope in reached:
        if any(ev.kind in ("train", "runner") for ev in index.modules[mod].events.get(scope, ())):
            return None
    evaluates = bool(m.eval_methods) and any(
        (hit := index.scopes_calling(m.eval_methods)(mod)) and scope in hit for mod, scope in reached
    )
    return evaluates


def _counting_sources(ctx: Context, keys: tuple, inference: bool) -> set:
    """The sources that the functions `keys` (and what they call) draw from in ways that
    matter in a program that loads saved parameters (`_counts`)."""
    index = ctx.index
    out: set = set()
    for mod, scope in index.reach([index.scope_of(k) for k in keys], include_imports=False):
        for ev in index.modules[mod].events.get(scope, ()):
            if ev.kind == "draw" and _counts(index.m, ev.data, inference):
                out.add(ev.data["source"])
    return out


def _drawn_in(ctx: Context, scopes: set, item: tuple) -> tuple:
    """A body item of a program's entry module with the sources a call of it draws from as
    the program runs it (`scopes`: the scopes it reaches): through the code the program
    reaches, not what the called functions' shared effects count (every method a call by
    name may reach, of classes this program never builds)."""
    pos, kind, sources, at, name, keys = item
    if not _calls_draw(item):
        return item
    index = ctx.index
    drawn: set = set()
    for mod, scope in index.reach([index.scope_of(k) for k in keys], include_imports=False):
        if (mod, scope) in scopes:
            for ev in index.modules[mod].events.get(scope, ()):
                if ev.kind == "draw":
                    drawn.add(ev.data["source"])
    return (pos, kind, sources & drawn, at, name, keys)


def _calls_draw(item: tuple) -> bool:
    """Whether a body item is a call of project functions that draws (`_drawn_in`)."""
    return item[1] == "draw" and not isinstance(item[3], Event) and bool(item[5])


def _may_seed(ctx: Context, info: ModuleInfo, scopes: tuple[str, ...], callers: Optional[frozenset]) -> bool:
    """Whether a body seeds anything, checked cheaply first: most bodies do not. Only the
    effects of the functions the body calls are worked out (not those of every project
    function, which would make a check of one file cost as much as the whole project's),
    and with `callers` (`seed_reach.seed_callers`), only for a scope with a call that
    reaches a seeding function."""
    index = ctx.index
    for scope in scopes:
        for ev in info.events.get(scope, ()):
            if ev.kind == "seed" or ev.kind == "seedcand" and index.seed_sources(info, ev):
                return True
        if callers is not None and (info.module, scope) not in callers:
            continue  # no call of it reaches a seeding function: nothing to resolve
        for call, keys in index.callees(info, scope):
            if not is_reference(call) and any(index.effects(k).seeds for k in keys):
                return True
    return False


# The project-wide answer (`seed_reach`) reads every module's calls once: about a third of
# what asking body by body costs a check of the whole project (0.12 s against 0.36 s on
# 5,100 files). A check of fewer of the project's modules asks body by body.
_WHOLE_SHARE = 3


@rule("RPL103", per="module", apart=True)
def seed_after_draw(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    order = {s: i for i, s in enumerate(ctx.index.m.sources)}
    index = ctx.index
    callers = seed_callers(index) if ctx.checked * _WHOLE_SHARE >= len(index.modules) else None
    if callers is None:
        bodies = [(MODULE_SCOPE, MAIN_SCOPE)] + [(q,) for q in info.functions]
    else:
        # only a body with events or with a call reaching a seeding function can seed
        # (`_may_seed`): most of a project's functions have neither
        asked = set(info.events).union(seed_callers_in(index, info.module))
        bodies = [(MODULE_SCOPE, MAIN_SCOPE)] if MODULE_SCOPE in asked or MAIN_SCOPE in asked else []
        bodies += [(q,) for q in info.functions if q in asked]
    inference: Optional[bool] = None
    asked_inference = False
    for scopes in bodies:
        if not _may_seed(ctx, info, scopes, callers):
            continue
        items = _body_items(ctx, info, scopes)
        if not any(kind == "seed" for _, kind, *_ in items):
            continue
        if not asked_inference:  # (asked only of the few bodies that seed)
            inference, asked_inference = _inference(ctx, ctx.program_of(info)), True
        if inference is not None:
            items = _body_items(ctx, info, scopes, inference)
        program = ctx.program_of(info)
        if program is not None and any(_calls_draw(it) for it in items):
            # a set of this body's own, not the program's `scope_set`: that one is kept
            # until the program's rules have run, and the module rules of a large project
            # made one for every program whose entry module seeds (13 MB on 38,000 files)
            reached = program.scopes_now()
            items = [_drawn_in(ctx, reached, it) for it in items]
        first_seed: dict[str, tuple] = {}
        for item in items:
            if item[1] == "seed":
                for src in item[2]:
                    first_seed.setdefault(src, item)
        reported: set[str] = set()
        # one finding per line: the first draw on it, with every source first drawn there
        per_line: dict[int, tuple] = {}
        iterated = index.m.iterated_draws
        for pos, kind, srcs, at, name, keys in items:
            if kind != "draw" or isinstance(at, Event) and at.data.get("api") in iterated:
                continue  # (a loader or sampler draws its order when iterated, not when built)
            for src in sorted(srcs, key=lambda s: order.get(s, 99)):
                seed = first_seed.get(src)
                if seed is None or seed[0] <= pos or src in reported:
                    continue
                if inference is None:
                    # initial parameters loaded over before the seed, in a body that trains
                    # nothing (an inference function): those draws do not matter
                    loaded = _loaded_over(ctx, info, scopes, pos, seed[0])
                    if loaded is not None and src not in (
                        _counting_sources(ctx, keys, loaded) if not isinstance(at, Event)
                        else {src} if _counts(index.m, at.data, loaded) else set()
                    ):
                        continue
                assigned = at.data.get("assigned") if isinstance(at, Event) else None
                if assigned and any(
                    isinstance(it[3], Event) and (assigned in it[3].data.get("names", ()) or assigned in it[3].data.get("attrs", ()))
                    for it in items if it[1] == "seed"
                ):
                    continue  # `seed = random.randint(...)` then `random.seed(seed)`
                reported.add(src)
                per_line.setdefault(pos[0], (at, name, []))[2].append((src, seed))
        for at, name, drawn in per_line.values():
            what = f"`{name}`" if isinstance(at, Event) else f"calling `{name}()`"
            lines = sorted({seed[0][0] for _, seed in drawn})
            if len(drawn) == 1:
                rngs, it = f"{source_label(drawn[0][0])} RNG", "it is"
            else:
                labels = [source_label(src) for src, _ in drawn]
                rngs, it = f"{', '.join(labels[:-1])} and {labels[-1]} RNGs", "they are"
            where = ", ".join(line_words(info, n) for n in lines)
            yield ctx.finding(
                "RPL103", info, at,
                f"{what} draws from {rngs} before {it} seeded on {where}",
                [Related(location(info, seed[3]), f"{src} is seeded here") for src, seed in drawn],
                help=sentences(
                    f"{'this draw is' if len(drawn) == 1 else 'these draws are'} not covered by the seed and differ "
                    "from run to run; seed before the first draw (move the seeding call up, or the draw after it)"
                ),
            )


# -- RPL104 ---------------------------------------------------------------------------
@rule("RPL104", per="module", apart=True)
def runtime_pythonhashseed(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    var = ctx.index.m.hashseed_var
    for _, ev in info.all_events("env"):
        if ev.data["var"] != var:
            continue
        yield ctx.finding(
            "RPL104", info, ev,
            f"setting {var} at run time has no effect on this process",
            help=f"hash randomisation is fixed when the interpreter starts (only child processes started later "
            f"see it); set {var} in the shell, the launcher or the job environment instead",
        )
