"""Where rule families hook into the extraction walk (`extract.py`).

A family that needs facts the core walk does not record registers functions here: they are
called for calls, assignments and module-level statements as the walk meets them, and once
a file is done, instead of walking the tree again. A call hook can say which callees or
literals it acts on, so that the walk calls it for those calls only.

A family whose facts only matter in files that name its APIs can also gate its hooks
(`HookGate`): a file whose bytes hold none of the gate's words is walked with the family's
light hooks, and the file says so (`LIGHT_HOOKS`). Should the project later turn out to
need the full facts of such files after all (`HookGate.needs_full`, asked of every file's
facts), they are extracted again in full (`extraction.walked_light`).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, Optional

from repro_lint.model import LIGHT_HOOKS  # noqa: F401  (the files walked light say so there)

if TYPE_CHECKING:
    from repro_lint.extract import Extractor

# Called for every call (with its qualified callee, or None) and every assignment.
CallHook = Callable[["Extractor", ast.Call, Optional[str]], None]
CALL_HOOKS: list[CallHook] = []
# A call hook that can only act on callees of certain names gives them here (a function
# returning the set, read when a file's walk starts): the walk then calls it only for calls
# whose callee (its qualified name, else its attribute or plain name) ends in one of them.
CALL_HOOK_NAMES: dict[CallHook, Callable[[], frozenset]] = {}
# A call hook that can only act on calls passing certain literals (strings or booleans, as
# plain arguments or keywords) gives them here: the walk calls it only for such calls.
CALL_HOOK_LITERALS: dict[CallHook, Callable[[], frozenset]] = {}
ASSIGN_HOOKS: list[Callable[["Extractor", ast.AST], None]] = []
# Called with each statement of the module body (the `__main__` guard included) before it is visited.
MODULE_STMT_HOOKS: list[Callable[["Extractor", ast.stmt], None]] = []
# Called once the whole file is walked: a family drops what it kept only in case it was needed.
FINISH_HOOKS: list[Callable[["Extractor"], None]] = []


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


GATES: list[HookGate] = []
_HOOK_SETS: dict[tuple, tuple] = {}


def hook_set(data: bytes, full: bool = False) -> tuple:
    """The hooks to walk a file of these bytes with: (call hooks, assignment hooks, finish
    hooks, the names of the gates it is walked light by). With `full`, every hook."""
    light = () if full else tuple(g.name for g in GATES if not any(w in data for w in g.words()))
    # (keyed by the hooks too: a family registered later, or a tool that takes hooks out)
    key = (light, tuple(CALL_HOOKS), tuple(ASSIGN_HOOKS), tuple(FINISH_HOOKS))
    hit = _HOOK_SETS.get(key)
    if hit is None:
        swap: dict = {}
        for g in GATES:
            if g.name in light:
                swap.update(g.light)

        def kept(hooks: list) -> tuple:
            return tuple(h for h in (swap.get(h, h) for h in hooks) if h is not None)

        hit = _HOOK_SETS[key] = (kept(CALL_HOOKS), kept(ASSIGN_HOOKS), kept(FINISH_HOOKS), light)
    return hit


_HOOK_TABLES: dict[tuple, tuple] = {}
LITERAL_TYPES = (str, bool)  # what `CALL_HOOK_LITERALS` can name (exact types: a tree's constants)


def call_hook_table(hooks: tuple) -> tuple:
    """The hooks to call, as (callee name -> hooks, the hooks for every other callee) for a
    call passing a literal of `CALL_HOOK_LITERALS` and the same for the others, plus those
    literals; each tuple in registration order (hooks may read what earlier ones recorded
    for the same call)."""
    hit = _HOOK_TABLES.get(hooks)
    if hit is None:
        names = {h: CALL_HOOK_NAMES[h]() for h in hooks if h in CALL_HOOK_NAMES}
        gated = {h for h in hooks if h in CALL_HOOK_LITERALS}
        literals = frozenset().union(*(CALL_HOOK_LITERALS[h]() for h in gated))

        def tables(usable: tuple) -> tuple[dict[str, tuple], tuple]:
            every = tuple(h for h in usable if h not in names)
            table = {name: tuple(h for h in usable if h not in names or name in names[h]) for callees in names.values() for name in callees}
            return table, every

        hit = _HOOK_TABLES[hooks] = (*tables(hooks), *tables(tuple(h for h in hooks if h not in gated)), literals)
    return hit
