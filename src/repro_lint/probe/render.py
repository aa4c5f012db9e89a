"""The probe report for people: what diverged first, then the tables that explain it."""

from __future__ import annotations

import re
from typing import Any, Optional

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from repro_lint.probe.findings import display_path


def render_text(report: dict[str, Any], console: Console) -> None:
    _header(report, console)
    if report["status"] == "error":
        return
    _inconclusive(report.get("inconclusive_reasons", []), report["status"], console)
    _seed_streams(report.get("seed_sensitivity"), console)
    _resume(report, console)
    _divergence(report.get("divergence"), console)
    _benign(report.get("benign_divergences", []), console)
    _processes(report.get("processes", []), console)
    _findings(report["findings"], console)
    _draws(report["rng"]["draws"], console)
    _audit(report["deterministic_audit"], console)
    _predictions(report["cuda_nondeterministic_ops"], console)
    _compile(report.get("compile") or {}, console)
    for note in report.get("notes", []):
        console.print(f"Note: {escape(note)}")
    _probe_errors(report.get("probe_errors") or [], console)
    _environment(report.get("environment"), console)


def _seed_streams(section: Optional[dict[str, Any]], console: Console) -> None:
    if not section:
        return
    console.print()
    how = {"argument": f"with {section.get('option')}", "environment": f"with {section.get('variable')}",
           "intercept": "by moving every seed the program sets"}[section["method"]]
    console.print(f"Seeds varied {escape(how)}: {escape(' / '.join(section['seeds']))}")
    streams = section["streams"]
    if not streams:
        console.print("No random stream ran in both runs.")
        return
    table = _table("Random streams", "Process", "Stream", "Call", "Location", "Draws", "With the other seed")
    for s in sorted(streams, key=lambda s: s["changes"]):
        changed = "changed" if s["changes"] else "[red]same values[/]"
        count = str(s["count"][0]) if s["count"][0] == s["count"][1] else " / ".join(map(str, s["count"]))
        table.add_row(escape(s["process"]), escape(s["kind"]), escape(s["function"]), _where(s["location"]), count, changed)
    console.print(table)


def _resume(report: dict[str, Any], console: Console) -> None:
    saved = report.get("checkpoints")
    resume = report.get("resume")
    if saved is None and resume is None:
        return
    console.print()
    if resume is not None and resume.get("resumed_from"):
        start = resume["resumed_from"]
        console.print(
            f"Resumed run: from {escape(start['path'])} (saved after step {start['step']}), "
            f"{resume['compared_steps']} steps compared with the uninterrupted run."
        )
    if saved:
        table = _table("Checkpoints (run 1)", "Location", "Path", "Step", "Holds", "RNG state")
        for c in saved:
            rng = ", ".join(c["rng_state"]) or "[red]none[/]"
            table.add_row(_where(c["location"]), escape(c["path"] or "(file object)"), str(c["step"]),
                          escape(", ".join(x for x in c["contents"] if not x.startswith("rng:"))), rng)
        console.print(table)
    elif saved is not None:
        console.print("No checkpoint with optimizer or model state was saved.")


def _probe_errors(items: list[dict[str, Any]], console: Console) -> None:
    if not items:
        return
    console.print()
    console.print("[bold]Errors of the probe itself[/] (your program ran on as it would without the probe):")
    for e in items:
        console.print(f"  run {e['run']}, {escape(e['process'])}, {escape(e['where'])}: {escape(e['error'])} ({e['count']} times)")


def _where(location: Optional[dict[str, Any]]) -> str:
    if not location:
        return "(no user code)"
    return escape(f"{location['path']}:{location['line']}:{location['column']}")


def _header(report: dict[str, Any], console: Console) -> None:
    target = report["target"]
    if target.get("path"):
        name = display_path(target["path"])
    else:
        name = target["module"] + (f":{target['function']}" if target.get("function") else "")
    runs = [r for r in report.get("runs", []) if r["role"] in ("compared", "seed-varied", "resumed")]
    stops = {r["stop_reason"] for r in runs if r["stop_reason"]}
    facts = [f"{len(runs)} runs on {report.get('device') or report['settings']['device']}"] if runs else []
    if runs:
        counts = [r["ops"] for r in runs]
        ops = f"{counts[0]} ops recorded per run" if len(set(counts)) == 1 else f"{' / '.join(map(str, counts))} ops recorded"
        processes = max(r.get("processes", 1) for r in runs)
        if processes > 1:
            ops += f" in {processes} processes"
        facts.append(ops + (f" (stopped: {', '.join(sorted(stops))})" if stops else ""))
    console.print(f"[bold]repro-lint probe[/] {escape(name)}" + ("  ·  " + "  ·  ".join(facts) if facts else ""))
    benign = report.get("benign_divergences") or []
    verdict = {
        "identical": "[green]Runs are identical[/] (bit for bit, at every recorded op)."
        if not benign else "[green]Runs agree in every result[/]; they differ only where nothing reaches a result (below).",
        "diverged": "[bold red]Runs diverge.[/]",
        "inconclusive": "[bold yellow]Inconclusive:[/] the probe could not record everything the program ran.",
        "error": "[bold red]The probe could not compare runs.[/]",
        "seed-ignored": "[bold red]Some random streams ignore the seed:[/] they drew the same values with another seed.",
        "seed-followed": "[green]Every random stream changed with the seed.[/]",
        "incomplete-checkpoints": "[bold red]Runs are identical, but checkpoints lack RNG state:[/] a resumed run "
        "would draw other random numbers.",
    }[report["status"]]
    console.print(verdict)


def _inconclusive(reasons: list[str], status: str, console: Console) -> None:
    if reasons and status != "inconclusive":
        console.print("Not recorded:")
    for reason in reasons:
        console.print(f"  {escape(reason)}")


def _benign(items: list[dict[str, Any]], console: Console) -> None:
    if not items:
        return
    console.print()
    console.print("[bold]Benign differences[/] (values that differ but reach no result):")
    for item in items:
        where = _where(item["location"])
        console.print(f"  {escape(item['op'] or '')} at {where} in {escape(item['process'])}: {escape(item['reason'])}")


def _processes(rows: list[dict[str, Any]], console: Console) -> None:
    if len(rows) < 2:
        return
    table = _table("Processes compared", "Process", "Ops per run", "Result")
    for row in rows:
        ops = " / ".join("-" if n is None else str(n) for n in row["ops"])
        result = row["status"] + (f": {row['reason']}" if row.get("reason") and row["status"] != "identical" else "")
        table.add_row(escape(row["name"]), ops, escape(result))
    console.print()
    console.print(table)


def _compile(info: dict[str, Any], console: Console) -> None:
    if info.get("note"):
        console.print()
        places = ", ".join(_where(c["location"]) for c in info.get("calls", []))
        console.print(f"torch.compile at {places}: {escape(info['note'])}")


def _divergence(d: Optional[dict[str, Any]], console: Console) -> None:
    if not d:
        return
    console.print()
    first, second = d["runs"]
    where = "" if d.get("process", "main") == "main" else f" in {escape(d['process'])}"
    console.print(f"[bold]First divergence[/]{where}: op #{d['op_index'] + 1} of {d['compared_ops']}, runs {first} and {second}")
    loc = d["location"]
    function = f" in {escape(loc['function'])}" if loc else ""
    console.print(f"  {escape(d['op'] or '(end of run)')} at {_where(loc)}{function}")
    if loc and loc["source"]:
        console.print(f"  [dim]{loc['line']:>5} |[/] {escape(loc['source'])}")
    fp = d["fingerprints"]
    if d["inputs_identical"]:
        console.print(f"  inputs identical ({fp['inputs'][0]}); outputs {fp['outputs'][0]} vs {fp['outputs'][1]}")
    else:
        console.print(f"  inputs {fp['inputs'][0]} vs {fp['inputs'][1]}")
    console.print(f"  {escape(d['explanation'])}")
    for judged in d.get("seeding", []):
        console.print(f"  {escape(_seeding_text(judged))}")
    console.print(f"  {d['later_divergent_ops']} later ops diverge; it reaches a result: {escape(d.get('reaches') or '')}.")


def _seeding_text(judged: dict[str, Any]) -> str:
    """Which seeding calls the verdict was judged on."""
    def calls(items):
        return ", ".join(f"{c['function']} at {_plain_where(c['location'])}" + ("" if c["fixed"] else " (from entropy)") for c in items)

    source = judged["source"]
    if judged["before"]:
        text = f"Seeding of {source} judged: {calls(judged['before'])} ran before this op"
    else:
        text = f"Seeding of {source} judged: no call seeded it before this op"
    if judged["after"]:
        text += f"; {calls(judged['after'])} ran only after it"
    if judged.get("elsewhere"):
        places = ", ".join(f"{c['function']} at {_plain_where(c['location'])} in {c['process']}" for c in judged["elsewhere"])
        text += f"; it was seeded only in other processes: {places}"
    return text + "."


def _plain_where(location: Optional[dict[str, Any]]) -> str:
    return f"{location['path']}:{location['line']}" if location else "(no user code)"


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _findings(findings: list[dict[str, Any]], console: Console) -> None:
    if not findings:
        return
    table = _table("Findings", "Code", "Location", "Summary")
    for f in findings:
        # The first clause; the sections below give the details.
        summary = re.split(r"; |: ", f["message"], maxsplit=1)[0]
        table.add_row(f["code"], escape(f"{f['path']}:{f['start']['line']}:{f['start']['column']}"), escape(summary))
    console.print()
    console.print(table)


def _draws(draws: list[dict[str, Any]], console: Console) -> None:
    console.print()
    if not draws:
        console.print("No draws from global random number generators.")
        return
    # One row per call and line; the processes that made it in one cell (DataLoader workers
    # and ranks repeat the same draws).
    rows: dict[tuple, dict[str, Any]] = {}
    for d in draws:
        loc = d["location"]
        key = (d["source"], d["function"], d.get("kind"), d.get("during_import"), d["seeded"],
               loc and (loc["path"], loc["line"], loc["column"]))
        row = rows.setdefault(key, {"draw": d, "processes": [], "count": 0})
        row["count"] += d["count"]
        process = d.get("process") or "main"
        if process not in row["processes"]:
            row["processes"].append(process)
    table = _table(
        "Draws from global random number generators (run 1)", "Process", "Source", "Call", "Location", "Seeded before",
        "Count",
    )
    for row in rows.values():
        d = row["draw"]
        seeded = "yes" if d["seeded"] else "[red]no[/]"
        call = d["function"] + ("() without a seed: from OS entropy" if d.get("kind") == "entropy-generator" else "")
        where = _where(d["location"])
        if d.get("during_import"):
            where += escape(f" (while {d['during_import']} was imported)")
        table.add_row(escape(_processes_cell(row["processes"])), d["source"], escape(call), where, seeded, str(row["count"]))
    console.print(table)


def _processes_cell(names: list[str]) -> str:
    """`main/worker 0-3` for a run of siblings, else the names."""
    import re as _re

    groups: dict[str, list[int]] = {}
    plain = []
    for name in names:
        match = _re.fullmatch(r"(.*?)(\d+)", name)
        if match:
            groups.setdefault(match.group(1), []).append(int(match.group(2)))
        else:
            plain.append(name)
    for prefix, numbers in groups.items():
        numbers.sort()
        if len(numbers) > 2 and numbers == list(range(numbers[0], numbers[-1] + 1)):
            plain.append(f"{prefix}{numbers[0]}-{numbers[-1]}")
        else:
            plain.extend(f"{prefix}{n}" for n in numbers)
    return ", ".join(plain)


def _audit(audit: dict[str, Any], console: Console) -> None:
    console.print()
    if audit["status"] == "skipped":
        console.print("Deterministic-algorithms run: skipped.")
        return
    if audit["status"] == "failed":
        console.print(f"Deterministic-algorithms run failed: {escape(audit['error'] or '')}")
        return
    if not audit["alerts"]:
        console.print(f"Deterministic-algorithms run on {audit.get('device')}: no alerts.")
        return
    table = _table(f"Alerts with deterministic algorithms on ({audit.get('device')})", "Op", "Location", "Count", "Message")
    for a in audit["alerts"]:
        table.add_row(escape(a["op"] or ""), _where(a["location"]), str(a["count"]), escape(a["message"]))
    console.print(table)


def _predictions(predicted: list[dict[str, Any]], console: Console) -> None:
    console.print()
    if not predicted:
        console.print("No op that the catalog lists as nondeterministic on CUDA ran.")
        return
    table = _table(
        "Ops nondeterministic on CUDA (from the catalog)",
        *("Entry", "Location", "Ops", "Count", "With deterministic algorithms", "Alternative"),
    )
    for p in predicted:
        ops = ", ".join(p["ops"]) + (" (backward)" if p["backward"] else "")
        table.add_row(
            escape(p["id"]), _where(p["location"]), escape(ops), str(p["count"]),
            escape(p["with_deterministic_algorithms"]), escape(p["alternative"]),
        )
    console.print(table)


def _environment(env: Optional[dict[str, Any]], console: Console) -> None:
    if not env:
        return
    torch = env.get("torch") or {}
    gpus = ", ".join(g["name"] for g in torch.get("gpus", [])) or "no GPU"
    console.print()
    console.print(
        f"Environment: Python {env['python']['version']}, torch {torch.get('version', '?')} "
        f"(CUDA {torch.get('cuda') or 'none'}), {gpus}, {len(env.get('packages', {}))} packages. "
        "The JSON report holds the full snapshot."
    )
