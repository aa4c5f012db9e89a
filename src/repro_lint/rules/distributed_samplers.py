"""RPL303: a shuffling `DistributedSampler` whose loader runs epoch after epoch without
`set_epoch` (the facts are in `facts/families/distributed_samplers.py`)."""

from __future__ import annotations

from typing import Iterable, Optional

from repro_lint.analysis.context import Context, line_words, location, sentences, unfixed
from repro_lint.analysis.placement import not_editable, programs_reaching
from repro_lint.core.edits import InsertStatements
from repro_lint.core.findings import Finding, Fix, Related
from repro_lint.facts.families.distributed_samplers import sampler_catalog
from repro_lint.facts.model import ModuleInfo, is_reference
from repro_lint.rules.registry import rule

SET_EPOCH = "setepoch"


def _sets_epoch_below(ctx: Context, info: ModuleInfo, scope: str, span: tuple) -> bool:
    """Whether the code the loop calls (transitively) calls `set_epoch`."""
    index = ctx.index
    starts = []
    for call, keys in index.callees(info, scope):
        if span[0] <= call[2] <= span[2] and not is_reference(call):
            starts += [index.scope_of(k) for k in keys]
    if not starts:
        return False
    return any(
        any(ev.kind == SET_EPOCH for ev in index.modules[mod].events.get(sub, ()))
        for mod, sub in index.reach(starts, include_imports=False)
    )


def _program_sets_epoch(ctx: Context, info: ModuleInfo, scope: str) -> bool:
    for program in programs_reaching(ctx, info, scope):
        for _ in program.events(SET_EPOCH):
            return True
    return False


@rule("RPL303", per="module", apart=True)
def sampler_without_set_epoch(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    for scope, ev in info.all_events("dsampler"):
        data = ev.data
        if data.get("set_epoch") or not data.get("loops"):
            continue
        if any(e.kind == SET_EPOCH for s in info.events for e in info.events[s]):
            continue  # (the module sets some sampler's epoch: the loop may reach it in ways not followed)
        loops = [loop for loop in data["loops"] if not _sets_epoch_below(ctx, info, loop[0], loop[1])]
        if not loops or _program_sets_epoch(ctx, info, scope):
            continue
        _scope, loop_span, header, _var, _counts, _first, loader, at, _target, named = loops[0]
        fix, why = _fix(info, data, loops[0])
        name = named or data.get("sampler") or "sampler"
        what = f"`{loader}`" if loader else "its loader"
        related = [
            Related(location(info, header), "the loop that runs it once per epoch"),
            Related(location(info, at), f"{what} is iterated here"),
        ]
        message = (
            f"`DistributedSampler` shuffles the same way every epoch: the loop on {line_words(info, loop_span[0])} "
            f"runs {what} without `{name}.set_epoch(...)`"
        )
        help = sentences(
            "the sampler seeds each epoch's permutation with `seed + epoch`, and the epoch stays 0 until "
            f"`set_epoch(epoch)` is called, so every epoch visits the data in the same order; call `{name}.set_epoch(epoch)` "
            "at the start of each epoch, before the loader is iterated",
            unfixed(why) if fix is None else "",
        )
        yield ctx.finding("RPL303", info, ev, message, related, fix, help=help)


def _fix(info: ModuleInfo, data: dict, loop: tuple) -> tuple[Optional[Fix], str]:
    _scope, _span, _header, var, counts, first, _loader, _at, sampler, named = loop
    why = not_editable(info)
    if why:
        return None, why
    if sampler is None:
        if data.get("mixed"):
            return None, "the sampler's name also holds other objects"
        if data.get("sampler") is None and not named:
            return None, "the sampler is built inside the loader call, without a name to call `set_epoch` on"
        return None, "the sampler's name is not in scope at the start of the loop"
    if var is None or not counts:
        return None, "the loop has no variable that counts epochs to pass"
    code = sampler_catalog()["fix"].format(sampler=sampler, epoch=var)
    guard = f"{sampler} is not None" if data.get("may_be_none") else ""
    edit = InsertStatements("before", code, anchor=first, key=f"set_epoch:{first[0]}", guard=guard)
    return Fix(f"call `{sampler}.set_epoch({var})` at the start of each epoch", "safe", (edit,)), ""
