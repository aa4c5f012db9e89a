"""What programs build by name (catalog `frameworks.toml`, `[by-name]`): objects and
functions named by strings the index does not read (`construct_class_by_name(**kwargs)`,
`hydra.utils.get_class(cfg._target_)` where the Hydra configs cannot be read). What they run
is not in the program the index sees, so a fix that depends on it is unsafe and says what to
check (spec, "Fixes" 9)."""

from __future__ import annotations

import weakref
from typing import Optional

from repro_lint.analysis.context import Context, program_cache
from repro_lint.core import catalog
from repro_lint.index import hydra_configs
from repro_lint.index.program import Program

_UNSEEN: "weakref.WeakKeyDictionary[Program, list]" = program_cache()


def unseen_builds(ctx: Context, program: Program) -> list:
    """The program's "byname" events, as (module info, scope, event), but for Hydra's
    factories in a program whose Hydra configs the index reads (it reaches what they name)."""
    hit = _UNSEEN.get(program)
    if hit is None:
        hydra = set(catalog.load("frameworks")["by-name"]["hydra"])
        readable = _hydra_configs_read(ctx, program)
        hit = _UNSEEN[program] = [
            (info, scope, ev) for info, scope, ev in program.events("byname") if not (ev.data["api"] in hydra and readable)
        ]
    return hit


def _hydra_configs_read(ctx: Context, program: Program) -> bool:
    entry = program.entry
    for q in entry.hydra_mains:
        fn = entry.functions[q]
        if fn.hydra_config_path and hydra_configs.config_folder(entry.path, fn.hydra_config_path, ctx.index.root) is not None:
            return True
    return False


def built_by_name_words(ctx: Context, program: Program) -> str:
    """"`construct_class_by_name` at training/loop.py:42": the first thing the program builds
    by name, for a fix's description; "" when it builds nothing the index cannot see."""
    builds = unseen_builds(ctx, program)
    if not builds:
        return ""
    info, _, ev = builds[0]
    return f"`{ev.data['api'].rpartition('.')[2]}` at {info.path}:{ev.line}"


def bypassing_entry(ctx: Context, program: Program, module: str, scope: str) -> Optional[str]:
    """Why a statement placed in `scope` of `module` for `program` may not run where the work
    runs: another program of the project builds what it runs by name (a `train.py` doing
    `hydra.utils.get_class(cfg._target_)(cfg).run()`) and does not pass through that scope,
    so the index cannot tell whether that program runs the same work without it."""
    builders = ctx.__dict__.get("_by_name_builders")
    if builders is None:  # (worked out once per check: most programs build nothing by name)
        builders = ctx.__dict__["_by_name_builders"] = [
            (p, builds[0]) for p in ctx.programs for builds in [unseen_builds(ctx, p)] if builds
        ]
    for other, (info, _, ev) in builders:
        if other is program or other.entry.module == program.entry.module or (module, scope) in other.scope_set:
            continue
        return (
            f"{other.entry.path} builds what it runs by name (`{ev.data['api'].rpartition('.')[2]}`, "
            f"{'line ' + str(ev.line) if info is other.entry else f'{info.path}:{ev.line}'}) "
            f"and may run this program's work without `{scope}`: seed where both start, or check that runs of "
            f"{other.entry.path} seed too"
        )
    return None
