"""Where statements that set determinism flags go (the spec's "Flags go with the torch seed, in
the process that trains, before training"): right after the program's torch seeding statement,
in its block and under its condition; at the start of the function a launcher (`mp.spawn`,
submitit) runs when training is handed off; deterministic algorithms after the cuDNN flags;
an environment variable read when CUDA starts after the entry module's imports. Seeding
calls and seeds are `placement.py`'s.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from typing import Any, Optional

from repro_lint.index.program import Program
from repro_lint.index.typed_reach import call_seeds
from repro_lint.facts.model import MAIN_SCOPE, MODULE_SCOPE, Event, ModuleInfo, is_reference
from repro_lint.analysis.context import Context, program_cache
from repro_lint.analysis.placement import (
    Place,
    Placed,
    at_start,
    in_entry,
    in_shared_package,
    is_library,
    seeding_block_end,
    seeding_place,
    start_body,
)
from repro_lint.analysis.training import training_of


@dataclass(frozen=True)
class Site:
    """The program's torch seeding statement."""

    info: ModuleInfo
    scope: str
    pos: tuple
    at: object  # Event or span: where findings about the program's determinism are reported
    anchor: tuple  # span to insert after (an expression inside the statement keeps its block)
    guard: Optional[tuple]  # (condition text, names) the statement runs under, if any


# Answers per program of `entry_scopes` and `torch_seed_site`, by their other arguments:
# several rules and each finding's location ask them for the same program.
_PER_PROGRAM: "weakref.WeakKeyDictionary[Program, dict]" = program_cache()


def _memo(program: Program) -> dict:
    memo = _PER_PROGRAM.get(program)
    if memo is None:
        memo = _PER_PROGRAM[program] = {}
    return memo


def entry_scopes(program: Program, info: Optional[ModuleInfo] = None, starts: Optional[list] = None) -> tuple[str, ...]:
    """Scopes of a module in the program, outermost first: the module body, the `__main__`
    block and the Hydra main (or `starts`), then the functions they call, and so on, so that
    the call of a seeding helper wins over the seeding call inside it."""
    info = info or program.entry
    memo = _memo(program)
    key = ("scopes", info.module, tuple(starts) if starts is not None else None)
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = tuple(_entry_scopes(program, info, starts))
    return hit


def _entry_scopes(program: Program, info: ModuleInfo, starts: Optional[list]) -> list[str]:
    reached = {scope for mod, scope in program.scopes if mod == info.module}
    order = [s for s in (starts or (MODULE_SCOPE, MAIN_SCOPE, *info.hydra_mains)) if s in reached]
    seen = set(order)
    i = 0
    while i < len(order):
        for _, keys in program.index.callees(info, order[i]):
            for key in keys:
                mod, scope = program.index.scope_of(key)
                if mod == info.module and scope in reached and scope not in seen:
                    seen.add(scope)
                    order.append(scope)
        i += 1
    if starts is None:
        order += sorted(reached - seen)
    return order


def _seeds_torch_only(ctx: Context, key: str) -> bool:
    """A seeding helper for torch: it seeds torch and neither draws nor trains (unlike
    `main()`, which seeds and then trains: flags after a call of it come after the training)."""
    index = ctx.index
    effects = index.effects(key)
    if "torch" not in effects.seeds or effects.draws:
        return False
    memo = _TRAINING_CALLS.setdefault(index, {})
    trains = memo.get(key)
    if trains is None:
        trains = memo[key] = index.trains(index.reach([index.scope_of(key)], include_imports=False))
    return not trains


_TORCH = frozenset(["torch"])

# Per index: whether calling a function (by key) reaches training.
_TRAINING_CALLS: "weakref.WeakKeyDictionary[Any, dict[str, bool]]" = weakref.WeakKeyDictionary()


def main_functions(ctx: Context, program: Program) -> frozenset:
    """The program's main functions: the Hydra main and the entry module's functions its
    module body and `__main__` block call, but for seed-named helpers (`set_seed()`). A main
    function that seeds torch and draws nothing itself (it hands the training to other
    processes) is not a torch seeding helper."""
    memo = _memo(program)
    hit = memo.get("mains")
    if hit is None:
        hit = memo["mains"] = frozenset(_main_functions(ctx, program))
    return hit


def _main_functions(ctx: Context, program: Program) -> set:
    index = ctx.index
    entry = program.entry
    out = {(entry.module, q) for q in entry.hydra_mains}
    for scope in (MODULE_SCOPE, MAIN_SCOPE):
        for call, keys in index.callees(entry, scope):
            for key in keys:
                ref = index.scope_of(key)
                if ref[0] == entry.module and not index.m.looks_like_seeder(key):
                    out.add(ref)
    return out


def torch_seed_site(
    ctx: Context, program: Program, info: Optional[ModuleInfo] = None, starts: Optional[list] = None, effective: bool = True
) -> Optional[Site]:
    """The torch seeding statement of the program in the entry module (or `info`, from
    `starts`): a seeding call, or a call of a project seeder or framework helper that seeds
    torch; in the outermost scope that has one. With `effective`, only one that takes effect
    for the training (before training starts, in the process that trains)."""
    info = info or program.entry
    memo = _memo(program)
    key = ("site", info.module, tuple(starts) if starts is not None else None, effective)
    if key not in memo:
        memo[key] = _torch_seed_site(ctx, program, info, starts, effective)
    return memo[key]


def _torch_seed_site(ctx: Context, program: Program, info: ModuleInfo, starts: Optional[list], effective: bool) -> Optional[Site]:
    index = ctx.index
    training = training_of(ctx, program)
    bodies = main_functions(ctx, program)
    for scope in entry_scopes(program, info, starts):
        best: Optional[Site] = None
        for ev in info.events.get(scope, ()):
            if ev.kind in ("seed", "seedcand", "configload") and "torch" in index.seed_sources(info, ev):
                if (not effective or training.no_effect(info, scope, ev) is None) and (best is None or ev.pos < best.pos):
                    best = Site(info, scope, ev.pos, ev, (ev.line, ev.col, ev.end_line, ev.end_col), ev.data.get("guard"))
        for call, keys in index.callees(info, scope):
            if is_reference(call):
                continue
            if any(index.scope_of(k) not in bodies and _seeds_torch_only(ctx, k) for k in keys) and call_seeds(
                index, info, call, keys, _TORCH
            ):
                pos = (call[2], call[3])
                if (best is None or pos < best.pos) and not (effective and training.no_effect_at(info, scope, pos)):
                    guard = next((ev.data.get("guard") for ev in info.events.get(scope, ()) if ev.kind == "seedcand" and ev.pos == pos), None)
                    best = Site(info, scope, pos, tuple(call[2:6]), tuple(call[2:6]), guard)
        if best is not None:
            return best
    return None


_CUDNN_FLAGS = ("torch.backends.cudnn.deterministic", "torch.backends.cudnn.benchmark")


_FLAGS_PLACES: "weakref.WeakKeyDictionary[Program, Placed]" = program_cache()


def flags_place(ctx: Context, program: Program, after_flags: bool = False) -> Placed:
    """Where statements that set determinism flags go; with `after_flags`, after the cuDNN
    flags that already follow the torch seed in its block, with no other statement between
    (where deterministic algorithms go),
    noting the user's switch when one of them sets `cudnn.deterministic` from a variable."""
    place = _FLAGS_PLACES.get(program)
    if place is None:  # RPL401 and RPL403 both ask
        place = _FLAGS_PLACES[program] = in_shared_package(ctx, program, in_entry(program, _flags_place(ctx, program)))
    if after_flags:
        user = _user_cudnn_flag(ctx, program)
        if user is not None:
            return user
    if after_flags and isinstance(place, Place) and place.where in ("body-start", "main-start"):
        return _after_start_flags(ctx, program, place)
    if not after_flags or isinstance(place, str) or place.where != "after" or place.anchor is None:
        return place
    index = ctx.index
    info = index.modules.get(place.module) if place.module else program.entry
    training = training_of(ctx, program)
    anchor_pos = (place.anchor[0], place.anchor[1])
    for scope, events in info.events.items():
        if not any((ev.line, ev.col) == anchor_pos for ev in events) and not any(
            (c[2], c[3]) == anchor_pos for c in info.calls.get(scope, ())
        ):
            continue
        guard = next((ev.data.get("guard") for ev in events if (ev.line, ev.col) == anchor_pos), None)
        # only the flags that follow the seed as one group: a cuDNN flag set further down
        # (before the training loop, after the model is built) is not where a reader of the
        # seeding looks, and the flags this rule's neighbours add go with the seed
        others = sorted(
            [(c[2], c[3]) for c in info.calls.get(scope, ())] + [ev.pos for ev in events if ev.kind != "flag"]
        )
        end = (place.anchor[2], place.anchor[3])
        for ev in events:
            if (
                ev.kind == "flag" and ev.data["name"] in _CUDNN_FLAGS and ev.pos > anchor_pos
                and ev.data.get("guard") == guard and training.no_effect(info, scope, ev) is None
            ):
                if any(end <= pos < ev.pos for pos in others):
                    break  # a statement that is not a flag comes between
                place = replace(place, anchor=(ev.line, ev.col, ev.end_line, ev.end_col))
                end = (ev.end_line, ev.end_col)
                if ev.data["name"] == _CUDNN_FLAGS[0] and ev.data.get("value_text"):
                    place = replace(place, switch=ev.data["value_text"])
        break
    return place


def _user_cudnn_flag(ctx: Context, program: Program) -> Optional[Place]:
    """Right after the program's own `cudnn.deterministic = ...` in the entry module, where it
    takes effect: deterministic algorithms go with the cuDNN flags, wherever the torch seed is
    (a module-level flag, with the seed in a helper that runs several times)."""
    entry = program.entry
    training = training_of(ctx, program)
    for info, scope, ev in program.events("flag"):
        if info is not entry or ev.data["name"] != _CUDNN_FLAGS[0] or ev.data["value"] is False:
            continue
        if training.no_effect(info, scope, ev) is not None:
            continue
        place = Place("after", anchor=(ev.line, ev.col, ev.end_line, ev.end_col), module=entry.module, path=entry.path)
        # after `benchmark = False` too when it follows in the same block
        for other in info.events.get(scope, ()):
            if (
                other.kind == "flag" and other.data["name"] == _CUDNN_FLAGS[1] and other.pos > ev.pos
                and other.data.get("guard") == ev.data.get("guard") and training.no_effect(info, scope, other) is None
            ):
                place = replace(place, anchor=(other.line, other.col, other.end_line, other.end_col))
        if ev.data.get("value_text"):
            place = replace(place, switch=ev.data["value_text"])
        return place
    return None


def _after_start_flags(ctx: Context, program: Program, place: Place) -> Place:
    """A place at the start of a function, moved after the cuDNN flags that an earlier fix
    (or the user) put there, so that deterministic algorithms follow them as in one run."""
    info = ctx.index.modules.get(place.module) if place.module else program.entry
    if info is None:
        return place
    training = training_of(ctx, program)
    scope = place.function if place.where == "body-start" else MAIN_SCOPE
    flags = [
        ev for ev in info.events.get(scope or "", ())
        if ev.kind == "flag" and ev.data["name"] in _CUDNN_FLAGS and _guard_text(ev) == place.guard
        and training.no_effect(info, scope or "", ev) is None
    ]
    if not flags:
        return place
    last = max(flags, key=lambda ev: ev.pos)
    # after a statement inside the user's `if`, the new one is under that condition already
    return replace(place, where="after", anchor=(last.line, last.col, last.end_line, last.end_col), function=None, guard="")


def _guard_text(ev: Event) -> Optional[str]:
    """The condition an event runs under ("" for none; None in an `else` branch)."""
    guard = ev.data.get("guard", ("",))
    return None if guard is None else guard[0]


def launched_seed_site(ctx: Context, program: Program, info: ModuleInfo, scope: str) -> Optional[Site]:
    """The torch seeding statement that takes effect in a launched process: in the launched
    function's module, else in a function of another module that it calls (a submitit job's
    `__call__` that runs `train.main(args)`, which seeds): the flags then go with that seed,
    where the program run directly gets them too, not a second time at the job's start."""
    site = torch_seed_site(ctx, program, info, [scope])
    if site is not None:
        return site
    return _seed_site_called(ctx, program, info, [scope])


def _seed_site_called(ctx: Context, program: Program, info: ModuleInfo, starts: list) -> Optional[Site]:
    """The torch seeding statement in a function of another module that the scopes `starts`
    of `info` call (`training_function(config)` of an imported script, which seeds)."""
    index = ctx.index
    for inner in entry_scopes(program, info, starts):
        for call, keys in index.callees(info, inner):
            if is_reference(call) or not call_seeds(index, info, call, keys, _TORCH):
                continue  # (handed over; or seeds torch only for some of the objects it may be made on)
            for key in keys:
                mod, fn = index.scope_of(key)
                if mod != info.module:
                    site = torch_seed_site(ctx, program, index.modules[mod], [fn])
                    if site is not None:
                        return site
    return None


def _library_module_level(ctx: Context, site: Site) -> bool:
    """A statement at the module level of a module other modules import (never a place)."""
    return site.scope in (MODULE_SCOPE, MAIN_SCOPE) and is_library(ctx, site.info)


def _flags_place(ctx: Context, program: Program) -> Placed:
    index = ctx.index
    entry = program.entry
    training = training_of(ctx, program)
    if not training.launches and training.unknown_launches and training.start_step is None:
        # nothing trains on the launcher's own path: the job it submits does, elsewhere
        info, ev = training.unknown_launches[0]
        return (
            f"the program hands a job to `{ev.data['api']}` ({info.path}:{ev.line}) whose callable is not known here, "
            "and trains nowhere else: set the flags at the start of the function the job runs"
        )
    hydra = entry.hydra_mains[0] if entry.hydra_mains else None
    if training.launches:
        launch = training.launches[0]
        mod, scope = index.scope_of(launch.target)
        tinfo = index.modules[mod]
        path = tinfo.path if tinfo is not entry else ""
        inner = launched_seed_site(ctx, program, tinfo, scope)
        if inner is not None:
            sinfo = inner.info
            return Place(
                "after", anchor=seeding_block_end(ctx, sinfo, inner.scope, inner.anchor), module=sinfo.module,
                path=sinfo.path if sinfo is not entry else "",
            )
        site = torch_seed_site(ctx, program, effective=False)
        guard = ""
        fn = tinfo.functions[scope]
        if site is not None and site.guard and site.guard[1] <= set(fn.params or ()):
            guard = site.guard[0]
        return Place("body-start", function=scope, guard=guard, module=tinfo.module, path=path)
    site = torch_seed_site(ctx, program)
    if site is not None:
        if hydra is not None and site.scope in (MODULE_SCOPE, MAIN_SCOPE):
            return Place("body-start", function=hydra)
        return Place("after", anchor=seeding_block_end(ctx, site.info, site.scope, site.anchor))
    # seeded in a function of another module the program calls: the flags go with that seed,
    # where every program that runs it gets them once
    site = _seed_site_called(ctx, program, entry, [MODULE_SCOPE, MAIN_SCOPE, *entry.hydra_mains])
    if site is not None and hydra is None and not _library_module_level(ctx, site):
        return Place(
            "after", anchor=seeding_block_end(ctx, site.info, site.scope, site.anchor), module=site.info.module,
            path=site.info.path if site.info is not entry else "",
        )
    place = seeding_place(ctx, program, "torch")
    if isinstance(place, Place):
        return replace(place, seed=None)
    if hydra is not None:
        return Place("body-start", function=hydra)
    return place


def environment_place(ctx: Context, program: Program) -> Placed:
    """Where an environment variable read when CUDA starts is set: after the entry module's
    imports, or at the start of its main body when other modules import it."""
    return in_entry(program, _environment_place(ctx, program))




def _environment_place(ctx: Context, program: Program) -> Placed:
    entry = program.entry
    if not is_library(ctx, entry):
        return Place("after-imports")
    top = start_body(program)
    if top == MODULE_SCOPE:
        return "the entry module is imported by other modules: setting the variable at its module level would change their processes too"
    return at_start(top, None)
