"""Cost of `repro-lint check` as a project grows: cold, warm, and one file changed.

    python bench/scale_bench.py [--sizes 40,440] [--repeat 3] [--keep DIR] [--json FILE]

For each size (generated packages of `make_corpus.py`: 40 gives 5,106 files, 440 gives
38,306) the script builds the corpus and measures, each in a fresh process started the way
a user starts it (`python -m repro_lint check ...` in the corpus folder, start-up counted):

- cold: `check . --no-cache` (`--jobs` default) and `check . --no-cache --jobs 1`;
- cache fill: `check .` with an empty cache;
- warm, nothing changed: `check .` again;
- one file changed, named alone (what pre-commit runs): a function body of a module that
  several training scripts import is edited, then `check labs/lab_00/utils/metrics_00.py`
  with the cache warm. Each repetition makes a new edit, so each run sees a changed file.

Each time is the minimum of `--repeat` runs (noise on a shared machine only adds time); peak
memory is the largest resident set of the process or any process it started (`wait4`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_corpus  # noqa: E402
from run_bench import compile_package, lint_cmd, measure  # noqa: E402

EDITED = Path("labs/lab_00/utils/metrics_00.py")
QUIET = ("--format", "concise", "--exit-zero", "-q")


def edit(corpus: Path, n: int) -> None:
    """Change the body of `running_mean` in the edited module (its outline stays the same)."""
    path = corpus / EDITED
    text = path.read_text()
    new, count = re.subn(r"(\n    out = \[\])[^\n]*", rf"\1 if {n} else []", text, count=1)
    if count != 1:
        raise RuntimeError(f"{path}: the line to edit is missing")
    path.write_text(new)


def lint(corpus: Path, *args: str) -> tuple[float, float]:
    wall, peak, _, _ = measure([sys.executable, "-m", "repro_lint", "check", *args, *QUIET], corpus)
    return wall, peak


def best(label: str, runs: list[tuple[float, float]]) -> tuple[float, float]:
    secs = min(r[0] for r in runs)
    peak = max(r[1] for r in runs)
    shown = "  ".join(f"{r[0]:6.2f}s/{r[1]:4.0f}MB" for r in runs)
    print(f"  {label:<34} {shown}   -> {secs:.2f} s, {peak:.0f} MB", flush=True)
    return secs, peak


def run_size(corpus: Path, repeat: int) -> dict:
    cache = corpus / ".repro_lint_cache"
    shutil.rmtree(cache, ignore_errors=True)
    out: dict = {}
    out["cold"] = best("cold (--jobs default)", [lint(corpus, ".", "--no-cache") for _ in range(repeat)])
    out["cold1"] = best("cold --jobs 1", [lint(corpus, ".", "--no-cache", "--jobs", "1") for _ in range(repeat)])
    out["fill"] = best("cache fill", [lint(corpus, ".")])
    out["warm"] = best("warm, nothing changed", [lint(corpus, ".") for _ in range(repeat)])
    runs = []
    for i in range(repeat):
        edit(corpus, i + 1)
        runs.append(lint(corpus, str(EDITED)))
    out["one"] = best("one file changed, named alone", runs)
    # the same check from scratch must report the same findings
    _, _, inc, _ = measure(lint_cmd(Path(str(EDITED)), "--format", "json", "--exit-zero"), corpus)
    _, _, scratch, _ = measure(lint_cmd(Path(str(EDITED)), "--format", "json", "--exit-zero", "--no-cache"), corpus)
    out["same_as_cold"] = json.loads(inc)["findings"] == json.loads(scratch)["findings"]
    print(f"  one-file findings equal to a check from scratch: {out['same_as_cold']}", flush=True)
    shutil.rmtree(cache, ignore_errors=True)
    return out


def table(results: dict) -> str:
    rows = ["| files | cold | cold `--jobs 1` | peak memory cold | warm, nothing changed | one file changed, named alone | one file / warm | warm / cold |",
            "|---|---|---|---|---|---|---|---|"]
    for files, r in results.items():
        rows.append(
            f"| {files:,} | {r['cold'][0]:.2f} s | {r['cold1'][0]:.2f} s | {r['cold'][1]:.0f} MB (`--jobs 1`: {r['cold1'][1]:.0f} MB)"
            f" | {r['warm'][0]:.2f} s, {r['warm'][1]:.0f} MB | {r['one'][0]:.2f} s, {r['one'][1]:.0f} MB"
            f" | {r['one'][0] / r['warm'][0]:.2f}x | {r['warm'][0] / r['cold'][0]:.3f}x |"
        )
    return "\n".join(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="40,440", help="generated packages per corpus, comma-separated (default 40,440)")
    p.add_argument("--repeat", type=int, default=3, help="runs per measurement; the minimum is kept (default 3)")
    p.add_argument("--keep", type=Path, help="build the corpora here (reused when present) instead of a temporary folder")
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    args = p.parse_args(argv)
    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, {platform.platform()}", flush=True)
    compile_package()
    base = args.keep or Path(tempfile.mkdtemp(prefix="repro-lint-scale-"))
    results: dict = {}
    try:
        for labs in (int(s) for s in args.sizes.split(",")):
            corpus = (base / f"corpus-{labs}").resolve()
            if not corpus.exists():
                counts = make_corpus.build(corpus, labs)
                print(f"built {corpus}: {counts['stdlib']} standard library files + {counts['generated']} generated", flush=True)
            else:
                subprocess_reset(corpus)
            files = sum(1 for _ in corpus.rglob("*.py"))
            print(f"corpus {corpus}: {files} files", flush=True)
            results[files] = run_size(corpus, args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    print()
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps({str(k): v for k, v in results.items()}, indent=2) + "\n")
    return 0


def subprocess_reset(corpus: Path) -> None:
    """A kept corpus: put the edited module back as generated."""
    path = corpus / EDITED
    path.write_text(re.sub(r"(\n    out = \[\])[^\n]*", r"\1", path.read_text(), count=1))


if __name__ == "__main__":
    sys.exit(main())
