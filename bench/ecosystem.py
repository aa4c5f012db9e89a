"""Ecosystem check: what two versions of repro-lint report on large public ML repositories.

    python bench/ecosystem.py --repos DIR [--mirrors DIR] [--list bench/ecosystem_repos.txt]
                              [--baseline REV] [--src SRC] [--out DIR] [--only NAME,...]
                              [--jobs N] [--parse-time] [--sample N --seed S]

Each repository of the list is a plain tree under `--repos/NAME` (with `--mirrors`, a
missing one is extracted from a fetched bare mirror at the listed commit; nothing is
fetched over the network). At its root (or the listed folder) the script runs what a new
user runs, `repro-lint check . --output-format json --no-cache --exit-zero`, timed from
start to exit, with two versions of the tool:

- the baseline, `--baseline REV`: a revision of this repository, its `src/` and `rules/`
  written to a temporary folder with `git archive`;
- the new version, `--src` (default: this checkout's `src`, beside its `rules/`).

Each runs as `PYTHONPATH=SRC python -m repro_lint` and reads the `rules/` beside its own
`src/` (checked before anything runs). Without `--baseline` only the new version runs.

Findings of the two runs are matched by file, rule code and message, with the line numbers
in the message normalised (an unrelated shift is not an added and a removed finding).
Printed per repository and per rule: counts baseline -> new, added, removed, and the new
version's findings in test files (`tests/`, `test_*.py`, `*_test.py`, `conftest.py`).
`OUT/ecosystem.json` and `OUT/ecosystem.md` hold every added and removed finding,
`OUT/findings/NAME.json` every finding of the new version. `--sample N --seed S` writes
`OUT/sample/NAME.md` (and `OUT/sample.json`): N findings per repository drawn at random,
stratified by rule (every rule that fires is drawn from, so more than N where more rules fire), with each one's source line and
the weight (findings of its rule / drawn of its rule) a share read from it is weighted by.
`--parse-time` also times a read + `ast.parse` loop over the files repro-lint checks
(bench/run_bench.py's loop), to compare with the check's wall time (`--jobs 1` for a fair one).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = ROOT / "src"
sys.path.insert(0, str(HERE))

from repos import Entry, ensure, read_list, select  # noqa: E402  (beside this script)

TEST_PATH = re.compile(r"(^|/)tests/|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$")
# line numbers a message quotes ("seeded on line 12", "lines 3, 5", "data.py:40")
_LINE_REFS = re.compile(r"(\blines? |\.py:|\.ipynb:)(\d+(?:(?:, | and |-)\d+)*)")


def is_test_file(path: str) -> bool:
    return bool(TEST_PATH.search(path.replace(os.sep, "/")))


def normalise(message: str) -> str:
    return _LINE_REFS.sub(lambda m: m.group(1) + "N", message)


# -- the versions -------------------------------------------------------------------------
def baseline_src(rev: str, dest: Path) -> Path:
    """This repository's `src/` and `rules/` at `rev`, written under `dest`; its `src`."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src", "rules"], capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"ecosystem: cannot read {rev!r}: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest / "src"


def _env(src: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src), NO_COLOR="1")
    env.pop("REPRO_LINT_OUTPUT_FORMAT", None)
    return env


def check_version(src: Path) -> None:
    """The package and the catalog a run would use must be this version's own: an installed
    copy earlier on the path, or another tree's `rules/`, would compare a version with itself."""
    probe = (
        "import repro_lint, sys\n"
        "print(repro_lint.__file__)\n"
        "try:\n"
        "    from repro_lint.core.catalog import rules_dir\n"
        "except ImportError:\n"
        "    try:\n"  # the layout before the package tree was the pipeline
        "        from repro_lint.catalog import rules_dir\n"
        "    except ImportError:\n"  # a layout without this function: the package path must do
        "        rules_dir = lambda: ''\n"
        "print(rules_dir())\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], env=_env(src), capture_output=True, text=True, cwd=tempfile.gettempdir(), check=False)
    if r.returncode != 0:
        raise SystemExit(f"ecosystem: repro-lint from {src} does not import:\n{r.stderr[-2000:]}")
    package, rules = (r.stdout.splitlines() + ["", ""])[:2]
    if not Path(package).resolve().is_relative_to(src.resolve()):
        raise SystemExit(f"ecosystem: PYTHONPATH={src} imports repro_lint from {package}")
    if rules and Path(rules).resolve() != (src.parent / "rules").resolve():
        raise SystemExit(f"ecosystem: repro-lint from {src} reads its catalog from {rules}, not {src.parent / 'rules'}")


def run_check(src: Path, tree: Path, target: str, jobs: int | None, timeout: float) -> dict:
    """One cold check of `tree` as a user runs it: the report, wall seconds, and why it failed."""
    cmd = [sys.executable, "-m", "repro_lint", "check", target, "--output-format", "json", "--no-cache", "--exit-zero"]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    start = time.perf_counter()
    try:
        r = subprocess.run(cmd, cwd=tree, env=_env(src), capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"status": f"timed out after {timeout:.0f} s", "seconds": timeout, "findings": [], "errors": [], "files": 0}
    seconds = time.perf_counter() - start
    try:
        report = json.loads(r.stdout)
    except json.JSONDecodeError:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return {"status": f"failed (exit {r.returncode}): {tail[:160]}", "seconds": seconds, "findings": [], "errors": [], "files": 0}
    findings = []
    for f in report.get("findings", []):
        path = f["path"].replace(os.sep, "/")
        path = path.removeprefix("./")
        if target != ".":
            path = f"{target.rstrip('/')}/{path}" if not path.startswith(target.rstrip("/") + "/") else path
        findings.append({"path": path, "line": f["start"]["line"], "column": f["start"]["column"], "code": f["code"], "message": f["message"]})
    findings.sort(key=lambda f: (f["path"], f["line"], f["column"], f["code"], f["message"]))
    return {"status": "ok", "seconds": round(seconds, 2), "findings": findings,
            "errors": report.get("errors", []), "files": report.get("files_checked", 0)}


def parse_seconds(tree: Path, target: str) -> tuple[float, int]:
    """Wall seconds of the read + `ast.parse` loop over the files repro-lint checks there."""
    import run_bench

    files = run_bench.corpus_files((tree / target).resolve())
    r = subprocess.run([sys.executable, "-c", run_bench.PARSE_ONLY], input="\n".join(map(str, files)),
                       capture_output=True, text=True, check=True)
    return round(float(r.stdout.split()[0]), 2), len(files)


# -- comparing ----------------------------------------------------------------------------
def key(f: dict) -> tuple:
    return (f["path"], f["code"], normalise(f["message"]))


def compare(old: list[dict], new: list[dict]) -> tuple[list[dict], list[dict]]:
    """(added, removed): findings whose key is in one run more often than in the other. Within
    a key, findings at the same line pair first, the rest in order of their lines."""
    groups: dict = defaultdict(lambda: ([], []))
    for f in old:
        groups[key(f)][0].append(f)
    for f in new:
        groups[key(f)][1].append(f)
    added, removed = [], []
    for a, b in groups.values():
        lines = Counter(f["line"] for f in a) & Counter(f["line"] for f in b)
        rest = []
        for side in (a, b):
            left, budget = [], Counter(lines)
            for f in side:
                if budget[f["line"]] > 0:
                    budget[f["line"]] -= 1
                else:
                    left.append(f)
            rest.append(left)
        n = min(len(rest[0]), len(rest[1]))
        removed += rest[0][n:]
        added += rest[1][n:]
    order = lambda f: (f["path"], f["line"], f["code"])
    return sorted(added, key=order), sorted(removed, key=order)


def per_rule(old: list[dict] | None, new: list[dict], added: list[dict], removed: list[dict]) -> dict:
    codes = sorted({f["code"] for f in [*(old or []), *new]})
    out = {}
    for code in codes:
        mine = [f for f in new if f["code"] == code]
        row = {"new": len(mine), "tests": sum(is_test_file(f["path"]) for f in mine),
               "added": sum(f["code"] == code for f in added), "removed": sum(f["code"] == code for f in removed)}
        if old is not None:
            row["baseline"] = sum(f["code"] == code for f in old)
        out[code] = row
    return out


# -- sampling -----------------------------------------------------------------------------
def allocate(counts: dict[str, int], n: int) -> dict[str, int]:
    """How many of each rule's findings to draw: every rule at least one (up to 3 when `n`
    has room), the rest of `n` in proportion to the rules' counts (largest remainders), never
    more than a rule has. More than `n` only when more rules than `n` fire."""
    floor = max(1, min(3, n // max(1, len(counts))))
    take = {c: min(k, floor) for c, k in counts.items()}
    while sum(take.values()) < n and any(take[c] < counts[c] for c in counts):
        left = n - sum(take.values())
        open_ = {c: counts[c] for c in counts if take[c] < counts[c]}
        total = sum(open_.values())
        shares = {c: left * k / total for c, k in open_.items()}
        grew = False
        for c in sorted(open_, key=lambda c: (-(shares[c] % 1), c)):
            extra = min(int(shares[c]), counts[c] - take[c])
            take[c] += extra
            grew |= extra > 0
        if not grew:  # fewer places left than rules: one each to the largest remainders
            for c in sorted(open_, key=lambda c: (-(shares[c] % 1), -counts[c], c))[: n - sum(take.values())]:
                take[c] += 1
    return take


def sample(name: str, findings: list[dict], n: int, seed: int) -> list[dict]:
    by_code: dict = defaultdict(list)
    for f in findings:
        by_code[f["code"]].append(f)
    rng = random.Random(f"{seed}:{name}")  # one stream per repository: the others do not move it
    out = []
    for code, k in sorted(allocate({c: len(v) for c, v in by_code.items()}, n).items()):
        for f in rng.sample(by_code[code], k):
            out.append(dict(f, weight=round(len(by_code[code]) / k, 3)))
    return sorted(out, key=lambda f: (f["code"], f["path"], f["line"]))


def source_line(tree: Path, f: dict) -> str:
    try:
        with open(tree / f["path"], encoding="utf-8", errors="replace") as fh:
            for i, text in enumerate(fh, 1):
                if i == f["line"]:
                    return text.strip()
    except OSError:
        pass
    return ""


# -- reporting ----------------------------------------------------------------------------
def _table(heads: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [heads, *rows]) for i in range(len(heads))]
    line = lambda cells: "| " + " | ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))) + " |"
    sep = "|" + "|".join("-" * (w + 2) if i < 2 else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|"
    return "\n".join([line(heads), sep, *(line(r) for r in rows)])


def tables(results: list[dict], two: bool) -> str:
    heads = ["repository", "status", "files", "findings", "added", "removed", "in tests", "check s"]
    if two:
        heads[3] = "findings base -> new"
        heads[7] = "check s base -> new"
    if any(r.get("parse_seconds") is not None for r in results):
        heads.append("ast.parse s")
    rows = []
    for r in results:
        new = r.get("new", {})
        base = r.get("baseline", {})
        total_new = sum(v["new"] for v in r.get("rules", {}).values())
        row = [r["name"], r["status"], str(new.get("files", 0))]
        if two:
            total_base = sum(v.get("baseline", 0) for v in r.get("rules", {}).values())
            row.append(f"{total_base} -> {total_new}")
        else:
            row.append(str(total_new))
        row += [str(len(r.get("added", []))), str(len(r.get("removed", []))),
                str(sum(v["tests"] for v in r.get("rules", {}).values()))]
        row.append(f"{base.get('seconds', 0):.1f} -> {new.get('seconds', 0):.1f}" if two else f"{new.get('seconds', 0):.1f}")
        if "ast.parse s" in heads:
            row.append("" if r.get("parse_seconds") is None else f"{r['parse_seconds']:.1f}")
        rows.append(row)
    out = [_table(heads, rows), ""]
    rule_heads = ["repository", "rule", *(["baseline"] if two else []), "new", "added", "removed", "in tests"]
    rule_rows = []
    for r in results:
        for code, v in r.get("rules", {}).items():
            rule_rows.append([r["name"], code, *([str(v.get("baseline", 0))] if two else []),
                              str(v["new"]), str(v["added"]), str(v["removed"]), str(v["tests"])])
    out.append(_table(rule_heads, rule_rows))
    return "\n".join(out)


def markdown(results: list[dict], two: bool, meta: dict) -> str:
    out = ["# Ecosystem check", "",
           f"baseline: `{meta['baseline'] or '(none)'}`; new: `{meta['src']}`; jobs: {meta['jobs'] or 'default'}", "",
           tables(results, two), ""]
    for r in results:
        out.append(f"## {r['name']} ({r['repo']} @ {r['commit'][:12]}{' ' + r['subdir'] if r['subdir'] else ''})")
        out.append("")
        if r["status"] != "ok":
            out += [f"status: {r['status']}", ""]
        for side in ("baseline", "new"):
            errors = r.get(side, {}).get("errors") or []
            if errors:
                out += [f"{side}: {len(errors)} errors, e.g. `{json.dumps(errors[0])[:200]}`", ""]
        for what in ("added", "removed"):
            items = r.get(what, [])
            if not two:
                continue
            out.append(f"### {what} ({len(items)})")
            out.append("")
            out += [f"- `{f['path']}:{f['line']}` {f['code']} {f['message']}" for f in items] or ["(none)"]
            out.append("")
    return "\n".join(out) + "\n"


def sample_markdown(name: str, tree: Path, picked: list[dict], counts: dict, seed: int) -> str:
    out = [f"# Sample of {name}: {len(picked)} of {sum(counts.values())} findings (seed {seed})", "",
           "Findings per rule: " + ", ".join(f"{c} {k}" for c, k in sorted(counts.items())), ""]
    for i, f in enumerate(picked, 1):
        out += [f"{i}. `{f['path']}:{f['line']}` **{f['code']}** (weight {f['weight']}) {f['message']}",
                f"   `{source_line(tree, f)[:200]}`", "   class: ; mechanism: ", ""]
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repos", type=Path, default=Path(tempfile.gettempdir()) / "repos" / "ecosystem", help="folder of extracted trees, one per list name")
    p.add_argument("--list", type=Path, default=HERE / "ecosystem_repos.txt")
    p.add_argument("--mirrors", type=Path, help="extract missing trees from fetched mirrors here")
    p.add_argument("--baseline", help="a git revision of this repository to compare with (default: run the new version only)")
    p.add_argument("--src", type=Path, default=SRC, help="the repro-lint sources of the new version (a tree's src, beside its rules/)")
    p.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "ecosystem")
    p.add_argument("--only", default="", help="comma-separated names from the list")
    p.add_argument("--jobs", type=int, help="pass --jobs N to every check (default: the tool's own default)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds one check may take")
    p.add_argument("--parse-time", action="store_true", help="also time an ast.parse loop over the same files")
    p.add_argument("--sample", type=int, default=0, help="draw N findings per repository for reading")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample")
    args = p.parse_args(argv)

    entries: list[Entry] = select(read_list(args.list), args.only)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "findings").mkdir(exist_ok=True)
    new_src = args.src.resolve()
    two = bool(args.baseline)
    results = []
    samples = {}
    with tempfile.TemporaryDirectory(prefix="ecosystem.") as tmp:
        versions = {"new": new_src}
        if two:
            versions = {"baseline": baseline_src(args.baseline, Path(tmp) / "baseline"), "new": new_src}
        for src in versions.values():
            check_version(src)
        for entry in entries:
            result = {"name": entry.name, "repo": entry.repo, "commit": entry.commit, "subdir": entry.subdir, "status": "ok"}
            results.append(result)
            tree = ensure(entry, args.repos, args.mirrors)
            target = entry.subdir or "."
            if tree is None or not (tree / target).is_dir():
                result["status"] = "missing"
                print(f"{entry.name}: missing", file=sys.stderr)
                continue
            for side, src in versions.items():
                result[side] = run_check(src, tree, target, args.jobs, args.timeout)
                if result[side]["status"] != "ok":
                    result["status"] = f"{side}: {result[side]['status']}"
            old = result["baseline"]["findings"] if two else None
            new = result["new"]["findings"]
            added, removed = compare(old, new) if two else ([], [])
            result["added"], result["removed"] = added, removed
            result["rules"] = per_rule(old, new, added, removed)
            if args.parse_time:
                result["parse_seconds"], result["parse_files"] = parse_seconds(tree, target)
            (args.out / "findings" / f"{entry.name}.json").write_text(json.dumps(new, indent=0) + "\n", encoding="utf-8")
            if args.sample:
                picked = sample(entry.name, new, args.sample, args.seed)
                for f in picked:
                    f["source"] = source_line(tree, f)
                samples[entry.name] = picked
                (args.out / "sample").mkdir(exist_ok=True)
                counts = {c: v["new"] for c, v in result["rules"].items() if v["new"]}
                (args.out / "sample" / f"{entry.name}.md").write_text(
                    sample_markdown(entry.name, tree, picked, counts, args.seed) + "\n", encoding="utf-8")
            times = " -> ".join(f"{result[s]['seconds']:.1f}" for s in versions)
            print(f"{entry.name}: {result['status']} ({times} s)", file=sys.stderr, flush=True)

    meta = {"baseline": args.baseline, "src": str(new_src), "jobs": args.jobs}
    print(tables(results, two))
    for r in results:  # the findings lists live in findings/NAME.json; the summary keeps the rest
        for side in versions:
            if side in r:
                r[side] = {k: v for k, v in r[side].items() if k != "findings"}
    (args.out / "ecosystem.json").write_text(json.dumps({**meta, "results": results}, indent=1) + "\n", encoding="utf-8")
    (args.out / "ecosystem.md").write_text(markdown(results, two, meta), encoding="utf-8")
    if args.sample:
        (args.out / "sample.json").write_text(json.dumps({"seed": args.seed, "n": args.sample, "samples": samples}, indent=1) + "\n", encoding="utf-8")
    print(f"\ndetails: {args.out / 'ecosystem.md'}, {args.out / 'ecosystem.json'}" + (f"; sample: {args.out / 'sample'}" if args.sample else ""))
    return 0 if all(r["status"] == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
