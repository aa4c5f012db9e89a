"""Programs that run as several ranks (the data is `rules/catalog/processes.toml`, `[ranks]`):
"rankjoin" events for the calls that make a process one rank of a group
(`torch.distributed.init_process_group`), "gather" events for the calls that gather what each
rank holds (`torch.distributed.all_gather`). The seeding fix of such a program offsets the
seed by the rank after the join (spec, "Fixes" 11).
"""

from __future__ import annotations

import ast
import functools
from typing import Optional

from repro_lint.core import catalog
from repro_lint.facts.hooks import Family
from repro_lint.facts.walker import extractor


@functools.lru_cache(maxsize=1)
def _catalog() -> tuple[frozenset, frozenset]:
    ranks = catalog.load("processes")["ranks"]
    return frozenset(ranks["joins"]), frozenset(ranks["gathers"])


def _rank_call(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    if qual is None:
        return
    joins, gathers = _catalog()
    if qual in joins:
        ex.add("rankjoin", node, api=qual)
    elif qual in gathers:
        ex.add("gather", node, api=qual)


@functools.lru_cache(maxsize=1)
def _names() -> frozenset:
    joins, gathers = _catalog()
    return frozenset(q.rpartition(".")[2] for q in joins | gathers)


FAMILY = Family(order=35, call_hooks=(_rank_call,), call_names={_rank_call: _names})
