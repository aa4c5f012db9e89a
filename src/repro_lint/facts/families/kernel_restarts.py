"""Calls that restart a notebook's kernel (the data is `rules/catalog/processes.toml`,
`[kernel-restarts]`): "restart" events at a module's top level. Seeds set in the cells above
one are gone for the cells below it (spec, "Fixes" 9).
"""

from __future__ import annotations

import ast
import functools
from typing import Optional

from repro_lint.core import catalog
from repro_lint.facts.hooks import Family
from repro_lint.facts.model import MODULE_SCOPE
from repro_lint.facts.walker import extractor


@functools.lru_cache(maxsize=1)
def _catalog() -> tuple[frozenset, frozenset]:
    data = catalog.load("processes")["kernel-restarts"]
    return frozenset(data["calls"]), frozenset(data["methods"])


def _restart_call(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    if ex.scope != MODULE_SCOPE:
        return
    calls, methods = _catalog()
    func = node.func
    if qual in calls or type(func) is ast.Attribute and func.attr in methods:
        ex.add("restart", node, api=qual or func.attr)  # type: ignore[union-attr]


@functools.lru_cache(maxsize=1)
def _names() -> frozenset:
    calls, methods = _catalog()
    return frozenset(q.rpartition(".")[2] for q in calls) | methods


FAMILY = Family(order=36, call_hooks=(_restart_call,), call_names={_restart_call: _names})
