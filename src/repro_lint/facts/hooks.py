"""Where rule families hook into the extraction walk (`walker/extractor.py`).

A family that needs facts the core walk does not record has a module in `facts/families/`
that declares `FAMILY = Family(...)`: functions called for calls, assignments and
module-level statements as the walk meets them, and once a file is done, instead of walking
the tree again; and the questions its facts answer for whole-project work (`summaries`). A
call hook can say which callees or literals it acts on, so that the walk calls it for those
calls only. `registry()` finds the families by discovery (every module of the package), in
their declared `order`; a module that fails to import, or declares no family, stops the run.

A family whose facts only matter in files that name its APIs can also gate its hooks
(`HookGate`): a file whose bytes hold none of the gate's words is walked with the family's
light hooks, and the file says so (`model.LIGHT_HOOKS`). Should the project later turn out
to need the full facts of such files after all (`HookGate.needs_full`, asked of every file's
facts), they are extracted again in full (`batch.walked_light`).
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:
    from repro_lint.facts.walker.extractor import Extractor

# Called for every call (with its qualified callee, or None) and every assignment.
CallHook = Callable[["Extractor", ast.Call, Optional[str]], None]


class FamilyError(Exception):
    """A family module is broken (a packaging or programming error, not the user's)."""


@dataclass(frozen=True)
class Family:
    """A rule family's extraction plug-in.

    `order`: where its hooks run among the families' (hooks may read what earlier ones
    recorded for the same call). `call_names`: for a call hook that can only act on callees
    of certain names, a function returning them (read when a file's walk starts): the walk
    calls it only for calls whose callee (its qualified name, else its attribute or plain
    name) ends in one of them. `call_literals`: likewise for a hook that acts only on calls
    passing certain literals (strings or booleans, as plain arguments or keywords).
    `statement_hooks` get each statement of the module body (the `__main__` guard included)
    before it is visited; `finish_hooks` the walk once the whole file is done. `summaries`:
    what whole-project questions need of a module's `extra` facts, by name (`ModuleInfo.summary`)."""

    order: int
    call_hooks: tuple = ()
    call_names: dict = field(default_factory=dict)
    call_literals: dict = field(default_factory=dict)
    assign_hooks: tuple = ()
    statement_hooks: tuple = ()
    finish_hooks: tuple = ()
    summaries: dict = field(default_factory=dict)
    gate: Optional["HookGate"] = None


@dataclass
class Registry:
    """Every family's hooks, in the families' order."""

    call_hooks: list = field(default_factory=list)
    call_names: dict = field(default_factory=dict)
    call_literals: dict = field(default_factory=dict)
    assign_hooks: list = field(default_factory=list)
    statement_hooks: list = field(default_factory=list)
    finish_hooks: list = field(default_factory=list)
    summaries: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    gates: list = field(default_factory=list)
    families: list = field(default_factory=list)  # the module names, in order


@functools.lru_cache(maxsize=1)
def registry() -> Registry:
    """The families of `facts/families/`, found by discovery."""
    from repro_lint.facts import families as package

    found = []
    for mod in pkgutil.iter_modules(package.__path__):
        name = f"{package.__name__}.{mod.name}"
        module = importlib.import_module(name)  # (an error here is a broken install: it propagates)
        family = getattr(module, "FAMILY", None)
        if not isinstance(family, Family):
            raise FamilyError(f"{name} declares no `FAMILY = Family(...)`")
        found.append((family.order, mod.name, family))
    reg = Registry()
    for _, name, family in sorted(found, key=lambda t: (t[0], t[1])):
        reg.families.append(name)
        reg.call_hooks.extend(family.call_hooks)
        reg.call_names.update(family.call_names)
        reg.call_literals.update(family.call_literals)
        reg.assign_hooks.extend(family.assign_hooks)
        reg.statement_hooks.extend(family.statement_hooks)
        reg.finish_hooks.extend(family.finish_hooks)
        reg.summaries.update(family.summaries)
        if family.gate is not None:
            reg.gates.append(family.gate)
    return reg


class HookGate:
    """The hooks of a family that need running only in files naming one of `words()` (bytes,
    none of them a part of another), as {full hook: its light stand-in, or None for none}.
    `needs_full(infos)`, asked of the facts of all files (those walked light included): None
    while no file walked light needs its full facts, else a function telling them apart.
    `inputs(info)`: what `needs_full` reads of a file (a file whose inputs did not change
    cannot change its answer: a language server asks again only when they do)."""

    def __init__(self, name: str, words: Callable[[], tuple], light: dict, needs_full: Callable, inputs: Callable) -> None:
        self.name = name
        self.words = words
        self.light = light
        self.needs_full = needs_full
        self.inputs = inputs


_HOOK_SETS: dict[tuple, tuple] = {}


def hook_set(data: bytes, full: bool = False) -> tuple:
    """The hooks to walk a file of these bytes with: (call hooks, assignment hooks, finish
    hooks, the names of the gates it is walked light by). With `full`, every hook."""
    reg = registry()
    light = () if full else tuple(g.name for g in reg.gates if not any(w in data for w in g.words()))
    # (keyed by the hooks too: a tool may take gates out)
    key = (light, tuple(reg.gates))
    hit = _HOOK_SETS.get(key)
    if hit is None:
        swap: dict = {}
        for g in reg.gates:
            if g.name in light:
                swap.update(g.light)

        def kept(hooks: list) -> tuple:
            return tuple(h for h in (swap.get(h, h) for h in hooks) if h is not None)

        hit = _HOOK_SETS[key] = (kept(reg.call_hooks), kept(reg.assign_hooks), kept(reg.finish_hooks), light)
    return hit


_HOOK_TABLES: dict[tuple, tuple] = {}
LITERAL_TYPES = (str, bool)  # what `Family.call_literals` can name (exact types: a tree's constants)


def call_hook_table(hooks: tuple) -> tuple:
    """The hooks to call, as (callee name -> hooks, the hooks for every other callee) for a
    call passing a literal of `Family.call_literals` and the same for the others, plus those
    literals; each tuple in the families' order (hooks may read what earlier ones recorded
    for the same call)."""
    hit = _HOOK_TABLES.get(hooks)
    if hit is None:
        reg = registry()
        names = {h: reg.call_names[h]() for h in hooks if h in reg.call_names}
        gated = {h for h in hooks if h in reg.call_literals}
        literals = frozenset().union(*(reg.call_literals[h]() for h in gated))

        def tables(usable: tuple) -> tuple[dict[str, tuple], tuple]:
            every = tuple(h for h in usable if h not in names)
            table = {name: tuple(h for h in usable if h not in names or name in names[h]) for callees in names.values() for name in callees}
            return table, every

        hit = _HOOK_TABLES[hooks] = (*tables(hooks), *tables(tuple(h for h in hooks if h not in gated)), literals)
    return hit
