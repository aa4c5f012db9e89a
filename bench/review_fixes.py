"""Review `repro-lint --fix` on real repositories the way a maintainer reviews a pull request.

    python bench/review_fixes.py [--repos DIR] [--list bench/review_repos.txt] [--mirrors DIR]
                                 [--src SRC] [--out DIR] [--only NAME,...]

Each repository of the list (a plain checkout under `--repos/NAME`; with `--mirrors` a
missing one is extracted from a fetched bare mirror `MIRRORS/OWNER+REPO/repo` at the
listed commit) is copied to a temporary folder and fixed there, never in place (all of it,
or the listed folder of it, with the repository's configuration in force):

1. `repro-lint check --fix`, then the same again (it must change nothing);
2. `repro-lint check --fix --unsafe-fixes`, then the same again (likewise).

The tool under test runs from `--src` (default: this checkout's `src`), so the same script
measures any version. The result after step 2 is compared with the original, per repository:

- hunks / files: size of the change (unified diff, 3 lines of context);
- import-time: statements with effects (anything but imports, definitions, docstrings and
  constant assignments) added at module level of a module that another project module
  imports (or a Hydra `_target_:` line of a YAML file names), of a package `__init__.py`,
  or of a package's module without a `__main__` block (its users import it): they run
  when the module is imported;
- SEED(user): new module-level `SEED = ...` constants in a file where the user's seed is
  at hand: the file, or a project module that imports it (directly or through others), has
  a seeding call with a non-literal seed, reads an attribute `.seed` (`args.seed`,
  `cfg.seed`), takes a `seed` parameter or defines a `--seed` option; SEED(all) counts
  every new constant;
- tests: edited test files (`tests/`, `test_*.py`, `*_test.py`, `conftest.py`);
- I001+ / E501+: ruff findings the fixes add (`ruff check --select I001,E501` at the
  project's line length, before vs after, counted per file); fmt+: changed files that
  passed `ruff format --check` before and fail after;
- 2nd-fix: files that the repeated `--fix` (safe, then unsafe) changed again;
- compile: changed files that no longer compile;
- not-applied: fixes the tool refused, with its reason (information, not a defect).

Every column but `fixes`, `hunks`, `files` and `not-applied` must be 0. The table goes to
stdout; `OUT/review.json` holds the figures and, for every non-zero figure, the places
(`file:line`) it comes from; `OUT/NAME.diff` holds each repository's change for reading.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(SRC))

from repro_lint.fix.style import style_for  # noqa: E402  (the project's line length, as fixes read it)

sys.path.insert(0, str(HERE))  # beside this script, also when it is loaded by path (tests)
from repos import Entry, extract, read_list  # noqa: E402

SEEDING_CALLS = frozenset({
    "seed", "manual_seed", "manual_seed_all", "set_seed", "seed_everything", "seed_all", "init_seeds",
    "fix_seed", "set_random_seed", "setup_seed", "random_seed", "seed_torch", "set_seeds",
})
TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$")
COLUMNS = (
    ("fixes", "fixes"), ("hunks", "hunks"), ("files", "files"), ("import_time", "import-time"),
    ("seed_user", "SEED(user)"), ("seed_all", "SEED(all)"), ("tests", "tests"), ("i001", "I001+"),
    ("e501", "E501+"), ("fmt", "fmt+"), ("second_fix", "2nd-fix"), ("compile", "compile"),
    ("not_applied", "not-applied"),
)
MUST_BE_ZERO = ("import_time", "seed_user", "seed_all", "tests", "i001", "e501", "fmt", "second_fix", "compile")


@dataclass
class Result:
    name: str
    status: str = "ok"
    fixes: int = 0
    hunks: int = 0
    files: int = 0
    import_time: int = 0
    seed_user: int = 0
    seed_all: int = 0
    tests: int = 0
    i001: int = 0
    e501: int = 0
    fmt: int = 0
    second_fix: int = 0
    compile: int = 0
    not_applied: int = 0
    where: dict = field(default_factory=dict)  # column -> ["file:line what", ...]
    seconds: float = 0.0

    def note(self, column: str, text: str) -> None:
        self.where.setdefault(column, []).append(text)


# -- running the tools ------------------------------------------------------------------------
def run_fix(tree: Path, src: Path, unsafe: bool, target: str = ".") -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=str(src), NO_COLOR="1")
    args = [sys.executable, "-m", "repro_lint", "check", "--fix", "--no-cache", "--exit-zero", "--no-color", target]
    if unsafe:
        args.insert(4, "--unsafe-fixes")
    r = subprocess.run(args, cwd=tree, env=env, capture_output=True, text=True, timeout=3600)
    fixed = sum(int(n) for n in re.findall(r"Fixed (\d+)", r.stdout))
    return fixed, r.stderr


def snapshot(tree: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(tree.rglob("*.py")):
        if ".repro_lint_cache" in path.parts or not path.is_file():
            continue
        try:
            out[path.relative_to(tree).as_posix()] = path.read_bytes()
        except OSError:
            continue
    return out


def changed(a: dict, b: dict) -> list[str]:
    return sorted(k for k in b if a.get(k) != b[k])


def _isolated(style) -> list[str]:
    """ruff arguments that stand for the project's settings when its own configuration is one
    this ruff version refuses (an unknown rule code): the settings fixes follow."""
    out = ["--isolated", "--config", f"lint.isort.lines-after-imports = {style.lines_after_imports}"]
    if style.force_sort_within_sections:
        out += ["--config", "lint.isort.force-sort-within-sections = true"]
    if style.known_first_party:
        out += ["--config", f"lint.isort.known-first-party = {json.dumps(sorted(style.known_first_party))}"]
    return out


def ruff_counts(tree: Path, files: list[str], root: Path) -> tuple[Counter, dict, set]:
    """(I001/E501 counts per (file, code), their lines, files failing `ruff format --check`)."""
    counts: Counter = Counter()
    lines: dict = {}
    if not files:
        return counts, lines, set()
    groups: dict = {}
    for f in files:
        groups.setdefault(style_for(root / f, root), []).append(f)
    failing = set()
    for style, group in groups.items():
        for own in ((), _isolated(style)):
            r = subprocess.run(
                ["ruff", "check", *own, "--select", "I001,E501", "--line-length", str(style.line_length),
                 "--output-format", "json", "--no-cache", "--exit-zero", *group],
                cwd=tree, capture_output=True, text=True,
            )
            if r.returncode == 0:
                break
        try:
            items = json.loads(r.stdout or "[]")
        except json.JSONDecodeError:
            items = []
        for item in items:
            rel = Path(item["filename"]).resolve().relative_to(tree.resolve()).as_posix()
            counts[(rel, item["code"])] += 1
            lines.setdefault((rel, item["code"]), []).append(item["location"]["row"])
        for f in group:
            for own in ((), _isolated(style)):
                r = subprocess.run(
                    ["ruff", "format", *own, "--check", "--line-length", str(style.line_length), "--no-cache", f],
                    cwd=tree, capture_output=True, text=True,
                )
                if r.returncode in (0, 1):
                    break
            if r.returncode == 1:
                failing.add(f)
    return counts, lines, failing


# -- reading the result -------------------------------------------------------------------------
def parse(text: bytes):
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def module_names(rel: str, roots: list[str]) -> set[str]:
    """Dotted names a file can be imported as, from each import root."""
    out = set()
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    for root in roots:
        prefix = [p for p in root.split("/") if p]
        if parts[:len(prefix)] == prefix and len(parts) > len(prefix):
            out.add(".".join(parts[len(prefix):]))
    return out


def imported_names(tree: ast.AST, rel: str) -> set[str]:
    """Module names a file imports (anywhere in it), relative imports resolved, with parents."""
    package = rel[:-3].split("/")[:-1]
    if rel.endswith("__init__.py"):
        package = rel[:-3].split("/")[:-1]
    out = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1] if node.level - 1 <= len(package) else []
                mod = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                mod = node.module or ""
            names = [mod, *(f"{mod}.{a.name}" for a in node.names)]
        for name in names:
            bits = name.split(".")
            out.update(".".join(bits[:i]) for i in range(1, len(bits) + 1))
    return out


_TARGET = re.compile(r"""^\s*_target_\s*:\s*["']?([A-Za-z_][\w.]*)""", re.MULTILINE)


def hydra_targets(root: Path) -> dict[str, set]:
    """YAML file -> module names its `_target_:` lines name (with their parent packages)."""
    out: dict[str, set] = {}
    for path in [*root.rglob("*.yaml"), *root.rglob("*.yml")]:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for dotted_name in _TARGET.findall(text):
            bits = dotted_name.split(".")
            names = {".".join(bits[:i]) for i in range(1, len(bits) + 1)}
            out.setdefault(path.relative_to(root).as_posix(), set()).update(names)
    return out


def user_seed(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            values = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "seed")]
            if name in SEEDING_CALLS and any(not isinstance(v, ast.Constant) for v in values):
                return True
            if name == "add_argument" and any(isinstance(a, ast.Constant) and a.value in ("--seed", "-seed", "--random-seed", "--random_seed") for a in node.args):
                return True
        elif isinstance(node, ast.arguments):
            if any(a.arg == "seed" for a in [*node.posonlyargs, *node.args, *node.kwonlyargs]):
                return True
    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return any(isinstance(n, ast.Attribute) and n.attr == "seed" and id(n) not in calls and isinstance(n.ctx, ast.Load) for n in ast.walk(tree))


def _is_main_guard(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test) and "__name__" in ast.unparse(stmt.test)


def module_level(tree: ast.Module) -> list[ast.stmt]:
    """Statements that run on import: the module's, inside module-level `if`/`try`/`with` too."""
    out = []
    todo = list(tree.body)
    while todo:
        stmt = todo.pop(0)
        if _is_main_guard(stmt):
            continue
        if isinstance(stmt, (ast.If, ast.Try, ast.With)):
            todo[:0] = [*stmt.body, *getattr(stmt, "orelse", []), *getattr(stmt, "finalbody", []),
                        *(s for h in getattr(stmt, "handlers", []) for s in h.body)]
            continue
        out.append(stmt)
    return out


def has_effect(stmt: ast.stmt) -> bool:
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass)):
        return False
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return False
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Constant):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return not all(isinstance(t, ast.Name) for t in targets)
    return True


def package_module(rel: str, tree, files: dict) -> bool:
    """A module of an installable package (its folder has an `__init__.py`) with no
    `__main__` block: whoever installs the package imports it (`timm.models.registry`)."""
    folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
    if not folder or f"{folder}/__init__.py" not in files or rel.endswith("__main__.py") or tree is None:
        return False
    return not any(_is_main_guard(stmt) for stmt in tree.body)


def is_seed_constant(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "SEED" for t in stmt.targets)


def hunks(rel: str, old: bytes, new: bytes) -> tuple[int, str]:
    a = old.decode("utf-8", "replace").splitlines(keepends=True)
    b = new.decode("utf-8", "replace").splitlines(keepends=True)
    diff = "".join(difflib.unified_diff(a, b, f"a/{rel}", f"b/{rel}"))
    return diff.count("\n@@ ") + diff.startswith("@@ "), diff


def review(entry: Entry, repos: Path, src: Path, out: Path, work: Path) -> Result:
    import time

    result = Result(entry.name)
    start = time.monotonic()
    origin = repos / entry.name
    target = entry.subdir or "."  # a folder is fixed inside its repository: its configuration applies
    if not (origin / target).is_dir():
        result.status = "missing"
        return result
    pristine = work / entry.name / "orig"
    tree = work / entry.name / "fixed"
    ignore = shutil.ignore_patterns(".git", ".repro_lint_cache", "__pycache__")
    shutil.copytree(origin, pristine, symlinks=True, ignore=ignore)
    shutil.copytree(origin, tree, symlinks=True, ignore=ignore)
    before = snapshot(tree)

    fixed, err1 = run_fix(tree, src, unsafe=False, target=target)
    broken = [ln for ln in err1.splitlines() if "internal error" in ln or ln.startswith("Traceback")]
    if broken:
        result.status = f"tool failed: {broken[0][:120]}"
        return result
    safe = snapshot(tree)
    _, _ = run_fix(tree, src, unsafe=False, target=target)
    again = snapshot(tree)
    for rel in changed(safe, again):
        result.note("second_fix", f"{rel} (safe)")
    fixed_unsafe, err2 = run_fix(tree, src, unsafe=True, target=target)
    after = snapshot(tree)
    _, _ = run_fix(tree, src, unsafe=True, target=target)
    final = snapshot(tree)
    for rel in changed(after, final):
        result.note("second_fix", f"{rel} (unsafe)")
    result.second_fix = len(result.where.get("second_fix", []))
    result.fixes = fixed + fixed_unsafe
    errors = [ln for ln in (err1 + err2).splitlines() if "fix not applied" in ln or "fix not written" in ln]
    result.not_applied = len(errors)
    if errors:
        result.where["not_applied"] = errors

    files = changed(before, after)
    result.files = len(files)
    diffs = []
    for rel in files:
        n, diff = hunks(rel, before.get(rel, b""), after[rel])
        result.hunks += n
        diffs.append(diff)
    (out / f"{entry.name}.diff").write_text("".join(diffs), encoding="utf-8")

    # who imports whom, among the project's non-test modules
    trees = {rel: parse(data) for rel, data in before.items()}
    # a module is importable by its dotted name from the root (or `src/`) by every file, and
    # by its plain name from its own folder by the scripts beside it (`from utils import x`)
    by_name: dict[str, set] = {}
    beside: dict[tuple, set] = {}
    for rel in before:
        folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
        for m in module_names(rel, ["", "src"]):
            by_name.setdefault(m, set()).add(rel)
        for m in module_names(rel, [folder]):
            beside.setdefault((folder, m), set()).add(rel)
    importers: dict[str, set] = {rel: set() for rel in before}
    for rel, t in trees.items():
        if t is None or TEST_PATH.search(rel):
            continue
        folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
        for m in imported_names(t, rel):
            for target in by_name.get(m, set()) | beside.get((folder, m), set()):
                if target != rel:
                    importers[target].add(rel)
    # Hydra imports what a `_target_` names, in the programs that instantiate configurations
    users = {rel for rel, data in before.items() if b"hydra" in data and (b"instantiate(" in data or b"hydra.main" in data)}
    for names in hydra_targets(origin).values():
        for m in names:
            for target in by_name.get(m, ()):
                importers[target].update(users - {target})
    seeds = {rel: bool(t is not None and user_seed(t)) for rel, t in trees.items()}

    def seed_at_hand(rel: str) -> bool:
        """The file, or a module that imports it (directly or through others), has the
        user's seed. (A module it imports does not count: another program's `--seed` in
        a training script that an evaluation script imports a class from is not its seed.
        Nor do its importers' seeds when the file has a `__main__` block of its own: a
        constant there serves that block's program, e.g. a model module's self-test.)"""
        tree = trees.get(rel)
        if tree is not None and any(_is_main_guard(s) for s in tree.body):
            return seeds.get(rel, False)
        seen, todo = set(), [rel]
        while todo:
            cur = todo.pop()
            if cur in seen:
                continue
            seen.add(cur)
            if seeds.get(cur):
                return True
            todo.extend(importers.get(cur, ()))
        return False

    for rel in files:
        new_tree = parse(after[rel])
        if new_tree is None or compile_fails(after[rel], rel):
            result.compile += 1
            result.note("compile", rel)
            continue
        if TEST_PATH.search(rel):
            result.tests += 1
            result.note("tests", rel)
        old_tree = trees.get(rel)
        old_stmts = Counter(ast.unparse(s) for s in module_level(old_tree)) if old_tree is not None else Counter()
        library = rel.endswith("__init__.py") or bool(importers.get(rel)) or package_module(rel, old_tree, before)
        for stmt in module_level(new_tree):
            code = ast.unparse(stmt)
            if old_stmts[code] > 0:
                old_stmts[code] -= 1
                continue
            if is_seed_constant(stmt):
                result.seed_all += 1
                result.note("seed_all", f"{rel}:{stmt.lineno}")
                if seed_at_hand(rel):
                    result.seed_user += 1
                    result.note("seed_user", f"{rel}:{stmt.lineno}")
            elif library and has_effect(stmt):
                result.import_time += 1
                result.note("import_time", f"{rel}:{stmt.lineno} {code.splitlines()[0][:80]}")

    root = tree
    old_counts, _, old_fmt = ruff_counts(pristine, files, pristine)
    new_counts, new_lines, new_fmt = ruff_counts(tree, files, root)
    for (rel, code), n in sorted(new_counts.items()):
        extra = n - old_counts.get((rel, code), 0)
        if extra > 0:
            column = "i001" if code == "I001" else "e501"
            setattr(result, column, getattr(result, column) + extra)
            result.note(column, f"{rel}:{','.join(map(str, new_lines[(rel, code)][:6]))} (+{extra})")
    for rel in sorted(new_fmt - old_fmt):
        result.fmt += 1
        result.note("fmt", rel)
    result.seconds = round(time.monotonic() - start, 1)
    return result


def compile_fails(data: bytes, rel: str) -> bool:
    try:
        compile(data, rel, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return True
    return False


def table(results: list[Result]) -> str:
    heads = ["repository", *(h for _, h in COLUMNS)]
    rows = []
    for r in results:
        if r.status != "ok":
            rows.append([r.name, r.status, *([""] * (len(COLUMNS) - 1))])
        else:
            rows.append([r.name, *(str(getattr(r, k)) for k, _ in COLUMNS)])
    ok = [r for r in results if r.status == "ok"]
    rows.append(["total", *(str(sum(getattr(r, k) for r in ok)) for k, _ in COLUMNS)])
    widths = [max(len(x[i]) for x in [heads, *rows]) for i in range(len(heads))]
    line = lambda cells: "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))) + " |"
    sep = "|" + "|".join("-" * (w + 2) if i == 0 else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|"
    return "\n".join([line(heads), sep, *(line(r) for r in rows)])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repos", type=Path, default=Path(tempfile.gettempdir()) / "repos" / "review", help="folder of checkouts, one per list name")
    p.add_argument("--list", type=Path, default=HERE / "review_repos.txt")
    p.add_argument("--mirrors", type=Path, help="extract missing checkouts from fetched mirrors here")
    p.add_argument("--src", type=Path, default=SRC, help="the repro-lint sources to test (a checkout's src, beside its rules/)")
    p.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "review_fixes")
    p.add_argument("--only", default="", help="comma-separated names from the list")
    args = p.parse_args(argv)
    if shutil.which("ruff") is None:
        print("review_fixes: ruff is not installed (pip install -e '.[test]')", file=sys.stderr)
        return 2
    entries = read_list(args.list)
    if args.only:
        wanted = set(args.only.split(","))
        entries = [e for e in entries if e.name in wanted]
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="review_fixes.") as tmp:
        for entry in entries:
            if args.mirrors and not (args.repos / entry.name).is_dir():
                problem = extract(entry, args.mirrors, args.repos / entry.name)
                if problem:
                    print(f"{entry.name}: not extracted: {problem}", file=sys.stderr)
            try:
                result = review(entry, args.repos, args.src.resolve(), args.out, Path(tmp))
            except (OSError, subprocess.SubprocessError) as exc:
                result = Result(entry.name, status=f"failed: {exc}")
            print(f"{entry.name}: {result.status} ({result.seconds} s)", file=sys.stderr)
            results.append(result)
    print(table(results))
    bad = [r.name for r in results if r.status == "ok" and any(getattr(r, k) for k in MUST_BE_ZERO)]
    (args.out / "review.json").write_text(
        json.dumps({"src": str(args.src), "results": [asdict(r) for r in results], "not_zero": bad}, indent=1) + "\n",
        encoding="utf-8",
    )
    print(f"\ndetails: {args.out / 'review.json'}; diffs: {args.out}/NAME.diff")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
