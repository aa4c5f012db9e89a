"""RPL406's extraction side: settings that lower the precision of float32 matrix products
(the catalog `[reduced-precision]` in `rules/catalog/flags.toml`).

Each assignment, call or framework keyword that sets a literal reducing value is recorded as a
"reduced" event: what it sets, the value, where the value is (for the fix that restores full
precision), and the program's own switch it sits under, if any (`if args.allow_tf32:`). A
non-literal value is the user's choice and is not recorded.
"""

from __future__ import annotations

import ast
import functools
from typing import Optional

from repro_lint.core import catalog
from repro_lint.facts.conditions import user_switch
from repro_lint.facts.hooks import Family
from repro_lint.facts.syntax import NOT_LITERAL, assigned_targets, get_arg, literal
from repro_lint.facts.walker import extractor

REDUCED = "reduced"


class Table:
    """The `[reduced-precision]` catalog as lookups."""

    def __init__(self) -> None:
        data = catalog.load("flags")["reduced-precision"]
        self.settings = {s["name"]: s for s in data["settings"]}
        self.calls = {c["name"]: c for c in data["calls"]}
        self.keywords = {name: k for k in data["keywords"] for name in k["calls"]}
        # the attribute names an assignment must end in to be looked at (most assign nothing of these)
        self.attributes = frozenset(name.rpartition(".")[2] for name in self.settings)
        self.library_roots = frozenset(data.get("library-roots", ()))


@functools.lru_cache(maxsize=1)
def table() -> Table:
    return Table()


def _record(ex: extractor.Extractor, node: ast.AST, value_node: ast.AST, api: str, spec: dict, how: str) -> None:
    value = literal(value_node)
    if value is NOT_LITERAL or value not in spec["reduced"]:
        return
    ex.add(
        REDUCED, node, api=api, value=value, how=how, value_span=ex.span(value_node),
        switch=user_switch(ex, table().library_roots),
    )


def _assignment(ex: extractor.Extractor, stmt: ast.stmt) -> None:
    targets = assigned_targets(stmt)
    if not targets:
        return
    t = table()
    for target in targets:
        if type(target) is not ast.Attribute or target.attr not in t.attributes:  # type: ignore[attr-defined]
            continue
        qual = ex.r.qualify(target)
        spec = t.settings.get(qual) if qual else None
        if spec is not None and stmt.value is not None:  # type: ignore[attr-defined]
            _record(ex, target, stmt.value, qual, spec, "assign")  # type: ignore[attr-defined, arg-type]


def _call(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    if qual is None:
        return
    t = table()
    spec = t.calls.get(qual)
    if spec is not None:
        arg = get_arg(node, spec["arg"], spec["kw"])
        if arg is not None:
            _record(ex, node, arg, qual, spec, "call")
        return
    spec = t.keywords.get(qual)
    if spec is not None:
        keyword = next((kw for kw in node.keywords if kw.arg == spec["keyword"]), None)
        if keyword is not None:  # (reported at the keyword: a framework call spans many lines)
            _record(ex, keyword, keyword.value, qual, spec, "keyword")


@functools.lru_cache(maxsize=1)
def _call_names() -> frozenset:
    t = table()
    return frozenset(q.rpartition(".")[2] for q in [*t.calls, *t.keywords])


FAMILY = Family(order=75, call_hooks=(_call,), call_names={_call: _call_names}, assign_hooks=(_assignment,))
