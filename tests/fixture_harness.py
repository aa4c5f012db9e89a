"""The fixtures (`fixtures/README.md` shows the layout) and how the tests run them.

Detection cases: a line ending in `# expect: RPL101` (several codes comma-separated) must
produce exactly those findings on that line; every other line must produce none.
Single-file cases live in `fixtures/<CODE>/*.py`; multi-file projects in
`fixtures/projects/<name>/` (checked as one project, every `.py` file in it annotated the
same way).

Golden fix pairs: `<case>.py` becomes `<case>.fixed.py` under `repro-lint --fix`, byte for
byte (line endings, BOM, encoding included), and a second `--fix` changes nothing. A rule's
pairs live in `fixtures/<CODE>/fix/`; `fixtures/style/` holds pairs about the layout of what
fixes write, whatever the rule, and `fixtures/combined/` pairs where several rules' fixes
meet in one file. A case may have `<case>.toml`: its `[tool.repro-lint]` table configures
the run, and a top-level `unsafe = true` adds `--unsafe-fixes`.

A family of rules (the codes of one prefix: RPL1 seeding, RPL2 processes, ...) has one
driver in `tests/rules/<family>/`, made by `family_driver`: it finds the family's folders by
their prefix, so a new rule's fixtures run without editing a test.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from repro_lint.discover.config import Config
from repro_lint.check.run import run_check
from repro_lint.check.select import select

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")
RULE_FOLDER = re.compile(r"RPL\d{3}")
# the folders of fixtures/ that belong to no single rule, and the tests that run them
SHARED_FOLDERS = {
    "style": "tests/fix/test_fix_style_cases.py",
    "combined": "tests/rules/determinism/test_determinism_fix.py",
    "projects": "tests/rules/test_projects.py",
    "fix_projects": "tests/fix/test_fix_projects.py",
}


# -- where the cases are ----------------------------------------------------------------
def rule_folders(family: str = "RPL") -> list[Path]:
    """The rule folders (`fixtures/RPL101/`, ...) whose code starts with `family`."""
    return sorted(p for p in FIXTURES.glob(f"{family}*") if p.is_dir() and RULE_FOLDER.fullmatch(p.name))


def families() -> list[str]:
    """The family prefixes (`RPL1`, ...) that have a rule folder."""
    return sorted({p.name[:4] for p in rule_folders()})


def single_file_cases(family: str = "RPL") -> list[Path]:
    return sorted(p for folder in rule_folders(family) for p in folder.glob("*.py"))


def project_cases() -> list[Path]:
    return sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir()) if (FIXTURES / "projects").is_dir() else []


def pairs_in(folder: Path) -> list[Path]:
    """The golden cases of a folder: every `.py` but the `.fixed.py` results."""
    return sorted(p for p in folder.glob("*.py") if not p.name.endswith(".fixed.py"))


def golden_cases(family: str = "RPL") -> list[Path]:
    return [p for folder in rule_folders(family) for p in pairs_in(folder / "fix")]


def fixed_of(case: Path) -> Path:
    return case.with_name(case.stem + ".fixed.py")


def case_id(case: Path) -> str:
    """`RPL101/aliases.py` for a detection case, `RPL101/bom` for a rule's golden pair,
    `style/long_call` for a shared one."""
    if case.parent.name == "fix":
        return f"{case.parent.parent.name}/{case.stem}"
    if case.name.endswith(".py") and RULE_FOLDER.fullmatch(case.parent.name):
        return f"{case.parent.name}/{case.name}"
    return f"{case.parent.name}/{case.stem}"


# -- detection --------------------------------------------------------------------------
def expected_findings(root: Path) -> set[tuple[str, int, str]]:
    out = set()
    for py in sorted(root.rglob("*.py")):
        for lineno, line in enumerate(py.read_text(encoding="utf-8").splitlines(), 1):
            m = EXPECT.search(line)
            if m:
                for code in m.group(1).split(","):
                    if code.strip():
                        out.add((py.relative_to(root).as_posix(), lineno, code.strip()))
    return out


def actual_findings(root: Path, config: Config | None = None, only: list[str] | None = None) -> set[tuple[str, int, str]]:
    cfg = config or Config()
    if only:
        cfg.select = list(only)
    report = run_check([root], cfg, root=root, jobs=1, use_cache=False)
    assert not report.errors, report.errors
    out = set()
    for f in select(report, cfg):
        rel = Path(f.location.path).resolve().relative_to(root.resolve()).as_posix()
        out.add((rel, f.location.line, f.code))
    return out


def materialise(src: Path, tmp: Path) -> Path:
    """Copy a fixture into a fresh project root so that nothing else is indexed with it."""
    root = tmp / "case"
    if src.is_dir():
        shutil.copytree(src, root)
    else:
        root.mkdir()
        shutil.copy(src, root / src.name)
    if not (root / "pyproject.toml").exists():
        (root / "pyproject.toml").write_text('[project]\nname = "case"\nversion = "0"\n')
    return root


# -- golden fix pairs -------------------------------------------------------------------
def make_case(case: Path, tmp: Path) -> tuple[Path, Path, list[str]]:
    """A project holding the case; returns (root, the copied file, extra CLI arguments)."""
    root = tmp / "proj"
    root.mkdir()
    settings = case.with_suffix(".toml")
    head = ""
    args = []
    if settings.exists():
        head = settings.read_text(encoding="utf-8")
        if tomllib.loads(head).get("unsafe") is True:
            args.append("--unsafe-fixes")
    (root / "pyproject.toml").write_text(head + '\n[project]\nname = "case"\nversion = "0"\n', encoding="utf-8")
    target = root / case.name
    target.write_bytes(case.read_bytes())
    return root, target, args


# What the command line reads from the environment besides its arguments: unset for an
# in-process run, so that one test's (or the user's) setting cannot change another's output.
OUTPUT_SETTINGS = ("REPRO_LINT_OUTPUT_FORMAT", "NO_COLOR", "REPRO_LINT_DEBUG")


def in_process(monkeypatch, capsys):
    """`repro-lint ARGS` run through its entry point `repro_lint.cli.main.main` in this
    process, called as conftest's `cli` (a subprocess) is: `run(*args, cwd=..., env=...)`
    gives a `CompletedProcess`. The working folder and the environment are put back after
    each call; the cache stays off or in the test run's folder (conftest)."""
    from repro_lint.cli.main import main

    def run(*args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
        capsys.readouterr()
        with monkeypatch.context() as m:
            m.chdir(cwd)
            for name in OUTPUT_SETTINGS:
                m.delenv(name, raising=False)
            for name, value in (env or {}).items():
                m.setenv(name, value)
            rc = main([str(a) for a in args])
        out = capsys.readouterr()
        return subprocess.CompletedProcess(["repro-lint", *map(str, args)], rc, out.out, out.err)

    return run


def assert_golden_fix(case: Path, tmp_path: Path, cli, command: tuple[str, ...] = ()) -> None:
    """`--fix` turns the case into its `.fixed.py` byte for byte, saying so when it changes
    it, and a second `--fix` changes nothing. `cli` runs the command line (`in_process`, or
    conftest's `cli` for a subprocess); `command` goes before the options (`check`)."""
    root, target, args = make_case(case, tmp_path)
    expected = fixed_of(case).read_bytes()
    r = cli(*command, "--fix", "--no-cache", *args, target.name, cwd=root)
    assert r.returncode in (0, 1), r.stderr + r.stdout
    got = target.read_bytes()
    assert got == expected, (
        f"--fix output differs from {case.stem}.fixed.py\n--- got ---\n{got.decode('utf-8', 'replace')}\n"
        f"--- stdout ---\n{r.stdout}\n--- stderr ---\n{r.stderr}"
    )
    if expected != case.read_bytes():
        assert "Fixed " in r.stdout
    again = cli(*command, "--fix", "--no-cache", *args, target.name, cwd=root)
    assert again.returncode in (0, 1), again.stderr
    assert target.read_bytes() == expected, "a second --fix changed the file"
    assert "Fixed " not in again.stdout


def smoke_case(family: str) -> list[Path]:
    """The family's first golden pair that `--fix` changes (one, or none), for the one run
    of the family through a real `python -m repro_lint` process."""
    changed = [p for p in golden_cases(family) if fixed_of(p).read_bytes() != p.read_bytes()]
    return changed[:1]


# -- one driver per family --------------------------------------------------------------
def family_driver(family: str):
    """The tests of one family's fixture folders (`fixtures/<family>*/`): its detection
    cases, its golden fix pairs run in process, and one pair through a subprocess.
    A driver module binds them: `test_detection, test_golden_fix, test_fix_in_a_subprocess
    = family_driver("RPL1")` (tests/house/test_fixture_layout.py finds the drivers)."""

    @pytest.mark.parametrize("case", single_file_cases(family), ids=case_id)
    def test_detection(case, tmp_path):
        # a rule's fixture folder checks that rule's family (RPL101/ -> RPL1): other families'
        # findings on the same code are covered by their own fixtures and the project cases
        root = materialise(case, tmp_path)
        assert actual_findings(root, only=[case.parent.name[:4]]) == expected_findings(root)

    @pytest.mark.parametrize("case", golden_cases(family), ids=case_id)
    def test_golden_fix(case, tmp_path, monkeypatch, capsys):
        assert_golden_fix(case, tmp_path, in_process(monkeypatch, capsys))

    @pytest.mark.parametrize("case", smoke_case(family), ids=case_id)
    def test_fix_in_a_subprocess(case, tmp_path, cli):
        assert_golden_fix(case, tmp_path, cli, ("check",))

    return test_detection, test_golden_fix, test_fix_in_a_subprocess
