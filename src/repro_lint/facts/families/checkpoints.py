"""RPL501, the extraction side: checkpoints a program saves to resume from, where it loads an
optimizer's state back, and where it reads or sets RNG states (the rule is in `rules/checkpoints.py`).

- "ckptsave": `torch.save(obj, ...)`. Data: `optimizer` (what is saved holds optimizer state:
  a key naming it, an optimizer's `state_dict()`, or the optimizer's state itself), `rng`
  (it may hold RNG state: a key naming it, a state getter, or keys this file cannot read),
  `keys` (its literal keys), `dict` (the span of the dict display it is, or was assigned
  from in the same body; None when it is none), `rank_guard` (the condition of an `if` around
  it that lets one rank save, when there is one).
- "optload": `<optimizer>.load_state_dict(arg)`. Data: `ckpt` (the name of the loaded
  checkpoint when `arg` is `ckpt["key"]` or `ckpt.get("key")`), `key`, `direct` (`arg` is a
  `torch.load(...)` call: the file holds the optimizer's state alone), `stmt` (the span of
  the statement to restore the states after: the call's own expression statement, else None),
  `load` (the span of the `torch.load(...)` call the name was assigned from in that body),
  `weights_only` (that call's `weights_only=`: True, False, "other", or None when absent).
- "rngstate": a call that reads or sets a generator's state (`op` "get"/"set", `source`), or a
  framework call that saves or restores them with its checkpoints (`framework`); `local` when
  it is part of a local save-and-restore of the state.
"""

from __future__ import annotations

import ast
import functools
from typing import Any, Optional

from repro_lint.core import catalog
from repro_lint.facts.families import scope_syntax as syn
from repro_lint.facts.hooks import Family
from repro_lint.facts.syntax import NOT_LITERAL, get_arg, literal

SAVES = "checkpoints:saves"
LOADS = "checkpoints:loads"


@functools.lru_cache(maxsize=1)
def checkpoint_catalog() -> dict:
    data = catalog.load("checkpoints")
    getters = {q: src for src, quals in data["state"]["get"].items() for q in quals}
    setters = {q: src for src, quals in data["state"]["set"].items() for q in quals}
    methods = {}
    for fw in data["frameworks"]:
        for method in fw.get("methods", ()):
            methods[method] = fw["package"]
    return {
        "savers": frozenset(data["savers"]),
        "loaders": frozenset(data["loaders"]),
        "restore": data["restore-method"],
        "state": data["state-method"],
        "optimizer_words": tuple(data["optimizer-words"]),
        "optimizer_keys": tuple(data["optimizer-key-words"]),
        "rng_keys": tuple(data["rng-key-words"]),
        "getters": getters,
        "setters": setters,
        "framework_methods": methods,
        "frameworks": {fw["package"]: fw for fw in data["frameworks"]},
        "weights_only": data["weights-only"],
        "fix": data["fix"],
        "rank_words": frozenset(data["rank-guard-words"]),
    }


def _call_names() -> frozenset:
    cat = checkpoint_catalog()
    quals = [*cat["savers"], *cat["getters"], *cat["setters"]]
    return frozenset([*(q.rpartition(".")[2] for q in quals), cat["restore"], *cat["framework_methods"]])


def _optimizer_name(name: Optional[str]) -> bool:
    if not name:
        return False
    words = checkpoint_catalog()["optimizer_words"]
    return any(part.lower().startswith(words) for part in name.split("."))


def _on_call(ex: Any, node: ast.Call, qual: Optional[str]) -> None:
    cat = checkpoint_catalog()
    func = node.func
    if qual in cat["savers"]:
        ev = ex.add("ckptsave", node, api=qual)
        guard = _rank_guard(ex, cat["rank_words"])
        if guard is not None:
            ev.data["rank_guard"] = guard
        syn.keep(ex, SAVES, node, ev)
        return
    source = cat["getters"].get(qual or "")
    op = "get"
    if source is None:
        source, op = cat["setters"].get(qual or ""), "set"
    if source is not None:
        local = bool(ex.rng_local) or source in ex.local_sources
        ex.add("rngstate", node, op=op, source=source, api=qual, local=local)
        return
    if not isinstance(func, ast.Attribute):
        return
    if func.attr in cat["framework_methods"] and (node.args or node.keywords):
        package = cat["framework_methods"][func.attr]
        ex.add("rngstate", node, op="get" if "save" in func.attr else "set", source="", api=func.attr, local=False, framework=package)
        return
    if func.attr == cat["restore"] and node.args and _optimizer_name(syn.dotted(func.value)):
        ev = ex.add("optload", node, on=syn.dotted(func.value))
        syn.keep(ex, LOADS, node, ev)


def _rank_guard(ex: Any, words: frozenset) -> Optional[str]:
    """The source of an `if` around the statement that lets one rank through (its condition
    names the rank or asks for the main process), or None."""
    for test in ex.guards:
        if not isinstance(test, ast.AST):
            continue  # an `else` side: the ranks the condition does not name
        for node in ast.walk(test):
            name = node.id if type(node) is ast.Name else node.attr if type(node) is ast.Attribute else None
            if name is not None and (name in words or name.endswith("_rank")):
                return ex.text_of(test)
    return None


def _on_finish(ex: Any) -> None:
    for kept in syn.kept(ex, SAVES):
        kept.event.data.update(_saved(ex, kept))
    for kept in syn.kept(ex, LOADS):
        kept.event.data.update(_loaded(ex, kept))


# -- what a checkpoint holds ----------------------------------------------------------------
def _saved(ex: Any, kept: syn.Kept) -> dict:
    cat = checkpoint_catalog()
    node = kept.node
    obj = get_arg(node, 0, "obj")
    body = syn.body_of(ex, kept.scope, kept.func)
    display: Optional[ast.Dict] = None
    extra: list[tuple[Optional[ast.AST], ast.AST]] = []  # (key, value) pairs added to the dict in the body
    unknown = False
    if isinstance(obj, ast.Dict):
        display = obj
    elif isinstance(obj, ast.Name):
        display, extra, unknown = _named_dict(ex, body, obj.id, node)
    elif isinstance(obj, ast.Call) and isinstance(obj.func, ast.Name) and obj.func.id == "dict" and not obj.args:
        extra = [(ast.Constant(k.arg) if k.arg else None, k.value) for k in obj.keywords]
    elif obj is not None:
        # the saved object itself: an optimizer's `state_dict()` is a checkpoint to resume from
        optimizer = _state_of_optimizer(obj)
        return {"optimizer": optimizer, "rng": _mentions_rng(ex, obj), "keys": (), "dict": None}
    pairs = list(zip(display.keys, display.values)) if display is not None else []
    pairs += extra
    keys = []
    optimizer = rng = False
    for key, value in pairs:
        text = literal(key) if key is not None else NOT_LITERAL
        if not isinstance(text, str):
            unknown = True  # `**other` or a computed key: it may hold anything
            continue
        keys.append(text)
        low = text.lower()
        optimizer = optimizer or any(w in low for w in cat["optimizer_keys"]) or _state_of_optimizer(value)
        rng = rng or any(w in low for w in cat["rng_keys"]) or _mentions_rng(ex, value)
    return {
        "optimizer": optimizer,
        "rng": rng or unknown,
        "keys": tuple(keys),
        "dict": ex.span(display) if display is not None and not unknown else None,
    }


def _named_dict(ex: Any, body: list, name: str, call: ast.Call) -> tuple[Optional[ast.Dict], list, bool]:
    """The dict display a name was last assigned before `call` in the body, the items the body
    adds to it (`ckpt["rng"] = ...`, `ckpt.update(...)`), and whether other changes make
    its keys unknown."""
    display: Optional[ast.Dict] = None
    extra: list = []
    unknown = False
    for stmt in syn.statements(body):
        if stmt.lineno >= call.lineno:
            break
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            for target in syn.assigned_targets(stmt):
                if isinstance(target, ast.Name) and target.id == name:
                    display, extra, unknown = (stmt.value, [], False) if isinstance(stmt.value, ast.Dict) else (None, [], True)
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == name:
                    extra.append((target.slice, stmt.value))
        for sub in ast.walk(stmt) if not isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.Try)) else ():
            if (
                isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "update"
                and isinstance(sub.func.value, ast.Name) and sub.func.value.id == name
            ):
                if sub.args and isinstance(sub.args[0], ast.Dict):
                    extra += list(zip(sub.args[0].keys, sub.args[0].values))
                else:
                    extra += [(ast.Constant(k.arg) if k.arg else None, k.value) for k in sub.keywords] or [(None, sub)]
    if display is None and not extra:
        unknown = True
    return display, extra, unknown


def _state_of_optimizer(value: ast.AST) -> bool:
    """`optimizer.state_dict()` (or an optimizer object itself, which Fabric-style savers take)."""
    state = checkpoint_catalog()["state"]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == state:
        return _optimizer_name(syn.dotted(value.func.value))
    return isinstance(value, (ast.Name, ast.Attribute)) and _optimizer_name(syn.dotted(value))


def _mentions_rng(ex: Any, value: ast.AST) -> bool:
    cat = checkpoint_catalog()
    for sub in ast.walk(value):
        if isinstance(sub, ast.Call):
            qual = ex.r.qualify(sub.func) or ""
            if qual in cat["getters"]:
                return True
            last = qual.rpartition(".")[2] or getattr(sub.func, "attr", "") or getattr(sub.func, "id", "")
            if any(w in last.lower() for w in cat["rng_keys"]):
                return True  # a helper that collects them (`get_rng_states()`)
    return False


# -- where the optimizer's state is loaded back ----------------------------------------------
def _loaded(ex: Any, kept: syn.Kept) -> dict:
    cat = checkpoint_catalog()
    node = kept.node
    arg = node.args[0]
    ckpt: Optional[str] = None
    key: Optional[str] = None
    if isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name) and isinstance(literal(arg.slice), str):
        ckpt, key = arg.value.id, literal(arg.slice)
    elif (
        isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "get"
        and isinstance(arg.func.value, ast.Name) and arg.args and isinstance(literal(arg.args[0]), str)
    ):
        ckpt, key = arg.func.value.id, literal(arg.args[0])
    direct = isinstance(arg, ast.Call) and ex.r.qualify(arg.func) in cat["loaders"]
    body = syn.body_of(ex, kept.scope, kept.func)
    chain = syn.enclosing(body, node)
    stmt = chain[-1] if chain else None
    own = ex.span(stmt) if isinstance(stmt, ast.Expr) and stmt.value is node else None
    load = weights_only = None
    if ckpt is not None:
        for sub in syn.statements(body):
            if sub.lineno >= node.lineno:
                break
            if isinstance(sub, ast.Assign) and any(isinstance(t, ast.Name) and t.id == ckpt for t in sub.targets):
                value = sub.value
                if isinstance(value, ast.Call) and ex.r.qualify(value.func) in cat["loaders"]:
                    load = ex.span(value)
                    arg_wo = get_arg(value, -1, cat["weights_only"]["keyword"])
                    lit = literal(arg_wo) if arg_wo is not None else None
                    weights_only = None if arg_wo is None else lit if isinstance(lit, bool) else "other"
                else:
                    load = weights_only = None
    return {"ckpt": ckpt, "key": key, "direct": direct, "stmt": own, "load": load, "weights_only": weights_only}


FAMILY = Family(order=55, call_hooks=(_on_call,), call_names={_on_call: _call_names}, finish_hooks=(_on_finish,))
