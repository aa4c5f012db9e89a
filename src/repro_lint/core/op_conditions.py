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
# Facts of a running call that source does not show; only the probe's accessor (`running=True`)
# is asked for them, a call in source is judged without them.
OPERAND_DTYPE = "operand-dtype"  # the operand at `position` has a dtype of one of the kinds `values`
DEVICES = "devices"  # the op runs on one of these device types (entries about one device only)
DUPLICATE_INDICES = "duplicate-indices"  # the index operand `name` (or at `position`) repeats a position
# the forward call came through one of these `torch.nn.functional` functions (an aten operator
# that several Python functions share)
PYTHON_CALLER = "python-caller"
RUNNING_ONLY = (OPERAND_DTYPE, DEVICES, DUPLICATE_INDICES, PYTHON_CALLER)
# The kinds of dtype `operand-dtype` names.
DTYPE_KINDS = ("floating", "complex", "integer", "bool", "quantized")


# What a condition compares: the values a catalog lists (strings, numbers, booleans and lists
# of them). Anything else (a tensor where an aten operator's overload has another argument at
# the catalog's position) cannot be judged: comparing it would run the object's own `==`.
_PLAIN = (str, int, float, bool, type(None))


def comparable(value: Any) -> bool:
    """Whether `value` is of a type a catalog condition lists (see `_PLAIN`)."""
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, _PLAIN) for v in value)
    return isinstance(value, _PLAIN)


def listed(value: Any, values: Any) -> bool:
    """`value in values`, for values of the listed types only (tuples compare as lists)."""
    if not comparable(value):
        return False
    return (list(value) if isinstance(value, tuple) else value) in list(values or ())


def decode(spec: dict, value: Any) -> Any:
    """An aten operator's encoding of an argument value (EmbeddingBag's mode is an int) as
    the catalog's name for it, via `aten-codes = { name = code }`."""
    codes = spec.get("aten-codes")
    if codes and isinstance(value, int) and not isinstance(value, bool):
        for name, code in codes.items():
            if code == value:
                return name
    return value


def evaluate(op: dict, get: Getter, api: Optional[str] = None, *, running: bool = False) -> Any:
    """True when the call is affected, False when a condition rules it out, or what an
    accessor decided (`Decided.result`). `running`: the accessor sees a running operator's
    real arguments and is asked for the `RUNNING_ONLY` conditions too.

    A value of a type the catalog does not list (see `comparable`) is never compared: an
    exemption then does not apply, and a required value counts as unknown (affected)."""
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
            if listed(value, spec.get("values", ())):
                return False
            if spec.get("numbers") and isinstance(value, (int, float)) and not isinstance(value, bool):
                return False
    spec = op.get(LAYOUT)
    if spec is not None:
        value = get(LAYOUT, spec)
        if isinstance(value, Decided):
            if value.result is not True:
                return value.result
        elif value is ABSENT or not listed(value, spec["values"]):
            return False
    spec = op.get(ARGUMENT)
    if spec is not None and api not in op.get("always-affected", ()):
        value = get(ARGUMENT, spec)
        if isinstance(value, Decided):
            if value.result is not True:
                return value.result
        elif value is ABSENT:
            return False
        elif comparable(value) and not listed(decode(spec, value), spec["values"]):
            return False
    spec = op.get(ATEN_ARGUMENT)
    if spec is not None:
        value = get(ATEN_ARGUMENT, spec)
        if isinstance(value, Decided):
            return value.result
        if value is not ABSENT and comparable(value) and not listed(decode(spec, value), spec["values"]):
            return False
    if running:
        for kind in RUNNING_ONLY:
            spec = op.get(kind)
            if spec is None:
                continue
            value = get(kind, spec)
            if isinstance(value, Decided):
                if value.result is not True:
                    return value.result
            elif value is False:
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
