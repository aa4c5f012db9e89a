"""Latency of `repro-lint server`: from an edit to the new diagnostics, on a large project.

    python bench/server_latency.py [--corpus DIR] [--edits 20] [--labs 40] [--json FILE]

The real server runs in a subprocess, driven over stdio by the LSP client in
`lsp_client.py` as an editor drives it. The corpus is `make_corpus.py`'s (the standard
library plus generated training packages: 5,106 files on Python 3.11.7), built in a
temporary folder unless `--corpus` names one; `repro-lint check` runs over it once first,
as a user's earlier run would have, so that the server reads the files' facts from the
cache (the time the server takes to read the project is reported too).

Two documents are open: a training script (an entry point) and the lab's seeding module
it imports. Each edit is sent as `textDocument/didChange`, and its latency is the time until
the server publishes the diagnostics it changes (the debounce included):
- `body`: a draw added to or removed from the script's `main` -> the script's diagnostics;
- `seeder`: `torch.manual_seed(seed)` removed from or put back into `set_seed`, unsaved ->
  the script's diagnostics (the finding appears in the script, not in the edited file);
- `outline`: an import and a function added to or removed from the script, or a function
  added to or removed from the seeding module (other modules' resolved calls can change).
Each kind alternates between two texts, and the expected finding is checked each time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_corpus  # noqa: E402
from lsp_client import LspClient  # noqa: E402

SRC = HERE.parent / "src"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _edits(script: str, seeding: str) -> list:
    """(kind, file, text, check) in the order they are made; `check(codes, messages)` says
    whether the script's diagnostics are the expected ones."""
    draw = script.replace("    args = parse_args(argv)\n", "    args = parse_args(argv)\n    noise = np.random.normal(size=3)\n")
    helper = script.replace("import io\n", "import io\nimport statistics\n") + "\n\ndef summary(xs):\n    return statistics.mean(xs)\n"
    unseeded = seeding.replace("    torch.manual_seed(seed)\n", "")
    extra = seeding + "\n\ndef seed_numpy(seed: int) -> None:\n    np.random.seed(seed)\n"
    # the script's program draws from torch (its models' layers) and seeds it through set_seed only
    unseeded_torch = lambda codes, msgs: any(c == "RPL101" and m.startswith("torch's") for c, m in zip(codes, msgs))  # noqa: E731
    base = lambda codes, msgs: not unseeded_torch(codes, msgs)  # noqa: E731
    cycle = [
        ("body", "script", draw, base), ("body", "script", script, base),
        ("seeder", "seeding", unseeded, unseeded_torch), ("seeder", "seeding", seeding, base),
        ("outline", "script", helper, base), ("outline", "script", script, base),
        ("outline", "seeding", extra, base), ("outline", "seeding", seeding, base),
    ]
    return cycle


class ColdCheck:
    """`--verify`: the script's findings worked out from scratch after each edit (a fresh
    project index over the files' facts, as `repro-lint check` builds it), to compare
    with what the server published."""

    def __init__(self, corpus: Path) -> None:
        sys.path.insert(0, str(SRC))
        from repro_lint.discover.config import Config
        from repro_lint.check.api import project_facts

        self.root = corpus
        self.cfg = Config()
        self.infos = project_facts([corpus], self.cfg, corpus)

    def findings(self, paths: dict, texts: dict) -> set:
        from repro_lint.check.api import check_facts, extract_source
        from repro_lint.check.report import Report
        from repro_lint.check.select import select

        for which, path in paths.items():
            self.infos[str(path.resolve())] = extract_source(path, texts[which].encode(), self.cfg, self.root)
        key = str(paths["script"].resolve())
        found, _ = check_facts(self.infos, {key}, self.cfg, self.root)
        info = self.infos[key]
        selected = select(Report(root=self.root, findings=found, infos={info.path: info}), self.cfg)
        return {(f.code, f.location.line, f.message) for f in selected}


def run(corpus: Path, n_edits: int, debounce_ms: float, verify: bool = False) -> dict:
    lab = corpus / "labs" / "lab_00"
    script_path, seeding_path = lab / "train_00.py", lab / "seeding.py"
    script, seeding = script_path.read_text(), seeding_path.read_text()
    if "set_seed(args.seed)" not in script:  # the benchmark needs a script that seeds through the helper
        script = script.replace("    print('seed', args.seed)\n", "    set_seed(args.seed)\n")
        script_path.write_text(script)
    cold = ColdCheck(corpus) if verify else None
    cmd = [sys.executable, "-m", "repro_lint", "server"]
    out: dict = {"edits": []}
    with LspClient(cmd, cwd=corpus, env=_env()) as c:
        t = time.perf_counter()
        c.initialize(corpus, options={"debounce": debounce_ms})
        s_uri = c.open(script_path, script)
        c.diagnostics(s_uri, version=1, timeout=900)
        out["first_diagnostics_s"] = time.perf_counter() - t
        d_uri = c.open(seeding_path, seeding)
        c.diagnostics(d_uri, version=1, timeout=300)
        texts = {"script": script, "seeding": seeding}
        paths = {"script": script_path, "seeding": seeding_path}
        cycle = _edits(script, seeding)
        for i in range(n_edits):
            kind, which, text, check = cycle[i % len(cycle)]
            mark = len(c.notifications)
            sent = time.perf_counter()
            c.change(paths[which], text)
            texts[which] = text
            # the script's diagnostics after this change (its own version when it is the one edited)
            version = c.version(script_path) if which == "script" else None
            _, at, msg = c.wait_for(
                lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == s_uri
                and (version is None or m["params"].get("version") == version),
                timeout=300, after=mark,
            )
            diags = msg["params"]["diagnostics"]
            ok = check([d["code"] for d in diags], [d["message"] for d in diags])
            entry = {"kind": kind, "file": which, "ms": (at - sent) * 1000, "expected": ok}
            if cold is not None:
                shown = {(d["code"], d["range"]["start"]["line"] + 1, d["message"].split("\nhelp: ")[0]) for d in diags}
                entry["same_as_cold"] = shown == cold.findings(paths, texts)
            out["edits"].append(entry)
            time.sleep(0.2)  # a pause, as between a user's edits
        errors = [m["params"]["message"] for _, m in c.notifications if m.get("method") == "window/logMessage" and m["params"]["type"] == 1]
        out["server_errors"] = errors
        out["load_log"] = [m["params"]["message"] for _, m in c.notifications if m.get("method") == "window/logMessage" and m["params"]["type"] == 3]
    return out


def _summary(values: list) -> dict:
    vals = sorted(values)
    p90 = vals[min(len(vals) - 1, int(round(0.9 * (len(vals) - 1))))]
    return {"n": len(vals), "median_ms": statistics.median(vals), "p90_ms": p90, "max_ms": vals[-1]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, help="an existing corpus (default: built in a temporary folder)")
    p.add_argument("--labs", type=int, default=40)
    p.add_argument("--edits", type=int, default=24)
    p.add_argument("--debounce", type=float, default=50.0, help="the server's debounce in ms (its default: 50)")
    p.add_argument("--json", type=Path)
    p.add_argument("--verify", action="store_true",
                   help="after each edit also work out the script's findings from scratch and compare (slow: seconds per edit)")
    args = p.parse_args(argv)
    tmp = None
    corpus = args.corpus
    if corpus is None:
        tmp = tempfile.TemporaryDirectory()
        corpus = Path(tmp.name) / "corpus"
        make_corpus.build(corpus, args.labs)
    corpus = corpus.resolve()
    try:
        files = sum(1 for _ in corpus.rglob("*.py"))
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "repro_lint", "check", str(corpus), "--exit-zero", "-q", "--output-format", "json"],
                       cwd=corpus, env=_env(), stdout=subprocess.DEVNULL, check=True)
        fill = time.perf_counter() - t
        result = run(corpus, args.edits, args.debounce, args.verify)
    finally:
        if tmp is not None:
            tmp.cleanup()
    lat = [e["ms"] for e in result["edits"]]
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}",
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "files": files,
        "cache_fill_s": fill,
        "debounce_ms": args.debounce,
        "first_diagnostics_s": result["first_diagnostics_s"],
        "all": _summary(lat),
        "by_kind": {k: _summary([e["ms"] for e in result["edits"] if e["kind"] == k]) for k in dict.fromkeys(e["kind"] for e in result["edits"])},
        "all_expected": all(e["expected"] for e in result["edits"]),
        "same_as_cold": all(e["same_as_cold"] for e in result["edits"]) if args.verify else None,
        "server_errors": result["server_errors"],
        "edits": result["edits"],
        "load_log": result["load_log"],
    }
    print(f"{report['date']}, {report['machine']}; {files} files; load average {report['load_average']}")
    print(f"server: first diagnostics {report['first_diagnostics_s']:.1f} s after start (facts from the cache: {report['load_log']})")
    print("| edits | n | median | p90 | max |\n|---|---|---|---|---|")
    for name, s in [("all", report["all"]), *report["by_kind"].items()]:
        print(f"| {name} | {s['n']} | {s['median_ms']:.0f} ms | {s['p90_ms']:.0f} ms | {s['max_ms']:.0f} ms |")
    print(f"diagnostics as expected after every edit: {report['all_expected']}; server errors: {len(report['server_errors'])}")
    if args.verify:
        print(f"the same as a check from scratch after every edit: {report['same_as_cold']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0 if report["all_expected"] and report["same_as_cold"] is not False and not report["server_errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
