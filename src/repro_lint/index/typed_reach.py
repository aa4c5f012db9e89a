"""What a program reaches when the class of `self` is known.

The program walk (`scope_walk`) keeps one list of successors per scope, shared by every
program, so a `self.m()` in a base class's method reaches `m` of the base and every override
in its subclasses. Where the program shows which class an object is, only one of them runs:
`trainer = Engine(step); trainer.run(data)` runs `Engine.run` with `self` an `Engine`, and
the `self._setup_engine()` there is `Engine`'s own, not the override of a subclass
(`DeterministicEngine._setup_engine`, which seeds torch). This walk carries the class of
`self` along calls on an object the scope saw built (`Net(...)`, a name bound to it, or what a project
factory returns built: `create_trainer(fn)` may return an `Engine` or a
`DeterministicEngine`), into its methods and the `self.` and `super().` calls they make;
elsewhere it follows the same calls the program walk does. Where the possible classes of
`self` run different methods, each is reached, but not certainly: a seed found only there
may run (no RPL101) but is not the program's seed (intent, where fixes go). It is asked only
about seeds found in overriding methods (`Program.seeds`): everywhere else the walks agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

from repro_lint.facts.model import INSTANCE, MADE_CLS, MADE_UNKNOWN, MAIN_SCOPE, MODULE_SCOPE, RETURNS_MADE, SELF_CALL, SUPER_CALL, is_reference

if TYPE_CHECKING:  # pragma: no cover
    from repro_lint.index.program import Program
    from repro_lint.index.project_index import ProjectIndex

Classes = Optional[frozenset]  # the classes `self` may be of (None: not known)


def reaches_override(index: "ProjectIndex", program: "Program") -> bool:
    """Whether the program reaches a method that overrides one a project base class of its
    class defines (else both walks agree)."""
    refs = index.__dict__.get("_override_refs")
    if refs is None:
        refs = index.__dict__["_override_refs"] = frozenset(_override_refs(index))
    return bool(refs) and not refs.isdisjoint(program.scopes)


def _override_refs(index: "ProjectIndex") -> Iterator:
    for key in index.functions:
        info, fn = index.function(key)
        if fn.class_name is None:
            continue
        cls_key = f"{info.module}.{fn.class_name}" if info.module else fn.class_name
        name = key.rpartition(".")[2]
        if any(f"{base}.{name}" in index.functions for base in index.class_bases(cls_key)[1:] if base in index.classes):
            yield index.scope_of(key)


def typed_reach(index: "ProjectIndex", program: "Program") -> tuple[set, set]:
    """The scopes of `program` that may run once the classes of `self` are carried along, and
    those that certainly do (both subsets of `program.scopes`)."""
    allowed = program.scope_set
    entry = program.entry
    starts: list = [(entry.module, MODULE_SCOPE), (entry.module, MAIN_SCOPE), *((entry.module, q) for q in entry.hydra_mains)]
    starts += [ref for ref in program.scopes if ref[1] == MODULE_SCOPE]
    starts += list(program.hook_starts)
    queue: list = [(ref, None, True) for ref in dict.fromkeys(starts) if ref in allowed]
    seen = set(queue)
    may: set = set()
    certain: set = set()
    while queue:
        ref, classes, sure = queue.pop()
        may.add(ref)
        if sure:
            certain.add(ref)
        info = index.modules[ref[0]]
        for _, key, then, alternative in _typed_calls(index, info, ref[1], classes):
            nxt = (index.scope_of(key), then, sure and not alternative)
            if nxt[0] in allowed and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return may, certain


# A walk from one call that grows past this many states gives up: the answer is then what
# the shared effects say (every override counted).
_MAX_STATES = 20_000


def typed_seeds(index: "ProjectIndex", key: str, classes: frozenset) -> frozenset:
    """The sources a call of the function `key` certainly seeds when `self` is of one of
    `classes` (a method called on an object the caller built, or its `__init__`)."""
    memo = index.__dict__.setdefault("_typed_seeds", {})
    hit = memo.get((key, classes))
    if hit is not None:
        return hit
    start = (index.scope_of(key), classes)
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
        for call, k, then, alternative in _typed_calls(index, info, ref[1], here):
            if alternative or is_reference(call):
                continue  # runs for some of the classes only; or handed over, to run later
            nxt = (index.scope_of(k), then)
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    hit = memo[(key, classes)] = frozenset(found)
    return hit


def _typed_calls(index: "ProjectIndex", info, scope: str, classes: Classes) -> Iterator[tuple]:
    """(call, function, classes of `self` there, whether it runs for some of the possible
    classes only) for the calls of a scope where `self` is of one of `classes`."""
    for call, keys in index.callees(info, scope):
        target, method = call[0], call[1]
        if target is not None and method:
            if target.startswith(SELF_CALL):
                if classes is not None:
                    # `self.m()`: each possible class's own `m`
                    yield from _by_class(index, call, keys, classes, method)
                    continue
            elif target.startswith(SUPER_CALL):
                for key in keys:
                    yield call, key, classes, False
                continue
            elif target.startswith(INSTANCE):
                made = made_classes(index, target[len(INSTANCE):], info)
                if made is not None:
                    yield from _by_class(index, call, keys, frozenset(made), method)
                    continue
        elif target is not None and target[0] != "@" and method is None:
            cls = index.class_key(target, info)  # building an object: its `__init__` runs with it
            if cls is not None:
                for key in keys:
                    yield call, key, frozenset([cls]), False
                continue
        for key in keys:
            yield call, key, None, False


def _by_class(index: "ProjectIndex", call: tuple, keys: tuple, classes: frozenset, method: str) -> Iterator[tuple]:
    groups: dict = {}
    for cls in classes:
        own = index.own_method(cls, method)
        if not own:  # not found along that class's bases: as the program walk has it
            for key in keys:
                yield call, key, None, False
            return
        groups.setdefault(own[0], set()).add(cls)
    several = len(groups) > 1
    for key, owners in groups.items():
        yield call, key, frozenset(owners), several


def made_classes(index: "ProjectIndex", qual: str, info, depth: int = 0) -> Optional[tuple]:
    """The project classes an object made by a call of `qual` may be: the class itself, or
    what a project function returns built (`return Engine(fn) if not flag else
    DeterministicEngine(fn)`), followed a few calls deep; None when not known."""
    cls = index.class_key(qual, info)
    if cls is not None:
        return (cls,)
    keys = index.resolve(qual, info)
    if not keys or depth > 3:
        return None
    out: list = []
    for key in keys:
        mod, scope = index.scope_of(key)
        minfo = index.modules[mod]
        made = minfo.summary(RETURNS_MADE).get(scope)
        if not made or MADE_UNKNOWN in made:
            return None
        for q in made:
            if q == MADE_CLS:  # `return cls(...)`: the class the caller names, if it names one
                cls = index.class_key(qual.rpartition(".")[0], info) if "." in qual else None
                if cls is None:
                    return None
                out.append(cls)
                continue
            sub = made_classes(index, q, minfo, depth + 1)
            if sub is None:
                return None
            out.extend(sub)
    return tuple(dict.fromkeys(out)) or None


def call_seeds(index: "ProjectIndex", info, call: tuple, keys: tuple, seeds: frozenset) -> frozenset:
    """Of `seeds` (what the shared effects say a call seeds), what it certainly seeds once the
    classes of the object it is made on are known: a method of an object the body built
    (`trainer.run(...)` after `trainer = Engine(step)`, or `create_trainer(step)`, which may
    make an `Engine` or a `DeterministicEngine`), or building one, seeds what it seeds for
    every class the object may be of."""
    target, method = call[0], call[1]
    if target is None or not seeds:
        return seeds
    if target.startswith(INSTANCE) and method:
        made = made_classes(index, target[len(INSTANCE):], info)
        if not made:
            return seeds
        for _, key, owners, _ in _by_class(index, call, keys, frozenset(made), method):
            seeds &= typed_seeds(index, key, owners) if owners is not None else index.effects(key).seeds
        return seeds
    if target[0] != "@" and method is None:
        cls = index.class_key(target, info)
        if cls is not None:
            return frozenset().union(*(typed_seeds(index, key, frozenset([cls])) for key in keys)) & seeds
    return seeds
