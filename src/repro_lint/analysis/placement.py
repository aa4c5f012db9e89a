"""Where a fix's statements go and which seed they use: the one model every fix asks.

The spec's section "Fixes: what they may change, where they go, which seed they use", as code:
- Seeding calls go where the program starts, once: in the entry module's main body (the
  Hydra main, else the `__main__` block, else the function it calls on the way to the draws,
  as long as that runs once per run), after the seed they use is defined and before the
  first statement that draws from the source; right after the program's own seeding
  statement when that already runs before the draws.
- Determinism flags go right after the program's torch seeding statement, in its block and
  under its condition, in the process that trains (`flag_placement.py`).
- The seed is the user's: the expression of the program's own seeding call where it is valid;
  else its seed setting in scope (a `seed` parameter, `args.seed` where the parser defines
  `--seed`, `cfg.seed` where the Hydra config defines it, `self.seed`); else, for a loader's
  `generator=`, `torch.initial_seed()` when every process that runs it seeds torch (not a
  function that `mp.spawn` runs in processes that never do); a new `SEED` constant only in the
  entry module, as a last resort.
- An RNG object a fix makes (a loader's generator) is made once per run: before the loop that
  builds the loader anew every epoch, and not at all in a helper that a loop calls again and
  again (`made_once`).
- Nothing is added at module level of a library module (one another project module
  imports), and test files are never edited. Where no place satisfies this, the fix is not
  offered and the finding says why.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional, Sequence, Union

from repro_lint.core import catalog
from repro_lint.core.edits import InsertStatements, SeedSpec
from repro_lint.index.program import Program
from repro_lint.facts.model import MAIN_SCOPE, MODULE_SCOPE, Event, ModuleInfo, is_reference
from repro_lint.facts.walker.module_body import CONSTANT_LINES
from repro_lint.analysis.context import Context, line_words, program_cache
from repro_lint.analysis import by_name, seed_settings
from repro_lint.index import hydra_configs
from repro_lint.index.typed_reach import call_seeds
from repro_lint.analysis.training import draw_launches, in_loop, loop_around, training_of, trains, unseeded_launch

# A seed expression for a loader's `generator=` that follows the seed the program gave torch.
INITIAL_SEED = SeedSpec("torch.initial_seed()")
_END = (10**9, 0)


@dataclass(frozen=True)
class Place:
    """Where inserted statements go (the arguments of an `InsertStatements`), and the seed
    expression valid there."""

    where: str
    anchor: Optional[tuple] = None
    function: Optional[str] = None
    seed: Optional[SeedSpec] = None
    guard: str = ""  # the inserted statements run under `if <guard>:`
    module: str = ""  # the module the statements go into (the entry module unless said)
    path: str = ""  # that module's file, when it is not the entry module's
    beside_seed: bool = False  # right after the program's own seeding statement
    switch: str = ""  # the user's determinism switch in force there (`args.deterministic`)
    # what the index cannot see about this place, for the reader to check: a fix placed here
    # is unsafe and says so (spec, "Fixes" 9)
    caveat: str = ""

    def insert(self, code: str, key: str = "", order: int = 0) -> InsertStatements:
        return InsertStatements(
            self.where, code, anchor=self.anchor, function=self.function, key=key, order=order, guard=self.guard, path=self.path
        )


Placed = Union[Place, str]  # a place, or why there is none


@dataclass(frozen=True)
class Item:
    """A draw or a seeding in a straight-line body: an event, or a call of project code."""

    pos: tuple
    kind: str  # "draw" or "seed"
    sources: frozenset
    at: object  # the Event, or the span of the call
    name: str
    keys: tuple = ()  # project functions the call reaches

    @property
    def span(self) -> tuple:
        at = self.at
        return (at.line, at.col, at.end_line, at.end_col) if isinstance(at, Event) else tuple(at)  # type: ignore[union-attr]


def body_items(ctx: Context, info: ModuleInfo, scopes: tuple) -> list[Item]:
    """Draws and seedings of a straight-line body (one or more scopes), in source order; a
    call of project code counts as the draws and seedings it makes."""
    index = ctx.index
    items: list[Item] = []
    for scope in scopes:
        for ev in info.events.get(scope, ()):
            if ev.kind == "draw":
                items.append(Item((ev.line, ev.col), "draw", frozenset([ev.data["source"]]), ev, ev.data["api"]))
            elif ev.kind in ("seed", "seedcand"):
                srcs = index.seed_sources(info, ev)
                if srcs:
                    items.append(Item((ev.line, ev.col), "seed", frozenset(srcs), ev, ev.data.get("api") or ev.data.get("target")))
        building = index.m.building_methods
        for call, keys in index.callees(info, scope):
            if is_reference(call):
                continue  # a function handed over runs later (or elsewhere), not here
            if call[0] is not None and any(_instantiates(ctx, call[0], k) for k in keys):
                # an instance built here: its `forward`, `__iter__`, ... run when it is used
                keys = tuple(k for k in keys if k.rpartition(".")[2] in building or not _instantiates(ctx, call[0], k))
            seeds: frozenset = frozenset()
            draws: frozenset = frozenset()
            for key in keys:
                eff = index.effects(key)
                seeds |= eff.seeds
                draws |= eff.draws
            if seeds:
                seeds = call_seeds(index, info, call, keys, seeds)
            name = call[0] or call[1]
            pos = (call[2], call[3])
            if seeds:
                items.append(Item(pos, "seed", seeds, tuple(call[2:6]), name, keys))
            if draws - seeds:
                items.append(Item(pos, "draw", draws - seeds, tuple(call[2:6]), name, keys))
    items.sort(key=lambda it: it.pos)
    return items


# -- facts about modules and functions ----------------------------------------------------
def is_library(ctx: Context, info: ModuleInfo) -> bool:
    """Another project module (not a test) imports it: statements at its module level run
    on import, in whatever program imports it."""
    return bool(ctx.index.importers.get(info.module))


def not_editable(info: ModuleInfo) -> Optional[str]:
    """Why no fix may edit this file, if none may."""
    if info.is_test:
        return "fixes never edit test files"
    return None


_SITES: "weakref.WeakKeyDictionary[Program, dict]" = program_cache()


def _call_sites(ctx: Context, program: Program) -> dict:
    """How many places of the entry module call (or hand over) each project function."""
    hit = _SITES.get(program)
    if hit is None:
        hit = {}
        entry = program.entry
        for mod, scope in program.scopes:
            if mod != entry.module:
                continue
            for _, keys in ctx.index.callees(entry, scope):
                for key in keys:
                    hit[key] = hit.get(key, 0) + 1
        _SITES[program] = hit
    return hit


def runs_once(ctx: Context, program: Program, scope: str, call_line: int, key: str) -> bool:
    """Whether the function `key`, called on `call_line` of `scope` in the entry module (a
    body that runs once), runs once per run: called from nowhere else, not in a loop."""
    return not in_loop(program.entry, scope, call_line) and _call_sites(ctx, program).get(key, 0) == 1


def _instantiates(ctx: Context, target: Optional[str], key: str) -> bool:
    owner, _, method = key.rpartition(".")
    return bool(target) and not target.startswith("@") and owner in ctx.index.classes and not target.endswith("." + method)  # type: ignore[union-attr]


# -- seed expressions ---------------------------------------------------------------------
@dataclass
class _Settings:
    """A program's seed settings, worked out once per program."""

    expressions: list  # (expr, names, module, scope, pos) of its seeding calls, entry first
    options: list  # argparse seed options
    parser_functions: set
    hydra_key: Optional[str]
    seeds_torch: bool


_SETTINGS: "weakref.WeakKeyDictionary[Program, _Settings]" = program_cache()


def _settings(ctx: Context, program: Program) -> _Settings:
    hit = _SETTINGS.get(program)
    if hit is not None:
        return hit
    index = ctx.index
    entry = program.entry
    exprs = []
    for info, scope, ev in program.events("seed", "seedcand"):
        expr = ev.data.get("expr")
        if expr and (ev.kind == "seed" or index.seed_sources(info, ev) or _seeder_call(ctx, info, ev)):
            names = frozenset(ev.data.get("names", ()))
            if names and _checked_first(ev, expr):
                continue
            if not names and _local_split_seed(ctx, info, scope, ev):
                continue
            exprs.append((expr, names, info.module, scope, ev.pos))
    exprs.sort(key=lambda e: (e[2] != entry.module, e[4]))
    modules = [index.modules[m] for m in dict.fromkeys(m for m, _ in program.scopes)]
    hydra_key = None
    for q in entry.hydra_mains:
        fn = entry.functions[q]
        if fn.hydra_config_path is not None:
            folder, name = hydra_configs.primary_config(entry.path, fn.hydra_config_path, fn.hydra_config_name)
            hydra_key = hydra_configs.hydra_seed_key(folder, index.root, name)
    hit = _SETTINGS[program] = _Settings(
        exprs, seed_settings.options(modules), seed_settings.parser_function_names(modules), hydra_key,
        program.seeds_source("torch"),
    )
    return hit


def _local_split_seed(ctx: Context, info: ModuleInfo, scope: str, ev: Event) -> bool:
    """Whether a seeding call with a literal seed only fixes what its own function draws next
    (`random.seed(1234)` before shuffling files into a train/test split, in a helper that
    trains nothing): it seeds that split, not the program, and no fix borrows its seed
    (spec, "Fixes" 12: one seed per program)."""
    fn = info.functions.get(scope)
    if fn is None or scope == MAIN_SCOPE:
        return False
    sources = set(ctx.index.seed_sources(info, ev))
    if not sources:
        return False
    key = f"{info.module}.{scope}" if info.module else scope
    if trains(ctx, key):
        return False
    return any(
        d.kind == "draw" and d.data.get("source") in sources and d.pos > ev.pos for d in info.events.get(scope, ())
    )


def _checked_first(ev: Event, expr: str) -> bool:
    """Whether a seeding call runs only under a condition about its own seed (`if args.seed
    is not None: torch.manual_seed(args.seed)`), or in an `else` branch: its expression is
    not lent to statements outside that condition, where it may be None."""
    if "guard" not in ev.data:
        return False
    guard = ev.data["guard"]
    if guard is None:
        return True
    # the expression itself, or a seed it is made from (`torch.manual_seed(args.seed + gpu)`
    # under `if args.seed is not None:`, where the sum raises outside the check)
    parts = [expr, *(p for p in re.findall(r"[A-Za-z_][\w.]*", expr) if "seed" in p.lower() and p != expr)]
    return any(re.search(rf"(?<![\w.]){re.escape(p)}(?![\w])", guard[0]) is not None for p in parts)


def _seeder_call(ctx: Context, info: ModuleInfo, ev: Event) -> bool:
    """A seed-named call of a project function that seeds (`set_seed(args.seed)`)."""
    return any(ctx.index.effects(k).seeds for k in ctx.index.resolve(ev.data["target"], info))


def _available(ctx: Context, program: Program, info: ModuleInfo, scope: str, pos: tuple) -> dict:
    """Names usable in `scope` of `info` before `pos`, each with the span of the statement
    after which it is bound (None: bound before the body starts)."""
    settings = _settings(ctx, program)
    out: dict = {}
    # in the module body, a constant bound further down is not bound yet (a notebook's later cell)
    later = info.extra.get(CONSTANT_LINES, {}) if scope in (MODULE_SCOPE, MAIN_SCOPE) else {}
    for name in (*info.constants, *info.exports):
        if later.get(name, 0) < pos[0]:
            out[name] = None
    facts_parsers = settings.parser_functions
    if scope != MODULE_SCOPE:
        for name, span in seed_settings.parsed_names(info, MODULE_SCOPE, facts_parsers):
            out[name] = None
    fn = info.functions.get(scope)
    if fn is not None:
        for param in fn.params or ():
            out[param] = None
    for name, span in [*seed_settings.parsed_names(info, scope, facts_parsers), *seed_settings.local_seeds(info, scope)]:
        if (span[0], span[1]) < pos:
            out[name] = span
    return out


def _config_names(ctx: Context, program: Program, info: ModuleInfo, scope: str, pos: tuple) -> list[tuple[str, Optional[tuple]]]:
    """`<name>.<seed attribute>` expressions the program's seed settings make valid here."""
    settings = _settings(ctx, program)
    out: list = []
    configs = seed_settings.names()["configs"]
    fn = info.functions.get(scope)
    parsed = seed_settings.parsed_bindings(info, scope, settings.parser_functions)
    if scope != MODULE_SCOPE:
        parsed = [(n, None, how) for n, _, how in seed_settings.parsed_bindings(info, MODULE_SCOPE, settings.parser_functions)] + parsed
    # arguments parsed here by a parser this module builds have this module's options only
    own = seed_settings.own_options(info)
    for name, span, how in parsed:
        if how.startswith(seed_settings.DATACLASS):  # `training_args.seed`
            if span is None or (span[0], span[1]) < pos:
                out.append((f"{name}.{how[len(seed_settings.DATACLASS):]}", span))
            continue
        options = own if how == "parse" and own is not None else settings.options
        if options and (span is None or (span[0], span[1]) < pos):
            out.append((f"{name}.{options[0]}", span))
    if settings.options:
        for param in (fn.params or ()) if fn is not None else ():
            if param in configs:
                out.append((f"{param}.{settings.options[0]}", None))
    if settings.hydra_key and fn is not None and fn.params:
        first = fn.params[0]
        if scope in program.entry.hydra_mains and info is program.entry or first in configs:
            out.append((f"{first}.{settings.hydra_key}", None))
    if fn is not None and fn.class_name is not None and fn.params and fn.params[0] == "self":
        for attr in _instance_seed_attrs(ctx, info, scope.rpartition(".")[0]):
            out.append((f"self.{attr}", None))
    return out


def _instance_seed_attrs(ctx: Context, info: ModuleInfo, cls: str) -> list[str]:
    index = ctx.index
    key = f"{info.module}.{cls}" if info.module else cls
    out: list[str] = []
    for base in index.class_bases(key) or [key]:
        hit = index.classes.get(base)
        if hit is None:
            continue
        binfo, bcls = hit
        for attr in seed_settings.instance_attrs(binfo, bcls.qual):  # type: ignore[attr-defined]
            if attr not in out:
                out.append(attr)
    return out


def user_seed(
    ctx: Context, program: Optional[Program], info: ModuleInfo, scope: str, pos: tuple, programs: Optional[list] = None,
    local_first: bool = False, own_constants: bool = True,
) -> Optional[tuple[SeedSpec, Optional[tuple]]]:
    """The user's seed expression valid in `scope` of `info` before `pos`, and the span of the
    statement it must follow (None: valid from the start of the body); None if there is none.

    In order: the expression of a seeding call of the program (or of `programs`, every one
    that reaches the place), then the program's seed settings in scope (`args.seed`,
    `cfg.seed`, `self.seed`), then a `seed` parameter or a module constant named like a seed.
    With `local_first` (a generator or loader inside a function, not the program's start) a
    `seed` parameter comes first: the function was handed the seed it should use. Without
    `own_constants`, a module constant of `info` is not the program's seed (a program whose
    entry is another module)."""
    progs = [p for p in (programs or [program]) if p is not None]
    local = _local_seed(info, scope, pos)
    if local_first and local is not None and local.expr in (getattr(info.functions.get(scope), "params", None) or ()):
        return local, None
    for prog in progs:
        available = _available(ctx, prog, info, scope, pos)
        for expr, names, module, escope, epos in _settings(ctx, prog).expressions:
            # a seeding call later in the same body lends its expression where its names are
            # already bound (`seed = int(config["seed"])`, a loader, then `set_seed(seed)`)
            if not names and module != info.module:
                continue  # a literal copied to another module would stop following the program's seed
            if module != info.module and any(n in _local_only(ctx, prog, module, escope) for n in names):
                continue
            if module != info.module and any(_other_constant(ctx, info, module, n) for n in names):
                continue  # `SEED` there is that module's constant, not this one's
            if all(n in available for n in names):
                return SeedSpec(expr), _latest([available[n] for n in names])
    for prog in progs:
        for expr, span in _config_names(ctx, prog, info, scope, pos):
            return SeedSpec(expr), span
    if not progs:
        fn = info.functions.get(scope)
        if fn is not None and fn.class_name is not None and fn.params and fn.params[0] == "self":
            attrs = _instance_seed_attrs(ctx, info, scope.rpartition(".")[0])
            if attrs:
                return SeedSpec(f"self.{attrs[0]}"), None
    if local is not None and (own_constants or local.expr in (getattr(info.functions.get(scope), "params", None) or ())):
        return local, None
    return None


def _other_constant(ctx: Context, info: ModuleInfo, module: str, name: str) -> bool:
    """Whether `name` is a module constant of `module` that `info` does not import from it."""
    other = ctx.index.modules.get(module)
    return other is not None and name in other.constants and info.exports.get(name) != f"{module}.{name}"


def _local_seed(info: ModuleInfo, scope: str, pos: Optional[tuple] = None) -> Optional[SeedSpec]:
    """A `seed` parameter of the function, else a module constant named like a seed (in the
    module body, one bound before `pos`: a notebook's `seed = 100` in a later cell is not)."""
    names = catalog.load("rng")["seed-names"]
    fn = info.functions.get(scope)
    if fn is not None:
        for name in names:
            if name in (fn.params or ()):
                return SeedSpec(name)
    lines = info.extra.get(CONSTANT_LINES, {}) if fn is None and pos is not None else {}
    for name in names:
        value = info.constants.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        if name in lines and lines[name] >= pos[0]:  # type: ignore[index]
            continue  # bound further down the module body
        return SeedSpec(name)
    return None


def _local_only(ctx: Context, program: Program, module: str, scope: str) -> set:
    """Names a seeding call elsewhere uses that are local to its own function (another
    function's `args` is another object, even when it has the same name)."""
    info = ctx.index.modules.get(module)
    fn = info.functions.get(scope) if info is not None else None
    if fn is None:
        return set()
    return set(fn.params or ()) | {n for n, _ in seed_settings.parsed_names(info, scope, _settings(ctx, program).parser_functions)}


def _latest(spans: list) -> Optional[tuple]:
    spans = [s for s in spans if s is not None]
    return max(spans) if spans else None


def seed_for(ctx: Context, info: ModuleInfo, scope: str, pos: tuple, generator: bool = False) -> Union[SeedSpec, str]:
    """The seed a fix in `scope` of `info` (not at a program's start: a generator's or a
    loader's seed) uses at `pos`, or why there is none."""
    programs = programs_reaching(ctx, info, scope)
    unreached = not programs
    if not programs:
        entry_program = ctx.program_of(info)
        programs = [entry_program] if entry_program is not None else []
    found = user_seed(ctx, programs[0] if programs else None, info, scope, pos, programs, local_first=True)
    if found is not None and (len(programs) > 1 or programs and programs[0].entry is not info):
        # code that other programs reach (a shared `load_data`): the seed must be each one's
        for program in programs:
            own = user_seed(ctx, program, info, scope, pos, [program], local_first=True, own_constants=program.entry is info)
            if own is None or own[0].expr != found[0].expr:
                found = None
                break
    if found is not None:
        return found[0]
    if programs and generator and all(_settings(ctx, p).seeds_torch for p in programs):
        late = _torch_seeded_later(ctx, programs, info, scope, pos)
        if late:
            return (
                f"the program seeds torch only further down (`{late}`), so `torch.initial_seed()` here would not "
                "follow its seed; build this after the seeding call, or pass the seed in"
            )
        for program in programs:
            launch = unseeded_launch(ctx, program, info, scope, "torch")
            if launch is not None:
                # the program's seed is the parent's: the processes it starts for the function
                # that gets here never seed torch, and their `initial_seed()` is a fresh random one
                where = launch.info.path if launch.info is not info else ""
                return (
                    f"this runs in the processes that `{launch.event.data['api']}` starts for `{launch.name}` "
                    f"({line_words(launch.info, launch.event.line)}{' of ' + where if where else ''}), which never seed "
                    "torch: `torch.initial_seed()` there is a new random seed on every run; seed torch at the start "
                    f"of `{launch.name}`, a seed of each process's own (RPL202), and `torch.initial_seed()` then follows it"
                )
        return INITIAL_SEED
    if unreached and info.module.rpartition(".")[0] in ctx.index.modules:
        # a package module's own `__main__` (a self-test) does not run this code: the program
        # that does is one the index does not see (it builds the class by name); a constant here
        # would fix the order for every program, whatever seed it was given
        return (
            "no program the index sees runs this code (the module's own `__main__` does not call it); "
            "pass the seed in, or `torch.initial_seed()` where the program that runs it seeds torch"
        )
    if ctx.program_of(info) is not None and not is_library(ctx, info):
        return SeedSpec(None, str(ctx.settings.get("seed", 0)))
    if generator:
        return "no seed is in scope here and no program that reaches it seeds torch; pass the seed in (e.g. a `seed` parameter)"
    return "no seed is in scope here; pass the seed in (e.g. a `seed` parameter) rather than adding a constant to a library module"


def _torch_seeded_later(ctx: Context, programs: Sequence[Program], info: ModuleInfo, scope: str, pos: tuple) -> str:
    """In a module body: the call that seeds torch when every such call of the programs is
    further down that same body (a notebook seeding in a later cell than its loader), else ""."""
    if scope not in (MODULE_SCOPE, MAIN_SCOPE):
        return ""
    later = ""
    for program in programs:
        for sinfo, sscope, ev in program.events("seed", "seedcand"):
            if "torch" not in ctx.index.seed_sources(sinfo, ev):
                continue
            if sinfo is not info or sscope != scope or ev.pos < pos:
                return ""  # seeded elsewhere, or before: `initial_seed()` follows it
            later = later or ev.data.get("api") or ev.data.get("target") or "its seeding call"
    return later


# -- objects made once: a generator a fix adds must not restart every iteration --------------
@dataclass(frozen=True)
class Hoisted:
    """Where a fix makes an RNG object once, before the loop that runs the code that uses it
    again and again (a loader built every epoch gets a generator made before the epoch loop),
    and the seed valid there."""

    anchor: tuple  # the span of the loop statement
    seed: SeedSpec


def made_once(
    ctx: Context, info: ModuleInfo, scope: str, ev: Event, loops: Optional[Sequence[tuple]] = None,
    generator: bool = False, source: Optional[str] = None,
) -> Union[SeedSpec, Hoisted, str]:
    """The seed of an RNG object that a fix makes (or seeds) for the code of `ev` (a loader's
    `generator=`, a pipeline's `seed=`, a generator object's seed), such that the object is
    made once per run, or why no such place is known.

    An object made in a loop restarts on every iteration: every epoch's loader would shuffle
    the same way, where the program's own draws from the global generator differ from epoch to
    epoch. A loop that reseeds `source` (None: any source) in each iteration before `pos`
    restarts the program's stream on purpose: an object made in it may restart with it, seeded
    with what the loop seeded (`torch.initial_seed()` where the expression is not in scope).
    With `loops` (the spans of the `for`/`while` statements around `pos` in its body,
    outermost first) the object is made before the outermost of them that does not reseed,
    with the seed valid there. Without (None), any loop around `pos` that does not reseed means
    no place. Either way, code of a function that a loop calls again and again without
    reseeding (a `make_loader` helper called every epoch) gets none: the object would have to
    be made in the caller and passed in, which the index cannot prove right."""
    pos = ev.pos
    again = _run_again(ctx, info, scope, ev, source)
    if again:
        return again
    if loops is None:
        loop = loop_around(info, scope, pos[0])
        if loop is None:
            return seed_for(ctx, info, scope, pos, generator=generator)
        if not _reseeds_between(ctx, info, scope, (loop[0], 0), pos, source):
            return (
                f"it runs on every iteration of the loop on {line_words(info, loop[0])}, so a seed given here would "
                "restart it every time (every iteration the same draws); make it once before the loop"
            )
        return _following_reseed(ctx, info, scope, (loop[0], 0), pos, generator, source)
    reseeded = None
    for span in loops:
        start = (span[0], span[1])
        if _reseeds_between(ctx, info, scope, start, pos, source):
            reseeded = reseeded or start
            continue  # reseeded in each iteration: what is made in it may restart with the stream
        if scope == MODULE_SCOPE and is_library(ctx, info):
            return (
                f"it is built on every iteration of the loop on {line_words(info, span[0])}, at the module level of a "
                "module other modules import, where no statement may be added; make one generator before the loop"
            )
        if reseeded is not None:
            spec = _following_reseed(ctx, info, scope, reseeded, start, generator, source)
        else:
            spec = seed_for(ctx, info, scope, start, generator=generator)
        if isinstance(spec, str):
            return spec
        return Hoisted(tuple(span), spec)
    if reseeded is not None:
        return _following_reseed(ctx, info, scope, reseeded, pos, generator, source)
    return seed_for(ctx, info, scope, pos, generator=generator)


def _following_reseed(
    ctx: Context, info: ModuleInfo, scope: str, start: tuple, pos: tuple, generator: bool, source: Optional[str],
) -> Union[SeedSpec, str]:
    """The seed at `pos` of an object made after a loop of `scope` reseeds (between `start` and
    `pos`): the expression of that seeding where it is the one in scope, else, for torch,
    `torch.initial_seed()` (the seed just given), else the seed in scope."""
    items = [it for it in body_items(ctx, info, (scope,)) if _seeds(it, source) and start <= it.pos < pos]
    spec = seed_for(ctx, info, scope, pos, generator=generator)
    expr = _seed_expression(ctx, info, items[-1]) if items else None
    if isinstance(spec, SeedSpec) and spec.expr is not None and spec.expr == expr:
        return spec
    if generator and items and "torch" in items[-1].sources:
        return INITIAL_SEED
    return spec


def _seeds(item: Item, source: Optional[str]) -> bool:
    return item.kind == "seed" and (source is None or source in item.sources)


def _reseeds_between(ctx: Context, info: ModuleInfo, scope: str, start: tuple, pos: tuple, source: Optional[str]) -> bool:
    """Whether the body of `scope` seeds `source` (None: any source), itself or through project
    code, between `start` and `pos`."""
    return any(_seeds(it, source) and start <= it.pos < pos for it in body_items(ctx, info, (scope,)))


def _run_again(ctx: Context, info: ModuleInfo, scope: str, ev: Event, source: Optional[str]) -> str:
    """Why the function `scope` runs more than once in a run without reseeding `source` before
    `ev`: a loop of a program that reaches it calls it (directly or through other functions)
    and nothing on the way seeds. "" when no such loop is seen."""
    if scope in (MODULE_SCOPE, MAIN_SCOPE) or scope not in info.functions:
        return ""
    ref = (info.module, scope)
    for program in programs_reaching(ctx, info, scope):
        hit = _repeated_scopes(ctx, program, source, ev.kind).get(ref)
        if hit is None:
            continue
        if _reseeds_between(ctx, info, scope, (0, 0), ev.pos, source):
            return ""  # it reseeds each time it runs, before this
        linfo, loop_line, line, name = hit
        short = scope.rpartition(".")[2]
        where = f"{line_words(linfo, loop_line)}{' of ' + linfo.path if linfo is not info else ''}"
        if name == short:
            how = f"is called on {line_words(linfo, line)}, on every iteration of the loop on {where}"
        else:
            how = f"runs on every iteration of the loop on {where} (through `{name}`, {line_words(linfo, line)})"
        return (
            f"`{short}` {how}, so a generator made in it would "
            "restart on every call and each call's loader would shuffle the same way (every epoch the same order); "
            "make one before that loop and pass it in"
        )
    return ""


_REPEATED: "weakref.WeakKeyDictionary[Program, dict]" = program_cache()


def _repeated_scopes(ctx: Context, program: Program, source: Optional[str], kind: str) -> dict:
    """The program's functions that a loop runs again and again without reseeding `source`
    (None: any) and that hold events of `kind` (what fixes ask about: most functions a
    training loop reaches hold none): scope -> (module info, line of the loop, line of its
    call, name called there). From each call of project code in a loop's body (not its
    header) of the program's scopes, down through the calls of the functions reached,
    stopping at functions that seed (they restart the stream each time they run) and at loops
    that reseed before the call. Worked out once per program, source and kind, when a fix asks."""
    per_program = _REPEATED.get(program)
    if per_program is None:
        per_program = _REPEATED[program] = {}
    hit = per_program.get((source, kind))
    if hit is not None:
        return hit
    index = ctx.index
    out: dict = {}
    seen: set = set()
    todo: list = []
    building = index.m.building_methods
    reseeded: dict = {}  # scope -> positions of its seeding statements (`body_items`)

    def seeds_between(cinfo: ModuleInfo, scope: str, start: tuple, pos: tuple) -> bool:
        at = reseeded.get((cinfo.module, scope))
        if at is None:
            at = reseeded[(cinfo.module, scope)] = [it.pos for it in body_items(ctx, cinfo, (scope,)) if _seeds(it, source)]
        return any(start <= p < pos for p in at)

    def callees_of(cinfo: ModuleInfo, scope: str):
        for call, keys in index.callees(cinfo, scope):
            if is_reference(call):
                continue  # handed over: when (and how often) it runs is not known here
            if call[0] is not None and any(_instantiates(ctx, call[0], k) for k in keys):
                keys = tuple(k for k in keys if k.rpartition(".")[2] in building or not _instantiates(ctx, call[0], k))
            yield call, keys

    for mod, scope in program.scopes:
        cinfo = index.modules[mod]
        if not cinfo.loops.get(scope):
            continue
        for call, keys in callees_of(cinfo, scope):
            loop = loop_around(cinfo, scope, call[2])
            if loop is None or not keys or seeds_between(cinfo, scope, (loop[0], 0), (call[2], call[3])):
                continue
            name = (call[0] or call[1] or "").rpartition(".")[2]
            for key in keys:
                todo.append((index.scope_of(key), (cinfo, loop[0], call[2], name)))
    while todo:
        ref, why = todo.pop()
        if ref in seen or ref[0] not in index.modules:
            continue
        seen.add(ref)
        if any(e.kind == kind for e in index.modules[ref[0]].events.get(ref[1], ())):
            out[ref] = why
        key = f"{ref[0]}.{ref[1]}" if ref[0] else ref[1]
        seeds = index.effects(key).seeds
        if seeds if source is None else source in seeds:
            continue  # it seeds: what it runs restarts with the program's stream
        for _, keys in callees_of(index.modules[ref[0]], ref[1]):
            for k in keys:
                todo.append((index.scope_of(k), why))
    per_program[(source, kind)] = out
    return out


def programs_reaching(ctx: Context, info: ModuleInfo, scope: str) -> Sequence[Program]:
    """The programs that reach a scope, in project order (worked out once per check)."""
    if ctx.original is not None:  # (a context with copies of some programs: `Context.changed`)
        return tuple(ctx.copies.get(id(p), p) for p in programs_reaching(ctx.original, info, scope))
    index = ctx.index
    table = ctx.__dict__.get("_programs_by_scope")
    if table is None:
        # by the scopes' numbers in the index's walk (every program's scopes have one): a
        # list, where a table keyed by scope took 5 MB more on 38,000 files
        lists: dict[int, list] = {}
        for program in ctx.programs:
            for i in index.scope_numbers(program.scopes):
                hit = lists.get(i)
                if hit is None:
                    lists[i] = [program]
                else:
                    hit.append(program)
        table = [None] * (max(lists) + 1 if lists else 0)
        # most scopes are reached by the same few sets of programs (a project's shared
        # code): one tuple of each set is kept (a list per scope took 19 MB on 38,000 files)
        shared: dict = {}
        for i, programs in lists.items():
            key = tuple(map(id, programs))
            hit = shared.get(key)
            if hit is None:
                hit = shared[key] = tuple(programs)
            table[i] = hit
        ctx.__dict__["_programs_by_scope"] = table
    i = index.scope_number((info.module, scope))
    return (table[i] or ()) if i is not None and i < len(table) else ()


# -- where a program's seeding goes --------------------------------------------------------
def start_body(program: Program) -> str:
    entry = program.entry
    if entry.hydra_mains:
        return entry.hydra_mains[0]
    if entry.main_block is not None:
        return MAIN_SCOPE
    return MODULE_SCOPE


def at_start(scope: str, seed: Optional[SeedSpec]) -> Place:
    if scope == MODULE_SCOPE:
        return Place("after-imports", seed=seed)
    if scope == MAIN_SCOPE:
        return Place("main-start", seed=seed)
    return Place("body-start", function=scope, seed=seed)


def chain(ctx: Context, program: Program, source: Optional[str]) -> list[tuple[str, Optional[Item], list]]:
    """The bodies of the entry module where the program's seeding can go, outermost first,
    each with its first draw from `source` (None: it draws none) and its items: the main body,
    then the function it calls on the way to the first draw, while that runs once per run."""
    entry = program.entry
    scope = start_body(program)
    out: list = []
    seen: set = set()
    while scope not in seen:
        seen.add(scope)
        items = body_items(ctx, entry, (scope,))
        first = next((it for it in items if it.kind == "draw" and (source is None or source in it.sources)), None)
        out.append((scope, first, items))
        if first is None or len(first.keys) != 1 or isinstance(first.at, Event):
            break
        key = first.keys[0]
        mod, sub = ctx.index.scope_of(key)
        call_target = next((c[0] for c, _ in ctx.index.callees(entry, scope) if (c[2], c[3]) == first.pos), None)
        if mod != entry.module or _instantiates(ctx, call_target, key) or not runs_once(ctx, program, scope, first.pos[0], key):
            break
        scope = sub
    return out


def _seed_expression(ctx: Context, info: ModuleInfo, item: Item) -> Optional[str]:
    """The seed expression of a seeding statement: its own, or that of the seed-named call at its place."""
    if isinstance(item.at, Event):
        return item.at.data.get("expr")
    for scope_events in info.events.values():
        for ev in scope_events:
            if ev.kind == "seedcand" and ev.pos == item.pos:
                return ev.data.get("expr")
    return None


def seeding_place(ctx: Context, program: Program, source: str) -> Placed:
    """Where the seeding call of `source` goes in the program, with the seed it uses."""
    return in_shared_package(ctx, program, in_entry(program, _seeding_place(ctx, program, source)))


def _seeding_place(ctx: Context, program: Program, source: str) -> Placed:
    entry = program.entry
    bodies = chain(ctx, program, source)
    top = bodies[0][0]
    library = is_library(ctx, entry)
    if top != MODULE_SCOPE and not entry.hydra_mains:
        early = next((it for it in body_items(ctx, entry, (MODULE_SCOPE,)) if it.kind == "draw" and source in it.sources), None)
        if early is not None:
            # drawn on import, before the main body runs: only the module level comes first
            if library:
                return f"the module draws from {source} at import time (line {early.pos[0]}) and other modules import it"
            found = user_seed(ctx, program, entry, MODULE_SCOPE, early.pos)
            if found is not None and found[1] is not None:
                return Place("after", anchor=found[1], seed=found[0])
            return Place("after-imports", seed=found[0] if found else SeedSpec(None, str(ctx.settings.get("seed", 0))))
    launched = _launched_draws(ctx, program, bodies, source)
    if launched is not None:
        return launched
    place = _ranked(ctx, program, bodies, _first_place(ctx, program, bodies, top, library))
    return _restarted(program, _bypassed(ctx, program, bodies, place))


def _restarted(program: Program, place: Placed) -> Placed:
    """A new seeding in a notebook above a cell that restarts its kernel (after installing
    packages): the cells below run in a new process, unseeded. The place stays, with a caveat."""
    entry = program.entry
    if not isinstance(place, Place) or place.caveat or place.module not in ("", entry.module) or not entry.path.endswith(".ipynb"):
        return place
    if place.where == "after" and place.anchor is not None:
        line = place.anchor[2]
    elif place.where == "after-imports":
        line = entry.import_block_end
    else:
        return place
    later = [ev for ev in entry.events.get(MODULE_SCOPE, ()) if ev.kind == "restart" and ev.line > line]
    if not later:
        return place
    ev = later[-1]
    return replace(
        place,
        caveat=f"a later cell restarts the kernel (`{ev.data['api']}`), and the cells below it run unseeded: seed in a cell after it",
    )


def _bypassed(ctx: Context, program: Program, bodies: list, place: Placed) -> Placed:
    """A new seeding at the start of a program whose work runs in methods of its entry
    module's classes (a workspace built in `main()`), when another program of the project builds what it runs
    by name and does not pass through that start: it may run the same work unseeded, which
    the index cannot see (spec, "Fixes" 9): the place stays, with a caveat."""
    if not isinstance(place, Place) or place.beside_seed or place.caveat:
        return place
    index = ctx.index
    # the classes whose building another program could run instead of this start: the entry
    # module's own (a workspace module with its own `main()`) and their bases; a class of a
    # library module that both programs build is each program's own work
    entry = program.entry
    own = {f"{entry.module}.{q}" if entry.module else q for q in entry.classes}
    own.update(base for cls in list(own) for base in index.class_bases(cls))

    def own_method(key: str) -> bool:
        mod, scope = index.scope_of(key)
        owner = scope.rpartition(".")[0]
        return bool(owner) and owner in index.modules[mod].classes and (f"{mod}.{owner}" if mod else owner) in own

    if not any(own_method(k) for _, first, _ in bodies if first is not None for k in first.keys):
        return place
    scope = place.function if place.where == "body-start" and place.function else bodies[0][0]
    why = by_name.bypassing_entry(ctx, program, place.module or program.entry.module, scope)
    return replace(place, caveat=why) if why else place


def _first_place(ctx: Context, program: Program, bodies: list, top: str, library: bool) -> Placed:
    """Where the program's seeding goes in the bodies of its start: beside its own seeding
    call, else after the statement that binds its seed (or at the start of the body that
    has one in scope), else after the command line is parsed, with a new constant."""
    entry = program.entry
    for scope, first, items in bodies:
        # the program's own seeding statement, when it runs before the draws
        limit = first.pos if first is not None else _END
        seeding = next((it for it in items if it.kind == "seed" and it.pos < limit), None)
        if seeding is not None:
            expr = _seed_expression(ctx, entry, seeding)
            spec = SeedSpec(expr) if expr else None
            if spec is None:
                found = user_seed(ctx, program, entry, scope, seeding.pos)
                spec = found[0] if found is not None else None
            if spec is not None:
                return Place("after", anchor=seeding_block_end(ctx, entry, scope, seeding.span), seed=spec, beside_seed=True)
    for scope, first, items in bodies:
        limit = first.pos if first is not None else _END
        found = user_seed(ctx, program, entry, scope, limit)
        if found is not None:
            spec, after = found
            if after is not None:
                return Place("after", anchor=after, seed=spec)
            if scope != MODULE_SCOPE or not library:
                return at_start(scope, spec)
    if top == MODULE_SCOPE and library:
        return "the program's main body is the module level of a module other modules import, and it has no seed setting to use"
    spec = SeedSpec(None, str(ctx.settings.get("seed", 0)))
    first = bodies[0][1]
    parsed = _parsing_end(ctx, program, entry, top, first.pos if first is not None else _END)
    return Place("after", anchor=parsed, seed=spec) if parsed is not None else at_start(top, spec)


def _ranked(ctx: Context, program: Program, bodies: list, place: Placed) -> Placed:
    """A new seeding of a program that runs as several ranks and gathers what they hold
    (samples drawn under MPI, then `all_gather`): after the call that makes the process a rank,
    offset by the rank, so that the ranks do not draw the same samples (spec, "Fixes" 11).
    When the ranks start drawing before that call, or it cannot be found in the bodies of the
    program's start, or the ranks gather nothing (whether they must draw alike is not known),
    the place stays, with a caveat (every rank then gets the same seed)."""
    if not isinstance(place, Place) or place.beside_seed or place.seed is None or place.seed.offset:
        return place
    joins = {(info.module, scope): ev for info, scope, ev in program.events("rankjoin")}
    if not joins:
        return place
    gathers = [ev for _, _, ev in program.events("gather")]
    if not gathers:
        # ranks that combine what they compute some other way (an all-reduce of their
        # gradients or losses): whether each must draw its own data or noise, or all must
        # draw the same, is not in the index (spec, "Fixes" 9)
        join_ev = next(iter(joins.values()))
        return replace(
            place,
            caveat=(
                f"the program runs as several ranks (`{join_ev.data['api']}`), and every rank gets this same seed: "
                "where the ranks draw their own batches, noise or augmentations, offset it by the rank (`seed + rank`)"
            ),
        )
    ranks = catalog.load("processes")["ranks"]
    entry = program.entry
    for scope, first, _ in bodies:
        limit = first.pos if first is not None else _END
        join = _join_in(ctx, entry, scope, set(joins))
        if join is None:
            continue
        if join[:2] == limit:
            continue  # the call that joins draws too: the next body is that call's
        if join[:2] > limit:
            break
        anchor = join
        if place.seed.expr is not None:  # the same seed must be in scope after the join
            found = user_seed(ctx, program, entry, scope, limit)
            if found is None or found[0].expr != place.seed.expr:
                break
            if found[1] is not None and found[1] > join:
                anchor = found[1]
        fn = entry.functions.get(scope)
        rank = next((p for p in (fn.params or ()) if p in ranks["rank-names"]), None) if fn is not None else None
        return replace(place, where="after", anchor=anchor, function=None, seed=replace(place.seed, offset=rank or ranks["rank"]))
    join_ev = next(iter(joins.values()))
    return replace(
        place,
        caveat=(
            f"the program runs as several ranks (`{join_ev.data['api']}`) and gathers what they hold "
            f"(`{gathers[0].data['api']}`), but draws before the process knows its rank here: every rank gets this "
            "same seed; offset it by the rank where the rank is known"
        ),
    )


def _join_in(ctx: Context, info: ModuleInfo, scope: str, joins: set) -> Optional[tuple]:
    """The span of the first call in `scope` that makes the process a rank: a join call, or a
    call of project code that reaches one (`dist_util.setup_dist()`)."""
    index = ctx.index
    found = [(ev.line, ev.col, ev.end_line, ev.end_col) for ev in info.events.get(scope, ()) if ev.kind == "rankjoin"]
    for call, keys in index.callees(info, scope):
        if not is_reference(call) and any(_reaches(ctx, k, joins) for k in keys):
            found.append(tuple(call[2:6]))
    return min(found) if found else None


def _reaches(ctx: Context, key: str, targets: set, depth: int = 6) -> bool:
    """Whether project function `key` runs one of the scopes `targets` (through `depth` calls)."""
    index = ctx.index
    todo, seen = [(key, 0)], {key}
    while todo:
        k, d = todo.pop()
        ref = index.scope_of(k)
        if ref in targets:
            return True
        if d >= depth or ref[0] not in index.modules:
            continue
        for call, keys in index.callees(index.modules[ref[0]], ref[1]):
            if is_reference(call):
                continue
            for nk in keys:
                if nk not in seen:
                    seen.add(nk)
                    todo.append((nk, d + 1))
    return False


def _parsing_end(ctx: Context, program: Program, info: ModuleInfo, scope: str, limit: tuple) -> Optional[tuple]:
    """The span of the last statement of a body that binds the parsed command line before
    `limit` (`args = parser.parse_args()`): a program's seeding goes after it (spec "Fixes" 3)."""
    spans = [span for _, span in seed_settings.parsed_names(info, scope, _settings(ctx, program).parser_functions) if (span[0], span[1]) < limit]
    return max(spans) if spans else None


def _launched_draws(ctx: Context, program: Program, bodies: list, source: str) -> Optional[Placed]:
    """Where the seeding goes when the first draw happens in a process that a launcher
    (`mp.spawn`, submitit) starts: at the start of the function it runs (or beside the torch
    seed there), since a seed set in the parent does not pass to that process. None when
    the draws start here."""
    launches = training_of(ctx, program).launches or draw_launches(ctx, program)
    if not launches:
        return None
    launch = launches[0]
    ev = launch.event
    start, end = (ev.line, ev.col), (ev.end_line, ev.end_col)
    # the first draw is the launch itself, or what it is handed (`submit(Job(args))`); or the
    # path to the draws ends in the body that launches (the function handed over draws)
    firsts = [first.pos[:2] for _, first, _ in bodies if first is not None]
    if firsts and not any(start <= at <= end for at in firsts) and not _launched_here(program, launch, bodies):
        return None
    mod, scope = ctx.index.scope_of(launch.target)
    tinfo = ctx.index.modules[mod]
    beside = _beside_launched_seed(ctx, program, tinfo, scope, source)
    if beside is not None:
        return beside
    found = user_seed(ctx, program, tinfo, scope, _END, local_first=True)
    if found is None and tinfo is not program.entry:
        return (
            f"the draws run in the processes that start `{launch.name}` in {tinfo.path}, "
            "and no seed of the program is in scope there"
        )
    spec = found[0] if found is not None else SeedSpec(None, str(ctx.settings.get("seed", 0)))
    rank = launched_rank(ctx, launch)
    if rank is not None and spec is not INITIAL_SEED:
        spec = replace(spec, offset=rank)
    path = tinfo.path if tinfo is not program.entry else ""
    if found is not None and found[1] is not None:
        return Place("after", anchor=found[1], seed=spec, module=tinfo.module, path=path)
    return Place("body-start", function=scope, seed=spec, module=tinfo.module, path=path)


def launched_rank(ctx: Context, launch) -> Optional[str]:
    """The rank of the process a launcher starts, as the function it runs names it: the first
    parameter of a function `torch.multiprocessing.spawn` runs (it passes the process index
    there; catalog `processes.toml`, `rank-launchers`). Each rank then draws its own stream
    (`seed + rank`): the samples, noise and augmentations of ranks that are gathered or
    compared must differ (DDP broadcasts the initial weights from rank 0)."""
    if launch.event.data.get("api") not in catalog.load("processes").get("rank-launchers", ()):
        return None
    fn = ctx.index.functions.get(launch.target)
    if fn is None or not fn.params:
        return None
    params = list(fn.params)
    if fn.class_name is not None and params[0] in ("self", "cls"):
        params = params[1:]
    return params[0] if params else None


def _launched_here(program: Program, launch, bodies: list) -> bool:
    """Whether the innermost body of the chain (in the entry module) makes the launch and
    draws nothing itself, or draws by calling the launched function directly as well (one
    GPU: `worker(0, args)`, several: `mp.spawn(worker, ...)`): its start is where both go."""
    scope, first, _ = bodies[-1]
    if first is not None and launch.target in first.keys:
        return True
    if first is not None or launch.info is not program.entry:
        return False
    fn = launch.info.functions.get(scope)
    line = launch.event.line
    if fn is None:
        return scope in (MODULE_SCOPE, MAIN_SCOPE)
    return fn.line <= line <= (fn.end_line or fn.line)


def _beside_launched_seed(ctx: Context, program: Program, info: ModuleInfo, scope: str, source: str) -> Optional[Place]:
    """Next to the program's torch seeding call in the launched process, when it runs before
    that process draws from `source` (a submitit job's `__call__` runs `train.main(args)`,
    which seeds torch): where the script run directly gets the same statement."""
    from repro_lint.analysis import flag_placement  # (it asks this module where seeds go)

    site = flag_placement.launched_seed_site(ctx, program, info, scope)
    if site is None:
        return None
    if any(it.kind == "draw" and source in it.sources and it.pos < site.pos for it in body_items(ctx, site.info, (site.scope,))):
        return None  # drawn there before the seed
    if isinstance(site.at, Event):
        expr = site.at.data.get("expr")
    else:  # a call of a seeding helper (`utils.fix_random_seeds(args.seed)`): the seed in scope there
        found = user_seed(ctx, program, site.info, site.scope, site.pos)
        expr = found[0].expr if found is not None else None
    if not expr:
        return None
    path = site.info.path if site.info is not program.entry else ""
    anchor = seeding_block_end(ctx, site.info, site.scope, site.anchor)
    return Place("after", anchor=anchor, seed=SeedSpec(expr), beside_seed=True, module=site.info.module, path=path)


def seeding_block_end(ctx: Context, info: ModuleInfo, scope: str, span: tuple) -> tuple:
    """The last statement of the run of seeding statements that starts at `span` (the
    statement of the expression there): `torch.manual_seed(s)` followed on the next lines by
    `torch.cuda.manual_seed(s)` and `np.random.seed(s)` is one block, which inserted
    statements follow rather than split. Statements run together when each starts on the
    line after the previous one ends, in the same scope and under the same condition."""
    index = ctx.index
    start = next((ev for ev in info.events.get(scope, ()) if (ev.line, ev.col) == (span[0], span[1])), None)
    guard = start.data.get("guard") if start is not None else None
    seeds = sorted(
        [(ev.line, (ev.line, ev.col, ev.end_line, ev.end_col)) for ev in info.events.get(scope, ())
         if ev.kind in ("seed", "seedcand") and ev.data.get("guard") == guard]
        + [(c[2], tuple(c[2:6])) for c, keys in index.callees(info, scope)
           if not is_reference(c) and any(_seeding_helper(ctx, k) for k in keys)]
    )
    best = span
    for line, found in seeds:
        if line == best[2] + 1:
            best = found
        elif line > best[2] + 1:
            break
    return best


def _seeding_helper(ctx: Context, key: str) -> bool:
    """Whether a call of project function `key` may belong to a block of seeding statements:
    it seeds, and neither draws nor trains (not `main()`, whose DataLoader workers seed
    through `worker_init_fn` while it trains)."""
    effects = ctx.index.effects(key)
    return bool(effects.seeds) and not effects.draws and not trains(ctx, key)


# -- where determinism flags go -----------------------------------------------------------

def in_shared_package(ctx: Context, program: Program, place: Placed) -> Placed:
    """A place in a module of the project's installable package (a `src/` layout), not the
    entry module: what goes there runs in every program that uses the package, the users'
    own included. The place stays, with a caveat (spec, "Fixes" 9)."""
    if not isinstance(place, Place) or not place.module or place.module == program.entry.module:
        return place
    info = ctx.index.modules.get(place.module)
    root = ctx.index.root
    if info is None or root is None or info.module.startswith("src."):
        return place  # (a `src/` folder that is itself a package is the project's own code)
    try:
        parts = Path(info.path).resolve().relative_to(Path(root).resolve()).parts
    except ValueError:
        return place
    if len(parts) < 3 or parts[0] != "src":
        return place
    words = (
        f"the statements go into `{'/'.join(parts)}`, a module of the installable package `{parts[1]}`: every program "
        "that uses the package, its users' own included, gets them (a setting of the package may be wanted instead)"
    )
    return replace(place, caveat=f"{place.caveat}; {words}" if place.caveat else words)


def in_entry(program: Program, place: Placed) -> Placed:
    """A place the model worked out without naming its module is in the entry module: said
    explicitly, so that a finding reported in another file still edits the entry module."""
    if isinstance(place, Place) and not place.module:
        return replace(place, module=program.entry.module, path=program.entry.path)
    return place
