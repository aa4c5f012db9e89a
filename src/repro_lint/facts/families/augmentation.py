"""RPL304's extraction side: data-augmentation pipelines whose random streams the program's
global seeding does not reach (the catalog `rules/catalog/augmentation.toml`).

- "augpipe" events: an albumentations composition (`A.Compose([...])`) built without `seed=`
  (or with a literal None), with the name it is kept under; one nested in another composition
  (directly, or through a name the enclosing one lists in the same scope) is seeded by the
  outer one and is dropped when the file is done. A call that may pass `seed` through
  `**kwargs` is not recorded, nor is one with a value of the program's.
- "augmenter" events: the first imgaug augmenter each scope builds (`iaa.Fliplr(0.5)`).
- "augseed" events: calls that seed imgaug's global RNG (`ia.seed(1)`).
- `ModuleInfo.extra[SELF_SEEDED]`: the module seeds built pipelines itself
  (`pipeline.set_random_seed(seed)`).
A composition of transforms that draw nothing (resize, normalise, convert: the catalog's
`deterministic-transforms`, or any given `p=0`) is the same in every run and is not recorded.
"""

from __future__ import annotations

import ast
import functools
from typing import Optional

from repro_lint.core import catalog
from repro_lint.facts.hooks import Family
from repro_lint.facts.syntax import get_arg, has_kwargs, literal
from repro_lint.facts.walker import extractor

PIPELINE = "augpipe"
AUGMENTER = "augmenter"
AUGMENTATION_SEED = "augseed"
SELF_SEEDED = "augment_self_seeded"
# (scope, name) of lists the walk saw grow in place, and the methods that grow one
_GROWN = "_augmentation_grown"
_GROWING = frozenset(["append", "extend", "insert"])


@functools.lru_cache(maxsize=1)
def augmentation_catalog() -> dict:
    return catalog.load("augmentation")


def _kept_as(ex: extractor.Extractor, node: ast.Call) -> Optional[str]:
    """The name or attribute the statement keeps the call's value under (`tf = A.Compose(...)`)."""
    stmt = ex.stmt_node
    if type(stmt) is ast.Assign and stmt.value is node and len(stmt.targets) == 1:  # type: ignore[attr-defined]
        target = stmt.targets[0]  # type: ignore[attr-defined]
        if type(target) in (ast.Name, ast.Attribute):
            return ex.text_of(target)
    return None


def _pipeline(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    cat = augmentation_catalog()
    alb = cat["albumentations"]
    if qual is None or qual not in alb["compositions"]:
        func = node.func
        if type(func) is not ast.Attribute:
            pass
        elif func.attr in _GROWING:  # type: ignore[attr-defined]
            if type(func.value) is ast.Name:  # type: ignore[attr-defined]
                ex.__dict__.setdefault(_GROWN, set()).add((ex.scope, func.value.id))  # type: ignore[attr-defined]
        elif func.attr in alb["seeding-methods"]:  # type: ignore[attr-defined]
            ex.info.extra[SELF_SEEDED] = True
        elif qual is not None and qual in cat["imgaug"]["seeders"]:
            ex.add(AUGMENTATION_SEED, node, api=qual)
        return
    transforms = get_arg(node, 0, "transforms")
    if _draws(ex, transforms, alb) is False:
        return  # resizing, normalising, converting: the same in every run
    elements: tuple = ()
    if type(transforms) in (ast.List, ast.Tuple):
        elements = tuple(ex.text_of(e) for e in transforms.elts if type(e) in (ast.Name, ast.Attribute))  # type: ignore[union-attr]
    seed = get_arg(node, -1, alb["keyword"])
    if seed is None:
        if has_kwargs(node):
            return  # `**kwargs` may hold it
    elif literal(seed) is not None:
        return  # the program's own seed (a literal None seeds from OS entropy)
    ex.add(
        PIPELINE, node, api=qual, kept_as=_kept_as(ex, node), elements=elements,
        transforms_span=ex.span(transforms) if transforms is not None else None,
        seed_span=ex.span(seed) if seed is not None else None,
    )


def _draws(ex: extractor.Extractor, transforms: Optional[ast.AST], alb: dict, depth: int = 0) -> Optional[bool]:
    """Whether a composition's transforms draw anything that changes their result: True,
    False (only deterministic transforms, or ones given `p=0`), None when not seen (a list
    built elsewhere)."""
    if type(transforms) is ast.Name:
        name = transforms.id  # type: ignore[attr-defined]
        if (ex.scope, name) in ex.__dict__.get(_GROWN, ()):
            return None  # `T += [...]`, `T.append(...)`: only its last part would be seen
        bound = ex.local_values.get(name)
        transforms = bound if bound is not transforms else None
    if type(transforms) not in (ast.List, ast.Tuple) or depth > 4:
        return None
    deterministic = frozenset(alb["deterministic-transforms"])
    seen_all = True
    for element in transforms.elts:  # type: ignore[union-attr]
        if type(element) is not ast.Call:
            seen_all = False  # a transform made elsewhere
            continue
        p_node = get_arg(element, -1, "p")
        p = literal(p_node) if p_node is not None else None
        if p_node is not None and p == 0:
            continue  # never applied
        qual = ex.r.qualify(element.func) or ""  # type: ignore[attr-defined]
        if qual in alb["compositions"]:
            inner = _draws(ex, get_arg(element, 0, "transforms"), alb, depth + 1)
            if inner:
                return True
            seen_all = seen_all and inner is False
            continue
        name = qual.rpartition(".")[2] if qual.startswith("albumentations.") else ""
        if name in deterministic and (p_node is None or p == 1):
            continue
        return True
    return False if seen_all else None


def _augmenter(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    # (called for every call: most are not imgaug's)
    if qual is None or not qual.startswith("imgaug."):
        return
    if not qual.startswith(tuple(augmentation_catalog()["imgaug"]["augmenter-prefixes"])):
        return
    seen = ex.__dict__.setdefault("_augmenter_scopes", set())
    if ex.scope not in seen:
        seen.add(ex.scope)
        ex.add(AUGMENTER, node, api=qual)


def _grown(ex: extractor.Extractor, stmt: ast.stmt) -> None:
    """A name a list is added to in place (`T += [...]`): what it holds is not one literal."""
    if type(stmt) is ast.AugAssign and type(stmt.target) is ast.Name:  # type: ignore[attr-defined]
        ex.__dict__.setdefault(_GROWN, set()).add((ex.scope, stmt.target.id))  # type: ignore[attr-defined]


def _inside(span: tuple, outer: Optional[tuple]) -> bool:
    return outer is not None and (outer[0], outer[1]) <= (span[0], span[1]) and (span[2], span[3]) <= (outer[2], outer[3])


def _drop_nested(ex: extractor.Extractor) -> None:
    """A composition listed in another one's transforms is seeded by it (`set_random_seed`
    passes the seed on): only the outer one is a pipeline of its own."""
    for scope, events in ex.info.events.items():
        pipes = [ev for ev in events if ev.kind == PIPELINE]
        if len(pipes) < 2:
            continue
        listed = {name for ev in pipes for name in ev.data["elements"]}
        nested = {
            id(ev) for ev in pipes
            if ev.data["kept_as"] in listed
            or any(other is not ev and _inside((ev.line, ev.col, ev.end_line, ev.end_col), other.data["transforms_span"]) for other in pipes)
        }
        if nested:
            events[:] = [ev for ev in events if id(ev) not in nested]


@functools.lru_cache(maxsize=1)
def _pipeline_names() -> frozenset:
    cat = augmentation_catalog()
    alb = cat["albumentations"]
    return frozenset([*(q.rpartition(".")[2] for q in [*alb["compositions"], *cat["imgaug"]["seeders"]]), *alb["seeding-methods"], *_GROWING])


FAMILY = Family(
    order=45,
    call_hooks=(_pipeline, _augmenter),
    call_names={_pipeline: _pipeline_names},
    assign_hooks=(_grown,),
    finish_hooks=(_drop_nested,),
)
