"""Library calls that load saved parameters into a model they are given (catalog
`program.toml`, `checkpoint-functions`: `load_checkpoint_and_dispatch(model, path)`):
"paramload" events. With the `load_state_dict` method they make a program that trains nothing
one whose model's initial draws are overwritten (a checkpoint converter, an inference script).
"""

from __future__ import annotations

import ast
import functools
from typing import Optional

from repro_lint.core import catalog
from repro_lint.facts.hooks import Family
from repro_lint.facts.walker import extractor


@functools.lru_cache(maxsize=1)
def _functions() -> frozenset:
    return frozenset(catalog.load("program").get("checkpoint-functions", ()))


def _load_call(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    if qual is not None and qual in _functions():
        ex.add("paramload", node, api=qual)


@functools.lru_cache(maxsize=1)
def _names() -> frozenset:
    return frozenset(q.rpartition(".")[2] for q in _functions())


FAMILY = Family(order=56, call_hooks=(_load_call,), call_names={_load_call: _names})
