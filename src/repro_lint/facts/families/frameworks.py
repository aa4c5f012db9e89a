"""The framework layer, extraction side (the data is `rules/catalog/frameworks.toml`).

Three call hooks record what framework calls do for the program:
- "runner" events: a call such as Lightning's `trainer.fit(...)` that runs the hooks of the
  project's LightningModules; the index then reaches those hooks (`ProjectIndex.program`);
- config factories: `hydra.utils.instantiate(...)` builds an object of a class named in a
  config file, so the module that calls it may call methods of any class the configs name
  (marked in `ModuleInfo.extra`, read by `ProjectIndex`);
- "switch" events for determinism keywords of framework calls (`Trainer(benchmark=True)`,
  `TrainingArguments(full_determinism=True)`, `set_seed(seed, deterministic=True)`), read
  by the RPL4xx rules like any other switch.
"""

from __future__ import annotations

import ast
import functools
from typing import Optional

from repro_lint.core import catalog
from repro_lint.facts.hooks import Family
from repro_lint.facts.walker import extractor
from repro_lint.facts.syntax import NOT_LITERAL, get_arg, literal

# ModuleInfo.extra key (and summary): the module calls a config factory (`hydra.utils.instantiate`)
FACTORY = "config_factory"
# ModuleInfo.extra key (and summary): the module builds something by name ("byname" events)
BY_NAME = "builds_by_name"


@functools.lru_cache(maxsize=1)
def keyword_switches() -> dict[str, list[dict]]:
    """Qualified call name -> the keyword switch entries that apply to it."""
    out: dict[str, list[dict]] = {}
    for entry in catalog.load("frameworks")["keyword-switches"]:
        for name in entry["calls"]:
            out.setdefault(name, []).append(entry)
    return out


def _dotted(node: ast.AST) -> str:
    """`self.trainer`, `L.Trainer` (for a call, its callee): the text a receiver hint is read from."""
    if isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _imported_roots(ex: extractor.Extractor) -> frozenset:
    """Top-level packages the module binds at module level (worked out once per file)."""
    roots = ex.__dict__.get("_framework_roots")
    if roots is None:
        scope = ex.r.scope
        while scope.parent is not None:
            scope = scope.parent
        roots = ex.__dict__["_framework_roots"] = frozenset(q.split(".", 1)[0] for q in scope.bindings.values() if q)
    return roots


def _runner_call(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    func = node.func
    if type(func) is not ast.Attribute:
        return
    method = func.attr
    hint_text: Optional[str] = None
    for runner in ex.m.runners:
        if method not in runner.methods:
            continue
        if qual is not None and qual.split(".", 1)[0] not in runner.packages:
            continue  # a project function or another library's method of that name
        if hint_text is None:
            hint_text = _dotted(func.value).lower()
        if runner.receiver_hint in hint_text or runner.packages & _imported_roots(ex):
            ex.add("runner", node, framework=runner.framework, method=method)


def _factory_call(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    if qual is not None and qual in ex.m.factories:
        ex.info.extra[FACTORY] = True


@functools.lru_cache(maxsize=1)
def _by_name() -> tuple[frozenset, frozenset]:
    data = catalog.load("frameworks")["by-name"]
    return frozenset(data["calls"]), frozenset(data["names"])


def _by_name_call(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    """A call that builds what a string names ("byname" events), unless the string is a
    literal written there (`get_class("pkg.Model")`: the index could read it)."""
    calls, names = _by_name()
    func = node.func
    last = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else None
    if last == "getattr" and qual in (None, "getattr", "builtins.getattr"):
        # `getattr(models, args.arch)`: a module's attribute named at run time
        if len(node.args) >= 2 and _names_module(ex, node.args[0]) and not isinstance(node.args[1], ast.Constant):
            ex.add("byname", node, api="getattr", module=ex.r.qualify(node.args[0]))
            ex.info.extra[BY_NAME] = True
        return
    if qual not in calls and last not in names:
        return
    if node.args and isinstance(node.args[0], ast.Constant) and not node.keywords:
        return
    ex.add("byname", node, api=qual or last)
    ex.info.extra[BY_NAME] = True


def _names_module(ex: extractor.Extractor, node: ast.AST) -> bool:
    """`models`, `torchvision.models`: a name the module binds to an imported module (not a
    variable or an object)."""
    qual = ex.r.qualify(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
    return bool(qual) and any(imp[0] == qual for imp in ex.info.imports)


def _by_name_subscript(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    """`models.__dict__[args.arch](...)`: a callable a module's namespace holds, named at run time."""
    func = node.func
    if type(func) is not ast.Subscript:
        return
    base = func.value
    if type(base) is ast.Attribute and base.attr == "__dict__" and not isinstance(func.slice, ast.Constant):
        ex.add("byname", node, api="__dict__")
        ex.info.extra[BY_NAME] = True


def _keyword_switch(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    entries = keyword_switches().get(qual) if qual is not None else None
    if not entries:
        return
    for entry in entries:
        arg = get_arg(node, entry["position"], entry["keyword"])
        if arg is None:
            # left out: the settings stay as they were; the call is where a fix can switch them
            if entry.get("fix") == "add" and not any(isinstance(a, ast.Starred) for a in node.args) and not any(
                k.arg is None for k in node.keywords
            ):
                ex.add("switchable", node, api=qual, keyword=entry["keyword"], value=entry["deterministic"],
                       sets=tuple(entry["sets"]), framework=entry["framework"],
                       since=(entry["package"], entry["since"]) if "since" in entry else None)
            continue
        lit = literal(arg)
        if lit is NOT_LITERAL:
            value = None  # the user's choice
        elif lit == entry["deterministic"]:
            value = True
        elif lit in entry["wrong"]:
            value = False
        else:
            continue
        ex.add(
            "switch", node, api=qual, sets=tuple(entry["sets"]), value=value, warn_only=False,
            keyword=entry["keyword"], value_span=ex.span(arg), framework=entry["framework"],
        )


@functools.lru_cache(maxsize=1)
def _config_parsers() -> frozenset:
    return frozenset(catalog.load("frameworks").get("config-parsers", {}).get("calls", ()))


def _parsed_switch(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    """`HfArgumentParser((ModelArguments, TrainingArguments))`: the classes it is given come
    from the command line, and so do their keyword switches (`--full_determinism true`)."""
    if qual is None or qual not in _config_parsers():
        return
    switches = keyword_switches()
    roots = ex.m.external_roots
    for arg in [*node.args, *(k.value for k in node.keywords)]:
        for part in ast.walk(arg):
            if type(part) is not ast.Name and type(part) is not ast.Attribute:
                continue
            cls = ex.r.qualify(part)
            if not cls:
                continue
            if cls.split(".", 1)[0] not in roots:
                # a project class (`class SFTConfig(trl.SFTConfig)`): the index knows its bases
                ex.add("parsedswitch", node, api=cls, project=True)
                continue
            for entry in switches.get(cls, ()):
                if entry.get("fix") == "add":
                    ex.add("parsedswitch", node, api=cls, project=False)


@functools.lru_cache(maxsize=1)
def _parser_names() -> frozenset:
    return frozenset(q.rpartition(".")[2] for q in _config_parsers())


@functools.lru_cache(maxsize=1)
def _runner_names() -> frozenset:
    return frozenset(m for r in catalog.load("frameworks")["runners"] for m in r["methods"])  # the keys


@functools.lru_cache(maxsize=1)
def _factory_names() -> frozenset:
    return frozenset(q.rpartition(".")[2] for q in catalog.load("frameworks")["factories"]["calls"])


@functools.lru_cache(maxsize=1)
def _switch_names() -> frozenset:
    return frozenset(q.rpartition(".")[2] for q in keyword_switches())


@functools.lru_cache(maxsize=1)
def _by_name_names() -> frozenset:
    calls, names = _by_name()
    return frozenset(q.rpartition(".")[2] for q in calls) | names | {"getattr"}


FAMILY = Family(
    order=20,
    call_hooks=(_runner_call, _factory_call, _keyword_switch, _parsed_switch, _by_name_call, _by_name_subscript),
    call_names={
        _runner_call: _runner_names, _factory_call: _factory_names, _keyword_switch: _switch_names,
        _parsed_switch: _parser_names, _by_name_call: _by_name_names,
    },
    summaries={FACTORY: lambda info: bool(info.extra.get(FACTORY)), BY_NAME: lambda info: bool(info.extra.get(BY_NAME))},
)
