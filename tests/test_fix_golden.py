"""Golden fix pairs: `fixtures/fix/<CODE>/<case>.py` becomes `<case>.fixed.py` under `--fix`
(`fixtures/fix/style/` holds cases about the layout of what fixes write, whatever the rule).

Each case is copied into a fresh project (with a pyproject.toml) and `repro-lint --fix` runs
on it in a subprocess; the result is compared byte for byte (line endings, BOM, encoding
included). A case may have `<case>.toml`: its `[tool.repro-lint]` table configures the run,
and a top-level `unsafe = true` adds `--unsafe-fixes`. A second `--fix` must change nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
FIX_FIXTURES = REPO / "fixtures" / "fix"


def golden_cases() -> list[Path]:
    if not FIX_FIXTURES.is_dir():
        return []
    cases = [*FIX_FIXTURES.glob("RPL*/*.py"), *FIX_FIXTURES.glob("style/*.py")]
    return sorted(p for p in cases if not p.name.endswith(".fixed.py"))


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


def test_cases_are_found():
    codes = {p.parent.name for p in golden_cases()}
    assert {"RPL101", "RPL102", "style"} <= codes
    for case in golden_cases():
        assert case.with_name(case.stem + ".fixed.py").exists(), f"{case} has no .fixed.py"


@pytest.mark.parametrize("case", golden_cases(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_fix(case, tmp_path, cli):
    root, target, args = make_case(case, tmp_path)
    expected = case.with_name(case.stem + ".fixed.py").read_bytes()
    r = cli("--fix", "--no-cache", *args, target.name, cwd=root)
    assert r.returncode in (0, 1), r.stderr + r.stdout
    got = target.read_bytes()
    assert got == expected, (
        f"--fix output differs from {case.stem}.fixed.py\n--- got ---\n{got.decode('utf-8', 'replace')}\n"
        f"--- stdout ---\n{r.stdout}\n--- stderr ---\n{r.stderr}"
    )
    if expected != case.read_bytes():
        assert "Fixed " in r.stdout
    again = cli("--fix", "--no-cache", *args, target.name, cwd=root)
    assert again.returncode in (0, 1), again.stderr
    assert target.read_bytes() == expected, "a second --fix changed the file"
    assert "Fixed " not in again.stdout
