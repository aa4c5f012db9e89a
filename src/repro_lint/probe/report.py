"""Turns the runs' traces into the probe report (a JSON-ready dict, documented in
docs/probe.md and by `report.schema.json`) and into findings."""

from __future__ import annotations

import linecache
from typing import Any, Optional

import repro_lint
from repro_lint.probe import compare, resume_report, seed_report
from repro_lint.probe.findings import display_path, findings
from repro_lint.probe.launch import RunFailed, RunOutcome
from repro_lint.probe.units import Unit, build_units

SCHEMA = "repro-lint-probe/1"

_EXPLANATIONS = {
    compare.UNSEEDED_DRAW: "{op} drew different values from the global torch generator: {why}",
    compare.NONDETERMINISTIC_OP: "{op} returned different results for identical inputs: its kernel is "
    "nondeterministic, or it read memory that was never written.",
    compare.EXTERNAL_INPUT: "the inputs of {op} differ although every earlier op matched: the values reached "
    "torch from outside it (Python or numpy code).",
    compare.CONTROL_FLOW: "the runs executed different ops from here on ({op} vs {other}): a decision in Python "
    "code (a random draw, the iteration order of a set, the clock) took another path.",
}
_COLLECTIVE = (
    "the results of the collective {op} differ although every earlier op of this process matched: "
    "another process of the group contributed different values."
)
# Causes first (a draw, a kernel), then where values arrived from elsewhere, then paths.
_KIND_ORDER = {compare.UNSEEDED_DRAW: 0, compare.NONDETERMINISTIC_OP: 0, compare.EXTERNAL_INPUT: 1, compare.CONTROL_FLOW: 2}


class _Locations:
    """Resolves a trace's location ids into dicts with a source line and a 1-based column."""

    def __init__(self, data: dict[str, Any]):
        self._table = data.get("locations", [])

    def get(self, loc: int) -> Optional[dict[str, Any]]:
        if loc is None or loc < 0 or loc >= len(self._table):
            return None
        path, line, function, byte_col = self._table[loc]
        text = linecache.getline(path, line)
        column = len(text.encode()[:byte_col].decode(errors="ignore")) + 1 if byte_col >= 0 else 1
        return {"path": display_path(path), "line": line, "column": column, "function": function, "source": text.strip()}


def _hex(value: int) -> str:
    return f"{value:016x}"


def build_report(
    *,
    target: dict[str, Any],
    settings: dict[str, Any],
    outcomes: list[RunOutcome],
    audit: Optional[RunOutcome],
    audit_failure: Optional[RunFailed],
    catalog_ops: dict[str, dict[str, Any]],
    mode: str = "repeat",
    seed_method: Optional[dict[str, Any]] = None,
    check_checkpoints: bool = False,
) -> dict[str, Any]:
    """`mode`: "repeat" (the runs should be identical), "vary-seed" (run 2 had another seed:
    which random streams did not change) or "resume" (run 2 resumed from a checkpoint of run
    1: where it parts ways with it). `check_checkpoints`: --resume-check."""
    first = outcomes[0]
    units = [build_units(o.roots, o.children) for o in outcomes]
    names = {key: None for u in units for key in u}
    reasons = _inconclusive(outcomes, units)
    probe_errors = _probe_errors(outcomes, audit)
    if any(e["where"] == "fingerprint" and e["role"] == "compared" for e in probe_errors):
        reasons.append(
            "the probe failed to fingerprint some ops (its own error, see probe_errors), so runs that look alike "
            "may still differ there"
        )
    if mode == "repeat":
        processes, divergences = _compare_all(outcomes, units, names, reasons)
    else:  # the runs differ on purpose: what is compared is in the mode's own section
        processes, divergences = [], []
    reaching = [d for d in divergences if d.reaches]
    benign = [d for d in divergences if not d.reaches]
    headline = min(reaching, key=_headline_order) if reaching else None
    status = "diverged" if reaching else ("inconclusive" if reasons else "identical")
    traces1 = [*first.roots.values(), *first.children]
    proc_names = _process_names(units[0])
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "tool": {"name": "repro-lint", "version": repro_lint.__version__},
        "target": target,
        "settings": settings,
        "device": first.data.get("device"),
        "status": status,
        "exit_code": {"diverged": 1, "inconclusive": 2, "identical": 0}[status],
        "inconclusive_reasons": reasons,  # with "diverged" too: what else was not recorded
        "runs": [_run_info(o, "compared", u) for o, u in zip(outcomes, units)]
        + ([_run_info(audit, "deterministic-audit", build_units(audit.roots, audit.children))] if audit else []),
        "processes": processes,
        "divergence": _divergence(headline, outcomes, units) if headline else None,
        "benign_divergences": [_benign(d, outcomes, units) for d in benign],
        "rng": {
            "draws": [_draw(d, _Locations(t), proc_names.get(_key(t))) for t in traces1 for d in t.get("draws", [])],
            "seeding_calls": [_seeding(s, _Locations(t), proc_names.get(_key(t))) for t in traces1 for s in t.get("seeds", [])],
        },
        "deterministic_audit": _audit(audit, audit_failure),
        "cuda_nondeterministic_ops": _predictions(traces1, catalog_ops),
        "compile": _compile(traces1),
        "notes": sorted({p for t in traces1 for p in t.get("problems", [])}),
        "probe_errors": probe_errors,
        "environment": first.data.get("environment"),
        "error": None,
    }
    if mode == "vary-seed":
        _seed_section(report, outcomes, units, seed_method or {})
    if mode == "resume":
        _resume_section(report, outcomes, units)
    if check_checkpoints:
        saved = resume_report.checkpoints(traces1, _Locations, proc_names)
        report["checkpoints"] = saved
        if report["status"] == "identical" and any(not c["rng_state"] for c in saved):
            report.update(status="incomplete-checkpoints", exit_code=1)
    report["findings"] = [f.to_dict() for f in findings(report)]
    return report


def _seed_section(report: dict[str, Any], outcomes: list[RunOutcome], units: list, method: dict[str, Any]) -> None:
    found = []
    for outcome, unit in zip(outcomes, units):
        found.append(seed_report.streams(outcome, unit, _process_names(unit), _Locations))
    streams = seed_report.compare_streams(found[0], found[1])
    fixed = [s for s in streams if not s["changes"]]
    report["seed_sensitivity"] = dict(method, streams=streams)
    report["runs"][1]["role"] = "seed-varied"
    if report["status"] != "inconclusive" or fixed:
        status = "seed-ignored" if fixed else "seed-followed"
        report.update(status=status, exit_code=1 if fixed else 0)


def _resume_section(report: dict[str, Any], outcomes: list[RunOutcome], units: list) -> None:
    full, resumed = outcomes[0].roots.get("main"), outcomes[1].roots.get("main")
    report["runs"][1]["role"] = "resumed"
    section: dict[str, Any] = {"resumed_from": None, "compared_steps": 0}
    report["resume"] = section
    if full is None or resumed is None:
        report["inconclusive_reasons"].append("--resume-args compares the main process only; this run has ranks")
        report.update(status="inconclusive", exit_code=2)
        return
    start = resume_report.resumed_from(full, resumed)
    if start is None:
        report["notes"].append(
            "the resumed run loaded no checkpoint that the uninterrupted run saved (torch.save/torch.load of a path), "
            "so the runs were not compared"
        )
        report.update(status="inconclusive", exit_code=2)
        report["inconclusive_reasons"].append("the resumed run did not load a checkpoint of the uninterrupted run")
        return
    d, compared = resume_report.compare_resumed(full, resumed, start)
    section.update(resumed_from={"path": display_path(start["path"]), "step": start["step"]}, compared_steps=compared)
    if compared == 0:
        report["inconclusive_reasons"].append(
            f"the uninterrupted run made no optimizer step after step {start['step']}, where the checkpoint was saved"
        )
        report.update(status="inconclusive", exit_code=2)
        return
    if d is None:
        report.update(status="identical", exit_code=0)
        return
    divergence = _divergence(d, outcomes, units, files=False)  # the resumed run reads run 1's checkpoint by design
    where = display_path(start["path"])
    divergence["explanation"] = (
        f"The run resumed from {where} (saved after step {start['step']}) parts ways with the uninterrupted run: "
        + divergence["explanation"]
    )
    if d.kind in (compare.UNSEEDED_DRAW, compare.EXTERNAL_INPUT, compare.CONTROL_FLOW):
        missing = [c for c in report.get("checkpoints") or resume_report.checkpoints([full], _Locations, {})
                   if c["path"] == start["path"] and not c["rng_state"]]
        if missing:
            divergence["explanation"] += (
                " The checkpoint holds no RNG state, so the resumed run draws from another generator state than the "
                "uninterrupted run did at that step: save torch.get_rng_state() (and numpy's, Python's, CUDA's) with it "
                "and restore them when resuming."
            )
    report.update(status="diverged", exit_code=1, divergence=divergence)


def _probe_errors(outcomes: list[RunOutcome], audit: Optional[RunOutcome]) -> list[dict[str, Any]]:
    """Failures of the probe's own code in the runs' processes (the program ran on)."""
    out = []
    for outcome, role in [*((o, o.plan.role) for o in outcomes), *([(audit, "deterministic-audit")] if audit else [])]:
        names = _process_names(build_units(outcome.roots, outcome.children))
        for trace in [*outcome.roots.values(), *outcome.children]:
            for e in trace.get("probe_errors", []):
                out.append({**e, "run": outcome.plan.index, "role": role, "process": names.get(_key(trace)) or "main"})
    return out


def _headline_order(d: compare.Divergence) -> tuple:
    """Causes first (a draw, a kernel), then values arriving from elsewhere, then paths.
    Values arrive from the processes a process started (workers, jobs) more often than the
    other way round, so among those the deeper process comes first."""
    depth = d.unit.count("/")
    return (_KIND_ORDER[d.kind], -depth if d.kind == compare.EXTERNAL_INPUT else depth, d.unit)


def _key(trace: dict) -> Optional[str]:
    return (trace.get("process") or {}).get("key")


def _process_names(units: dict[str, Unit]) -> dict[str, str]:
    """Process key -> name, for the processes of one run."""
    out = {}
    for unit in units.values():
        if not unit.job:
            out.setdefault(_key(unit.trace), unit.key)
    return out


def _compare_all(
    outcomes: list[RunOutcome], units: list[dict[str, Unit]], names: dict, reasons: list[str]
) -> tuple[list, list]:
    """Each process (and job) of run 1 against the same one of every other run."""
    unrecorded = {int(r.split(":")[0].split()[1]) for r in reasons if r.startswith("run ")}
    ref_run = outcomes[0].plan.index
    uneven_ref = _uneven(outcomes[0])
    rows, found = [], []
    for key in sorted(names, key=_natural):
        present = [key in u for u in units]
        ops = [len(u[key].ops) if key in u else None for u in units]
        row: dict[str, Any] = {"name": key, "ops": ops, "status": "identical"}
        quiet = not any(ops) and all(not u[key].trace.get("recorded", True) for u in units if key in u)
        if not quiet or "/" not in key:  # helpers that never imported torch (resource trackers) are left out
            rows.append(row)
        if not all(present):
            missing = [o.plan.index for o, p in zip(outcomes, present) if not p]
            if any(n for n in ops if n) and set(missing) & unrecorded:
                # absent where a process left no trace: not evidence of another path
                row["status"] = "not recorded"
                row["reason"] = f"missing from run {', '.join(map(str, missing))}, which has processes the probe could not record"
            elif any(n for n in ops if n):
                only = [o.plan.index for o, p in zip(outcomes, present) if p]
                row["status"] = "diverged"
                row["reason"] = f"ran in run{'s' if len(only) > 1 else ''} {', '.join(map(str, only))} only"
                found.append(_missing_unit(key, outcomes, units, present))
            continue
        best: Optional[compare.Divergence] = None
        for o, u in zip(outcomes[1:], units[1:]):
            d = compare.compare_units(ref_run, units[0][key], o.plan.index, u[key], uneven_ref or _uneven(o))
            if d is not None and (best is None or (d.reaches, -d.op_index) > (best.reaches, -best.op_index)):
                best = d
        if best is not None:
            row["status"] = "diverged" if best.reaches else "benign"
            row["reason"] = best.reason
            found.append(best)
    return rows, found


def _natural(name: str) -> list:
    """`main/worker 2` before `main/worker 10`."""
    import re

    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _uneven(outcome: RunOutcome) -> bool:
    return any(d.get("stop_reason") in ("timeout", "peer-stopped") for d in outcome.roots.values())


def _missing_unit(key, outcomes, units, present) -> compare.Divergence:
    i = present.index(True)
    j = present.index(False)
    unit = units[i][key]
    row = unit.ops[0]
    return compare.Divergence(
        kind=compare.CONTROL_FLOW, op_index=0, runs=(outcomes[i].plan.index, outcomes[j].plan.index),
        ops=(unit.trace["names"][row[0]], None), locations=(row[1], -1), inputs=(row[2], 0), outputs=(row[3], 0),
        later=0, compared=0, unit=key, reaches=True,
        reason=f"this process ran in run {outcomes[i].plan.index} but not in run {outcomes[j].plan.index}",
        lengths=(len(unit.ops), 0),
    )


def _inconclusive(outcomes: list[RunOutcome], units: list[dict[str, Unit]]) -> list[str]:
    """Why a verdict of "identical" cannot be given: processes that were not recorded, or
    nothing recorded at all."""
    reasons: list[str] = []
    for o, u in zip(outcomes, units):
        run = o.plan.index
        traces = [*o.roots.values(), *o.children]
        recorded_pids = {(t.get("process") or {}).get("pid") for t in traces}
        for data in o.roots.values():
            for child in (data.get("children") or {}).get("unfinished", []):
                recorded_pids.add(child["pid"])
                if child.get("torch"):
                    state = "was still running" if child.get("alive") else "ended"
                    why = f": {child['error']}" if child.get("error") else " (killed, or still running when the program ended)"
                    reasons.append(f"run {run}: process {child['pid']} imported torch but {state} without leaving its trace{why}")
        for t in traces:
            for spawned in t.get("spawned", []):
                if spawned.get("python") and spawned["pid"] not in recorded_pids:
                    command = " ".join(spawned.get("argv", [])[:3])
                    reasons.append(
                        f"run {run}: the Python process {spawned['pid']} ({command}) was started without the probe's "
                        "environment (python -I/-E, or a cleared environment) and was not recorded"
                    )
        if not any(unit.ops for unit in u.values()):
            reasons.append(f"run {run}: no torch op was recorded in any process, so there is nothing to compare")
    return list(dict.fromkeys(reasons))


def error_report(*, target: dict[str, Any], settings: dict[str, Any], failure: RunFailed) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "tool": {"name": "repro-lint", "version": repro_lint.__version__},
        "target": target,
        "settings": settings,
        "status": "error",
        "exit_code": 2,
        "error": {
            "kind": failure.kind, "message": failure.message, "run": failure.run, "traceback": failure.traceback,
            "stderr": failure.stderr,
        },
        "findings": [],
    }


def _run_info(o: RunOutcome, role: str, units: dict[str, Unit]) -> dict[str, Any]:
    stops = [d.get("stop_reason") for d in o.roots.values() if d.get("stop_reason")]
    return {
        "run": o.plan.index,
        "role": role,
        "ops": sum(len(u.ops) for u in units.values()),
        "processes": len(o.roots) + len(o.children),
        "stop_reason": stops[0] if stops else None,
        "seconds": max((d.get("seconds") or 0) for d in o.roots.values()),
        "pythonhashseed": o.hash_seed or None,
        "torch_seed": o.plan.torch_seed,
    }


def _divergence(
    d: compare.Divergence, outcomes: list[RunOutcome], units: list[dict[str, Unit]], files: bool = True
) -> dict[str, Any]:
    by_run = {o.plan.index: (o, u) for o, u in zip(outcomes, units)}
    (a, units_a), (b, units_b) = by_run[d.runs[0]], by_run[d.runs[1]]
    unit_a = units_a.get(d.unit) or units_b[d.unit]
    unit_b = units_b.get(d.unit)
    where_a = _Locations(unit_a.trace)
    where_b = _Locations(unit_b.trace) if unit_b else where_a
    location = where_a.get(d.locations[0])
    process_index = unit_a.index[d.op_index] if d.op_index < len(unit_a.index) else len(unit_a.trace.get("ops", []))
    suspects: dict[tuple, dict[str, Any]] = {}
    if d.kind in (compare.EXTERNAL_INPUT, compare.CONTROL_FLOW):
        # Values from Python or numpy reach torch unseen; their unseeded draws are the usual cause.
        for unit, where in ((unit_a, where_a), (unit_b, where_b)):
            if unit is None:
                continue
            for draw in unit.trace.get("draws", []):
                if draw["source"] in ("python", "numpy") and not draw["seeded"] and draw["first_op"] <= process_index:
                    suspect = _draw(draw, where, None)
                    suspects.setdefault((suspect["function"], _where(suspect["location"])), suspect)
    collective = d.kind == compare.EXTERNAL_INPUT and d.inputs[0] == d.inputs[1]
    template = _COLLECTIVE if collective else _EXPLANATIONS[d.kind]
    text = template.format(op=d.ops[0], other=d.ops[1], why=_draw_cause(unit_a.trace, d))
    if suspects:
        text += " Unseeded draws before it: " + ", ".join(f"{fn} at {where}" for fn, where in suspects) + "."
    left = _left_behind(a, b, d.kind) if files and d.kind in (compare.EXTERNAL_INPUT, compare.CONTROL_FLOW) else []
    if left:
        first_left = left[0]
        text += (
            f" Run {a.plan.index} created {display_path(first_left['path'])} (at {_where(first_left['location'])}), which was "
            f"there when run {b.plan.index} started, and run {b.plan.index} {first_left['then']}: what the program does depends "
            "on files an earlier run leaves behind (remove them before each run, or write them per run)."
        )
    if d.kind in (compare.EXTERNAL_INPUT, compare.CONTROL_FLOW) and a.hash_seed != b.hash_seed and not (collective or suspects or left):
        text += (
            f" The runs had PYTHONHASHSEED {a.hash_seed} and {b.hash_seed}: code that iterates over a set (or relies on "
            "hash values) of strings sees a different order in each. No unseeded draw and no file left by the earlier "
            "run was seen; probe again with PYTHONHASHSEED=0 set to tell hash order from other inputs (the clock, "
            "the network, files changed meanwhile)."
        )
    sources = ["torch"] if d.kind == compare.UNSEEDED_DRAW else sorted({s["source"] for s in suspects.values()})
    seeding = _seeding_judged(unit_a.trace, where_a, sources, process_index)
    others = [t for t in [*a.roots.values(), *a.children] if t is not unit_a.trace]
    names_a = _process_names(units_a)
    for judged in seeding:
        if judged["before"]:
            continue
        # A seed set in another process (a Hydra launcher's module-level seed, the main
        # process of spawned workers) does not seed this one.
        judged["elsewhere"] = [
            _seeding(s, _Locations(t), names_a.get(_key(t)) or "main")
            for t in others for s in t.get("seeds", [])
            if judged["source"] in s["source"].split(",") and s["seeded"]
        ]
        if judged["elsewhere"]:
            places = ", ".join(f"{c['function']} at {_where(c['location'])} in {c['process']}" for c in judged["elsewhere"])
            text += (
                f" The {judged['source']} generator was seeded only in other processes ({places}), not in {d.unit}: "
                "every process starts its own generators, so seed in the process that draws (e.g. inside the Hydra "
                "task function, or in a worker_init_fn)."
            )
    return {
        "process": d.unit,
        "kind": d.kind,
        "op_index": d.op_index,
        "runs": list(d.runs),
        "op": d.ops[0],
        "op_in_other_run": d.ops[1],
        "location": location,
        "location_in_other_run": where_b.get(d.locations[1]),
        "inputs_identical": d.inputs[0] == d.inputs[1] and d.ops[0] == d.ops[1],
        "fingerprints": {"inputs": [_hex(d.inputs[0]), _hex(d.inputs[1])], "outputs": [_hex(d.outputs[0]), _hex(d.outputs[1])]},
        "later_divergent_ops": d.later,
        "compared_ops": d.compared,
        "ops_per_run": list(d.lengths),
        "reaches": d.reason,
        "explanation": text,
        "suspects": list(suspects.values()),
        "seeding": seeding,
        "left_behind": left,
    }


def _left_behind(a: RunOutcome, b: RunOutcome, kind: str) -> list[dict[str, Any]]:
    """Files the earlier run created that the later run then found (read, or wrote again
    where it had been created): the later run's path can follow from them."""
    def opened(outcome):
        found = {}
        for trace in [*outcome.roots.values(), *outcome.children]:
            where = _Locations(trace)
            for f in trace.get("files", []):
                found.setdefault((f["path"], f["kind"]), dict(f, location=where.get(f["location"])))
        return found

    first, second = (a, b) if a.plan.index < b.plan.index else (b, a)
    created = {path: f for (path, kind), f in opened(first).items() if kind == "write" and not f["existed"]}
    later = opened(second)
    out = []
    for path, f in created.items():
        read = later.get((path, "read"))
        rewritten = later.get((path, "write"))
        if read is not None:
            then = f"read it (at {_where(read['location'])})"
        elif rewritten is not None and rewritten["existed"]:
            then = "found it already there"
        else:
            continue
        out.append({"path": display_path(path), "location": f["location"], "then": then})
    return out


def _benign(d: compare.Divergence, outcomes, units) -> dict[str, Any]:
    full = _divergence(d, outcomes, units)
    return {key: full[key] for key in ("process", "kind", "op_index", "op", "location", "later_divergent_ops")} | {
        "reason": d.reason
    }


def _seeding_judged(trace: dict, where: _Locations, sources: list[str], op_index: int) -> list[dict[str, Any]]:
    """For each generator the divergence points at: the seeding calls that ran before the
    op and those that ran only after it (what the verdict "not seeded" was judged on)."""
    out = []
    for source in sources:
        calls = [s for s in trace.get("seeds", []) if source in s["source"].split(",")]
        before = [s for s in calls if s["first_op"] <= op_index]
        after = [s for s in calls if s["first_op"] > op_index]
        out.append({
            "source": source,
            "before": [_seeding(s, where, None) for s in before],
            "after": [_seeding(s, where, None) for s in after],
        })
    return out


def _draw_cause(data: dict[str, Any], d: compare.Divergence) -> str:
    for draw in data.get("draws", []):
        if draw["location"] == d.locations[0] and draw["function"] == d.ops[0] and not draw["seeded"]:
            return "the generator was not seeded before this draw."
    return "the generator's state differed although it had been seeded (a seed that changes between runs, or a reseed from entropy)."


def _where(location: Optional[dict[str, Any]]) -> str:
    return f"{location['path']}:{location['line']}" if location else "(no user code on the stack)"


def _draw(draw: dict[str, Any], where: _Locations, process: Optional[str]) -> dict[str, Any]:
    out = {
        "source": draw["source"],
        "function": draw["function"],
        "location": where.get(draw["location"]),
        "seeded": draw["seeded"],
        "count": draw["count"],
        "first_op_index": draw["first_op"],
        "kind": draw.get("kind", "draw"),
        "during_import": draw.get("importing"),
    }
    if process is not None:
        out["process"] = process
    return out


def _seeding(call: dict[str, Any], where: _Locations, process: Optional[str]) -> dict[str, Any]:
    out = {
        "sources": call["source"].split(","),
        "function": call["function"],
        "location": where.get(call["location"]),
        "fixed": call["seeded"],  # False: reseeded from OS entropy
        "count": call["count"],
    }
    if process is not None:
        out["process"] = process
    return out


def _audit(audit: Optional[RunOutcome], failure: Optional[RunFailed]) -> dict[str, Any]:
    if audit is None and failure is None:
        return {"status": "skipped", "alerts": [], "error": None}
    if audit is None:
        return {"status": "failed", "alerts": [], "error": failure.message if failure else None}
    merged: dict[tuple, dict[str, Any]] = {}
    for trace in [*audit.roots.values(), *audit.children]:
        where = _Locations(trace)
        for a in trace.get("alerts", []):
            location = where.get(a["location"])
            key = (a["message"], a["op"], _where(location))
            item = merged.setdefault(key, {"message": a["message"], "op": a["op"], "location": location, "count": 0})
            item["count"] += a["count"]
    out = {"status": "ok", "device": audit.data.get("device"), "alerts": list(merged.values()), "error": None}
    if "compiled_graphs" in audit.data:
        out["compiled_graphs"] = audit.data["compiled_graphs"]
    return out


def _predictions(traces: list[dict[str, Any]], catalog_ops: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    merged: dict[tuple, dict[str, Any]] = {}
    for data in traces:
        where = _Locations(data)
        for hit in data.get("predicted", []):
            entry = catalog_ops.get(hit["id"], {})
            location = where.get(hit["location"])
            key = (hit["id"], _where(location), location["column"] if location else 0)
            item = merged.get(key)
            if item is None:
                merged[key] = item = {
                    "id": hit["id"],
                    "summary": entry.get("summary", ""),
                    "ops": [],
                    "location": location,
                    "count": 0,
                    "backward": False,
                    "device": hit["device"],
                    "condition": entry.get("condition", ""),
                    "with_deterministic_algorithms": entry.get("with-deterministic-algorithms", ""),
                    "alternative": entry.get("alternative", ""),
                }
            if hit["op"] not in item["ops"]:
                item["ops"].append(hit["op"])
            item["count"] += hit["count"]
            item["backward"] = item["backward"] or hit["backward"]

    def order(p: dict[str, Any]) -> tuple:
        loc = p["location"]
        return (loc["path"], loc["line"], loc["column"], p["id"]) if loc else ("", 0, 0, p["id"])

    return sorted(merged.values(), key=order)


def _compile(traces: list[dict[str, Any]]) -> dict[str, Any]:
    calls = []
    for trace in traces:
        where = _Locations(trace)
        for loc, count in trace.get("compile_calls", []):
            calls.append({"location": where.get(loc), "count": count})
    note = (
        "The recorded runs execute torch.compile'd code eagerly (a dispatch mode turns compilation off), so their "
        "ops are the eager ones; the deterministic-algorithms run compiles it, so alerts from compiled kernels are seen."
        if calls else None
    )
    return {"calls": calls, "note": note}
