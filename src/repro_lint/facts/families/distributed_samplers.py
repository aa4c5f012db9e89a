"""RPL303, the extraction side: shuffling `DistributedSampler`s, the loaders they feed and the
loops that iterate those loaders epoch after epoch (the rule is in `rules/distributed_samplers.py`).

A `DistributedSampler(...)` that shuffles (the default) becomes a "dsampler" event; once the
file is walked, its body is read for what the event needs:
- `sampler`: the name or `self.` attribute it is kept under (None when it is built inline,
  inside the loader call), `may_be_none` when that name may also hold None
  (`DistributedSampler(ds) if distributed else None`), `mixed` when it may hold another object;
- `loops`: each loop that runs a loader fed by it more than once, as
  (scope, loop span, span of its header, loop variable or None, whether the loop counts (`range(...)`), span of
  the loop body's first statement, loader name, span of the iteration, what `set_epoch` can
  be called on at the start of the loop body (None: nothing in scope there), what it is
  called on where it is named);
- `set_epoch`: whether the body (or, for a `self.` sampler, its class) calls `set_epoch`.
Every `<x>.set_epoch(...)` call is also a "setepoch" event, for the rule to look for in the
code the loop calls.
"""

from __future__ import annotations

import ast
import functools
from typing import Any, Optional

from repro_lint.core import catalog
from repro_lint.facts.families import scope_syntax as syn
from repro_lint.facts.hooks import Family
from repro_lint.facts.syntax import NOT_LITERAL, get_arg, has_kwargs, literal

FAMILY_KEY = "distributed_samplers"
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


@functools.lru_cache(maxsize=1)
def sampler_catalog() -> dict:
    data = catalog.load("dataloading")["distributed-samplers"]
    return {
        "names": frozenset(data["names"]),
        "shuffle_at": data["parameters"].index("shuffle"),
        "shuffle_default": bool(data["shuffle-default"]),
        "set_epoch": data["set-epoch"],
        "iterating": frozenset(data["iterating-calls"]),
        "not_iterating": frozenset(data["not-iterating"]),
        "counting": frozenset(data["counting-calls"]),
        "keywords": frozenset(data["sampler-keywords"]),
        "fix": data["fix"],
    }


def _call_names() -> frozenset:
    cat = sampler_catalog()
    return frozenset([*(n.rpartition(".")[2] for n in cat["names"]), cat["set_epoch"]])


def _on_call(ex: Any, node: ast.Call, qual: Optional[str]) -> None:
    cat = sampler_catalog()
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == cat["set_epoch"]:
        ex.add("setepoch", node, on=syn.dotted(func.value))
        return
    if qual not in cat["names"]:
        return
    shuffle = get_arg(node, cat["shuffle_at"], "shuffle")
    if shuffle is None:
        if has_kwargs(node) or not cat["shuffle_default"]:
            return  # (`**kwargs` may turn it off)
    elif literal(shuffle) is NOT_LITERAL or not literal(shuffle):
        return  # off, or the user's switch: only a sampler that surely shuffles is reported
    ev = ex.add("dsampler", node, api=qual)
    syn.keep(ex, FAMILY_KEY, node, ev)


def _on_finish(ex: Any) -> None:
    for kept in syn.kept(ex, FAMILY_KEY):
        if kept.event is not None:
            kept.event.data.update(_analyse(ex, kept))


# -- what the body says -----------------------------------------------------------------
def _callee(ex: Any, func: ast.AST) -> Optional[str]:
    """The qualified name of a callee, or a builtin's name (at the end of the walk only
    module-level names are bound)."""
    if isinstance(func, ast.Name) and ex.r.is_unbound(func.id):
        return func.id
    return ex.r.qualify(func)


def _region(ex: Any, kept: syn.Kept, sampler: Optional[str]) -> list[tuple[str, list, Optional[str]]]:
    """The bodies a sampler kept under `sampler` is visible in, as (scope, statements, the
    name of `self` there): its own scope, and for `self.x` every method of its class."""
    func = kept.func
    own = [(kept.scope, syn.body_of(ex, kept.scope, func), None)]
    if sampler is None or func is None or not func.params or not sampler.startswith(func.params[0] + "."):
        return own
    cls = syn.class_node(ex, func)
    if cls is None:
        return own
    prefix = kept.scope.rpartition(".")[0]
    out = []
    for method in syn.methods_of(cls):
        args = method.args.posonlyargs + method.args.args
        out.append((f"{prefix}.{method.name}", method.body, args[0].arg if args else None))
    return out


def _in_region(name: str, self_name: Optional[str], own_self: Optional[str]) -> str:
    """A `self.` name of the sampler's method as the other method spells it."""
    if own_self and self_name and name.startswith(own_self + "."):
        return self_name + name[len(own_self):]
    return name


def _holds(value: ast.AST, node: ast.AST) -> tuple[bool, bool]:
    """Whether an assigned value is the call `node` (or a conditional with it in a branch),
    and whether the other branch is None."""
    if value is node:
        return True, False
    if isinstance(value, ast.IfExp) and (value.body is node or value.orelse is node):
        other = value.orelse if value.body is node else value.body
        return True, literal(other) is None and not isinstance(other, ast.Name)
    return False, False


def _analyse(ex: Any, kept: syn.Kept) -> dict:
    cat = sampler_catalog()
    node = kept.node
    body = syn.body_of(ex, kept.scope, kept.func)
    chain = syn.enclosing(body, node)
    stmt = chain[-1] if chain else None
    sampler: Optional[str] = None
    may_be_none = False
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        targets = syn.assigned_targets(stmt)
        held, none_branch = _holds(stmt.value, node)
        if held and len(targets) == 1:
            sampler = syn.dotted(targets[0])
            may_be_none = none_branch
    own_self = kept.func.params[0] if kept.func is not None and kept.func.params else None
    region = _region(ex, kept, sampler)
    mixed = False
    set_epoch = False
    loaders: list[tuple[str, str, ast.Call, Optional[str]]] = []  # (scope, loader name or "", call, self name)
    for scope, stmts, self_name in region:
        name = _in_region(sampler, self_name, own_self) if sampler else None
        for sub in syn.statements(stmts):
            for target in syn.assigned_targets(sub):
                if name is None or syn.dotted(target) != name:
                    continue
                value = getattr(sub, "value", None)
                if value is None or isinstance(sub, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.AugAssign)):
                    mixed = True
                elif literal(value) is None and not isinstance(value, ast.Name):
                    may_be_none = True
                elif not _holds(value, node)[0]:
                    mixed = True
        for sub in syn.nodes(stmts):
            if not isinstance(sub, ast.Call):
                continue
            if isinstance(sub.func, ast.Attribute) and sub.func.attr == cat["set_epoch"]:
                set_epoch = True
                continue
            for kw in sub.keywords:
                if kw.arg in cat["keywords"] and _feeds(kw.value, node, name):
                    loaders.append((scope, _bound_name(stmts, sub) or "", sub, self_name))
    loops = []
    for scope, loader, call, self_name in loaders:
        stmts = next(s for sc, s, _ in region if sc == scope)
        if loader and _rebound(stmts, loader, call):
            continue  # (`loader = accelerator.prepare(loader)`: another object is iterated)
        # where the loader is visible: its scope, and the class's methods for `self.x`
        places = [(scope, stmts, loader, self_name)]
        if loader and self_name and loader.startswith(self_name + "."):
            places += [
                (sc, st, _in_region(loader, other, self_name), other)
                for sc, st, other in region if sc != scope and other
            ]
        for place, body_stmts, seen_as, place_self in places:
            for at, how in _iterations(ex, body_stmts, seen_as, call):
                loop = _epoch_loop(body_stmts, at, how, (node, call))
                if loop is None and len(places) > 1:
                    # the method that iterates is called from a loop of another (`for epoch
                    # in ...: self.run_epoch()`): that loop runs the loader once per pass
                    found = _calling_loop(region, place, place_self, (node, call))
                    if found is not None:
                        place, body_stmts, place_self, loop, at = found
                        seen_as = _in_region(loader, place_self, self_name)
                if loop is None:
                    continue
                target = _set_epoch_target(ex, call, sampler, seen_as, node, place_self, own_self)
                in_scope = bool(target) and not mixed and (
                    target.startswith((place_self or "\0") + ".") if place != kept.scope
                    else loop.lineno > ((stmt.end_lineno or 0) if sampler else call.end_lineno or 0)
                )
                header = ex.span(loop)[:2] + ex.span(getattr(loop, "iter", None) or loop.test)[2:]  # type: ignore[attr-defined]
                loops.append((
                    place, ex.span(loop), header, _loop_variable(loop), _counts(ex, loop, cat["counting"]),
                    ex.span(loop.body[0]), seen_as, ex.span(at), target if in_scope else None, target or "",
                ))
    return {"sampler": sampler, "may_be_none": may_be_none, "mixed": mixed, "set_epoch": set_epoch, "loops": tuple(loops)}


def _set_epoch_target(
    ex: Any, call: ast.Call, sampler: Optional[str], loader: str, node: ast.Call, place_self: Optional[str], own_self: Optional[str]
) -> str:
    """What `set_epoch` can be called on where the loop is: the sampler's name, or for a
    sampler built inside a torch loader's `sampler=`, the loader's `.sampler` attribute."""
    if sampler:
        return _in_region(sampler, place_self, own_self)
    if loader and _callee(ex, call.func) in loader_names() and get_arg(call, 3, "sampler") is node:
        return f"{loader}.sampler"
    return ""


@functools.lru_cache(maxsize=1)
def loader_names() -> frozenset:
    return frozenset(catalog.load("dataloading")["loaders"])


def _feeds(value: ast.AST, node: ast.Call, name: Optional[str]) -> bool:
    """Whether a loader's `sampler=`/`batch_sampler=` value is the sampler (or wraps it)."""
    if value is node or name is not None and syn.dotted(value) == name:
        return True
    if isinstance(value, ast.Call):  # `batch_sampler=BatchSampler(sampler, ...)`
        return any(a is node or name is not None and syn.dotted(a) == name for a in value.args)
    return False


def _bound_name(stmts: list, call: ast.Call) -> Optional[str]:
    for sub in syn.statements(stmts):
        if isinstance(sub, (ast.Assign, ast.AnnAssign)) and sub.value is call:
            targets = syn.assigned_targets(sub)
            if len(targets) == 1:
                return syn.dotted(targets[0])
    return None


def _rebound(stmts: list, name: str, call: ast.Call) -> bool:
    for sub in syn.statements(stmts):
        if getattr(sub, "value", None) is call:
            continue
        if any(syn.dotted(t) == name for t in syn.assigned_targets(sub)):
            return True
    return False


def _iterations(ex: Any, stmts: list, loader: str, call: ast.Call) -> list[tuple[ast.AST, str]]:
    """Where a loader is iterated: a `for` over it (or over `enumerate(loader)`, ...), the
    loader call itself in a `for` header, or a call it is handed to (which iterates it)."""
    cat = sampler_catalog()
    out: list[tuple[ast.AST, str]] = []
    headers = set()
    for sub in syn.statements(stmts):
        if isinstance(sub, (ast.For, ast.AsyncFor)) and _over(sub.iter, loader, call):
            out.append((sub, "for"))
            headers.update(id(n) for n in ast.walk(sub.iter))
    if not loader:
        return out
    for sub in syn.nodes(stmts):
        if not isinstance(sub, ast.Call) or id(sub) in headers:
            continue
        if isinstance(sub.func, ast.Attribute) and syn.dotted(sub.func.value) == loader:
            continue  # a method of the loader (`loader.sampler.set_epoch`, `len(loader)` alike)
        if _callee(ex, sub.func) in cat["not_iterating"]:
            continue
        if any(syn.dotted(a) == loader for a in [*sub.args, *(k.value for k in sub.keywords)]):
            out.append((sub, "handed"))
    return out


def _over(it: ast.AST, loader: str, call: ast.Call) -> bool:
    if it is call or loader and syn.dotted(it) == loader:
        return True
    if isinstance(it, ast.Call):  # `enumerate(loader)`, `tqdm(loader)`, `zip(a, loader)`
        return any(_over(a, loader, call) for a in it.args)
    return False


def _epoch_loop(stmts: list, at: ast.AST, how: str, built: tuple) -> Optional[ast.stmt]:
    """The innermost loop around an iteration (not the `for` that is the iteration), when
    the sampler and the loader are built outside it."""
    target = at.iter if how == "for" else at  # type: ignore[attr-defined]
    chain = syn.enclosing(stmts, target)
    loops = [s for s in chain if isinstance(s, _LOOPS) and s is not at]
    if not loops:
        return None
    loop = loops[-1]
    for made in built:
        if loop.lineno <= made.lineno <= (loop.end_lineno or loop.lineno) and any(n is made for n in ast.walk(loop)):
            return None  # built anew in each pass: another question
    return loop


def _calling_loop(region: list, method_scope: str, method_self: Optional[str], built: tuple) -> Optional[tuple]:
    """A loop of another method of the class that calls `self.<method>(...)`: (its scope,
    body, name of `self`, the loop, the call)."""
    method = method_scope.rpartition(".")[2]
    for scope, stmts, self_name in region:
        if scope == method_scope or not self_name:
            continue
        for sub in syn.nodes(stmts):
            if (
                isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == method
                and isinstance(sub.func.value, ast.Name) and sub.func.value.id == self_name
            ):
                loop = _epoch_loop(stmts, sub, "handed", built)
                if loop is not None:
                    return scope, stmts, self_name, loop, sub
    return None


def _loop_variable(loop: ast.stmt) -> Optional[str]:
    if isinstance(loop, (ast.For, ast.AsyncFor)) and isinstance(loop.target, ast.Name) and loop.target.id != "_":
        return loop.target.id
    return None


def _counts(ex: Any, loop: ast.stmt, counting: frozenset) -> bool:
    """Whether a `for` counts passes (`range(...)`, `trange(...)`, `tqdm(range(...))`)."""
    it = getattr(loop, "iter", None)
    for _ in range(2):
        if not isinstance(it, ast.Call):
            return False
        if _callee(ex, it.func) in counting:
            return True
        it = it.args[0] if it.args else None
    return False


FAMILY = Family(order=45, call_hooks=(_on_call,), call_names={_on_call: _call_names}, finish_hooks=(_on_finish,))
