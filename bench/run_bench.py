"""Time repro-lint against plain `ast.parse` on one corpus, in one run.

    python bench/run_bench.py [--corpus DIR] [--repeat 3] [--labs 40]

Without `--corpus` the corpus is built in a temporary folder by `make_corpus.py` (the
standard library plus generated training packages) and removed afterwards.

Every figure comes from a fresh process started the way a user starts the tool
(`python -m repro_lint check ...`), timed from start to exit, so interpreter start-up and
imports are included in repro-lint's figures. The `ast.parse` baseline times only its
read-and-parse loop, in a fresh process too. Each measurement is repeated and the
minimum kept, because a shared machine only ever adds noise. Peak memory is the maximum
resident set size of the process (and of any worker it started), from `wait4`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(SRC))

TARGETS = {
    "cold_vs_parse": 2.0,  # cold <= 2.0 x ast.parse
    "warm_vs_cold": 0.15,  # warm <= 0.15 x cold
    "jobs2_speedup": 1.6,  # jobs 1 / jobs 2 >= 1.6 (on 2 cores)
    "peak_mb": 300.0,  # max RSS for 5,000 files
}

# Reads the file list on stdin; prints the seconds of the read + parse loop alone.
PARSE_ONLY = r"""
import ast, sys, time
paths = sys.stdin.read().splitlines()
t = time.perf_counter()
for p in paths:
    with open(p, "rb") as fh:
        data = fh.read()
    try:
        ast.parse(data, filename=p)
    except (SyntaxError, ValueError):
        pass
print(time.perf_counter() - t)
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def timed(cmd: list[str], cwd: Path, stdin: str | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, stdout) of one process run to completion."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=_env(), stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    out, err = proc.communicate(stdin)
    # communicate() reaped the child already; its rusage (max RSS of it and of every
    # descendant it waited for) is still available through RUSAGE_CHILDREN deltas only,
    # so the child is re-run under wait4 when memory matters -- see `measure`.
    wall = time.perf_counter() - t
    if proc.returncode not in (0,):
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{err[-2000:]}")
    return wall, 0.0, out


def measure(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one run, the child reaped with wait4 for its rusage."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{err.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def lint_cmd(corpus: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "repro_lint", "check", str(corpus), "--format", "concise", "--exit-zero", "-q", *extra]


def corpus_files(corpus: Path) -> list[Path]:
    """The files repro-lint checks, found by its own discovery (so both sides see the same set)."""
    from repro_lint.config import find_config, load_config
    from repro_lint.engine import collect_files, known_codes
    from repro_lint.matchers import get_matchers

    cfg = load_config(find_config(corpus), known_codes(), get_matchers().sources)
    _, targets = collect_files([corpus], cfg, corpus.resolve())
    return targets


def count_lines(files: list[Path]) -> int:
    total = 0
    for f in files:
        with open(f, "rb") as fh:
            total += fh.read().count(b"\n")
    return total


def best(label: str, repeat: int, fn) -> tuple[float, float]:
    runs = [fn() for _ in range(repeat)]
    secs = min(r[0] for r in runs)
    peak = max(r[1] for r in runs)
    print(f"  {label:<28} " + "  ".join(f"{r[0]:7.2f}s" for r in runs) + f"   -> {secs:.2f}s" + (f", {peak:.0f} MB" if peak else ""), flush=True)
    return secs, peak


def run(corpus: Path, repeat: int) -> dict:
    cache_dir = corpus / ".repro_lint_cache"
    files = corpus_files(corpus)
    lines = count_lines(files)
    print(f"corpus {corpus}: {len(files)} files, {lines} lines; each figure is the minimum of {repeat} runs", flush=True)

    def parse_only():
        wall, _, out = timed([sys.executable, "-c", PARSE_ONLY], corpus, "\n".join(map(str, files)))
        return float(out.strip()), 0.0

    def cold(jobs: int):
        def go():
            return measure(lint_cmd(corpus, "--no-cache", "--jobs", str(jobs)), corpus)
        return go

    def warm():
        return measure(lint_cmd(corpus, "--jobs", "1"), corpus)

    parse_s, _ = best("ast.parse (read + parse)", repeat, parse_only)
    cold1_s, cold1_mb = best("repro-lint cold --jobs 1", repeat, cold(1))
    cold2_s, cold2_mb = best("repro-lint cold --jobs 2", repeat, cold(2))
    shutil.rmtree(cache_dir, ignore_errors=True)
    fill_s, _ = measure(lint_cmd(corpus, "--jobs", "1"), corpus)
    print(f"  {'(cache fill, --jobs 1)':<28} {fill_s:7.2f}s", flush=True)
    warm_s, warm_mb = best("repro-lint warm --jobs 1", repeat, warm)
    shutil.rmtree(cache_dir, ignore_errors=True)

    # the files the tool reports on must be the files the baseline parsed
    out = subprocess.run(
        [sys.executable, "-m", "repro_lint", "check", str(corpus), "--no-cache", "--format", "json", "--exit-zero"],
        cwd=corpus, env=_env(), capture_output=True, text=True,
    )
    checked = json.loads(out.stdout).get("files_checked") if out.returncode == 0 else None

    result = {
        "files": len(files), "lines": lines, "files_checked": checked,
        "parse_s": parse_s, "cold1_s": cold1_s, "cold2_s": cold2_s, "warm_s": warm_s,
        "peak_mb": cold1_mb, "peak_mb_jobs2": cold2_mb, "peak_mb_warm": warm_mb,
        "cold_vs_parse": cold1_s / parse_s, "warm_vs_cold": warm_s / cold1_s, "jobs2_speedup": cold1_s / cold2_s,
    }
    return result


def report(r: dict) -> str:
    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    rows = [
        ("files", f"{r['files']}" + ("" if r["files_checked"] in (None, r["files"]) else f" (repro-lint checked {r['files_checked']})"), ""),
        ("lines", f"{r['lines']:,}", ""),
        ("ast.parse only (read + parse)", f"{r['parse_s']:.2f} s", ""),
        ("repro-lint cold, --jobs 1", f"{r['cold1_s']:.2f} s", f"{r['cold_vs_parse']:.2f}x ast.parse (target <= {TARGETS['cold_vs_parse']}x): {verdict(r['cold_vs_parse'] <= TARGETS['cold_vs_parse'])}"),
        ("repro-lint warm, --jobs 1", f"{r['warm_s']:.2f} s", f"{r['warm_vs_cold']:.3f}x cold (target <= {TARGETS['warm_vs_cold']}x): {verdict(r['warm_vs_cold'] <= TARGETS['warm_vs_cold'])}"),
        ("repro-lint cold, --jobs 2", f"{r['cold2_s']:.2f} s", f"{r['jobs2_speedup']:.2f}x faster than --jobs 1 (target >= {TARGETS['jobs2_speedup']}x): {verdict(r['jobs2_speedup'] >= TARGETS['jobs2_speedup'])}"),
        ("peak memory (max RSS), cold --jobs 1", f"{r['peak_mb']:.0f} MB", f"target <= {TARGETS['peak_mb']:.0f} MB: {verdict(r['peak_mb'] <= TARGETS['peak_mb'])}"),
        ("peak memory, cold --jobs 2 / warm", f"{r['peak_mb_jobs2']:.0f} MB / {r['peak_mb_warm']:.0f} MB", "largest single process"),
    ]
    out = ["| measure | value | target |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, help="an existing corpus folder (default: build one in a temporary folder)")
    p.add_argument("--labs", type=int, default=40, help="generated packages when building the corpus (default 40)")
    p.add_argument("--repeat", type=int, default=3, help="runs per measurement; the minimum is kept (default 3)")
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    args = p.parse_args(argv)
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}", flush=True)
    tmp = None
    corpus = args.corpus
    if corpus is None:
        import make_corpus

        tmp = Path(tempfile.mkdtemp(prefix="repro-lint-bench-"))
        corpus = tmp / "corpus"
        counts = make_corpus.build(corpus, args.labs)
        print(f"built {corpus}: {counts['stdlib']} standard library files + {counts['generated']} generated", flush=True)
    try:
        r = run(corpus.resolve(), args.repeat)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(report(r))
    if args.json:
        args.json.write_text(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
