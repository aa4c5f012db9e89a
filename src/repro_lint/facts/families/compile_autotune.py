"""RPL407's extraction side: where a program asks torch.compile's inductor backend to pick
kernels by timing them, and where it turns inductor's deterministic mode on (the catalog
`[compile-autotune]` in `rules/catalog/flags.toml`).

"autotune" events: `torch.compile(mode="max-autotune")`, `options={"max_autotune": True}`,
`torch._inductor.config.max_autotune = True` (and the other autotuning settings),
`torch._inductor.config.patch(...)` with them, `TrainingArguments(torch_compile_mode=...)`;
each with the program's own switch it sits under, if any. A non-literal mode or value is the
user's choice and is not recorded. "inductordet" events: `torch._inductor.config.deterministic`
set to True or to a value of the program's (`= args.deterministic`), or patched so.
"""

from __future__ import annotations

import ast
import functools
from typing import Iterator, Optional

from repro_lint.core import catalog
from repro_lint.facts.conditions import user_switch
from repro_lint.facts.families.precision import table as precision_table
from repro_lint.facts.hooks import Family
from repro_lint.facts.syntax import NOT_LITERAL, assigned_targets, get_arg, literal
from repro_lint.facts.walker import extractor

AUTOTUNE = "autotune"
INDUCTOR_DETERMINISTIC = "inductordet"


@functools.lru_cache(maxsize=1)
def autotune_catalog() -> dict:
    return catalog.load("flags")["compile-autotune"]


@functools.lru_cache(maxsize=1)
def _settings() -> dict:
    """Qualified attribute name -> the option it is (`deterministic` included)."""
    cat = autotune_catalog()
    names = [*cat["options"], cat["deterministic-setting"].rpartition(".")[2]]
    return {f"{cat['config']}.{name}": name for name in names}


def _add(ex: extractor.Extractor, node: ast.AST, option: str, value: object, how: str, shown: str) -> None:
    cat = autotune_catalog()
    if option == cat["deterministic-setting"].rpartition(".")[2]:
        if value is NOT_LITERAL or value is True:
            ex.add(INDUCTOR_DETERMINISTIC, node, how=how)
        return
    if value is True:
        ex.add(AUTOTUNE, node, option=option, how=how, shown=shown, switch=user_switch(ex, precision_table().library_roots))


def _assignment(ex: extractor.Extractor, stmt: ast.stmt) -> None:
    targets = assigned_targets(stmt)
    if not targets:
        return
    settings = _settings()
    for target in targets:
        if type(target) is not ast.Attribute or target.attr not in _attributes():  # type: ignore[attr-defined]
            continue
        qual = ex.r.qualify(target)
        option = settings.get(qual) if qual else None
        if option is not None and stmt.value is not None:  # type: ignore[attr-defined]
            value = literal(stmt.value)  # type: ignore[attr-defined]
            _add(ex, target, option, value, "config", f"`{qual} = {value!r}`")


@functools.lru_cache(maxsize=1)
def _attributes() -> frozenset:
    return frozenset(_settings().values())


def _items(node: Optional[ast.AST]) -> Iterator[tuple[str, object]]:
    """(key, literal value) of a dict literal or a `dict(key=...)` call."""
    if type(node) is ast.Dict:
        for key, value in zip(node.keys, node.values):  # type: ignore[attr-defined]
            k = literal(key) if key is not None else NOT_LITERAL
            if isinstance(k, str):
                yield k, literal(value)
    elif type(node) is ast.Call and type(node.func) is ast.Name and node.func.id == "dict":  # type: ignore[attr-defined]
        for kw in node.keywords:  # type: ignore[attr-defined]
            if kw.arg is not None:
                yield kw.arg, literal(kw.value)


def _call(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    cat = autotune_catalog()
    if qual is None:
        # `model.compile(mode="max-autotune")`: nn.Module.compile passes its arguments on
        func = node.func
        if type(func) is ast.Attribute and func.attr == cat["method"]:  # type: ignore[attr-defined]
            mode = literal(get_arg(node, -1, cat["mode-keyword"]))
            if mode in cat["modes"]:
                _add(ex, node, "mode", True, "mode", f'`.compile(mode="{mode}")`')
        return
    options = set(cat["options"]) | {cat["deterministic-setting"].rpartition(".")[2]}
    if qual in cat["calls"]:
        mode = literal(get_arg(node, -1, cat["mode-keyword"]))
        if mode in cat["modes"]:
            _add(ex, node, "mode", True, "mode", f'`{qual}(mode="{mode}")`')
        for key, value in _items(get_arg(node, -1, cat["options-keyword"])):
            if key in options:
                _add(ex, node, key, value, "options", f'`{qual}(options={{"{key}": {value!r}}})`')
    elif qual == cat["patch"]:
        first = node.args[0] if node.args else None
        pairs = list(_items(first))
        if isinstance(literal(first), str) and len(node.args) > 1:
            pairs.append((literal(first), literal(node.args[1])))  # type: ignore[arg-type]
        pairs += [(kw.arg, literal(kw.value)) for kw in node.keywords if kw.arg is not None]
        for key, value in pairs:
            if key in options:
                _add(ex, node, key, value, "patch", f"`config.patch({key}={value!r})`")
    elif qual in cat["framework-calls"]:
        keyword = next((kw for kw in node.keywords if kw.arg == cat["framework-keyword"]), None)
        mode = literal(keyword.value) if keyword is not None else None
        if keyword is not None and mode in cat["modes"]:  # (reported at the keyword)
            name = qual.rpartition(".")[2]
            _add(ex, keyword, "mode", True, "keyword", f'`{name}({cat["framework-keyword"]}="{mode}")`')


@functools.lru_cache(maxsize=1)
def _call_names() -> frozenset:
    cat = autotune_catalog()
    return frozenset([*(q.rpartition(".")[2] for q in [*cat["calls"], cat["patch"], *cat["framework-calls"]]), cat["method"]])


FAMILY = Family(order=76, call_hooks=(_call,), call_names={_call: _call_names}, assign_hooks=(_assignment,))
