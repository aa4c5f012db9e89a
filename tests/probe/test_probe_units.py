"""The parts of the probe that need no separate process: fingerprints, comparison, recording."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import repro_lint.core.catalog  # noqa: E402
from repro_lint.probe import compare  # noqa: E402
from repro_lint.probe.fingerprint import fingerprint_tensors  # noqa: E402
from repro_lint.probe.frames import UserCode  # noqa: E402
from repro_lint.probe.recorder import Recorder  # noqa: E402
from repro_lint.probe.predict import prediction_table  # noqa: E402
from repro_lint.probe.rng_audit import RngAudit  # noqa: E402
from repro_lint.probe.trace_format import GLOBAL_DRAW  # noqa: E402


def fp(t):
    return fingerprint_tensors([t])[0]


@pytest.mark.parametrize(
    "n, dtype", [(5, torch.float32), (1000, torch.float32), (21, torch.float16), ((1 << 21) + 7, torch.float32)]
)
def test_fingerprint_sees_every_bit(n, dtype):
    x = torch.linspace(-1, 1, n, dtype=dtype)
    assert fp(x) == fp(x.clone())
    assert fp(x[1:]) == fp(x[1:].clone())  # a slice that starts mid-word
    for i in (0, n // 2, n - 1):  # the last element may sit in the bytes after the last whole word
        one_ulp = x.clone()
        one_ulp[i] = torch.nextafter(one_ulp[i], torch.tensor(2.0, dtype=dtype))
        assert fp(one_ulp) != fp(x)
    swapped = x.clone()
    swapped[[0, n - 1]] = swapped[[n - 1, 0]]
    assert fp(swapped) != fp(x)


def test_fingerprint_tells_signed_zero_dtype_shape_and_layout_apart():
    assert fp(torch.zeros(20)) != fp(-torch.zeros(20))
    assert fp(torch.zeros(20)) != fp(torch.zeros(20, dtype=torch.float64))
    assert fp(torch.zeros(4, 5)) != fp(torch.zeros(5, 4))
    t = torch.arange(40.0).reshape(5, 8)
    assert fp(t.t()) == fp(t.t().contiguous())  # values, not memory layout
    assert len({fp(torch.tensor([True, False] * 10)), fp(torch.ones(3, dtype=torch.complex64)), fp(torch.empty(0))}) == 3


def _trace(*ops, names=("aten::rand", "aten::add", "aten::mul")):
    return {"names": list(names), "ops": [list(op) for op in ops], "locations": [], "stop_reason": None}


def test_first_divergence_kinds():
    base = [(0, 0, 1, 10, GLOBAL_DRAW), (1, 0, 2, 20, 0), (2, 0, 3, 30, 0)]
    same = _trace(*base)
    assert compare.first_divergence([(1, same), (2, _trace(*base))]) is None

    drawn = _trace((0, 0, 1, 11, GLOBAL_DRAW), (1, 0, 9, 21, 0), (2, 0, 8, 31, 0))
    d = compare.first_divergence([(1, same), (2, drawn)])
    assert (d.kind, d.op_index, d.later) == (compare.UNSEEDED_DRAW, 0, 2)

    kernel = _trace(base[0], (1, 0, 2, 21, 0), base[2])
    assert compare.first_divergence([(1, same), (2, kernel)]).kind == compare.NONDETERMINISTIC_OP

    fed = _trace(base[0], (1, 0, 5, 21, 0), base[2])
    assert compare.first_divergence([(1, same), (2, fed)]).kind == compare.EXTERNAL_INPUT

    other_op = _trace(base[0], (2, 0, 2, 20, 0), base[2])
    assert compare.first_divergence([(1, same), (2, other_op)]).kind == compare.CONTROL_FLOW

    longer = _trace(*base, (1, 0, 4, 40, 0))
    d = compare.first_divergence([(1, same), (2, longer)])
    assert (d.kind, d.op_index) == (compare.CONTROL_FLOW, 3)


def test_earliest_divergence_of_any_pair_wins():
    base = [(1, 0, 2, 20, 0), (1, 0, 2, 20, 0), (1, 0, 2, 20, 0)]
    late = _trace(base[0], base[1], (1, 0, 2, 99, 0))
    early = _trace(base[0], (1, 0, 2, 98, 0), base[2])
    d = compare.first_divergence([(1, _trace(*base)), (2, late), (3, early)])
    assert (d.runs, d.op_index) == ((1, 3), 1)


def record(fn, catalog=None):
    user = UserCode([__file__])
    recorder = None
    audit = RngAudit(user, lambda: len(recorder.ops) if recorder else 0)
    recorder = Recorder(user, audit, max_ops=10_000, predict=prediction_table(catalog or {}))
    audit.install(repro_lint.core.catalog.load("rng"))
    try:
        with recorder:
            fn()
    finally:
        audit.uninstall()
    return recorder, audit, user


def test_recorder_puts_backward_ops_at_their_forward_line():
    catalog = {
        "op": [
            {"id": "bilinear", "aten": ["aten::upsample_bilinear2d", "aten::upsample_bilinear2d_backward"],
             "backward-only": True, "argument": {"name": "mode", "position": 3, "values": ["bilinear"]}},
            {"id": "transposed", "aten": ["aten::convolution"], "aten-argument": {"name": "transposed", "values": [True]}},
            {"id": "plain", "aten": ["aten::convolution"], "aten-argument": {"name": "transposed", "values": [False]}},
        ]
    }

    def train():
        x = torch.ones(1, 1, 4, 4, requires_grad=True)
        y = torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear")  # FORWARD
        z = torch.nn.functional.conv2d(y, torch.ones(1, 1, 3, 3))
        z.sum().backward()

    recorder, _, user = record(train, catalog)
    hits = {(entry, op, user.locations[loc][1], backward) for entry, op, loc, _, backward in recorder.predicted}
    import inspect

    lines, start = inspect.getsourcelines(train)
    forward = start + next(i for i, text in enumerate(lines) if "# FORWARD" in text)
    assert ("bilinear", "aten::upsample_bilinear2d_backward", forward, True) in hits
    assert not [h for h in hits if h[0] == "bilinear" and not h[3]]  # the forward pass is fine
    assert {h[0] for h in hits} == {"bilinear", "plain"}


def test_recorder_sees_global_draws_and_seeds():
    import random

    def run():
        torch.rand(1)
        torch.manual_seed(0)
        torch.rand(2)
        torch.rand(2, generator=torch.Generator())  # explicit: not a global draw
        random.seed()  # reseeds from entropy: not a fixed seed
        random.random()

    recorder, audit, _ = record(run)
    draws = [(d.source, d.function, d.seeded, d.count) for d in audit.draws.values()]
    assert draws == [("torch", "aten::rand", False, 1), ("torch", "aten::rand", True, 1), ("python", "random.random", False, 1)]
    assert sum(1 for op in recorder.ops if op[4] & GLOBAL_DRAW) == 2
    seeds = [(s.source, s.function, s.seeded) for s in audit.seeds.values()]
    assert seeds == [("torch", "torch.manual_seed", True), ("python", "random.seed", False)]
    assert not hasattr(random.random, "__repro_lint_wrapped__")  # uninstalled again


def test_predictions_apply_the_catalog_conditions():
    """RPP104 with the shipped catalog: the argument values, layouts, plain vs transposed
    convolution and forward vs backward operators decide, as they do for RPL405."""
    import inspect

    nn = torch.nn

    def train():
        conv = nn.Conv2d(1, 2, 3)
        y = conv(torch.randn(1, 1, 5, 5)).sum()  # CONV
        up = nn.ConvTranspose2d(1, 1, 2)
        y = y + up(torch.randn(1, 1, 3, 3)).sum()  # TRANSPOSE
        q = torch.randn(3, 2, 8)
        y = y + nn.MultiheadAttention(8, 2)(q, q, q)[0].sum()  # MHA
        y = y + nn.EmbeddingBag(10, 4, mode="mean")(torch.tensor([[1, 2], [3, 4]])).sum()  # MEAN
        y = y + nn.EmbeddingBag(10, 4, mode="max")(torch.tensor([[1, 2], [3, 4]])).sum()  # MAX
        src = torch.randn(5, requires_grad=True)
        y = y + torch.zeros(3).scatter_add(0, torch.tensor([0, 1, 1, 2, 2]), src).sum()  # SCATTER
        y = y + torch.randn(4, 3, requires_grad=True).gather(0, torch.tensor([[0, 1, 2], [0, 0, 0]])).sum()  # GATHER
        sparse = torch.eye(3).to_sparse().unsqueeze(0)
        y = y + torch.bmm(sparse, torch.randn(1, 3, 2)).sum()  # SPARSE
        y.backward()

    recorder, _, user = record(train, repro_lint.core.catalog.load("nondeterministic_ops"))
    lines, start = inspect.getsourcelines(train)
    line = {text.rsplit("# ", 1)[1].strip(): start + i for i, text in enumerate(lines) if "  # " in text}
    by_line: dict[int, dict[str, int]] = {}
    for (entry, _op, loc, _device, _backward), count in recorder.predicted.items():
        counts = by_line.setdefault(user.locations[loc][1], {})
        counts[entry] = counts.get(entry, 0) + count
    assert by_line[line["CONV"]] == {"convolution": 2}  # forward and backward, once each
    assert by_line[line["TRANSPOSE"]] == {"conv_transpose": 2}
    assert line["MHA"] not in by_line  # dense bmm inside attention is not bmm_sparse
    assert line["MEAN"] not in by_line
    assert by_line[line["MAX"]] == {"embedding_bag_max_backward": 1}
    assert by_line[line["SCATTER"]] == {"scatter_add": 1}  # not gather_backward: that is gather's
    assert by_line[line["GATHER"]] == {"gather_backward": 1}
    assert by_line[line["SPARSE"]].get("bmm_sparse") == 1


# -- processes and verdicts (no torch needed, but kept with the other units) ---------------
from repro_lint.probe.trace_format import SINK  # noqa: E402
from repro_lint.probe.units import build_units, name_processes  # noqa: E402


def _process(key, parent, role, index, ordinal, segment=None):
    return {"key": key, "pid": 1, "root": "main", "parent": parent, "ordinal": ordinal, "parent_segment": segment,
            "role": role, "index": index}


def test_processes_are_named_by_their_place_in_the_run():
    roots = {"main": {"process": {"key": "m", "root": "main", "role": "root"}, "ops": []}}
    children = [
        {"process": _process("w0", "m", "worker", 0, 1)},
        {"process": _process("w1", "m", "worker", 1, 2)},
        {"process": _process("w0b", "m", "worker", 0, 3)},  # the next epoch's worker 0
        {"process": _process("j", "m", "worker", 0, 4, segment="job 2")},
        {"process": _process("g", "w1", "subprocess", 1, 1)},
    ]
    names = name_processes(roots, children)
    assert names == {
        "m": "main", "w0": "main/worker 0", "w1": "main/worker 1", "w0b": "main/worker 0 #2",
        "j": "main/job 2/worker 0", "g": "main/worker 1/subprocess 1",
    }


def _unit_trace(ops, **extra):
    trace = {"process": {"key": "m", "root": "main"}, "names": ["aten::rand", "aten::add", "aten::item"],
             "ops": [list(op) for op in ops], "segments": [], "state": [], "final": [], "sinks": [], "locations": []}
    trace.update(extra)
    return build_units({"main": trace}, [])["main"]


def _judged(a, b, uneven=False):
    return compare.compare_units(1, a, 2, b, uneven)


def test_a_difference_that_reaches_nothing_is_benign():
    # op 0 fills scratch memory differently; op 1 reads it and computes the same result
    a = _unit_trace([(0, 0, 1, 10, 0), (1, 0, 5, 20, 0), (2, 0, 6, 30, SINK)])
    b = _unit_trace([(0, 0, 1, 11, 0), (1, 0, 7, 20, 0), (2, 0, 6, 30, SINK)])
    d = _judged(a, b)
    assert (d.kind, d.op_index, d.reaches) == (compare.NONDETERMINISTIC_OP, 0, False)


def test_a_difference_reaching_python_state_or_the_end_fails():
    base = [(0, 0, 1, 10, 0), (1, 0, 5, 20, 0), (2, 0, 6, 30, SINK)]
    changed = [(0, 0, 1, 11, 0), (1, 0, 7, 21, 0), (2, 0, 8, 31, SINK)]
    d = _judged(_unit_trace(base), _unit_trace(changed))
    assert d.reaches and "hands different values to Python" in d.reason
    same_ops = [(0, 0, 1, 11, 0), (1, 0, 7, 20, 0), (2, 0, 6, 30, SINK)]
    for field, what in (("state", "parameter or buffer"), ("final", "alive at the end")):
        a = _unit_trace(base, **{field: [["0:0", 1]]})
        b = _unit_trace(same_ops, **{field: [["0:0", 2]]})
        d = _judged(a, b)
        assert d.reaches and what in d.reason, field
    a = _unit_trace(base, sinks=[["numpy", 0, 1, 1]])
    b = _unit_trace(same_ops, sinks=[["numpy", 0, 2, 1]])
    assert "numpy" in _judged(a, b).reason
    # runs stopped at different points: what a difference reaches cannot be followed
    assert _judged(_unit_trace(base), _unit_trace(same_ops), uneven=True).reaches


def _rendered(report):
    import io

    from repro_lint.probe.console import make_console
    from repro_lint.probe.render import render_text

    out = io.StringIO()
    render_text(report, make_console(out))
    return out.getvalue()


def test_text_header_counts_ops_of_each_run_when_they_differ():
    report = {
        "target": {"kind": "script", "path": "train.py", "args": []}, "settings": {"device": "cpu"}, "device": "cpu",
        "status": "diverged", "runs": [
            {"role": "compared", "ops": 120, "processes": 3, "stop_reason": None},
            {"role": "compared", "ops": 118, "processes": 3, "stop_reason": None},
        ],
        "divergence": None, "findings": [], "rng": {"draws": []}, "processes": [],
        "deterministic_audit": {"status": "skipped", "alerts": []}, "cuda_nondeterministic_ops": [],
    }
    assert "120 / 118 ops recorded in 3 processes" in _rendered(report)
    report.update(status="inconclusive", inconclusive_reasons=["run 1: process 7 imported torch but ended without leaving its trace"])
    text = _rendered(report)
    assert "Inconclusive" in text and "process 7 imported torch" in text and "identical" not in text


def test_a_process_missing_where_one_left_no_trace_is_inconclusive_not_a_divergence():
    from repro_lint.probe.launch import RunOutcome, RunPlan
    from repro_lint.probe.report import build_report

    def trace(key, role, ops, children=None):
        return {
            "process": {"key": key, "pid": 1, "root": "main", "parent": "m" if role != "root" else None,
                        "ordinal": 1, "role": role, "index": 0},
            "names": ["aten::rand"], "ops": [list(op) for op in ops], "locations": [], "draws": [], "seeds": [],
            "predicted": [], "segments": [], "spawned": [], "problems": [], "compile_calls": [], "alerts": [],
            "state": [], "final": [], "sinks": [], "stop_reason": None, "seconds": 1.0, "recorded": True,
            "children": {"unfinished": children or []},
        }

    ops = [(0, -1, 1, 2, 0)]
    run1 = RunOutcome(RunPlan(1), {"main": trace("m", "root", ops)}, [trace("w", "worker", ops)])
    lost = [{"key": "x", "pid": 99, "alive": False, "torch": True}]
    run2 = RunOutcome(RunPlan(2), {"main": trace("m", "root", ops, lost)}, [])
    settings = {"device": "cpu", "runs": 2, "max_ops": 10, "timeout": None}
    report = build_report(target={"kind": "script", "path": "t.py", "args": []}, settings=settings,
                          outcomes=[run1, run2], audit=None, audit_failure=None, catalog_ops={})
    assert report["status"] == "inconclusive" and report["exit_code"] == 2
    rows = {r["name"]: r for r in report["processes"]}
    assert rows["main/worker 0"]["status"] == "not recorded"
    assert any("process 99 imported torch" in r for r in report["inconclusive_reasons"])
    from .helpers import validate_report

    validate_report(report)


def test_code_sent_by_value_is_placed_in_the_file_it_was_written_in(tmp_path):
    """cloudpickle (3.1 and later, in joblib's loky workers) names the code of a `__main__`
    function it sends `<dynamic-code>`: its frames are the user's, in the script its globals
    name. Other code without a file (`exec` of a string) stays nobody's."""

    script = tmp_path / "app.py"
    script.write_text("import sys\n\n\ndef job():\n    return sys._getframe()  # here\n")
    source = compile(script.read_text(), "<dynamic-code>", "exec")
    scope = {"__name__": "__main__", "__file__": str(script)}
    exec(source, scope)
    frame = scope["job"]()
    user = UserCode([str(script)])
    assert user.user_frame(frame) is frame
    loc = user.locations[user.location_id(frame)]
    assert loc[:3] == (str(script), 5, "job")
    other = {"__name__": "m", "__file__": str(script)}
    exec(compile("import sys\ndef job():\n    return sys._getframe()\n", "<string>", "exec"), other)
    inner = other["job"]()
    assert inner.f_code.co_filename == "<string>" and user.user_frame(inner) is not inner


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
def test_predictions_check_the_conditions_a_running_op_shows():
    """Conditions the catalog states for the data (dtype, repeated indices, device, which
    function called the op) are checked on the running op, so ordinary calls are not flagged."""
    import inspect

    def train():
        torch.zeros(3).resize_(6)  # FLOAT RESIZE
        q = torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.quint8)
        q.resize_(4)  # QUANTIZED RESIZE
        torch.zeros(4, dtype=torch.long).index_add_(0, torch.tensor([0, 0]), torch.ones(2, dtype=torch.long))  # INT ADD
        torch.zeros(4).index_add_(0, torch.tensor([0, 1]), torch.ones(2))  # UNIQUE ADD
        torch.zeros(4).index_add_(0, torch.tensor([1, 1]), torch.ones(2))  # REPEATED ADD
        x = torch.ones(1, 1, 4, 4, requires_grad=True)
        torch.nn.functional.interpolate(x, size=(2, 2), mode="area").sum().backward()  # AREA
        torch.nn.AdaptiveAvgPool2d((2, 2))(x).sum().backward()  # POOL

    recorder, _, user = record(train, repro_lint.core.catalog.load("nondeterministic_ops"))
    lines, start = inspect.getsourcelines(train)
    line = {text.rsplit("# ", 1)[1].strip(): start + i for i, text in enumerate(lines) if "  # " in text}
    by_line: dict[int, set] = {}
    for (entry, _op, loc, _device, _backward), _count in recorder.predicted.items():
        by_line.setdefault(user.locations[loc][1], set()).add(entry)
    assert line["FLOAT RESIZE"] not in by_line
    assert by_line[line["QUANTIZED RESIZE"]] == {"resize_quantized"}
    assert line["INT ADD"] not in by_line and line["UNIQUE ADD"] not in by_line
    assert by_line[line["REPEATED ADD"]] == {"index_add"}
    assert "interpolate_area" in by_line[line["AREA"]]
    assert by_line[line["POOL"]] == {"adaptive_avg_pool2d_backward"}


def test_a_failing_condition_is_the_probes_error_and_the_program_runs_on():
    """An entry whose evaluation fails (here: a value list missing) must not reach the
    program: the op returns its result and the failure is counted as the probe's."""
    from repro_lint.probe import errors

    broken = {"op": [{"id": "broken", "aten": ["aten::add"], "argument": {"name": "alpha", "position": 2}}]}
    errors.clear()
    out = []
    recorder, _, _ = record(lambda: out.append(torch.ones(2).add(torch.ones(2), alpha=2)), broken)
    assert out[0].tolist() == [3.0, 3.0]
    assert any(op[0] == recorder.names.index("aten::add") for op in recorder.ops)
    failures = errors.recorded()
    assert [(f["where"], f["count"]) for f in failures] == [("prediction", 1)]
    assert "KeyError" in failures[0]["error"]


def test_seed_option_is_set_in_the_programs_arguments():
    from repro_lint.probe.seed_report import seeded_args

    assert seeded_args(["--epochs", "1"], "--seed {seed}", 7) == ["--epochs", "1", "--seed", "7"]
    assert seeded_args(["--seed", "0", "--epochs", "1"], "--seed {seed}", 7) == ["--seed", "7", "--epochs", "1"]
    assert seeded_args(["--seed=0"], "--seed={seed}", 7) == ["--seed=7"]
    assert seeded_args(["-m", "+seed=0", "lr=1"], "seed={seed}", 7) == ["-m", "+seed=7", "lr=1"]  # Hydra's append stays
    assert seeded_args(["lr=1"], "seed={seed}", 7) == ["lr=1", "seed=7"]
