"""RPL408's extraction side: calls of attention kernels whose backward pass torch's
deterministic switch does not reach (the catalog `rules/catalog/attention.toml`).

"attention" events: a flash-attn function or module built without `deterministic=True`
(`deterministic` absent, or a literal False: where its value is, for the fix), and calls of
xformers' memory-efficient attention or of a library method that switches a model to it
(`unet.enable_xformers_memory_efficient_attention()`). A non-literal `deterministic=` is the user's choice and is not recorded,
nor is a call that may pass it through `**kwargs` or by position.
"""

from __future__ import annotations

import ast
import functools
from typing import Optional

from repro_lint.core import catalog
from repro_lint.facts.hooks import Family
from repro_lint.facts.syntax import get_arg, has_kwargs, literal
from repro_lint.facts.walker import extractor

ATTENTION = "attention"


class Table:
    """The attention catalog as lookups."""

    def __init__(self) -> None:
        data = catalog.load("attention")
        self.flash = data["flash-attn"]
        self.flash_functions = {name: f for f in self.flash["functions"] for name in f["names"]}
        self.xformers = data["xformers"]
        self.xformers_functions = frozenset(self.xformers["functions"])
        self.xformers_methods = frozenset(self.xformers["methods"])


@functools.lru_cache(maxsize=1)
def table() -> Table:
    return Table()


def _call(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    t = table()
    if qual is not None and qual in t.flash_functions:
        spec = t.flash_functions[qual]
        keyword = t.flash["keyword"]
        arg = get_arg(node, -1, keyword)
        if arg is None:
            if has_kwargs(node) or len(node.args) > spec["position"] or any(type(a) is ast.Starred for a in node.args):
                return  # it may pass the keyword
            value_span = None
        else:
            if literal(arg) is not False:
                return  # True, or the program's own value
            value_span = ex.span(arg)
        ex.add(ATTENTION, node, api=qual, package="flash-attn", since=spec["since"], value_span=value_span, no_grad=bool(ex.no_grad))
        return
    if qual is not None and qual in t.xformers_functions:
        api = qual
    else:
        func = node.func
        if type(func) is not ast.Attribute or func.attr not in t.xformers_methods:  # type: ignore[attr-defined]
            return
        api = func.attr  # type: ignore[attr-defined]
    ex.add(ATTENTION, node, api=api, package="xformers", value_span=None, no_grad=bool(ex.no_grad))


@functools.lru_cache(maxsize=1)
def _call_names() -> frozenset:
    t = table()
    return frozenset([*(q.rpartition(".")[2] for q in [*t.flash_functions, *t.xformers_functions]), *t.xformers_methods])


FAMILY = Family(order=77, call_hooks=(_call,), call_names={_call: _call_names})
