"""RPL405's extraction side: calls of operations that are nondeterministic on CUDA (the
catalog `rules/catalog/nondeterministic_ops.toml`).

Extraction records each call of a catalog operation whose arguments make it affected
("ndop" events), the project functions that pass one of their parameters through as the
deciding argument (wrappers, followed one level), and the calls that pass a literal which
such a wrapper could hand on ("litcall" events).
"""

from __future__ import annotations

import ast
import functools
from typing import Any, Optional

from repro_lint.core import catalog, op_conditions
from repro_lint.facts.hooks import Family
from repro_lint.facts.syntax import NOT_LITERAL, get_arg, has_kwargs, literal
from repro_lint.facts.walker import extractor
from repro_lint.facts.model import LIBRARY

WRAPPERS = "ndop_wrappers"  # info.extra key: {function scope: [(op id, parameter, api, span)]}


class Table:
    """The catalog as lookups for the extraction pass."""

    def __init__(self) -> None:
        ops = [op for op in catalog.load("nondeterministic_ops")["op"] if op.get("static", True)]
        self.by_id = {op["id"]: op for op in ops}
        self.functions: dict[str, list[dict]] = {}
        self.modules: dict[str, list[dict]] = {}
        self.methods: dict[str, list[dict]] = {}
        values: set = set()
        for op in ops:
            for name in op["functions"]:
                self.functions.setdefault(name, []).append(op)
            for name in op["modules"]:
                self.modules.setdefault(name, []).append(op)
            for name in op.get("static-methods", op["methods"]):
                self.methods.setdefault(name, []).append(op)
            if "argument" in op:
                values.update(v for v in op["argument"]["values"] if isinstance(v, (str, bool)))
        # literals worth recording at call sites of project functions (wrapper arguments)
        self.values = frozenset(values)
        self.tensor_modules = frozenset(catalog.load("nondeterministic_ops").get("tensor-method-modules", ()))
        self.non_tensor_packages = frozenset(catalog.load("nondeterministic_ops").get("non-tensor-packages", ()))
        self.method_keywords = {
            name: frozenset(kws) for name, kws in catalog.load("nondeterministic_ops").get("tensor-method-keywords", {}).items()
        }
        data = catalog.load("nondeterministic_ops")
        self.unique_calls = frozenset(data.get("unique-index-calls", ()))
        self.unique_methods = frozenset(data.get("unique-index-methods", ()))
        self.uninitialised_like = frozenset(data.get("uninitialised-like-calls", ()))
        self.integer_methods = frozenset(data.get("integer-methods", ()))
        self.integer_dtypes = frozenset(data.get("integer-dtypes", ()))


@functools.lru_cache(maxsize=1)
def table() -> Table:
    return Table()


# -- extraction --------------------------------------------------------------------------
def _value(node: Optional[ast.AST]) -> Any:
    """A literal value, tuples and lists of literals as lists; else NOT_LITERAL."""
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_value(e) for e in node.elts]
        return NOT_LITERAL if any(i is NOT_LITERAL for i in items) else items
    return literal(node)


def _arg(node: ast.Call, form: str, spec: dict, module_key: str = "") -> Optional[ast.AST]:
    """The argument `spec` names: by position in a function call (one less for a method call,
    whose tensor is the receiver), by keyword only in a module constructor unless the spec
    gives `module_key`."""
    if form == "module":
        position = spec.get(module_key, -1) if module_key else -1
    else:
        position = spec["position"] - (1 if form == "method" else 0)
    return get_arg(node, position, spec["name"])


def _resolve_name(ex: extractor.Extractor, node: ast.AST) -> tuple[str, Any]:
    """("param", name) for a parameter of the enclosing function, ("literal", value) for a
    name bound to a literal in this function or the module, else ("unknown", None)."""
    if isinstance(node, ast.Name):
        if ex.func is not None and node.id in (ex.func.params or ()):
            return "param", node.id
        local = ex.info.extra.get("local_constants", {}).get(ex.scope, {})
        if node.id in local:
            return "literal", local[node.id]
        if ex.func is not None and node.id in ex.r.scope.bindings:
            return "unknown", None  # a local name bound to something else
        if node.id in ex.info.constants:
            return "literal", ex.info.constants[node.id]
    return "unknown", None


def _affected(ex: extractor.Extractor, node: ast.Call, form: str, op: dict, api: str) -> Any:
    """True, False, or ("pass", parameter) when a wrapper parameter decides."""
    # an argument given by name is what the call passes (`**kwargs` cannot hold it too); one
    # left out may be in `**kwargs`: unknown, the user's choice
    kwargs = has_kwargs(node)

    def get(kind: str, spec: dict) -> Any:
        if kind == op_conditions.LAYOUT or kind == op_conditions.ATEN_ARGUMENT:
            # facts of the running call (sparse operands, aten-only arguments): not in source
            return op_conditions.ABSENT if kind == op_conditions.ATEN_ARGUMENT else op_conditions.Decided(True)
        arg = _arg(node, form, spec, "module-position" if kind == op_conditions.EXEMPT else "")
        if arg is None:
            return op_conditions.Decided(False) if kwargs else op_conditions.ABSENT
        if kind == op_conditions.EXEMPT:
            value = _value(arg)
            if value is NOT_LITERAL and _scalar(ex, arg):
                return 0.0  # a number however it is written (`float("-inf")`, `-1e9`, `math.inf`)
            return op_conditions.ABSENT if value is NOT_LITERAL else value
        value = literal(arg)
        if value is not NOT_LITERAL or kind == op_conditions.REQUIRES:
            return value
        found_kind, found = _resolve_name(ex, arg)
        if found_kind == "param":
            return op_conditions.Decided(("pass", found))
        return found if found_kind == "literal" else op_conditions.Decided(False)

    return op_conditions.evaluate(op, get, api)


def _scalar(ex: extractor.Extractor, node: ast.AST) -> bool:
    """A Python number however written: `-1e9`, `float("-inf")`, `math.inf`, `np.inf`,
    `torch.finfo(x.dtype).min` (not a tensor)."""
    t = type(node)
    if t is ast.UnaryOp:
        return _scalar(ex, node.operand)  # type: ignore[attr-defined]
    if t is ast.Constant:
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)  # type: ignore[attr-defined]
    if t is ast.Call:
        func = node.func  # type: ignore[attr-defined]
        if type(func) is ast.Name and func.id in ("float", "int"):
            return ex.r.is_unbound(func.id)
        return ex.r.qualify(func) in ("builtins.float", "builtins.int")
    if t is ast.Attribute:
        qual = ex.r.qualify(node)
        if qual in ("math.inf", "math.nan", "math.pi", "math.e", "numpy.inf", "numpy.nan", "numpy.pi"):
            return True
        inner = node.value  # type: ignore[attr-defined]
        return node.attr in ("min", "max", "eps", "tiny") and type(inner) is ast.Call and ex.r.qualify(inner.func) in ("torch.finfo", "torch.iinfo")  # type: ignore[attr-defined]
    return False


def _exact_as_used(ex: extractor.Extractor, node: ast.Call, form: str, op: dict) -> bool:
    """Whether the call cannot give different results as it is used (spec, "Precision on
    large repositories" 7): only the k-th value kept (`torch.kthvalue(x, k).values`), an
    index made unique (`x.index_copy_(0, torch.arange(n), y)`), integer values summed
    (`mask.long().cumsum(1)`, where only floating-point operands are affected)."""
    used = op.get("exact-when-used")
    if used and _used_as(ex, node, used):
        return True
    unique = op.get("duplicate-indices")
    if unique is not None:
        arg = _arg(node, form, unique)
        if arg is not None and (_unique_index(ex, arg) or form == "method" and _fills_like(ex, node.func.value, arg)):  # type: ignore[attr-defined]
            return True
    dtypes = op.get("operand-dtype")
    if dtypes is not None and not {"integer", "bool"} & set(dtypes["values"]):
        t = table()
        dtype = get_arg(node, -1, "dtype")
        if dtype is not None and ex.r.qualify(dtype) in t.integer_dtypes:
            return True
        position = dtypes["position"]
        if form == "method":
            data = node.func.value if position == 0 else get_arg(node, position - 1, "")  # type: ignore[attr-defined]
        else:
            data = get_arg(node, position, "input" if position == 0 else "")
        if data is not None and _integer_valued(ex, data):
            return True
    return False


def _used_as(ex: extractor.Extractor, node: ast.Call, used: list) -> bool:
    """Whether the statement takes only these parts of the call's result (`.values`, `[0]`)."""
    stmt = ex.stmt_node
    if stmt is None:
        return False
    for parent in ast.walk(stmt):
        if type(parent) is ast.Attribute and parent.value is node:  # type: ignore[attr-defined]
            return parent.attr in used  # type: ignore[attr-defined]
        if type(parent) is ast.Subscript and parent.value is node:  # type: ignore[attr-defined]
            return literal(parent.slice) in used  # type: ignore[attr-defined]
    return False


def _unique_index(ex: extractor.Extractor, arg: ast.AST) -> bool:
    """An index made by a call whose result has no duplicates (or a tuple of such)."""
    if type(arg) in (ast.Tuple, ast.List):
        return bool(arg.elts) and all(_unique_index(ex, e) for e in arg.elts)  # type: ignore[attr-defined]
    # `torch.topk(w, k).indices`, `w.topk(k)[1]`: the indices of a call whose result has none twice
    if type(arg) is ast.Attribute and arg.attr == "indices":  # type: ignore[attr-defined]
        arg = arg.value  # type: ignore[attr-defined]
    elif type(arg) is ast.Subscript and literal(arg.slice) == 1:  # type: ignore[attr-defined]
        arg = arg.value  # type: ignore[attr-defined]
    if type(arg) is ast.Name:
        value = ex.local_values.get(arg.id)  # type: ignore[attr-defined]
        if value is None or value is arg:
            return False
        arg = value
    if type(arg) is not ast.Call:
        return False
    func = arg.func  # type: ignore[attr-defined]
    t = table()
    if ex.r.qualify(func) in t.unique_calls:
        return True
    return type(func) is ast.Attribute and func.attr in t.unique_methods and ex.r.qualify(func) is None


def _fills_like(ex: extractor.Extractor, receiver: ast.AST, index: ast.AST) -> bool:
    """A write into an uninitialised tensor shaped like its own index
    (`torch.empty_like(order).scatter_(0, order, torch.arange(n))`, an inverse permutation):
    the result is defined only if the index names every position once, so it has no
    duplicates."""
    if type(receiver) is not ast.Call or type(index) is not ast.Name or not receiver.args:  # type: ignore[attr-defined]
        return False
    first = receiver.args[0]  # type: ignore[attr-defined]
    return (
        type(first) is ast.Name and first.id == index.id  # type: ignore[attr-defined]
        and ex.r.qualify(receiver.func) in table().uninitialised_like  # type: ignore[attr-defined]
    )


def _integer_valued(ex: extractor.Extractor, node: ast.AST, steps: int = 8) -> bool:
    """A value the scope shows is an integer or bool tensor (`x.long()`, `x != pad`,
    `mask.ne(0).int()`, a name bound to one)."""
    t = table()
    while steps > 0:
        steps -= 1
        tn = type(node)
        if tn is ast.Compare:
            return True
        if tn is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            if type(func) is ast.Attribute and func.attr in t.integer_methods:
                return True
            if type(func) is ast.Attribute and func.attr == "to":
                return any(ex.r.qualify(a) in t.integer_dtypes for a in [*node.args, *(k.value for k in node.keywords)])  # type: ignore[attr-defined]
            return False
        if tn is ast.Name:
            value = ex.local_values.get(node.id)  # type: ignore[attr-defined]
            if value is None or value is node:
                return False
            node = value
        else:
            return False
    return False


def _op_call(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    t = table()
    func = node.func
    if qual is not None:
        ops = t.functions.get(qual)
        form = "function"
        if ops is None:
            ops = t.modules.get(qual)
            form = "module"
        api = qual
    elif type(func) is ast.Attribute:
        ops = t.methods.get(func.attr)
        form = "method"
        api = f"Tensor.{func.attr}"
        if ops and ex.receiver_root(func.value) in t.non_tensor_packages:
            return  # a numpy array's or a plot's method of the same name
        accepted = t.method_keywords.get(func.attr)
        if ops and accepted is not None and any(kw.arg is not None and kw.arg not in accepted for kw in node.keywords):
            return  # a keyword the Tensor method does not take: another library's method
    else:
        return
    if not ops:
        return
    hits = []
    for op in ops:
        if op["backward-only"] and ex.no_grad:
            continue  # no gradient flows here: the backward never runs
        if _exact_as_used(ex, node, form, op):
            continue
        verdict = _affected(ex, node, form, op, api)
        if verdict is True:
            hits.append(op["id"])
        elif isinstance(verdict, tuple) and ex.func is not None:
            wrappers = ex.info.extra.setdefault(WRAPPERS, {}).setdefault(ex.scope, [])
            wrappers.append((op["id"], verdict[1], api, ex.span(node)))
    if hits:
        ex.add("ndop", node, ops=tuple(hits), api=api)


def _literal_call(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    """Calls that pass a literal a wrapper could hand on to a catalog operation."""
    # this runs for every call, and most pass no literal the catalog names: leave before
    # any lookup
    values = table().values
    Constant = ast.Constant
    for a in node.args:
        if type(a) is Constant:
            v = a.value  # type: ignore[attr-defined]
            if v.__class__ in _LITERAL_TYPES and v in values:  # `_interesting`, written out
                break
    else:
        for k in node.keywords:
            a = k.value
            if type(a) is Constant:
                v = a.value  # type: ignore[attr-defined]
                if v.__class__ in _LITERAL_TYPES and v in values:
                    break
        else:
            return
    marker = None
    if qual is not None:
        if qual.split(".", 1)[0] in ex.m.external_roots:
            return
        method = None
    elif type(node.func) is ast.Attribute:
        method = node.func.attr
        marker = ex.method_marker(node.func)
        if marker == LIBRARY:
            return
    elif type(node.func) is ast.Name:
        method = node.func.id
    else:
        return
    args = tuple((i, v) for i, a in enumerate(node.args) if (v := literal(a)) is not NOT_LITERAL and _interesting(v, values))
    kwargs = tuple((k.arg, v) for k in node.keywords if k.arg and (v := literal(k.value)) is not NOT_LITERAL and _interesting(v, values))
    if args or kwargs:
        ex.add("litcall", node, target=qual, method=method, marker=marker, args=args, kwargs=kwargs, no_grad=bool(ex.no_grad))


# the types of the literals `values` holds (a syntax tree's constants are of exact types)
_LITERAL_TYPES = (str, bool)


def _interesting(value: Any, values: frozenset) -> bool:
    return isinstance(value, _LITERAL_TYPES) and value in values


@functools.lru_cache(maxsize=1)
def _op_names() -> frozenset:
    t = table()
    return frozenset([*(q.rpartition(".")[2] for q in [*t.functions, *t.modules]), *t.methods])


FAMILY = Family(
    order=70,
    call_hooks=(_op_call, _literal_call),
    call_names={_op_call: _op_names},
    call_literals={_literal_call: lambda: table().values},
)
