"""Where in a program gradients can flow (RPL405's scope for backward-only operations).

An operation that is nondeterministic only in its backward pass matters only where autograd
records it. Extraction marks what runs without gradients: functions decorated with
`torch.no_grad()`/`inference_mode()`, the blocks of `with torch.no_grad():` (their lines, per
scope). This walk follows the program's calls from its starts, not through calls made where
no gradient flows: a function that only evaluation code under `no_grad` calls is not reached.

Objects built into a container under a literal key (`postprocessors["segm"] =
PostProcessSegm()`) are called through it (`postprocessors["segm"](out)`), not where they are
built: their `forward`/`__call__` are reached where such an item call runs with gradients.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from repro_lint.facts.walker.assignments import STORES
from repro_lint.facts.walker.calls import ITEM_CALLS
from repro_lint.facts.walker.extractor import NO_GRAD_SPANS
from repro_lint.facts.model import MAIN_SCOPE, MODULE_SCOPE

if TYPE_CHECKING:  # pragma: no cover
    from repro_lint.index.project_index import ProjectIndex
    from repro_lint.index.program import Program

# methods that run when an object is built (the rest of its protocol runs when it is used)
_BUILD = ("__init__", "__post_init__")

_CACHE: "weakref.WeakKeyDictionary[Program, frozenset]" = weakref.WeakKeyDictionary()


def grad_scopes(index: "ProjectIndex", program: "Program") -> frozenset:
    """The scopes of `program` on the path of its training forward: they can run with
    gradients enabled, and no evaluation or inference function (by its name, catalog
    `inference-function-pattern`) is on the way there. None for a program that never trains
    (no backward pass, optimizer step or framework fit): nothing it runs has a backward."""
    hit = _CACHE.get(program)
    if hit is None:
        hit = _CACHE[program] = frozenset(_walk(index, program)) if index.trains(program.scopes) else frozenset()
    return hit


def _walk(index: "ProjectIndex", program: "Program") -> set:
    in_program = program.scope_set
    entry = program.entry.module
    starts = [(entry, MODULE_SCOPE), (entry, MAIN_SCOPE), *((entry, q) for q in program.entry.hydra_mains)]
    # imported modules' top level runs on import; framework hooks run where the framework trains
    starts += [ref for ref in program.scopes if ref[1] == MODULE_SCOPE]
    starts += list(program.hook_starts)
    by_key = _stored_classes(index, {mod for mod, _ in program.scopes})
    seen = set(starts)
    queue = list(starts)
    grad: set = set()

    def reach(keys) -> None:
        for k in keys:
            ref = index.scope_of(k)
            if ref in in_program and ref not in seen:
                seen.add(ref)
                queue.append(ref)

    while queue:
        ref = queue.pop()
        mod, scope = ref
        info = index.modules[mod]
        fn = info.functions.get(scope)
        if fn is not None and (fn.no_grad or index.m.inference_functions.search(fn.name) or _data_method(index, info, fn)):
            # decorated with no_grad/inference_mode, or evaluation or inference by its name:
            # no gradient of the training flows here
            continue
        grad.add(ref)
        spans = info.extra.get(NO_GRAD_SPANS, {}).get(scope, ())
        stores = info.extra.get(STORES, {})
        for call, keys in index.callees(info, scope):
            if spans and any(a <= call[2] <= b for a, b in spans):
                continue
            if stores and (call[2], call[3]) in stores:
                keys = tuple(k for k in keys if k.rpartition(".")[2] in _BUILD)
            reach(keys)
        for s, name, key, line, no_grad in info.extra.get(ITEM_CALLS, ()):
            if s == scope and not no_grad and not any(a <= line <= b for a, b in spans):
                for cls in by_key.get((name, key), ()):
                    reach(index.class_methods(cls, index.m.calling_order))
        if fn is not None and scope in info.hydra_mains:
            reach(index.hydra_targets(info, fn))
    return grad


# what a DataLoader calls on its dataset: items of data, which carry no gradient
_DATA_METHODS = frozenset(["__getitem__", "__getitems__", "__iter__", "__next__", "__len__"])


def _data_method(index: "ProjectIndex", info, fn) -> bool:
    """A dataset's item method (a class that is not a torch module)."""
    if fn.name not in _DATA_METHODS or fn.class_name is None:
        return False
    cls = fn.qual.rpartition(".")[0]
    key = f"{info.module}.{cls}" if info.module else cls
    return not index.is_module_class(key)


def _stored_classes(index: "ProjectIndex", modules: set) -> dict:
    """(container name, key) -> project classes whose objects the modules keep under it."""
    out: dict = {}
    for mod in modules:
        info = index.modules[mod]
        stores = info.extra.get(STORES)
        if not stores:
            continue
        for calls in info.calls.values():
            for call in calls:
                place = stores.get((call[2], call[3]))
                if place is not None and call[0] is not None and call[0][0] != "@":
                    cls = index.class_key(call[0], info)
                    if cls is not None:
                        out.setdefault(place, []).append(cls)
    return out
