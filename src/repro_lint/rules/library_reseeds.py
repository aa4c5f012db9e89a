"""RPL106: a global seeding call with a fixed seed in code that runs in the middle of a program,
away from where the program seeds (the facts are in `facts/families/seed_values.py`).

Which seeding is the program's own is read from its entry path: the first seeding of a source
that the entry module's main body makes (itself, or through the project functions it calls)
before anything draws from it. A later seeding call with a fixed seed resets that choice. A seeding helper (a function whose name says it seeds, or that makes
nothing but seeding calls) seeds whatever calls it, on purpose. What is left is a reset of the
global stream by code the program calls mid-run: a leftover `torch.manual_seed(0)` in a
renderer's sampling method, a dataset that calls `random.seed(1234)` when it is built.
"""

from __future__ import annotations

import functools
from typing import Iterable, Optional

from repro_lint.analysis import placement
from repro_lint.analysis.context import Context, sentences, unfixed
from repro_lint.core import catalog
from repro_lint.core.edits import WrapStatements
from repro_lint.core.findings import Finding, Fix
from repro_lint.facts.model import MAIN_SCOPE, Event, ModuleInfo, is_reference
from repro_lint.index.program import Program
from repro_lint.rules.registry import rule

_LABELS = {"python": "Python's `random` generator", "numpy": "numpy's global RNG", "torch": "torch's global RNG"}
# module name parts of a package's test support (`utils/testing_utils.py`): only tests run it
_TEST_SUPPORT = ("testing", "test_utils", "testing_utils", "tests", "test")


@functools.lru_cache(maxsize=1)
def _fork_rng() -> str:
    return catalog.load("seed_values")["reseeding"]["fork-rng"]


_MAX_DEPTH = 12  # calls followed down the entry path


def _resets_program_seed(ctx: Context, program: Program, info: ModuleInfo, scope: str, ev: Event, sources: tuple) -> bool:
    """Whether the seeding call `ev` in `scope` resets a stream the program has seeded itself
    and goes on drawing from: on the program's entry path, the first thing that touches one of
    its sources is another seeding (the program's own), and the program draws from that source
    in code other than the reseeding function (and what it calls). When it is the first to
    seed (the program's seeder, or a helper that seeds before it builds), or the program draws
    before any seed, it does not override the program's choice; when nothing else draws from
    the source, the reset changes nothing."""
    here = (info.module, scope)
    return any(
        _first_touch(ctx, program, here, ev, source) == "other seed" and _draws_elsewhere(ctx, program, here, source)
        for source in sources or ctx.index.m.sources
    )


def _draws_elsewhere(ctx: Context, program: Program, here: tuple, source: str) -> bool:
    draws = program.draws().get(source, ())
    if not draws:
        return False
    local = set(ctx.index.reach([here], include_imports=False))
    return any((dinfo.module, dscope) not in local for dinfo, dscope, _ in draws)


def _body_items(ctx: Context, info: ModuleInfo, body: str) -> list:
    """`placement.body_items` of one body, worked out once per check (the programs that reach
    a library function share their paths)."""
    table = ctx.__dict__.setdefault("_reseed_bodies", {})
    key = (info.module, body)
    hit = table.get(key)
    if hit is None:
        hit = table[key] = placement.body_items(ctx, info, (body,))
    return hit


def _first_touch(ctx: Context, program: Program, here: tuple, ev: Event, source: str) -> str:
    """What first touches `source` on the program's entry path: "this" (the seeding call
    `ev`), "other seed" (the program's own seeding: a seeding call in the entry module, a
    framework's seeding helper or a project seeding helper), "draw", or "unknown". The path
    starts at the entry module's main body and follows the call that first touches the
    source (or, when the body touches none, the function it hands to a launcher,
    `mp.spawn(main, ...)`), down to where `here` is reached."""
    index = ctx.index
    entry = program.entry.module
    mod, body = entry, placement.start_body(program)
    for _ in range(_MAX_DEPTH):
        binfo = index.modules.get(mod)
        if binfo is None:
            return "unknown"
        items = [it for it in _body_items(ctx, binfo, body) if source in it.sources]
        if not items:
            handed = [
                index.scope_of(keys[0]) for call, keys in index.callees(binfo, body)
                if is_reference(call) and len(keys) == 1
                and here in index.reach([index.scope_of(keys[0])], include_imports=False)
            ]
            if not handed:
                return "unknown"
            mod, body = handed[0]
            continue
        first = items[0]
        if first.kind != "seed":
            return "draw"
        if isinstance(first.at, Event):
            if (mod, body) == here and first.pos == ev.pos:
                return "this"
            fn = binfo.functions.get(body)
            own = mod == entry or first.at.data.get("framework") or fn is not None and index.m.looks_like_seeder(fn.name)
            return "other seed" if own else "unknown"
        scopes = [index.scope_of(k) for k in first.keys]
        if here not in index.reach(scopes, include_imports=False):
            seeders = all(index.m.looks_like_seeder(k) for k in first.keys)
            return "other seed" if seeders else "unknown"
        if len(scopes) != 1:
            return "unknown"  # reached through several callees at once
        mod, body = scopes[0]
    return "unknown"


def _entry_body(program: Program, info: ModuleInfo, scope: str) -> bool:
    """Whether `scope` is the program's main body (its Hydra main, `__main__` block or module level)."""
    return info is program.entry and scope == placement.start_body(program)


def _test_support(info: ModuleInfo) -> bool:
    parts = info.module.replace("-", "_").split(".")
    return info.is_test or any(p in _TEST_SUPPORT or p.startswith("test_") or p.endswith("_test") for p in parts)


@rule("RPL106", per="module", apart=True)
def library_reseeds_global(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    if _test_support(info):
        return
    for scope, ev in info.all_events("reseed"):
        data = ev.data
        if data.get("local") or data.get("seeder") or data.get("value") not in ("literal", "constant"):
            continue
        sources = tuple(data.get("sources") or ())
        programs = placement.programs_reaching(ctx, info, scope)
        mid_run = [p for p in programs if not _entry_body(p, info, scope) and _resets_program_seed(ctx, p, info, scope, ev, sources)]
        if programs and not mid_run:
            continue  # the script's own seeding, or the seeding the programs start with
        if not programs and not placement.is_library(ctx, info):
            continue  # neither a program nor the package's code runs it
        if not programs and (info.module, scope) in ctx.index.reach([(info.module, MAIN_SCOPE)], include_imports=False):
            continue  # the module's own `__main__` runs it: the seed of that script, which others only import
        yield _finding(ctx, info, ev, sources, mid_run)


def _finding(ctx: Context, info: ModuleInfo, ev: Event, sources: tuple, programs: list) -> Finding:
    data = ev.data
    api = data["api"]
    labels = [_LABELS.get(s, s) for s in sources] or ["every global RNG"]
    rngs = labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"
    where = f"`{data['function']}`"
    if programs:
        more = f" (and {len(programs) - 1} other program{'s' if len(programs) > 2 else ''})" if len(programs) > 1 else ""
        runs = f"while {programs[0].entry.path} runs{more}"
    else:
        runs = "in whatever program calls it"
    message = f"`{api}` with a fixed seed in {where} resets {rngs} {runs}"
    related: list = []
    fix, why = _fix(info, data, sources)
    help = sentences(
        "every call puts the program's stream back to the same point, whatever seed the program chose: the draws "
        "after it repeat, and the program's own seed no longer decides them; keep the seed local "
        "(`with torch.random.fork_rng():` around it and the draws it is for, or a generator of their own: "
        "`torch.Generator().manual_seed(0)`, `np.random.default_rng(0)`, `random.Random(0)`), or remove it if it "
        "is left over from testing",
        unfixed(why) if fix is None else "",
    )
    return ctx.finding("RPL106", info, ev, message, related, fix, help=help)


def _fix(info: ModuleInfo, data: dict, sources: tuple) -> tuple[Optional[Fix], str]:
    why = placement.not_editable(info)
    if why:
        return None, why
    if set(sources) != {"torch"}:
        return None, "`torch.random.fork_rng()` keeps only torch's generators local; give this code a generator of its own"
    if not data.get("block"):
        return None, "the statements after it are not a block the fix can wrap"
    if data.get("leaves"):
        return None, "the block after it yields, and the caller would run inside the forked state"
    edit = WrapStatements(tuple(tuple(s) for s in data["block"]), f"with {_fork_rng()}:")
    return Fix(
        "run the seeding call and the rest of its block inside `with torch.random.fork_rng():`, which restores the "
        "program's torch generators when the block ends", "unsafe", (edit,),
    ), ""
