"""When a call of an operation from `rules/catalog/nondeterministic_ops.toml` is affected.

One evaluation of an entry's conditions, shared by the static rule RPL405 (a call in
source, whose arguments are literals or unknown) and the probe's RPP104 (an aten operator
that ran, whose arguments are real values). Each side supplies an accessor that says what
it knows about one argument; this module decides.

An accessor is called as `get(kind, spec)`, with `kind` one of the condition keys below
and `spec` that key's table, and returns the argument's value, `ABSENT` (not passed: the
default applies) or `Decided(result)` (the caller already knows the answer, e.g. an aten
operator that implies the value by its name, or a wrapper parameter that passes it on).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

ABSENT = object()


class Decided:
    """The accessor's own verdict for a condition; `evaluate` returns `result` as it is."""

    __slots__ = ("result",)

    def __init__(self, result: Any):
        self.result = result


Getter = Callable[[str, dict], Any]

# Condition keys, in the order they are evaluated.
REQUIRES = "requires-argument"  # only calls that pass this argument (a None counts as not passed)
EXEMPT = "exempt-argument"  # calls passing one of `values` (or any number, `numbers = true`) are not affected
LAYOUT = "operand-layout"  # the operand at `position` must have one of the layouts `values` (e.g. sparse)
ARGUMENT = "argument"  # the argument must have one of `values`; its default is outside them
ATEN_ARGUMENT = "aten-argument"  # an argument only the aten operator has (`transposed` of convolution)


def decode(spec: dict, value: Any) -> Any:
    """An aten operator's encoding of an argument value (EmbeddingBag's mode is an int) as
    the catalog's name for it, via `aten-codes = { name = code }`."""
    codes = spec.get("aten-codes")
    if codes and isinstance(value, int) and not isinstance(value, bool):
        for name, code in codes.items():
            if code == value:
                return name
    return value


def evaluate(op: dict, get: Getter, api: Optional[str] = None) -> Any:
    """True when the call is affected, False when a condition rules it out, or what an
    accessor decided (`Decided.result`)."""
    spec = op.get(REQUIRES)
    # `only`: the call forms the requirement applies to (a running aten operator is all of them)
    if spec is not None and (api is None or api in spec.get("only", (api,))):
        value = get(REQUIRES, spec)
        if isinstance(value, Decided):
            return value.result
        if value is ABSENT or value is None:
            return False
    spec = op.get(EXEMPT)
    if spec is not None:
        value = get(EXEMPT, spec)
        if isinstance(value, Decided):
            if value.result is not True:
                return value.result
        elif value is not ABSENT:
            if value in spec.get("values", ()):
                return False
            if spec.get("numbers") and isinstance(value, (int, float)) and not isinstance(value, bool):
                return False
    spec = op.get(LAYOUT)
    if spec is not None:
        value = get(LAYOUT, spec)
        if isinstance(value, Decided):
            if value.result is not True:
                return value.result
        elif value is ABSENT or value not in spec["values"]:
            return False
    spec = op.get(ARGUMENT)
    if spec is not None and api not in op.get("always-affected", ()):
        value = get(ARGUMENT, spec)
        if isinstance(value, Decided):
            if value.result is not True:
                return value.result
        elif value is ABSENT or decode(spec, value) not in spec["values"]:
            return False
    spec = op.get(ATEN_ARGUMENT)
    if spec is not None:
        value = get(ATEN_ARGUMENT, spec)
        if isinstance(value, Decided):
            return value.result
        if value is not ABSENT and decode(spec, value) not in spec["values"]:
            return False
    return True


def backward_operators(op: dict) -> frozenset:
    """The aten operators of a backward-only entry that run in the backward pass.

    `aten-backward` names them where one of them is also a forward operator elsewhere
    (gather's backward is a scatter_add); otherwise every listed operator counts.
    """
    return frozenset(op.get("aten-backward") or op.get("aten", ()))


def forward_operators(op: dict) -> frozenset:
    """The aten operators whose backward pass a backward-only entry is about."""
    backward = set(op.get("aten-backward") or ())
    return frozenset(name for name in op.get("aten", ()) if name not in backward)
