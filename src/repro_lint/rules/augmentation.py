"""RPL304 augmentation-rng-unseeded: a program that asks for repeatable results builds
data-augmentation pipelines whose random generators its global seeding does not reach:
albumentations compositions without `seed=` (from 1.4.21, when they stopped drawing from
python's and numpy's global RNGs), imgaug augmenters in a program that seeds neither numpy's
global RNG (from which imgaug 0.3+ seeds its own) nor imgaug.

It checks modules, each pipeline or augmenter against the programs that reach it: a fix
works out the seed for every program reaching a library's pipeline, and a module rule runs
before the programs' rules let go of what was worked out for them.

What extraction records ("augpipe", "augmenter" and "augseed" events): `facts/families/augmentation.py`;
the data: `rules/catalog/augmentation.toml`.
"""

from __future__ import annotations

from typing import Iterable, Optional

from repro_lint.analysis import flag_placement, placement
from repro_lint.analysis.context import Context, sentences, unfixed
from repro_lint.analysis.package_target import has_everywhere, shown, target_of
from repro_lint.core.edits import AddKeyword, ReplaceExpression, SeedSpec
from repro_lint.core.findings import Finding, Fix
from repro_lint.facts.families.augmentation import (
    AUGMENTATION_SEED,
    AUGMENTER,
    PIPELINE,
    SELF_SEEDED,
    augmentation_catalog,
)
from repro_lint.discover.requirements import Target
from repro_lint.facts.model import MODULE_SCOPE, Event, ModuleInfo
from repro_lint.index.program import Program
from repro_lint.rules.registry import rule

KEY_IMGAUG, ORDER_IMGAUG = "seed:imgaug", 5  # after the seeding calls of the global sources


def _seed_words(spec: SeedSpec) -> str:
    return f"`{spec.expr}`" if spec.expr else f"a new constant `SEED = {spec.value}`"


def _pipeline_fix(ctx: Context, info: ModuleInfo, scope: str, ev: Event, alb: dict, target: Target) -> "Fix | str":
    """`seed=` with the program's seed, where every targeted albumentations release has it."""
    keyword = alb["keyword"]
    if not has_everywhere(target, alb["since"]):
        return (
            f"the project also targets albumentations releases without `{keyword}=` ({shown(target)}; it exists "
            f"from {alb['since']}, and older releases draw from python's global RNG instead)"
        )
    why = placement.not_editable(info)
    if why:
        return why
    spec = placement.made_once(ctx, info, scope, ev, generator=True)
    if isinstance(spec, str):
        return spec
    if spec is placement.INITIAL_SEED:
        value, words, edits = "{mod:torch}.initial_seed()", "`torch.initial_seed()` (the seed the program gave torch)", ()
    else:
        value, words, edits = "{seed}", _seed_words(spec), (spec,)
    span = ev.data["seed_span"]
    if span is not None:
        edit = ReplaceExpression(tuple(span), value)
    else:
        edit = AddKeyword((ev.line, ev.col, ev.end_line, ev.end_col), keyword, value)
    return Fix(f"pass `{keyword}=` seeded with {words}", "safe", (edit, *edits))


def _with_intent(ctx: Context, info: ModuleInfo, scope: str) -> list[Program]:
    """The programs that reach a scope and seed something (any seed: a seeded data pipeline
    is meant to repeat, training or not)."""
    return [p for p in placement.programs_reaching(ctx, info, scope) if p.has_intent()]


def _albumentations(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    if info.extra.get(SELF_SEEDED):
        return  # the module seeds its pipelines itself (`set_random_seed`)
    alb = augmentation_catalog()["albumentations"]
    target: Optional[Target] = None
    for scope, ev in info.all_events(PIPELINE):
        if not _with_intent(ctx, info, scope):
            continue
        if target is None:
            target = target_of(ctx, alb["package"], module=info)
            if not target.admits_from(alb["since"]):
                return  # the targeted releases draw from python's global RNG, which seeding reaches
        made = _pipeline_fix(ctx, info, scope, ev, alb, target)
        name = ev.data["api"].rpartition(".")[2]
        said = "with `seed=None`" if ev.data["seed_span"] is not None else "without `seed=`"
        yield ctx.finding(
            "RPL304", info, ev, f"albumentations `{name}(...)` {said} draws augmentations the program's seed does not reach",
            fix=made if isinstance(made, Fix) else None,
            help=sentences(
                f"from albumentations {alb['since']}, a pipeline draws from generators of its own, started from OS "
                "entropy unless it is given `seed=`: `random.seed`, `np.random.seed` and `torch.manual_seed` do not "
                "reach them, so every run augments differently",
                "pass the program's seed (each DataLoader worker then holds a copy of the pipeline in the same state)",
                unfixed(made) if isinstance(made, str) else "",
            ),
        )


def _imgaug_place(ctx: Context, program: Program) -> placement.Placed:
    """Right after the program's torch seeding statement in the entry module, with its seed (it
    runs before the model and the data are built, as augmenters are); else where numpy's
    seeding call would go."""
    site = flag_placement.torch_seed_site(ctx, program)
    if site is not None and site.info is program.entry:
        end = placement.seeding_block_end(ctx, site.info, site.scope, site.anchor)
        found = placement.user_seed(ctx, program, site.info, site.scope, (end[2], end[3]))
        if found is not None:
            return placement.in_entry(program, placement.Place("after", anchor=end, seed=found[0], beside_seed=True))
    return placement.seeding_place(ctx, program, "numpy")


def _imgaug_unseeded(program: Program) -> bool:
    """Whether the program leaves imgaug's global RNG unseeded: no `imgaug.seed(...)`, and
    numpy's global RNG (which imgaug 0.3+ seeds it from) neither seeded nor drawn from (a
    numpy draw is RPL101's finding, whose fix seeds imgaug too)."""
    for _ in program.events(AUGMENTATION_SEED):
        return False
    return "numpy" not in program.seeds() and "numpy" not in program.draws()


def _imgaug(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    """One finding per module, at the first augmenter a program that leaves imgaug unseeded builds."""
    cat = augmentation_catalog()["imgaug"]
    for scope, ev in sorted(info.all_events(AUGMENTER), key=lambda se: se[1].pos):
        programs = [p for p in _with_intent(ctx, info, scope) if _imgaug_unseeded(p)]
        if not programs:
            continue
        if not target_of(ctx, cat["package"], module=info).admits_from(cat["numpy-seeded-since"]):
            return  # before 0.3, a fixed seed at import: runs repeat
        program = programs[0]
        fix: Optional[Fix] = None
        why = ""
        if scope == MODULE_SCOPE and info is not program.entry:
            why = (
                f"`{info.module}` builds augmenters when it is imported (line {ev.line}), before the program's main "
                "body could seed imgaug; seed it before that import"
            )
        else:
            place = _imgaug_place(ctx, program)
            if isinstance(place, str):
                why = place
            else:
                spec = place.seed or SeedSpec(None, str(ctx.settings.get("seed", 0)))
                where = "next to the program's seeding call" if place.beside_seed else "where the program starts"
                if info is not program.entry:
                    where += f" in `{program.entry.path}`"
                edit = place.insert(cat["code"] + "\n", key=KEY_IMGAUG, order=ORDER_IMGAUG)
                fix = Fix(f"seed imgaug's global RNG with {_seed_words(spec)} {where}", "safe", (edit, spec))
        yield ctx.finding(
            "RPL304", info, ev, f"imgaug's augmenters (`{ev.data['api']}`) draw from imgaug's global RNG, which this program never seeds",
            fix=fix,
            help=sentences(
                "imgaug seeds its global RNG from numpy's global RNG when the first augmenter is built; this program "
                "seeds neither numpy's global RNG nor imgaug, so every run augments differently",
                "call `imgaug.seed(seed)` before building the augmenters",
                unfixed(why),
            ),
        )
        return


@rule("RPL304", per="module")
def augmentation_rng_unseeded(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    yield from _albumentations(ctx, info)
    yield from _imgaug(ctx, info)
