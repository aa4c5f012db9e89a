"""Checks of rules/catalog/nondeterministic_ops.toml.

The catalog is data that both RPL405 (static) and the runtime probe rely on, so these tests
pin it to the installed PyTorch: every operation the `use_deterministic_algorithms`
docstring names must be present, every aten name must exist, and the aten names must be the
ones a TorchDispatchMode really records.
"""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

from repro_lint.core import catalog

CATALOG = catalog.load("nondeterministic_ops")
OPS = CATALOG["op"]
BY_ID = {op["id"]: op for op in OPS}

ALLOWED_EFFECTS = {"deterministic", "raises"}
REQUIRED = {
    "id": str,
    "summary": str,
    "functions": list,
    "methods": list,
    "modules": list,
    "aten": list,
    "condition": str,
    "backward-only": bool,
    "with-deterministic-algorithms": str,
    "alternative": str,
    "torch-source": str,
}
OPTIONAL = {
    "argument": dict,
    # read by the static rule RPL405 only (see the catalog's header)
    "static": bool,
    "static-methods": list,
    "requires-argument": dict,
    "exempt-argument": dict,
    "always-affected": list,
    "warn-only-stays-nondeterministic": bool,
    "exact-when-used": list,
    # read by the probe only: facts of the running aten operator
    "aten-argument": dict,
    "operand-layout": dict,
    "aten-backward": list,
    "operand-dtype": dict,
    "devices": list,
    "duplicate-indices": dict,
    "python-caller": list,
}


# --------------------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------------------


def test_header():
    assert isinstance(CATALOG.get("checked-against"), str)
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", CATALOG["checked-against"])
    assert isinstance(CATALOG.get("sources"), list) and CATALOG["sources"]
    assert all(isinstance(s, str) and s for s in CATALOG["sources"])
    assert len(OPS) > 0


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.get("id", "?"))
def test_entry_schema(op):
    for key, typ in REQUIRED.items():
        assert key in op, f"{op.get('id')}: missing key {key!r}"
        assert isinstance(op[key], typ), f"{op['id']}: {key!r} should be {typ.__name__}"
    unknown = set(op) - set(REQUIRED) - set(OPTIONAL)
    assert not unknown, f"{op['id']}: unknown keys {sorted(unknown)}"
    for key, typ in OPTIONAL.items():
        if key in op:
            assert isinstance(op[key], typ), f"{op['id']}: {key!r} should be {typ.__name__}"
    assert re.fullmatch(r"[a-z][a-z0-9_]*", op["id"])
    for key in ("summary", "condition", "torch-source"):
        assert op[key].strip(), f"{op['id']}: empty {key}"
    assert op["with-deterministic-algorithms"] in ALLOWED_EFFECTS
    assert op["functions"] or op["methods"] or op["modules"], f"{op['id']}: names no call"
    for key in ("functions", "methods", "modules", "aten"):
        values = op[key]
        assert all(isinstance(v, str) and v for v in values), f"{op['id']}: bad {key}"
        assert len(values) == len(set(values)), f"{op['id']}: duplicate in {key}"
    assert op["aten"], f"{op['id']}: no aten names"
    for name in op["aten"]:
        assert name.startswith("aten::"), f"{op['id']}: {name!r} lacks the aten:: prefix"
        assert "." not in name, f"{op['id']}: {name!r} should be a schema name, no overload"
    for name in op["functions"]:
        assert name.startswith("torch."), name
    for name in op["modules"]:
        assert name.startswith("torch.nn."), name
    for name in op["methods"]:
        assert "." not in name and not name.startswith("torch"), name


@pytest.mark.parametrize("op", [op for op in OPS if "aten-backward" in op], ids=lambda op: op["id"])
def test_aten_backward_names_listed_operators(op):
    assert op["backward-only"], op["id"]
    assert set(op["aten-backward"]) < set(op["aten"]), op["id"]  # some forward operator remains


def test_runtime_condition_schemas():
    for op in OPS:
        if "aten-argument" in op:
            assert set(op["aten-argument"]) == {"name", "values"}, op["id"]
        if "operand-layout" in op:
            spec = op["operand-layout"]
            assert set(spec) == {"position", "values"} and spec["values"], op["id"]
            assert all(v.startswith("sparse") or v == "strided" for v in spec["values"]), op["id"]
        if "operand-dtype" in op:
            spec = op["operand-dtype"]
            assert set(spec) == {"position", "values"} and spec["values"], op["id"]
            assert set(spec["values"]) <= {"floating", "complex", "integer", "bool", "quantized"}, op["id"]
        if "duplicate-indices" in op:
            assert set(op["duplicate-indices"]) == {"name", "position"}, op["id"]
            assert op["with-deterministic-algorithms"] == "deterministic", op["id"]  # an alert ignores the data
        assert set(op.get("devices", ["cpu"])) <= {"cpu", "cuda"}, op["id"]


def test_ids_unique():
    ids = [op["id"] for op in OPS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("op", [op for op in OPS if "argument" in op], ids=lambda op: op["id"])
def test_argument_schema(op):
    arg = op["argument"]
    assert set(arg) - {"aten-codes"} == {"name", "position", "values"}, op["id"]
    codes = arg.get("aten-codes", {})
    assert set(codes) >= set(arg["values"]) if codes else True, op["id"]
    assert all(isinstance(c, int) for c in codes.values()), op["id"]
    assert isinstance(arg["name"], str) and arg["name"].isidentifier()
    assert isinstance(arg["position"], int) and arg["position"] >= 0
    assert isinstance(arg["values"], list) and arg["values"]
    assert all(isinstance(v, (str, bool, int)) for v in arg["values"])
    assert op["functions"], f"{op['id']}: an argument needs a function to apply to"


# --------------------------------------------------------------------------------------
# Drift: the catalog covers everything the installed torch documents
# --------------------------------------------------------------------------------------

try:
    import torch
except ImportError:  # the schema checks above still run without torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

_REF = re.compile(r":(func|meth|class):`~?([A-Za-z0-9_.]+)`")


def _docstring_lists() -> dict[str, list[str]]:
    """Split the docstring into its two bullet lists; return the text of each bullet."""
    doc = inspect.cleandoc(torch.use_deterministic_algorithms.__doc__ or "")
    det = re.search(r"nondeterministic\s+operations\s+will\s+act\s+deterministically", doc)
    raise_ = re.search(r"nondeterministic\s+operations\s+will\s+throw\s+a\s+:class:`RuntimeError`", doc)
    assert det and raise_ and det.start() < raise_.start(), (
        "torch.use_deterministic_algorithms.__doc__ no longer has the two lists this test "
        "parses; update the parser and the catalog together"
    )
    end = re.search(r"\n\s*In addition|\n\s*Note that deterministic", doc[raise_.end():])
    stop = raise_.end() + end.start() if end else len(doc)
    lists = {
        "deterministic": doc[det.end(): raise_.start()],
        "raises": doc[raise_.end(): stop],
    }
    result = {}
    for effect, text in lists.items():
        bullets = re.split(r"\n\s*\*\s+", "\n" + text)[1:]
        assert bullets, f"no bullets found in the {effect} list"
        result[effect] = bullets
    return result


def _normalise(kind: str, target: str) -> tuple[str, str]:
    """Map a docstring reference to (catalog key, catalog name)."""
    if kind == "class":
        return "modules", target
    if target.startswith("torch.Tensor."):
        return "methods", target[len("torch.Tensor."):]
    return "functions", target


def _docstring_references() -> list[tuple[str, str, str]]:
    refs = []
    for effect, bullets in _docstring_lists().items():
        for bullet in bullets:
            found = _REF.findall(bullet)
            assert found, f"bullet without a reference: {bullet!r}"
            kind, target = found[0]  # the operation is the first reference of a bullet
            key, name = _normalise(kind, target)
            refs.append((effect, key, name))
    return refs


def _entries_naming(key: str, name: str) -> list[dict]:
    return [op for op in OPS if name in op[key]]


@needs_torch
def test_docstring_parser_finds_both_lists():
    refs = _docstring_references()
    effects = {effect for effect, _, _ in refs}
    assert effects == {"deterministic", "raises"}
    assert len(refs) >= 40  # torch 2.13.0 has 48 bullets


@needs_torch
def test_catalog_covers_every_documented_operation():
    missing = sorted(
        {f"{key}: {name}" for _, key, name in _docstring_references() if not _entries_naming(key, name)}
    )
    assert not missing, (
        "torch.use_deterministic_algorithms documents operations the catalog lacks "
        f"(torch {torch.__version__}): {missing}"
    )


@needs_torch
def test_catalog_agrees_with_docstring_split():
    disagreements = []
    for effect, key, name in _docstring_references():
        effects = {op["with-deterministic-algorithms"] for op in _entries_naming(key, name)}
        if effects and effect not in effects:
            disagreements.append(f"{name}: docstring says {effect}, catalog has {sorted(effects)}")
    assert not disagreements, disagreements


# --------------------------------------------------------------------------------------
# Names resolve in the installed torch
# --------------------------------------------------------------------------------------


def _resolve(qualified: str):
    parts = qualified.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(qualified)


ALL_ATEN = sorted({name for op in OPS for name in op["aten"]})


@needs_torch
@pytest.mark.parametrize("name", ALL_ATEN)
def test_aten_name_exists(name):
    packet = getattr(torch.ops.aten, name[len("aten::"):], None)
    assert packet is not None, f"{name} is not an operator of torch {torch.__version__}"
    overloads = packet.overloads()
    assert overloads, name
    schema_names = {getattr(packet, o)._schema.name for o in overloads}
    assert schema_names == {name}


@needs_torch
def test_tensor_method_keywords_are_the_aten_arguments():
    """The keywords a Tensor method takes (`tensor-method-keywords`, which tell it from another
    library's method of the same name) are those of its aten schemas: one missing would make
    RPL405 miss a real call that passes it."""
    table = catalog.load("nondeterministic_ops")["tensor-method-keywords"]
    methods = {name for op in OPS for name in op["methods"]}
    assert set(table) <= methods
    for name, keywords in table.items():
        packet = getattr(torch.ops.aten, name)
        schema = {a.name for o in packet.overloads() for a in getattr(packet, o)._schema.arguments} - {"self"}
        assert set(keywords) == schema, name


@needs_torch
def test_python_names_exist():
    problems = []
    for op in OPS:
        for name in op["functions"]:
            try:
                if not callable(_resolve(name)):
                    problems.append(f"{op['id']}: {name} is not callable")
            except (ImportError, AttributeError):
                problems.append(f"{op['id']}: function {name} not found")
        for name in op["methods"]:
            if not callable(getattr(torch.Tensor, name, None)):
                problems.append(f"{op['id']}: torch.Tensor.{name} not found")
        for name in op["modules"]:
            try:
                cls = _resolve(name)
            except (ImportError, AttributeError):
                problems.append(f"{op['id']}: module {name} not found")
                continue
            if not (inspect.isclass(cls) and issubclass(cls, torch.nn.Module)):
                problems.append(f"{op['id']}: {name} is not an nn.Module")
    assert not problems, problems


@needs_torch
@pytest.mark.parametrize("op", [op for op in OPS if "argument" in op], ids=lambda op: op["id"])
def test_argument_matches_signature(op):
    """Where a function's signature is introspectable, `position` is that of `name` and the
    default lies outside `values` (the catalog's contract for an omitted argument)."""
    arg = op["argument"]
    for qualified in op["functions"]:
        try:
            params = list(inspect.signature(_resolve(qualified)).parameters.values())
        except (TypeError, ValueError):  # builtins without a Python signature
            continue
        names = [p.name for p in params]
        if arg["name"] not in names:
            continue
        assert names.index(arg["name"]) == arg["position"], (op["id"], qualified)
        default = params[arg["position"]].default
        if default is not inspect.Parameter.empty:
            assert default not in arg["values"], (op["id"], qualified, default)


@needs_torch
@pytest.mark.parametrize("op", [op for op in OPS if "argument" in op and op["modules"]], ids=lambda op: op["id"])
def test_module_forms_without_the_argument_are_always_affected(op):
    """A module whose constructor has no parameter of the deciding argument's name (the
    padding modules: `nn.ReflectionPad2d(1)` pads by reflection whatever the call says) is
    affected whenever it is built, so it must be listed in `always-affected`: otherwise the
    static rule never reports it."""
    name = op["argument"]["name"]
    for qualified in op["modules"]:
        params = inspect.signature(_resolve(qualified).__init__).parameters
        assert name in params or qualified in op.get("always-affected", ()), (op["id"], qualified)


# --------------------------------------------------------------------------------------
# The aten names are what a runtime probe sees (CPU run of the same code path)
# --------------------------------------------------------------------------------------


def _recorder():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names: set[str] = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.add(func._schema.name)
            return func(*args, **(kwargs or {}))

    return Recorder()


def _leaf(*shape):
    return torch.randn(*shape, requires_grad=True)


def F():
    return torch.nn.functional


def nn():
    return torch.nn


# id -> callable returning the output whose .sum() is differentiated (None: no backward)
PROBES = {
    "index_add": lambda: (torch.zeros(4, 3).index_add_(0, torch.tensor([0, 2, 2]), torch.randn(3, 3)), False),
    "scatter_add": lambda: (torch.zeros(4, 3).scatter_add_(0, torch.tensor([[0, 1, 1]]), torch.randn(1, 3)), False),
    "interpolate_bilinear_trilinear": lambda: (F().interpolate(_leaf(1, 2, 4, 4), scale_factor=2, mode="bilinear"), True),
    "interpolate_linear_bicubic": lambda: (F().interpolate(_leaf(1, 2, 4), scale_factor=2, mode="linear"), True),
    "interpolate_area": lambda: (F().interpolate(_leaf(1, 2, 6, 6), size=(4, 4), mode="area"), True),
    "embedding_bag_max_backward": lambda: (nn().EmbeddingBag(10, 3, mode="max")(torch.tensor([[1, 2], [3, 3]])), True),
    "gather_backward": lambda: (_leaf(4, 3).gather(0, torch.tensor([[0, 1, 2], [0, 0, 0]])), True),
    "index_select_backward": lambda: (_leaf(4, 3).index_select(0, torch.tensor([0, 2, 2])), True),
    "grid_sample_backward": lambda: (F().grid_sample(_leaf(1, 1, 4, 4), torch.zeros(1, 2, 2, 2), align_corners=False), True),
    "reflection_pad_backward": lambda: (nn().ReflectionPad2d(1)(_leaf(1, 1, 4, 4)), True),
    "adaptive_avg_pool2d_backward": lambda: (nn().AdaptiveAvgPool2d(3)(_leaf(1, 1, 5, 5)), True),
    "nll_loss2d": lambda: (F().cross_entropy(_leaf(2, 3, 2, 2), torch.zeros(2, 2, 2, dtype=torch.long)), True),
    "take_backward": lambda: (torch.take(_leaf(4, 3), torch.tensor([0, 5, 5])), True),
    "cumsum": lambda: (_leaf(3, 4).cumsum(1), True),
}


@needs_torch
@pytest.mark.parametrize("op_id", sorted(PROBES))
def test_dispatch_mode_sees_catalog_aten_names(op_id):
    op = BY_ID[op_id]
    forward, backward = _recorder(), _recorder()
    with forward:
        out, differentiate = PROBES[op_id]()
    if differentiate:
        with backward:
            out.sum().backward()
    expected = set(op["aten"])
    assert (forward.names | backward.names) & expected, (
        f"{op_id}: recorded {sorted(forward.names | backward.names)}, catalog has {sorted(expected)}"
    )
    if op["backward-only"]:
        assert backward.names & expected, (
            f"{op_id} is backward-only but no catalog aten name was seen in backward: "
            f"{sorted(backward.names)}"
        )


# --------------------------------------------------------------------------------------
# "raises" that is not tied to CUDA can be checked on CPU
# --------------------------------------------------------------------------------------

CPU_RAISES = {
    "put": lambda: torch.zeros(4).put_(torch.tensor([0, 0]), torch.randn(2)),
    "max_unpool": lambda: nn().MaxUnpool2d(2)(*nn().MaxPool2d(2, return_indices=True)(torch.randn(1, 1, 4, 4))),
}


@needs_torch
@pytest.mark.parametrize("op_id", sorted(CPU_RAISES))
def test_raises_under_deterministic_algorithms_on_cpu(op_id):
    assert BY_ID[op_id]["with-deterministic-algorithms"] == "raises"
    previous = torch.are_deterministic_algorithms_enabled()
    previous_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        with pytest.raises(RuntimeError, match="does not have a deterministic implementation"):
            CPU_RAISES[op_id]()
    finally:
        torch.use_deterministic_algorithms(previous, warn_only=previous_warn_only)


@needs_torch
def test_aten_codes_match_the_operator():
    """`aten-codes` say how aten encodes a value; check them by running each mode."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Modes(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func._schema.name == "aten::_embedding_bag":
                seen.append(args[4])
            return func(*args, **(kwargs or {}))

    codes = BY_ID["embedding_bag_max_backward"]["argument"]["aten-codes"]
    for mode, code in codes.items():
        seen.clear()
        with Modes():
            nn().EmbeddingBag(5, 2, mode=mode)(torch.tensor([[1, 2]]))
        assert seen == [code], mode
