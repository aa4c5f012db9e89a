"""RPL3xx data loading: which files are walked without the loader hooks.

A call builds a loader (or draws a random order) only when its callee is one of the
catalog's APIs, which the file then names, or a project class deriving from a catalog
loader, or a class attribute bound to one (`dataloader._Resolver.target`); the file defining
the first such class or attribute names the API (`LOADER_ROOTS`). A file naming none of the
APIs (`GATE`, see `hooks.HookGate`) is walked with `_on_assign_light` instead of the
hooks of `dataloader.py`: it records what other files read of it, the attributes its
classes bind (`self.x = ...`, class attributes) and the generators they hold. Once a project
has such a class, the files walked light that may call it (by its name, a subclass's, a name
it is exported or bound under: `_calls_named`) are extracted again in full
(`batch.walked_light`).
"""

from __future__ import annotations

import ast
from typing import Callable, Optional

from repro_lint.facts.walker.extractor import Extractor
from repro_lint.facts.hooks import Family, HookGate
from repro_lint.facts.matchers import get_matchers
from repro_lint.facts.families.dataloader import CAT, EMPTY, MAX_DEPTH, FACTS, loader_catalog, hook_catalog, describe, on_assign, on_call

# ModuleInfo.extra key (and summary): the names of a file's classes deriving from a
# catalog DataLoader and of class attributes bound to a loader class or a random call: other
# files' calls of them build loaders without naming any loader API (`GATE`)
LOADER_ROOTS = "loader_roots"
# ModuleInfo.extra key (and summary): (name, the last parts of the qualified names it
# may be bound to) of class attributes (and, in a file walked light, of names bound to one of
# several classes) that may hold a class: what may stand for a loader class in another file
LOADER_REFS = "loader_refs"


def _gate_words() -> tuple[bytes, ...]:
    """The last parts of the catalog's loader, random-call and worker-seeding APIs' names."""
    cat = loader_catalog()
    names = {q.rpartition(".")[2] for q in (*cat["loaders"], *cat["random"], *cat["initial_seed"], *cat["worker_seeders"])}
    # `worker_init_fn=` of any call: the functions a program's workers run (`training`)
    names.add(cat["worker-keyword"])
    words = sorted(names, key=len)
    return tuple(w.encode() for i, w in enumerate(words) if not any(o in w for o in words[:i]))


_GATE_WORDS: list = []


def _words() -> tuple[bytes, ...]:
    if not _GATE_WORDS:
        _GATE_WORDS.append(_gate_words())
    return _GATE_WORDS[0]


def _on_assign_light(ex: Extractor, stmt: ast.stmt) -> None:
    """`on_assign` for the statements that bind class attributes (in a class body, or
    `self.x = ...` in a method); its other facts are dropped anyway in a file without
    loader calls (`_on_finish`). A name bound to one of two classes (`cls = A if c else B`)
    is kept as a name that may stand for them (`LOADER_REFS`)."""
    if ex.class_stack:
        on_assign(ex, stmt)
        return
    fn = ex.func
    targets = stmt.targets if type(stmt) is ast.Assign else (stmt.target,)  # type: ignore[attr-defined]
    if fn is not None and fn.class_name is not None:
        for target in targets:
            if type(target) is ast.Attribute:
                on_assign(ex, stmt)
                return
    if type(getattr(stmt, "value", None)) is ast.IfExp:
        comps = _components(describe(ex, stmt.value))  # type: ignore[attr-defined]
        if comps:
            aliases = ex.__dict__.setdefault("_loader_aliases", [])
            aliases.extend((t.id, comps) for t in targets if type(t) is ast.Name)


def _record_names(ex: Extractor) -> None:
    """The file's `LOADER_ROOTS` and `LOADER_REFS`, once it is walked."""
    info = ex.info
    roots, refs = _loader_names(info, info.extra.get(FACTS))
    refs.extend(ex.__dict__.get("_loader_aliases", ()))
    if roots:
        info.extra[LOADER_ROOTS] = tuple(roots)
    if refs:
        info.extra[LOADER_REFS] = tuple(refs)


def _loader_names(info, facts: Optional[dict]) -> tuple[list, list]:
    """(the names of this file's classes deriving from a catalog loader and of the class
    attributes bound to a catalog loader or random call; (attribute, the last parts of the
    names it may be bound to) for every class attribute that may hold a class or function)."""
    loaders = loader_catalog()["loaders"]
    roots = [cls.name for cls in info.classes.values() if any(b in loaders for b in cls.bases)]
    refs = []
    for attrs in (facts or EMPTY).get("self", EMPTY).values():
        for attr, descs in attrs.items():
            if any(_names_loader(d) for d in descs):
                roots.append(attr)
            comps = tuple(c for d in descs for c in _components(d))
            if comps:
                refs.append((attr, comps))
    return roots, refs


def _names_loader(desc: tuple, depth: int = 0) -> bool:
    """Whether a description refers to a catalog loader or random call (not a call of one)."""
    kind = desc[0]
    if kind == "qual":
        cat = CAT or hook_catalog()
        return desc[1] in cat["loaders"] or desc[1] in cat["random"]
    if depth > MAX_DEPTH:
        return True
    if kind == "any":
        return any(_names_loader(d, depth + 1) for d in desc[1])
    if kind == "partial":
        return _names_loader(desc[1], depth + 1)
    return False


def _components(desc: tuple, depth: int = 0) -> tuple:
    """The last parts of the qualified names a callable description may stand for."""
    kind = desc[0]
    if kind == "qual":
        return (desc[1].rpartition(".")[2],)
    if depth > MAX_DEPTH:
        return ()
    if kind == "any":
        return tuple(c for d in desc[1] for c in _components(d, depth + 1))
    if kind == "partial":
        return _components(desc[1], depth + 1)
    return ()


def _needs_full(infos) -> Optional[Callable]:
    """Which files walked light need their full facts: none while the project has no class
    deriving from a catalog loader nor a class attribute bound to one; else those that call
    something of a name such a class or attribute has, or may bind one to a name."""
    infos = list(infos)
    names: set = set()
    for info in infos:
        names.update(info.summary(LOADER_ROOTS))
    if not names:
        return None
    # the names its subclasses, re-exports and class attributes give it, until none is new
    grown = True
    while grown:
        size = len(names)
        for info in infos:
            for cls in info.classes.values():
                if cls.name not in names and any(b.rpartition(".")[2] in names for b in cls.bases):
                    names.add(cls.name)
            for name, qual in info.exports.items():
                if name not in names and qual.rpartition(".")[2] in names:
                    names.add(name)
            for attr, comps in info.summary(LOADER_REFS):
                if attr not in names and any(c in names for c in comps):
                    names.add(attr)
        grown = len(names) > size
    m = get_matchers()
    if any(info.module.partition(".")[0] in m.catalog_roots for info in infos) and names & {q.rpartition(".")[2] for q in m.catalog_names}:
        # a project named like a catalog's package (the timm repository): a call of one of
        # its names that the catalog lists is recorded as what the catalog says, not as a call
        return lambda info: True
    return lambda info: _calls_named(info, names)


def _calls_named(info, names: set) -> bool:
    for _, comps in info.summary(LOADER_REFS):
        if any(c in names for c in comps):
            return True
    for calls in info.calls.values():
        for call in calls:
            target = call[0]
            if call[1] in names or target is not None and target.rpartition(".")[2] in names:
                return True
    return False


def _inputs(info) -> tuple:
    """What `_needs_full` reads of a file (but its calls, which count only in a file walked
    light, and a file walked light is extracted in full when it changes)."""
    classes = tuple((c.name, tuple(c.bases)) for c in info.classes.values())
    return classes, tuple(info.exports.items()), info.summary(LOADER_ROOTS), info.summary(LOADER_REFS)


GATE = HookGate(FACTS, _words, {on_call: None, on_assign: _on_assign_light}, _needs_full, _inputs)
FAMILY = Family(
    order=50,
    finish_hooks=(_record_names,),
    summaries={
        LOADER_ROOTS: lambda info: info.extra.get(LOADER_ROOTS, ()),
        LOADER_REFS: lambda info: info.extra.get(LOADER_REFS, ()),
    },
    gate=GATE,
)
