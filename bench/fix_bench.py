"""What `--fix` costs next to a cold `check` of the same files, side by side in one run.

    python bench/fix_bench.py [--repos DIR] [--list bench/review_repos.txt] [--mirrors DIR]
                              [--only NAME,...] [--rounds 5] [--jobs N] [--src SRC] [--before SRC]

For each repository of the list (checkouts under `--repos/NAME`, extracted from fetched
mirrors with `--mirrors` as `review_fixes.py` does), rounds of four measures take turns, each
in a fresh process started as a user starts it, on a fresh copy of the repository (no cache,
nothing fixed before):

- `check`: `repro-lint check --no-cache`;
- `diff`: `repro-lint check --no-cache --diff --unsafe-fixes` (every fix, written nowhere);
- `fix`: `repro-lint check --no-cache --fix --unsafe-fixes` (every fix, written);
- `fix-safe`: `repro-lint check --no-cache --fix` (the safe fixes, as pre-commit runs them).

Each figure is the median of the rounds, in wall-clock seconds (what a user waits) and in
CPU seconds of the process and the processes it started (what load does not change); the
ratios are taken per round and their median reported. The number of fixes is what the tool
printed (`Would fix N` / `Fixed N`). Target (issue 34): `--fix` and `--diff` at most 3x a
cold check.

With `--before SRC` (another version's `src/`, e.g. a `git archive` of a commit, with its
`rules/` beside it), each measure runs with that version, then with `--src`, within each
round: both are reported, side by side under the same load.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(HERE))
from repos import ensure, read_list, select  # noqa: E402

MEASURES = {
    "check": [],
    "diff": ["--diff", "--unsafe-fixes"],
    "fix": ["--fix", "--unsafe-fixes"],
    "fix-safe": ["--fix"],
}


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_once(tree: Path, src: Path, extra: list[str], jobs: int) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, fixes reported) of one run on a fresh copy of `tree`."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / tree.name
        shutil.copytree(tree, work, symlinks=True)
        env = dict(os.environ, PYTHONPATH=str(src), NO_COLOR="1")
        args = [sys.executable, "-m", "repro_lint", "check", "--no-cache", "--exit-zero", "--jobs", str(jobs), *extra, "."]
        cpu0, t0 = _children_cpu(), time.perf_counter()
        r = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=3600)
        wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if r.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(args)} failed ({r.returncode}): {r.stderr[-500:]}")
    fixes = sum(int(n) for n in re.findall(r"(?:Would fix|Fixed) (\d+)", r.stdout + r.stderr))
    return wall, cpu, fixes


def bench(tree: Path, srcs: list, rounds: int, jobs: int) -> list:
    """The figures of each version of `srcs`, the measures taking turns within each round."""
    runs: list = [{m: [] for m in MEASURES} for _ in srcs]
    for _ in range(rounds):
        for name, extra in MEASURES.items():
            for src, mine in zip(srcs, runs):
                mine[name].append(run_once(tree, src, extra, jobs))
    return [_figures(tree, mine) for mine in runs]


def _figures(tree: Path, runs: dict) -> dict:
    out = {"files": sum(1 for _ in tree.rglob("*.py"))}
    for name, rows in runs.items():
        out[name] = {
            "wall": statistics.median(w for w, _, _ in rows),
            "cpu": statistics.median(c for _, c, _ in rows),
            "fixes": rows[-1][2],
        }
        if name != "check":
            out[name]["wall_ratio"] = statistics.median(w / c[0] for (w, _, _), c in zip(rows, runs["check"]))
            out[name]["cpu_ratio"] = statistics.median(c / k[1] for (_, c, _), k in zip(rows, runs["check"]))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repos", type=Path, default=Path(tempfile.gettempdir()) / "repos" / "review")
    p.add_argument("--list", type=Path, default=HERE / "review_repos.txt")
    p.add_argument("--mirrors", type=Path)
    p.add_argument("--src", type=Path, default=SRC)
    p.add_argument("--before", type=Path, help="another version's src/, measured in turn with --src")
    p.add_argument("--only", default="")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = p.parse_args(argv)
    srcs = [args.before, args.src] if args.before else [args.src]
    for src in srcs:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=False)
    header = f"{'repository':28} {'files':>5} {'check s':>8} " + " ".join(f"{m + ' s':>10} {'x':>5}" for m in MEASURES if m != "check")
    print(header + "   (wall; CPU ratios after /)")
    for entry in select(read_list(args.list), args.only):
        tree = ensure(entry, args.repos, args.mirrors)
        if tree is None:
            print(f"{entry.name:28} (not available)")
            continue
        if entry.subdir:
            tree = tree / entry.subdir
        for label, r in zip(["before", "after"] if args.before else [""], bench(tree, srcs, args.rounds, args.jobs)):
            cells = " ".join(
                f"{r[m]['wall']:10.2f} {r[m]['wall_ratio']:4.1f}x/{r[m]['cpu_ratio']:.1f}x ({r[m]['fixes']})" for m in MEASURES if m != "check"
            )
            name = f"{entry.name} {label}".strip()
            print(f"{name:28} {r['files']:5} {r['check']['wall']:8.2f} {cells}   check CPU {r['check']['cpu']:.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
