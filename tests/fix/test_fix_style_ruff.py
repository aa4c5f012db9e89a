"""Fixed files keep the project's style, as the real ruff judges it.

Every golden pair under `fixtures/` (the rules' `fix/` cases, `combined/`, `style/` and the
files of the golden projects, `fix_projects/`) is laid out as a project of its own, with the case's configuration (`<case>.toml`, where a
`[tool.ruff] line-length` is set), once with the original and once with the fixed file.
Where ruff passes the original, it must pass the fixed file: `ruff check --select I,E501`
(import sorting, line length) and `ruff format --check`. The golden tests prove the fixed
files are what `--fix` writes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_harness import FIXTURES, make_case

ruff = pytest.importorskip("ruff", reason="ruff is in the test extra")

def _utf8(path: Path) -> bool:
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return False  # ruff reads UTF-8 only (the latin-1 case is about encodings, not style)
    return True


PAIRS = sorted(
    p for p in FIXTURES.rglob("*.py")
    if not p.name.endswith(".fixed.py") and p.with_name(p.stem + ".fixed.py").exists() and _utf8(p)
)


def _tree(tmp: Path, fixed: bool) -> Path:
    top = tmp / ("fixed" if fixed else "original")
    top.mkdir()
    for case in PAIRS:
        folder = top / "__".join(case.relative_to(FIXTURES).with_suffix("").parts)
        folder.mkdir()
        root, target, _ = make_case(case, folder)
        if fixed:
            target.write_bytes(case.with_name(case.stem + ".fixed.py").read_bytes())
    return top


def _ruff(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=cwd, capture_output=True, text=True)


def _check(top: Path) -> dict:
    """case folder -> sorted ruff codes (I001, E501) of its file."""
    r = _ruff("check", "--select", "I,E501", "--output-format", "json", "--no-cache", "--exit-zero", ".", cwd=top)
    assert r.returncode == 0, r.stderr
    out: dict = {}
    for item in json.loads(r.stdout):
        case = Path(item["filename"]).resolve().relative_to(top.resolve()).parts[0]
        out.setdefault(case, []).append(item["code"])
    return {k: sorted(v) for k, v in out.items()}


def _unformatted(top: Path) -> set:
    r = _ruff("format", "--check", "--no-cache", ".", cwd=top)
    assert r.returncode in (0, 1), r.stderr
    return {Path(m).parts[0] for m in re.findall(r"Would reformat: (\S+)", r.stdout)}


@pytest.mark.slow
def test_fixed_files_pass_ruff_where_the_originals_did(tmp_path):
    assert len(PAIRS) > 60 and any(p.parent.name == "style" for p in PAIRS)
    original, fixed = _tree(tmp_path, False), _tree(tmp_path, True)
    before, after = _check(original), _check(fixed)
    clean = [p for p in (d.name for d in original.iterdir()) if p not in before]
    assert len(clean) > 40, "most originals are written to pass ruff; the comparison must cover them"
    lint = {case: after[case] for case in clean if case in after}
    assert not lint, f"ruff I/E501 findings that the originals did not have: {lint}"
    unformatted_before, unformatted_after = _unformatted(original), _unformatted(fixed)
    assert len(unformatted_before) < len(PAIRS)
    regressed = sorted(unformatted_after - unformatted_before)
    assert not regressed, f"`ruff format --check` fails on fixed files whose originals pass: {regressed}"


@pytest.mark.slow
def test_the_line_length_comes_from_the_ruff_configuration(tmp_path):
    """The same program wraps a call at 88 by default and keeps it on one line under a
    configured `line-length = 119`; ruff agrees with both results."""
    default = (FIXTURES / "style" / "long_call.fixed.py").read_text(encoding="utf-8")
    wide = (FIXTURES / "style" / "long_call_119.fixed.py").read_text(encoding="utf-8")
    assert max(len(line) for line in default.splitlines()) <= 88 < max(len(line) for line in wide.splitlines()) <= 119
    folder = tmp_path / "wide"
    folder.mkdir()
    root, target, _ = make_case(FIXTURES / "style" / "long_call_119.py", folder)
    target.write_text(wide, encoding="utf-8")
    assert _ruff("check", "--select", "I,E501", "--no-cache", target.name, cwd=root).returncode == 0
    assert _ruff("check", "--isolated", "--select", "E501", "--no-cache", target.name, cwd=root).returncode == 1
