"""Which scopes call a function that seeds: a project-wide answer worked out backwards from
the few functions that seed by themselves, resolving only the calls made by a name that can
reach one (part of `index.ProjectIndex`, whose resolution it uses).

RPL103 asks of every body of a checked module whether it seeds anything. Resolving every
body's calls and working out their effects for that costs a large project tens of
thousands of scopes that no program reaches, of which almost none seed.

The answer is exact: the scopes with a call that `ProjectIndex.callees` resolves to a
function whose `effects` seed. Call a name of a function `k` any name by which `callees`
can reach it:

- a call by method name (`x.m()`, `self.m()`, `super().m()`, a method handed over)
  reaches only functions called `m`: the method name is the name;
- a call of a qualified target reaches a function whose key ends with the target's last
  part, or a class whose key does (giving the protocol methods, `__init__`, `__call__`,
  ..., of the classes it derives from), or a name a module binds to something else
  (`from .a import f as g`: `g`), resolved further from what it binds, or, for a config
  factory (`hydra.utils.instantiate`), any function the configs name.

So the names of `k` are its own name, the names of the classes (and their subclasses)
whose protocol method it is, the factories' names where configs name it, and the names
bound to any of those. A function's effects seed when it seeds by itself or when one of
its calls, handed-over functions included, reaches a function whose effects seed; every
such call is made by a name of that function. Walking backwards from the functions that
seed by themselves, each function found has its names' calls resolved, and the scopes of
those that reach it are found: every function whose effects seed is found this way, and
only those.
"""

from __future__ import annotations

from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Optional

from repro_lint.facts.model import REF_WORKER, REGISTRIES, RETURNED, RETURNS

if TYPE_CHECKING:  # pragma: no cover
    from repro_lint.index.project_index import ProjectIndex, ScopeRef
    from repro_lint.facts.model import ModuleInfo


_first = itemgetter(0)
_second = itemgetter(1)


def _tail(name: str) -> str:
    return name.rpartition(".")[2]


def call_name(call: tuple) -> str:
    """The name a recorded call reaches functions by (the same split as `callees`)."""
    target = call[0]
    if target is None or target[0] == "@":
        if target is not None and target.startswith(RETURNED):  # by the returning function's name
            return target.rpartition(".")[2]
        return call[1]
    return target.rpartition(".")[2]


class _Tails(dict):
    """A qualified name -> its last part, worked out once per name (names recur across a
    project's modules)."""

    def __missing__(self, name: str) -> str:
        tail = self[name] = name.rpartition(".")[2]
        return tail


def _called_names(info: ModuleInfo, tails: _Tails) -> set[str]:
    """The names of a module's calls, and some more (the method field of every call, the
    last part of every target: this only tells which modules to look in)."""
    calls = info.calls
    if not calls:
        return set()
    if len(calls) == 1:
        (every,) = calls.values()
    else:
        every = list(chain.from_iterable(calls.values()))
    out = set(map(_second, every))
    targets = set(map(_first, every))
    targets.discard(None)
    out.update(map(tails.__getitem__, targets))
    return out


def seed_callers(index: ProjectIndex) -> frozenset[ScopeRef]:
    """The scopes with a call that `callees` resolves to a function whose effects seed
    (see the module): only the calls by a name of a seeding function are resolved."""
    hit = index._seed_callers
    if hit is not None:
        return hit
    m = index.m
    functions = index.functions
    modules = index.modules
    # the functions that seed by themselves (as `FunctionEffects._own_effects` sees them)
    todo: list[str] = []
    for info in modules.values():
        prefix = f"{info.module}." if info.module else ""
        for scope, events in info.events.items():
            if scope in info.functions and any(
                (ev.kind == "seed" or ev.kind == "seedcand") and index.seed_sources(info, ev) for ev in events
            ):
                todo.append(prefix + scope)
    # each name calls use -> the modules with such a call
    calling: dict[str, list[str]] = {}
    tails = _Tails()
    for mod, info in modules.items():
        for name in _called_names(info, tails):
            mods = calling.get(name)
            if mods is None:
                calling[name] = [mod]
            else:
                mods.append(mod)
    del tails  # (it holds every call target of the project)
    # names bound to something of another name (`from .a import f as g`): the last part of
    # what is bound -> the names binding it
    aliases: dict[str, list[str]] = {}
    for info in modules.values():
        for name, target in info.exports.items():
            if not (target == name or target.endswith("." + name)):
                aliases.setdefault(_tail(target), []).append(name)
        # an item of a dict of callables called in another module is a call by the dict's name,
        # and a function returned and called, a call by the name of the function returning it
        for name, values in info.summary(REGISTRIES).items():
            for value in values:
                aliases.setdefault(_tail(value), []).append(name)
        for scope, values in info.summary(RETURNS).items():
            for value in values:
                aliases.setdefault(_tail(value), []).append(_tail(scope))
    factory_names = [_tail(f) for f in m.factories]
    configured: Optional[frozenset] = None
    seeding: set[str] = set()
    resolved: set[str] = set()  # the names whose calls are resolved
    callers: dict[str, list[ScopeRef]] = {}  # function key -> the scopes with such a call reaching it
    out: set[ScopeRef] = set()
    # in rounds: the names of the functions found in a round have their calls resolved
    # together, each module calling one of them read once for all. (Keeping each module's
    # calls grouped by name until the end held the calls of a third of a 38,000-file
    # project at once, about 100 MB.)
    while todo:
        found: list[str] = []
        wanted: set[str] = set()
        for key in todo:
            if key in seeding:
                continue
            seeding.add(key)
            found.append(key)
            # the names of `key`
            names = [functions[key].name, _tail(key)]
            owner, _, method = key.rpartition(".")
            if method in m.instance_methods and owner in index.classes:
                names.append(_tail(owner))
                names.extend(_tail(sub) for sub in index.subclasses(owner))
            if configured is None:
                configured = frozenset(index._configured())
            if key in configured:
                names.extend(factory_names)
            seen: set[str] = set()
            while names:
                name = names.pop()
                if name not in seen:
                    seen.add(name)
                    names.extend(aliases.get(name, ()))
            wanted.update(name for name in seen if name not in resolved)
        resolved |= wanted
        # the calls by one of those names (each resolved once, the first time its name is
        # one looked for), and the scopes making them
        reading: set[str] = set()
        for name in wanted:
            reading.update(calling.get(name, ()))
        for mod in reading:
            info = modules[mod]
            for scope, calls in info.calls.items():
                for call in calls:
                    # (a worker's `worker_init_fn` is not the caller's effects: `FunctionEffects._callee_keys`)
                    if call[1] != REF_WORKER and call_name(call) in wanted:
                        for k in index.call_targets(info, call):
                            callers.setdefault(k, []).append((mod, scope))
        todo = []
        for key in found:
            for ref in callers.get(key, ()):
                if ref not in out:
                    out.add(ref)
                    mod, scope = ref
                    if scope in modules[mod].functions:
                        todo.append(f"{mod}.{scope}" if mod else scope)
    hit = index._seed_callers = frozenset(out)
    return hit


def seed_callers_in(index: ProjectIndex, module: str) -> frozenset[str]:
    """The scopes of `module` that `seed_callers` holds."""
    by_module = index._seed_callers_by_module
    if by_module is None:
        grouped: dict[str, set[str]] = {}
        for mod, scope in seed_callers(index):
            grouped.setdefault(mod, set()).add(scope)
        by_module = index._seed_callers_by_module = {mod: frozenset(scopes) for mod, scopes in grouped.items()}
    return by_module.get(module, frozenset())
