"""Programs that serve requests (a web demo's handlers run once per request, in one
long-lived process): no seed set when the program starts makes a request's result repeatable."""

from __future__ import annotations

from typing import Optional

from repro_lint.analysis.context import Context
from repro_lint.index.program import Program

# how the reason below starts (a rule that words its help around it asks)
SERVES_REQUESTS = "the program serves requests"


def serving_library(ctx: Context, program: Program) -> Optional[str]:
    """The request-serving library (catalog `request-servers`) the program's entry module
    imports, if any."""
    servers = ctx.index.m.request_servers
    for qual, *_ in program.entry.imports:
        root = qual.split(".", 1)[0]
        if root in servers:
            return root
    return None


def why_not_seeded_at_start(ctx: Context, program: Program) -> Optional[str]:
    """Why a seeding call where such a program starts would not help; None for other programs."""
    library = serving_library(ctx, program)
    if library is None:
        return None
    return (
        f"{SERVES_REQUESTS} (it imports `{library}`): each request draws after every earlier one, "
        "so a seed set once when it starts makes no request's result repeatable; seed in the request handler "
        "instead, from a seed the request gives"
    )
