"""Fixtures annotated with the findings they must produce.

A line ending in `# expect: RPL101` (several codes comma-separated) must produce exactly
those findings on that line; every other line must produce none. Single-file fixtures live
in `fixtures/<CODE>/*.py`; multi-file projects in `fixtures/projects/<name>/` (checked as one
project, every `.py` file in it annotated the same way).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from repro_lint.discover.config import Config
from repro_lint.check.run import run_check
from repro_lint.check.select import select

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")


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


def single_file_cases() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("RPL*/*.py"))


def project_cases() -> list[Path]:
    return sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir()) if (FIXTURES / "projects").is_dir() else []


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
