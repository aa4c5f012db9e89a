"""Library calls that load saved parameters into a model they are given (catalog
`program.toml`, `checkpoint-functions`: `load_checkpoint_and_dispatch(model, path)`):
"paramload" events; so is a loop that copies a tensor into each of a model's parameters
(`for name, p in net.named_parameters(): p.copy_(state[name])`, catalog `parameter-iterators`,
`parameter-copy-methods`). With the `load_state_dict` method they make a program that trains
nothing one whose model's initial draws are overwritten (a checkpoint converter, an inference
script).
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


@functools.lru_cache(maxsize=1)
def _copy_methods() -> frozenset:  # (read when a file's walk starts, before its matchers)
    return frozenset(catalog.load("program").get("parameter-copy-methods", ()))


def _root_name(node: ast.expr) -> Optional[str]:
    """The name a parameter expression starts from: `p` of `p`, `p.data`, `p[rows]`."""
    while True:
        t = type(node)
        if t is ast.Subscript or t is ast.Attribute and node.attr == "data":  # type: ignore[attr-defined]
            node = node.value  # type: ignore[attr-defined]
        else:
            return node.id if t is ast.Name else None  # type: ignore[attr-defined]


def _copy_call(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    func = node.func
    if not ex.for_loops or type(func) is not ast.Attribute or func.attr not in ex.m.parameter_copy_methods or not node.args:
        return
    target = _root_name(func.value)
    if target is None:
        return
    source = _root_name(node.args[0])
    iterators = ex.m.parameter_iterators
    for loop in ex.for_loops:
        names = {n.id for n in ast.walk(loop.target) if type(n) is ast.Name}  # type: ignore[attr-defined]
        if target not in names or source in names:
            continue
        if any(type(c) is ast.Call and type(c.func) is ast.Attribute and c.func.attr in iterators for c in ast.walk(loop.iter)):  # type: ignore[attr-defined]
            ex.add("paramload", node, api=func.attr)
            return


FAMILY = Family(
    order=56,
    call_hooks=(_load_call, _copy_call),
    call_names={_load_call: _names, _copy_call: _copy_methods},
)
