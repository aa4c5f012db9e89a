"""RPL1xx: seeding of the global random number generators (RPL101–RPL104)."""

from __future__ import annotations

import ast
from typing import Iterable, Optional

from repro_lint import catalog
from repro_lint.findings import Finding, Fix, Related
from repro_lint.fix.edits import AddKeyword, InsertStatements, SeedSpec
from repro_lint.index import Program
from repro_lint.model import MAIN_SCOPE, MODULE_SCOPE, REF_CALL, Event, ModuleInfo
from repro_lint.rules import Context, location, rule

MAX_RELATED = 20


def source_label(source: str) -> str:
    return {"python": "Python `random`", "numpy": "numpy's global", "torch": "torch's global"}.get(source, source)


# -- seed expression and insertion point, shared by every fix that needs a seed --------
def seed_spec(
    ctx: Context, program: Optional[Program], info: ModuleInfo, scope: Optional[str], at: Optional[tuple] = None
) -> SeedSpec:
    """The seed expression a fix in `scope` of `info` can use.

    Reuses, in order: the seed expression of a seeding call of the program in the same
    scope of the entry module (before position `at` when given, so that the expression is
    defined there), a `seed` parameter of the function, a module constant named like a
    seed; else the fix adds `SEED = <configured seed>` after the imports.
    """
    names = catalog.load("rng")["seed-names"]
    if program is not None and scope is not None:
        for ev in info.events.get(scope, ()):
            if ev.kind == "seed" and ev.data.get("expr") and program.entry is info and (at is None or ev.pos < tuple(at[:2])):
                return SeedSpec(ev.data["expr"])
    fn = info.functions.get(scope or "")
    if fn is not None:
        for name in names:
            if name in fn.params:
                return SeedSpec(name)
    for name in names:
        if isinstance(info.constants.get(name), int) and not isinstance(info.constants.get(name), bool):
            return SeedSpec(name)
    return SeedSpec(None, str(ctx.settings.get("seed", 0)))


def main_body(ctx: Context, program: Program) -> tuple[str, Optional[str]]:
    """Where seeding statements go in an entry point: (`where`, function qual or None)."""
    entry = program.entry
    if entry.hydra_mains:
        return "body-start", entry.hydra_mains[0]
    if entry.main_block is not None:
        prefix = entry.module + "." if entry.module else ""
        for call in entry.calls.get(MAIN_SCOPE, ()):
            target = call[0]
            if target and target.startswith(prefix) and target[len(prefix):] in entry.functions:
                return "body-start", target[len(prefix):]
        return "main-start", None
    return "after-imports", None


def _portable(expr: str, info: ModuleInfo) -> bool:
    """A seed expression valid anywhere in the module: a literal or a module constant."""
    try:
        ast.literal_eval(expr)
        return True
    except (ValueError, SyntaxError):
        return expr in info.constants


def _drawn_before(ctx: Context, info: ModuleInfo, scopes: tuple, source: str, pos: tuple) -> bool:
    """Whether the body made of `scopes` draws from `source` (directly or through project
    calls) before `pos`: a seeding call placed at `pos` would then come too late (RPL103)."""
    return any(kind == "draw" and source in srcs and at < pos for at, kind, srcs, _, _ in _body_items(ctx, info, scopes))


def _body_scopes(scope: str) -> tuple:
    return (MODULE_SCOPE, MAIN_SCOPE) if scope in (MODULE_SCOPE, MAIN_SCOPE) else (scope,)


def seeding_fix(ctx: Context, program: Program, source: str) -> Optional[Fix]:
    """Insert the seeding call of one missing source where the program starts.

    Next to the entry module's first seeding call, with its seed expression, when no draw of
    that source precedes it in its body; else at the start of the main body (see
    `main_body`), or right after the imports when the module draws from the source at
    module level before the main body runs."""
    code = catalog.load("rng")["seeding-code"][source]
    order = list(ctx.index.m.sources).index(source) if source in ctx.index.m.sources else len(ctx.index.m.sources)
    entry = program.entry
    key = f"seed:{source}"
    existing = sorted(
        (
            (scope, ev)
            for scope, ev in entry.all_events("seed")
            if (entry.module, scope) in program.scope_set and ev.data.get("expr")
        ),
        key=lambda se: se[1].pos,
    )
    if existing:
        scope, ev = existing[0]
        if not _drawn_before(ctx, entry, _body_scopes(scope), source, ev.pos):
            edit = InsertStatements("after", code, anchor=(ev.line, ev.col, ev.end_line, ev.end_col), key=key, order=order)
            return Fix(f"seed {source} next to the program's seeding call", "safe", (edit, SeedSpec(ev.data["expr"])))
    where, function = main_body(ctx, program)
    if where != "after-imports":
        start = _main_body_entry(ctx, program, function)
        if _drawn_before(ctx, entry, (MODULE_SCOPE, MAIN_SCOPE), source, start):
            where, function = "after-imports", None
    scope = function if function else (MAIN_SCOPE if where == "main-start" else MODULE_SCOPE)
    spec = seed_spec(ctx, None, entry, scope)
    if existing and _portable(existing[0][1].data["expr"], entry):
        spec = SeedSpec(existing[0][1].data["expr"])
    edit = InsertStatements(where, code, function=function, key=key, order=order)
    return Fix(f"seed {source} at the start of the program", "safe", (edit, spec))


def _main_body_entry(ctx: Context, program: Program, function: Optional[str]) -> tuple:
    """Where the module-level code hands over to the main body: the first call of `function`
    at module level or in the `__main__` block, else the `__main__` block itself."""
    entry = program.entry
    prefix = entry.module + "." if entry.module else ""
    if function is not None:
        calls = [
            (c[2], c[3]) for scope in (MODULE_SCOPE, MAIN_SCOPE) for c in entry.calls.get(scope, ())
            if c[0] == prefix + function
        ]
        if calls:
            return min(calls)
    if entry.main_block is not None:
        return (entry.main_block[0], 0)
    return (10**9, 0)


# -- RPL101 ---------------------------------------------------------------------------
@rule("RPL101", per="program")
def unseeded_global_rng(ctx: Context, program: Program) -> Iterable[Finding]:
    order = {s: i for i, s in enumerate(ctx.index.m.sources)}
    draws = program.draws()
    seeded = program.seeds()
    missing = sorted((s for s in draws if s not in seeded), key=lambda s: order.get(s, 99))
    if not missing:
        return
    for source in missing:
        fix = seeding_fix(ctx, program, source)
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
        n = len(others)
        more = f"; {n} other draw{'s' if n != 1 else ''} in this program" if n else ""
        via = "" if entry_draws else f" (`{first_api}` in an imported module)"
        message = (
            f"{source_label(source)} RNG is drawn from{via} but never seeded in this program{more}"
        )
        yield ctx.finding("RPL101", info, where, message, related, fix)


def import_bringing(ctx: Context, program: Program, modules: set[str]) -> tuple:
    """Span of the first import in the entry module that (transitively) brings in `modules`."""
    index = ctx.index
    entry = program.entry
    # one walk down the import graph for all the imports, in order: what an earlier import
    # reaches without finding `modules` cannot lead there from a later one either
    seen: set[str] = set()
    for imp in sorted(entry.imports, key=lambda i: (i[1], i[2])):
        mod = index.module_of(imp[0], entry)
        if not mod or mod == entry.module or mod in seen:
            continue
        seen.add(mod)
        stack = [mod]
        while stack:
            current = stack.pop()
            if current in modules:
                return imp[1:5]
            for target in index.imports_of.get(current, ()):
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
    return (1, 0, 1, 0)


# -- RPL102 ---------------------------------------------------------------------------
@rule("RPL102", per="module")
def unseeded_generator(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    gens = {g["name"]: g for g in catalog.load("rng")["generators"]}
    for scope, ev in info.all_events("gen"):
        api = ev.data["api"]
        fix = None
        if not ev.data["seed_none"]:
            target = ev.data["call"]
            inner = gens.get(api, {})
            kw = inner.get("seed-kw", "seed")
            if "bit-generator-arg" in inner:
                kw = "seed"
            program = ctx.program_of(info)
            fix = Fix(
                f"pass a seed to `{api.rsplit('.', 1)[-1]}`",
                "safe",
                (AddKeyword(target, kw, "{seed}"), seed_spec(ctx, program, info, scope, at=ev.pos)),
            )
        yield ctx.finding(
            "RPL102", info, ev,
            f"`{api}` is created without a seed, so it draws from OS entropy and differs on every run",
            fix=fix,
        )


# -- RPL103 ---------------------------------------------------------------------------
def _body_items(ctx: Context, info: ModuleInfo, scopes: tuple[str, ...]):
    """Draws, seeds and project calls of a straight-line body, in source order."""
    items = []
    for scope in scopes:
        for ev in info.events.get(scope, ()):
            if ev.kind == "draw":
                items.append(((ev.line, ev.col), "draw", {ev.data["source"]}, ev, ev.data["api"]))
            elif ev.kind in ("seed", "seedcand"):
                srcs = set(ctx.index.seed_sources(info, ev))
                if srcs:
                    items.append(((ev.line, ev.col), "seed", srcs, ev, ev.data.get("api") or ev.data.get("target")))
        for call, keys in ctx.index.callees(info, scope):
            if call[1] == REF_CALL:
                continue  # a function handed over runs later (or elsewhere), not here
            seeds: set[str] = set()
            draws: set[str] = set()
            for key in keys:
                eff = ctx.index.effects(key)
                seeds |= eff.seeds
                draws |= eff.draws
            name = call[0] or call[1]
            pos = (call[2], call[3])
            if seeds:
                items.append((pos, "seed", seeds, call[2:6], name))
            if draws - seeds:
                items.append((pos, "draw", draws - seeds, call[2:6], name))
    items.sort(key=lambda it: it[0])
    return items


def _may_seed(ctx: Context, info: ModuleInfo, scopes: tuple[str, ...]) -> bool:
    """Whether a body seeds anything, checked cheaply first: most bodies do not, and then
    their calls need not be resolved. A call by method name can only reach functions of that
    name, so the names of the project functions that seed decide it without resolving."""
    index = ctx.index
    names = _seeding_names(ctx)
    for scope in scopes:
        for ev in info.events.get(scope, ()):
            if ev.kind == "seed" or ev.kind == "seedcand" and index.seed_sources(info, ev):
                return True
        for call, keys in index.callees(info, scope):
            target = call[0]
            if call[1] == REF_CALL:
                continue
            if target is None or target[0] == "@":
                if call[1] in names:
                    return True
            elif any(index.effects(k).seeds for k in keys):
                return True
    return False


def _seeding_names(ctx: Context) -> frozenset:
    """Names of the project functions that seed something when called (once per check)."""
    cached = ctx.__dict__.get("_seeding_names")
    if cached is None:
        index = ctx.index
        cached = frozenset(fn.name for key, (_, fn) in index.functions.items() if index.effects(key).seeds)
        ctx.__dict__["_seeding_names"] = cached
    return cached


@rule("RPL103", per="module")
def seed_after_draw(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    bodies = [(MODULE_SCOPE, MAIN_SCOPE)] + [(q,) for q in info.functions]
    for scopes in bodies:
        if not _may_seed(ctx, info, scopes):
            continue
        items = _body_items(ctx, info, scopes)
        if not any(kind == "seed" for _, kind, *_ in items):
            continue
        first_seed: dict[str, tuple] = {}
        for item in items:
            if item[1] == "seed":
                for src in item[2]:
                    first_seed.setdefault(src, item)
        reported: set[str] = set()
        for pos, kind, srcs, at, name in items:
            if kind != "draw":
                continue
            for src in sorted(srcs):
                seed = first_seed.get(src)
                if seed is None or seed[0] <= pos or src in reported:
                    continue
                assigned = at.data.get("assigned") if isinstance(at, Event) else None
                if assigned and any(
                    isinstance(it[3], Event) and assigned in it[3].data.get("names", ()) for it in items if it[1] == "seed"
                ):
                    continue  # `seed = random.randint(...)` then `random.seed(seed)`
                reported.add(src)
                seed_line = seed[0][0]
                what = f"`{name}`" if isinstance(at, Event) else f"`{name}()` (which draws)"
                yield ctx.finding(
                    "RPL103", info, at,
                    f"{what} draws from {source_label(src)} RNG before it is seeded on line {seed_line}; "
                    "this draw is not covered by the seed",
                    [Related(location(info, seed[3]), f"{src} is seeded here")],
                )


# -- RPL104 ---------------------------------------------------------------------------
@rule("RPL104", per="module")
def runtime_pythonhashseed(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    var = ctx.index.m.hashseed_var
    for _, ev in info.all_events("env"):
        if ev.data["var"] != var:
            continue
        yield ctx.finding(
            "RPL104", info, ev,
            f"setting {var} at run time has no effect on this process: hash randomisation is fixed "
            "when the interpreter starts (only child processes started later see it); set it in the "
            "shell, the launcher or the job environment instead",
        )
