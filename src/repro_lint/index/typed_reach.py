"""What a program reaches when the class of `self` is known.

The program walk (`scope_walk`) keeps one list of successors per scope, shared by every
program, so a `self.m()` in a base class's method reaches `m` of the base and every override
in its subclasses. Where the program shows which class an object is, only one of them runs:
`trainer = Engine(step); trainer.run(data)` runs `Engine.run` with `self` an `Engine`, and
the `self._setup_engine()` there is `Engine`'s own, not the override of a subclass
(`DeterministicEngine._setup_engine`, which seeds torch). This walk carries the class of
`self` along calls on an object the scope saw built (`Net(...)`, a name bound to it), into
its methods and the `self.` and `super().` calls they make; elsewhere it follows the same
calls the program walk does. It is asked only about seeds found in overriding methods
(`Program.seeds`): everywhere else both walks agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from repro_lint.facts.model import INSTANCE, MAIN_SCOPE, MODULE_SCOPE, SELF_CALL, SUPER_CALL, is_reference

if TYPE_CHECKING:  # pragma: no cover
    from repro_lint.index.program import Program
    from repro_lint.index.project_index import ProjectIndex, ScopeRef


def overrides(index: "ProjectIndex", module: str, scope: str) -> bool:
    """Whether the function `scope` of `module` is a method that overrides one a project base
    class of its class defines."""
    info = index.modules.get(module)
    fn = info.functions.get(scope) if info is not None else None
    if fn is None or fn.class_name is None:
        return False
    cls_key = f"{module}.{fn.class_name}" if module else fn.class_name
    name = scope.rpartition(".")[2]
    return any(f"{base}.{name}" in index.functions for base in index.class_bases(cls_key)[1:] if base in index.classes)


def typed_reach(index: "ProjectIndex", program: "Program") -> set:
    """The scopes of `program` that run once the class of `self` is carried along (a subset
    of `program.scopes`)."""
    allowed = program.scope_set
    entry = program.entry
    starts: list = [(entry.module, MODULE_SCOPE), (entry.module, MAIN_SCOPE), *((entry.module, q) for q in entry.hydra_mains)]
    starts += [ref for ref in program.scopes if ref[1] == MODULE_SCOPE]
    starts += list(program.hook_starts)
    queue: list[tuple["ScopeRef", Optional[str]]] = [(ref, None) for ref in dict.fromkeys(starts) if ref in allowed]
    seen = set(queue)
    reached: set = set()
    while queue:
        ref, cls = queue.pop()
        reached.add(ref)
        info = index.modules[ref[0]]
        for _, keys, then in _typed_calls(index, info, ref[1], cls):
            for key in keys:
                nxt = (index.scope_of(key), then)
                if nxt[0] in allowed and nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
    return reached


# A walk from one call that grows past this many (scope, class) states gives up: the answer
# is then what the shared effects say (every override counted).
_MAX_STATES = 20_000


def typed_seeds(index: "ProjectIndex", key: str, cls: str) -> frozenset:
    """The sources a call of the function `key` seeds when `self` is an instance of the
    class `cls` (a method called on an object the caller built, or its `__init__`)."""
    memo = index.__dict__.setdefault("_typed_seeds", {})
    hit = memo.get((key, cls))
    if hit is not None:
        return hit
    start = (index.scope_of(key), cls)
    queue = [start]
    seen = {start}
    found: set = set()
    while queue:
        if len(seen) > _MAX_STATES:
            found = set(index.effects(key).seeds)
            break
        ref, here = queue.pop()
        info = index.modules[ref[0]]
        for ev in info.events.get(ref[1], ()):
            if ev.kind in ("seed", "seedcand", "configload"):
                found.update(index.seed_sources(info, ev))
        for call, keys, then in _typed_calls(index, info, ref[1], here):
            if is_reference(call):
                continue  # handed over: runs later, not as part of this call
            for k in keys:
                nxt = (index.scope_of(k), then)
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
    hit = memo[(key, cls)] = frozenset(found)
    return hit


def _typed_calls(index: "ProjectIndex", info, scope: str, cls: Optional[str]):
    """The calls of a scope with the functions they reach and the class of `self` there,
    when the class of `self` in the scope is `cls` (None: unknown)."""
    for call, keys in index.callees(info, scope):
        target, method = call[0], call[1]
        then: Optional[str] = None
        if target is None:
            pass
        elif target.startswith(SELF_CALL):
            if cls is not None and method:
                # `self.m()` on an object of a known class: that class's own `m`
                keys = index.own_method(cls, method) or keys
                then = cls
        elif target.startswith(SUPER_CALL):
            then = cls
        elif target.startswith(INSTANCE):
            if method:
                made = index.class_key(target[len(INSTANCE):], info)
                if made is not None:
                    keys = index.own_method(made, method) or keys
                    then = made
        elif target[0] != "@" and method is None:
            then = index.class_key(target, info)  # building an object: its `__init__` runs with it
        yield call, keys, then
