"""Programs that serve requests (a web demo's handlers run once per request, in one
long-lived process): no seed set when the program starts makes a request's result repeatable."""

from __future__ import annotations

import weakref
from typing import Iterable, Optional

from repro_lint.analysis.context import Context, program_cache
from repro_lint.facts.model import MAIN_SCOPE, MODULE_SCOPE, is_reference
from repro_lint.index.program import Program

# how the reason below starts (a rule that words its help around it asks)
SERVES_REQUESTS = "the program serves requests"

_RUN: "weakref.WeakKeyDictionary[Program, frozenset]" = program_cache()


def serving_library(ctx: Context, program: Program) -> Optional[str]:
    """The request-serving library (catalog `request-servers`) the program's entry module
    imports, if any."""
    servers = ctx.index.m.request_servers
    for qual, *_ in program.entry.imports:
        root = qual.split(".", 1)[0]
        if root in servers:
            return root
    return None


def _run_directly(ctx: Context, program: Program) -> frozenset:
    """The scopes the program runs by calling them, from its entry and the module level of
    what it imports, not through a function it hands over (`button.click(predict)`,
    `app.add_api_route("/x", handler)`): what runs outside request handlers."""
    hit = _RUN.get(program)
    if hit is not None:
        return hit
    index = ctx.index
    entry = program.entry
    starts = [(entry.module, MAIN_SCOPE), *((entry.module, q) for q in entry.hydra_mains)]
    starts += [(mod, MODULE_SCOPE) for mod in dict.fromkeys(m for m, _ in program.scopes)]
    seen = set(starts)
    queue = list(starts)
    while queue:
        mod, scope = queue.pop()
        info = index.modules[mod]
        for call, keys in index.callees(info, scope):
            if is_reference(call):
                continue
            for key in keys:
                ref = index.scope_of(key)
                if ref not in seen:
                    seen.add(ref)
                    queue.append(ref)
    hit = _RUN[program] = frozenset(seen)
    return hit


def why_not_seeded_at_start(ctx: Context, program: Program, draws: Iterable[tuple]) -> Optional[str]:
    """Why a seeding call where such a program starts would not help its `draws` ((module
    info, scope, event)): they all run in request handlers only. None otherwise."""
    library = serving_library(ctx, program)
    if library is None:
        return None
    direct = _run_directly(ctx, program)
    if any((info.module, scope) in direct for info, scope, *_ in draws):
        return None  # (some run outside the handlers: a seed at start-up makes those repeat)
    return (
        f"{SERVES_REQUESTS} (it imports `{library}`) and draws only in the functions it hands over to run for each "
        "request: each request draws after every earlier one, so a seed set once when it starts makes no "
        "request's result repeatable; seed in the request handler instead, from a seed the request gives"
    )
