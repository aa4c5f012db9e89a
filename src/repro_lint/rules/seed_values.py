"""RPL105: a seeding call given a value that differs on every run, which nothing records (the
facts are in `facts/families/seed_values.py`)."""

from __future__ import annotations

from typing import Iterable

from repro_lint.analysis.context import Context, sentences
from repro_lint.analysis.placement import body_items, programs_reaching
from repro_lint.core.findings import Finding
from repro_lint.facts.families.seed_values import TEXT_OPTIONS
from repro_lint.facts.model import ModuleInfo
from repro_lint.rules.registry import rule


def _seeded_draw(ctx: Context, info: ModuleInfo, scope: str, data: dict) -> bool:
    """Whether the draw a seed came from may be seeded: a seeding of its source comes before
    it in the body (itself or through the project code it calls), or a program that reaches
    it seeds that source anywhere but in what the body runs after the draw. A draw that no
    program reaches says nothing either way."""
    source = data["drawn"]
    at = tuple(data["drawn_at"])
    items = body_items(ctx, info, (scope,))
    if any(it.kind == "seed" and source in it.sources and it.pos < at for it in items):
        return True
    programs = programs_reaching(ctx, info, scope)
    if not programs:
        return True
    index = ctx.index
    later = [index.scope_of(k) for it in items if it.pos > at for k in it.keys]
    after = set(index.reach(later, include_imports=False)) if later else set()
    for program in programs:
        for sinfo, sscope, ev in program.seeds().get(source, ()):
            if (sinfo.module, sscope) == (info.module, scope) and ev.pos > at or (sinfo.module, sscope) in after:
                continue
            return True
    return False


def _declared_text(ctx: Context, info: ModuleInfo, option: str) -> bool:
    """Whether a module this one imports declares the argparse option as text."""
    index = ctx.index
    for imp in info.imports:
        for mod in index.import_targets(imp[0], info):
            other = index.modules.get(mod)
            if other is not None and option in other.summary(TEXT_OPTIONS):
                return True
    return False


@rule("RPL105", per="module", apart=True)
def seed_varies_per_run(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    for scope, ev in info.all_events("varyseed"):
        data = ev.data
        if data.get("recorded") or data.get("local") or "what" not in data:
            continue
        if data.get("drawn") and _seeded_draw(ctx, info, scope, data):
            continue
        if data.get("text_option") and not _declared_text(ctx, info, data["text_option"]):
            continue
        api = data["api"]
        call = f"`{api}`" if not api.startswith(".") else f"`{api[1:]}()`"
        via = f" through `{data['via']}`" if data.get("via") else ""
        message = f"the seed given to {call} comes from {data['what']}{via}: it differs on every run and nothing records it"
        help = sentences(
            "a run seeded so cannot be repeated, nor a good result reproduced; seed from a fixed setting "
            "(`--seed`, a config value), or draw the seed once and print, log or save it before seeding with it"
        )
        yield ctx.finding("RPL105", info, ev, message, help=help)
