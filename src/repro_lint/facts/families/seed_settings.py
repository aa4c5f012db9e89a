"""Where a program keeps its seed setting, so that fixes use the user's seed (spec "Fixes",
item 2: `args.seed` where the parser defines `--seed`, `cfg.seed`, `self.seed`, ...).

Extraction records, per module, in `ModuleInfo.extra["seed_settings"]` (only when found):
- "options": argparse destinations that are seed attributes (`--seed`, `--manualSeed`);
- "parsed": per scope, names bound to parsed arguments or config objects:
  (name, span of the binding statement, how), `how` being "parse" (`args = parser.parse_args()`) or the
  callee (`args = get_args()`, a qualified name or a method name);
- "parsers": scopes that call `parse_args()` (functions that build the arguments);
- "attrs": per class, seed attributes its instances or the class hold (`self.seed = seed`,
  `seed: int = 0` in a dataclass body);
- "locals": per function, local names named like a seed and where they are bound
  (`seed = args.seed + rank`).
What they say at rule time (which `<name>.<attr>` expressions are valid in a scope):
`analysis/seed_settings.py`.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import Optional

from repro_lint.core import catalog
from repro_lint.facts.hooks import Family
from repro_lint.facts.syntax import argparse_dest
from repro_lint.facts.walker.extractor import Extractor

FACTS = "seed_settings"
# how a name is bound to parsed settings (`parsed`): "dataclass:<seed attribute>" for the object
# a dataclass parser fills from a class that carries the seed
DATACLASS = "dataclass:"
_PARSE_METHODS = frozenset(["parse_args", "parse_known_args"])


@functools.lru_cache(maxsize=1)
def dataclass_parsers() -> tuple[frozenset, frozenset]:
    """(parser classes, their parse methods) of `frameworks.toml` `dataclass-parsers`."""
    items = catalog.load("frameworks").get("dataclass-parsers", ())
    return frozenset(c for i in items for c in i["calls"]), frozenset(m for i in items for m in i["methods"])


@functools.lru_cache(maxsize=1)
def names() -> dict:
    rng = catalog.load("rng")
    return {
        "attrs": tuple(rng["seed-attributes"]),
        "attr_set": frozenset(rng["seed-attributes"]),
        "configs": frozenset(rng["config-names"]),
        "config_function": re.compile(rng["config-function-pattern"], re.IGNORECASE),
        "seed_names": frozenset(rng["seed-names"]),
    }


def _facts(ex: Extractor) -> dict:
    facts = ex.info.extra.get(FACTS)
    if facts is None:
        facts = ex.info.extra[FACTS] = {"options": [], "parsed": {}, "parsers": [], "attrs": {}, "locals": {}}
    return facts


# -- extraction ------------------------------------------------------------------------------
def _on_call(ex: Extractor, node: ast.Call, qual: Optional[str]) -> None:
    func = node.func
    method = func.attr if isinstance(func, ast.Attribute) else None
    if method == "add_argument":
        dest = argparse_dest(node)
        facts = _facts(ex)
        # the module builds a parser of its own: what it parses has only its own options
        facts["adds"] = True
        if dest in names()["attr_set"]:
            options = facts["options"]
            if dest not in options:
                options.append(dest)
            if _may_be_none(node):
                facts.setdefault("none", []).append(dest)
    elif method in dataclass_parsers()[1]:
        _dataclasses_parsed(ex, node)
    elif (method or (func.id if isinstance(func, ast.Name) else None)) == "ArgumentParser":
        # a parser made here: a dict of defaults the scope builds may give its options
        # (`add_dict_to_argparser(parser, dict(seed=42, ...))`)
        made = _facts(ex).setdefault("parser_made", [])
        if ex.scope not in made:
            made.append(ex.scope)
    elif qual in dataclass_parsers()[0]:
        _dataclass_parser(ex, node)
    elif method in _PARSE_METHODS:
        facts = _facts(ex)
        if ex.scope not in facts["parsers"]:
            facts["parsers"].append(ex.scope)
        stmt = ex.stmt_node
        if isinstance(stmt, ast.Assign) and stmt.value is node and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Tuple) and target.elts:  # `args, rest = parse_known_args()`
                target = target.elts[0]
            if isinstance(target, ast.Name):
                _parsed(ex, target.id, stmt, "parse")


def _dataclass_parser(ex: Extractor, node: ast.Call) -> None:
    """`parser = HfArgumentParser((ModelArguments, TrainingArguments))`: the classes it fills,
    in order, kept for the scope's parse call (walk state, not stored)."""
    stmt = ex.stmt_node
    if not (isinstance(stmt, ast.Assign) and stmt.value is node and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return
    arg = node.args[0] if node.args else next((kw.value for kw in node.keywords if kw.arg == "dataclass_types"), None)
    items = arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg] if arg is not None else []
    classes = [ex.r.qualify(item) if isinstance(item, (ast.Name, ast.Attribute)) else None for item in items]
    ex.__dict__.setdefault("_dataclass_parsers", {})[(ex.scope, stmt.targets[0].id)] = classes


def _dataclasses_parsed(ex: Extractor, node: ast.Call) -> None:
    """`model_args, training_args = parser.parse_args_into_dataclasses()`: the name bound to
    the object of a class that carries the seed (`TrainingArguments.seed`) is parsed settings."""
    recv = node.func.value  # type: ignore[attr-defined]
    parsers = ex.__dict__.get("_dataclass_parsers")
    classes = parsers.get((ex.scope, recv.id)) if parsers and isinstance(recv, ast.Name) else None
    stmt = ex.stmt_node
    if not classes or not (isinstance(stmt, ast.Assign) and stmt.value is node and len(stmt.targets) == 1):
        return
    target = stmt.targets[0]
    targets = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
    seeds = ex.m.seed_arguments
    for cls, name in zip(classes, targets):
        if cls in seeds and isinstance(name, ast.Name):
            _parsed(ex, name.id, stmt, DATACLASS + seeds[cls])


def _may_be_none(node: ast.Call) -> bool:
    """Whether an option's value is None when the command line does not give it: no
    `default=` (argparse's default is None) or `default=None`, and not `required=True`."""
    kws = {kw.arg: kw.value for kw in node.keywords if kw.arg}
    required = kws.get("required")
    if isinstance(required, ast.Constant) and required.value is True:
        return False
    default = kws.get("default")
    return default is None or isinstance(default, ast.Constant) and default.value is None


def _parsed(ex: Extractor, name: str, stmt: ast.stmt, how: str) -> None:
    per_scope = _facts(ex)["parsed"].setdefault(ex.scope, [])
    per_scope.append((name, ex.span(stmt), how))


def _on_assign(ex: Extractor, stmt: ast.stmt) -> None:
    """`cfg = load_config(...)`, `self.seed = seed`, `seed: int = 0` in a class body."""
    if type(stmt) is ast.Assign:
        if len(stmt.targets) != 1:  # type: ignore[attr-defined]
            return
        target = stmt.targets[0]  # type: ignore[attr-defined]
    elif type(stmt) is ast.AnnAssign:
        target = stmt.target  # type: ignore[attr-defined]
    else:
        return
    tt = type(target)
    if tt is ast.Name:
        ident = target.id  # type: ignore[attr-defined]
        known = names()
        if ex.class_stack:
            if ident in known["attr_set"]:
                _attr(ex, ".".join(ex.prefix), ident)
            return
        value = stmt.value  # type: ignore[attr-defined]
        if ex.func is not None and value is not None:
            keys = _seed_keys(value)
            if keys:
                _facts(ex).setdefault("dict_options", {}).setdefault(ex.scope, []).extend(keys)
        if ident in known["seed_names"] and ex.func is not None and value is not None:
            _facts(ex)["locals"].setdefault(ex.scope, []).append((ident, ex.span(stmt)))
            return
        if type(value) is ast.Call and ident in known["configs"]:
            func = value.func  # type: ignore[attr-defined]
            if isinstance(func, ast.Attribute) and func.attr in _PARSE_METHODS:
                return  # recorded by the call hook
            callee = ex.r.qualify(func) or (func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None)
            if callee:
                _parsed(ex, ident, stmt, callee)
    elif tt is ast.Attribute:
        fn = ex.func
        base = target.value  # type: ignore[attr-defined]
        if (
            fn is not None and fn.class_name is not None and type(base) is ast.Name
            and target.attr in names()["attr_set"] and fn.params and base.id == fn.params[0]  # type: ignore[attr-defined]
        ):
            _attr(ex, ex.scope.rpartition(".")[0], target.attr)  # type: ignore[attr-defined]


def _seed_keys(value: ast.AST) -> list[str]:
    """The seed settings (catalog `seed-attributes`) a dict display or `dict(...)` call names,
    with a value other than None: `dict(ckpt="m.pt", seed=42)`."""
    attrs = names()["attr_set"]
    if type(value) is ast.Call and isinstance(value.func, ast.Name) and value.func.id == "dict":  # type: ignore[attr-defined]
        pairs = [(kw.arg, kw.value) for kw in value.keywords if kw.arg]  # type: ignore[attr-defined]
    elif type(value) is ast.Dict:
        pairs = [(k.value, v) for k, v in zip(value.keys, value.values) if isinstance(k, ast.Constant)]  # type: ignore[attr-defined]
    else:
        return []
    return [k for k, v in pairs if k in attrs and not (isinstance(v, ast.Constant) and v.value is None)]


def _attr(ex: Extractor, cls: str, attr: str) -> None:
    attrs = _facts(ex)["attrs"].setdefault(cls, [])
    if attr not in attrs:
        attrs.append(attr)


def _call_names() -> frozenset:
    return frozenset(
        ["add_argument", "ArgumentParser", *_PARSE_METHODS, *dataclass_parsers()[1], *(c.rpartition(".")[2] for c in dataclass_parsers()[0])]
    )


FAMILY = Family(order=10, call_hooks=(_on_call,), call_names={_on_call: _call_names}, assign_hooks=(_on_assign,))
