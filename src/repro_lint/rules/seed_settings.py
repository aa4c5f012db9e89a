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
The rule-time side answers which `<name>.<attr>` expressions are valid in a scope.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from pathlib import Path
from typing import Optional

from repro_lint import catalog, extract
from repro_lint.bounded_read import is_inside, read_text
from repro_lint.extract import Extractor
from repro_lint.model import ModuleInfo
from repro_lint.syntax import argparse_dest

FACTS = "seed_settings"
# how a name is bound to parsed settings (`parsed`): "dataclass:<seed attribute>" for the object
# a dataclass parser fills from a class that carries the seed
DATACLASS = "dataclass:"
_PARSE_METHODS = frozenset(["parse_args", "parse_known_args"])
# Hydra configs: a top-level `seed:` key in a YAML file of the config folder
_YAML_SEED = re.compile(r"^(seed|random_seed|rng_seed)\s*:")
YAML_MAX_BYTES = 1 << 20


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


def _attr(ex: Extractor, cls: str, attr: str) -> None:
    attrs = _facts(ex)["attrs"].setdefault(cls, [])
    if attr not in attrs:
        attrs.append(attr)


extract.CALL_HOOKS.append(_on_call)
extract.CALL_HOOK_NAMES[_on_call] = lambda: frozenset(
    ["add_argument", *_PARSE_METHODS, *dataclass_parsers()[1], *(c.rpartition(".")[2] for c in dataclass_parsers()[0])]
)
extract.ASSIGN_HOOKS.append(_on_assign)


# -- rule time -------------------------------------------------------------------------------
def facts_of(info: ModuleInfo) -> dict:
    return info.extra.get(FACTS) or {"options": [], "parsed": {}, "parsers": [], "attrs": {}, "locals": {}}


def options(infos) -> list[str]:
    """The seed options the argparse parsers of these modules define, in catalog order,
    but for those whose value may be None (`add_argument("--seed", type=int)` without a
    default): `torch.manual_seed(args.seed)` would raise on a run that does not pass one."""
    infos = list(infos)
    found = {opt for info in infos for opt in facts_of(info)["options"]}
    found -= {opt for info in infos for opt in facts_of(info).get("none", ())}
    return [a for a in names()["attrs"] if a in found]


def parsed_names(info: ModuleInfo, scope: str, parser_functions: set) -> list[tuple[str, tuple]]:
    """Names a scope binds to parsed command-line arguments, with the span of the binding
    statement. `parser_functions` are the project functions (keys or names) that return
    parsed arguments."""
    return [(name, span) for name, span, _ in parsed_bindings(info, scope, parser_functions)]


def parsed_bindings(info: ModuleInfo, scope: str, parser_functions: set) -> list[tuple[str, tuple, str]]:
    """`parsed_names` with how each name is bound: "parse" (`parser.parse_args()` in the
    scope) or the parser function called."""
    out = []
    for name, span, how in facts_of(info)["parsed"].get(scope, ()):
        if how == "parse" or how.startswith(DATACLASS) or how in parser_functions or how.rpartition(".")[2] in parser_functions:
            out.append((name, tuple(span), how))
    return out


def own_options(info: ModuleInfo) -> Optional[list[str]]:
    """The seed options of a module that builds an argparse parser of its own (`add_argument`
    calls), in catalog order: what `parse_args()` there returns has no others (`opt.seed`
    of another module's parser would raise AttributeError). None when it adds no argument
    (it parses a parser built elsewhere)."""
    facts = facts_of(info)
    if not facts.get("adds"):
        return None
    return options([info])


def parser_function_names(infos) -> set:
    """Names of project functions that parse the command line and are named for it
    (`get_args`, `parse_opt`): `args = get_args()` binds parsed arguments."""
    pattern = names()["config_function"]
    out: set = set()
    for info in infos:
        for scope in facts_of(info)["parsers"]:
            fn = info.functions.get(scope)
            if fn is not None and pattern.search(fn.name):
                out.add(fn.name)
                out.add(f"{info.module}.{scope}" if info.module else scope)
    return out


def local_seeds(info: ModuleInfo, scope: str) -> list[tuple[str, tuple]]:
    """Local names of a function named like a seed, with the span of their binding."""
    return [(name, tuple(span)) for name, span in facts_of(info).get("locals", {}).get(scope, ())]


def instance_attrs(info: ModuleInfo, cls: str) -> list[str]:
    return list(facts_of(info)["attrs"].get(cls, ()))


def hydra_seed_key(config_folder: Optional[Path], root: Optional[Path], config_name: Optional[str] = None) -> Optional[str]:
    """The seed key that the config a Hydra app composes defines at top level (`seed: 42`):
    in its primary config file (`config_name`), or in a config its defaults list pulls in at
    the top level (a file of the same folder, or a group option whose file says
    `# @package _global_`). None when the app names no primary config, when the key is
    null there (`cfg.seed` would be None), or when no file of the composition defines it:
    reading `cfg.seed` from a config without the key raises in Hydra's struct mode.
    Only regular files inside the project are read."""
    if config_folder is None or root is None or not config_name:
        return None
    try:
        folder = config_folder.resolve()
        inside = str(root.resolve())
        folder.relative_to(inside)
    except (OSError, ValueError):
        return None
    seen: set = set()
    todo = [(folder / config_name, True)]
    while todo and len(seen) < 50:
        path, top = todo.pop(0)
        if path.suffix not in (".yaml", ".yml"):
            path = path.with_name(path.name + ".yaml")
        if path in seen:
            continue
        seen.add(path)
        text = _config_text(path, inside)
        if text is None:
            continue
        if not top and not _GLOBAL_PACKAGE.search(text):
            continue  # a group's file lands under its group's key, not at the top level
        key = _top_level_seed(text)
        if key is not None:
            return key or None
        for group, option in _defaults(text):
            todo.append((folder / option, True) if group is None else (folder / group / option, False))
    return None


_GLOBAL_PACKAGE = re.compile(r"^#\s*@package\s+_global_\s*$", re.M)
_DEFAULT_ITEM = re.compile(r"^\s*-\s+(?:(?:override\s+)?([\w/.-]+)\s*:\s*)?['\"]?([\w/.-]+)['\"]?\s*(?:#.*)?$")


def _config_text(path: Path, inside: str) -> Optional[str]:
    if not is_inside(os.path.realpath(path), inside):
        return None  # a link out of the project
    try:
        return read_text(path, YAML_MAX_BYTES)  # a regular file, at most this size
    except OSError:
        return None


def _top_level_seed(text: str) -> Optional[str]:
    """The seed key at the top level of a config text; "" when its value is null."""
    for line in text.splitlines():
        match = _YAML_SEED.match(line)
        if match:
            value = line[match.end():].split("#", 1)[0].strip()
            return "" if value in ("", "null", "~", "None") else match.group(1)
    return None


def _defaults(text: str) -> list[tuple[Optional[str], str]]:
    """The entries of a config's `defaults:` list: (group or None, option or file name)."""
    out: list = []
    in_defaults = False
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace() and not line.startswith("-"):
            in_defaults = line.split(":", 1)[0].strip() == "defaults"
            continue
        if in_defaults:
            match = _DEFAULT_ITEM.match(line)
            if match and match.group(2) not in ("_self_", "null"):
                out.append((match.group(1), match.group(2)))
    return out
