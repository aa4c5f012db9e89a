"""Time repro-lint against plain `ast.parse` on one corpus, in one run.

    python bench/run_bench.py [--corpus DIR] [--repeat 3] [--labs 40] [--json FILE]

Without `--corpus` the corpus is built in a temporary folder by `make_corpus.py` (the
standard library plus generated training packages) and removed afterwards.

repro-lint runs as a user runs it (`python -m repro_lint check CORPUS ...`) in a fresh
process, timed from start to exit: interpreter start-up and imports count. The
`ast.parse` baseline reads and parses the same files (the ones repro-lint's own discovery
finds) in a fresh process and times only that loop. Each measurement is repeated and the
minimum kept: on a shared machine noise only ever adds time. Peak memory is the largest
resident set of the process or of any worker it started (`ru_maxrss` from `wait4`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

TARGETS = {
    "cold_vs_parse": 2.0,  # cold <= 2.0 x ast.parse
    "warm_vs_cold": 0.1,  # warm <= 0.1 x cold
    "jobs2_speedup": 1.6,  # --jobs 1 time / --jobs 2 time >= 1.6 (on 2 cores)
    "peak_mb": 300.0,  # max RSS, for 5,000 files
}

# Reads the file list on stdin; prints the wall and CPU seconds of the read + parse loop alone.
PARSE_ONLY = r"""
import ast, sys, time
paths = sys.stdin.read().splitlines()
t, c = time.perf_counter(), time.process_time()
for p in paths:
    with open(p, "rb") as fh:
        data = fh.read()
    try:
        ast.parse(data, filename=p)
    except (SyntaxError, ValueError):
        pass
print(time.perf_counter() - t, time.process_time() - c)
"""


# Where the package's bytecode goes: repro-lint runs as an installed copy runs (pip compiles
# bytecode when it installs), also where the environment sets PYTHONDONTWRITEBYTECODE, which
# would make every run compile the package's sources again (about 0.08 s of each run).
_PYCACHE = Path(tempfile.gettempdir()) / "repro-lint-bench-pycache"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(_PYCACHE)
    return env


def compile_package() -> None:
    """The package's bytecode, made once before anything is timed (into `_PYCACHE`, not the
    source folder)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(SRC / "repro_lint")], env=_env(), check=True, stdout=subprocess.DEVNULL)


def measure(cmd: list[str], cwd: Path, stdin: str = "") -> tuple[float, float, str, float]:
    """(wall seconds, peak RSS in MB, stdout, CPU seconds) of one process run to completion.

    The child is reaped with `wait4`, whose rusage covers the child and every descendant
    it waited for (the `--jobs` workers): `ru_maxrss` is the largest of them, and the CPU
    time is theirs together."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = _drain(proc, stdin.encode())
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{err.decode(errors='replace')[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return wall, usage.ru_maxrss / 1024, out.decode(), cpu  # ru_maxrss is in KiB on Linux


def _drain(proc: subprocess.Popen, data: bytes) -> tuple[bytes, bytes]:
    """Feed stdin and read stdout/stderr without reaping the child (communicate() would)."""
    import threading

    chunks: dict[str, bytes] = {}

    def read(name: str, stream) -> None:
        chunks[name] = stream.read()

    readers = [threading.Thread(target=read, args=(n, s)) for n, s in (("out", proc.stdout), ("err", proc.stderr))]
    for r in readers:
        r.start()
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
    except BrokenPipeError:
        pass
    proc.stdin.close()
    for r in readers:
        r.join()
    return chunks["out"], chunks["err"]


def lint_cmd(corpus: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "repro_lint", "check", str(corpus), *extra]


def corpus_files(corpus: Path) -> list[Path]:
    """The files repro-lint checks, found by its own discovery (both sides see the same set)."""
    sys.path.insert(0, str(SRC))
    from repro_lint.discover.config import find_config, load_config
    from repro_lint.check.files import collect_files
    from repro_lint.check.select import known_codes
    from repro_lint.facts.matchers import get_matchers

    cfg = load_config(find_config(corpus), known_codes(), get_matchers().sources)
    _, targets = collect_files([corpus], cfg, corpus)
    return targets


def count_lines(files: list[Path]) -> int:
    total = 0
    for f in files:
        with open(f, "rb") as fh:
            total += fh.read().count(b"\n")
    return total


Run = tuple[float, float, float]  # wall seconds, peak RSS in MB, CPU seconds


def interleaved(repeat: int, fns: list[Callable[[], Run]]) -> list[list[Run]]:
    """`repeat` rounds, each running every measurement once; the runs of each measurement."""
    runs: list[list[Run]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            runs[i].append(fn())
    return runs


def best(label: str, runs: list[Run]) -> tuple[float, float, float]:
    """Minimum wall time of the runs, the largest peak memory among them, minimum CPU time."""
    secs = min(r[0] for r in runs)
    peak = max(r[1] for r in runs)
    cpu = min(r[2] for r in runs)
    shown = "  ".join(f"{r[0]:7.2f}s" for r in runs)
    print(f"  {label:<30} {shown}   -> {secs:.2f}s (CPU {cpu:.2f}s)" + (f", max RSS {peak:.0f} MB" if peak else ""), flush=True)
    return secs, peak, cpu


def round_ratio(a: list[Run], b: list[Run]) -> float:
    """Median over the rounds of a's wall time / b's wall time in the same round."""
    return statistics.median(x[0] / y[0] for x, y in zip(a, b))


def run(corpus: Path, repeat: int) -> dict:
    cache_dir = corpus / ".repro_lint_cache"
    shutil.rmtree(cache_dir, ignore_errors=True)
    files = corpus_files(corpus)
    lines = count_lines(files)
    print(f"corpus {corpus}: {len(files)} files, {lines} lines; each time is the minimum of {repeat} runs", flush=True)
    quiet = ("--format", "concise", "--exit-zero", "-q")

    def parse_only() -> Run:
        _, _, out, _ = measure([sys.executable, "-c", PARSE_ONLY], corpus, "\n".join(map(str, files)))
        wall, cpu = map(float, out.split())
        return wall, 0.0, cpu

    def lint(*extra: str) -> Run:
        wall, peak, _, cpu = measure(lint_cmd(corpus, *extra, *quiet), corpus)
        return wall, peak, cpu

    def cold(jobs: int) -> Callable[[], Run]:
        return lambda: lint("--no-cache", "--jobs", str(jobs))

    # the three cold measurements take turns, so that a busy spell of a shared machine
    # falls on all of them alike (their ratios are what the targets are about)
    rounds = interleaved(repeat, [parse_only, cold(1), cold(2)])
    parse_s, _, parse_cpu = best("ast.parse only (read + parse)", rounds[0])
    cold1_s, cold1_mb, cold1_cpu = best("repro-lint cold --jobs 1", rounds[1])
    cold2_s, cold2_mb, _ = best("repro-lint cold --jobs 2", rounds[2])
    fill_s, fill_mb, _ = lint("--jobs", "1")
    print(f"  {'(cache fill, --jobs 1)':<30} {fill_s:7.2f}s, max RSS {fill_mb:.0f} MB", flush=True)
    warm_s, warm_mb, _ = best("repro-lint warm --jobs 1", [lint("--jobs", "1") for _ in range(repeat)])
    # the files repro-lint reported on must be the files the baseline parsed (from the cache)
    _, _, out, _ = measure(lint_cmd(corpus, "--jobs", "1", "--format", "json", "--exit-zero"), corpus)
    report = json.loads(out)
    shutil.rmtree(cache_dir, ignore_errors=True)
    return {
        "files": len(files), "lines": lines, "files_checked": report["files_checked"],
        "findings": len(report["findings"]), "errors": len(report["errors"]),
        "parse_s": parse_s, "cold1_s": cold1_s, "cold2_s": cold2_s, "warm_s": warm_s, "fill_s": fill_s,
        "peak_mb": cold1_mb, "peak_mb_jobs2": cold2_mb, "peak_mb_warm": warm_mb, "peak_mb_fill": fill_mb,
        "cold_vs_parse": cold1_s / parse_s, "warm_vs_cold": warm_s / cold1_s, "jobs2_speedup": cold1_s / cold2_s,
        # the same ratios read from each round (a busy spell then hits both sides), and CPU time
        "cold_vs_parse_rounds": round_ratio(rounds[1], rounds[0]), "jobs2_speedup_rounds": 1 / round_ratio(rounds[2], rounds[1]),
        "parse_cpu_s": parse_cpu, "cold1_cpu_s": cold1_cpu, "cold_vs_parse_cpu": cold1_cpu / parse_cpu,
    }


def table(r: dict) -> str:
    def verdict(ok: bool) -> str:
        return "met" if ok else "**not met**"

    checked = "" if r["files_checked"] == r["files"] else f" (repro-lint checked {r['files_checked']})"
    rows = [
        ("files", f"{r['files']:,}{checked}", ""),
        ("lines", f"{r['lines']:,}", ""),
        ("`ast.parse` only (read + parse)", f"{r['parse_s']:.2f} s", ""),
        ("repro-lint cold, `--jobs 1`", f"{r['cold1_s']:.2f} s",
         f"{r['cold_vs_parse']:.2f}x `ast.parse` (target <= {TARGETS['cold_vs_parse']}x): {verdict(r['cold_vs_parse'] <= TARGETS['cold_vs_parse'])}"),
        ("repro-lint warm, `--jobs 1`", f"{r['warm_s']:.2f} s",
         f"{r['warm_vs_cold']:.3f}x cold (target <= {TARGETS['warm_vs_cold']}x): {verdict(r['warm_vs_cold'] <= TARGETS['warm_vs_cold'])}"),
        ("repro-lint cold, `--jobs 2`", f"{r['cold2_s']:.2f} s",
         f"{r['jobs2_speedup']:.2f}x faster than `--jobs 1` (target >= {TARGETS['jobs2_speedup']}x): {verdict(r['jobs2_speedup'] >= TARGETS['jobs2_speedup'])}"),
        ("peak memory, cold `--jobs 1`", f"{r['peak_mb']:.0f} MB",
         f"target <= {TARGETS['peak_mb']:.0f} MB: {verdict(r['peak_mb'] <= TARGETS['peak_mb'])}"),
        ("peak memory, cold `--jobs 2` / cache fill / warm", f"{r['peak_mb_jobs2']:.0f} / {r['peak_mb_fill']:.0f} / {r['peak_mb_warm']:.0f} MB", "largest single process"),
        ("cold / `ast.parse`, median of per-round ratios", f"{r['cold_vs_parse_rounds']:.2f}x", "same run, less sensitive to load"),
        ("cold / `ast.parse`, CPU seconds", f"{r['cold1_cpu_s']:.2f} s / {r['parse_cpu_s']:.2f} s = {r['cold_vs_parse_cpu']:.2f}x", "repro-lint's includes start-up and imports"),
        ("`--jobs 2` speed-up, median of per-round ratios", f"{r['jobs2_speedup_rounds']:.2f}x", ""),
        ("findings / errors reported", f"{r['findings']:,} / {r['errors']}", ""),
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
    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, {platform.platform()}", flush=True)
    compile_package()
    tmp = None
    corpus = args.corpus
    if corpus is None:
        sys.path.insert(0, str(HERE))
        import make_corpus

        tmp = Path(tempfile.mkdtemp(prefix="repro-lint-bench-"))
        corpus = tmp / "corpus"
        counts = make_corpus.build(corpus, args.labs)
        print(f"built {corpus}: {counts['stdlib']} standard library files + {counts['generated']} generated", flush=True)
    try:
        result = run(corpus.resolve(), args.repeat)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
