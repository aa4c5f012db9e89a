"""Every fixture in the repository, and a sample of real code, goes through `--fix` twice:
the result compiles, the second pass changes nothing, and no finding is new."""

from __future__ import annotations

import json
import shutil
import sys
import sysconfig
from collections import Counter
from pathlib import Path

import pytest

from repro_lint.core import catalog
from repro_lint.cli.main import main
from repro_lint.discover.config import Config
from repro_lint.check.run import run_check
from repro_lint.check.select import select
from repro_lint.fix.rounds import finding_key

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
EXEMPT = tuple(catalog.load("fixes")["recheck"]["revealed-by-intent"])


def fixture_cases() -> list[Path]:
    projects = FIXTURES / "projects"
    cases = [p for p in sorted(projects.iterdir()) if p.is_dir()] if projects.is_dir() else []
    cases += sorted(p for p in FIXTURES.rglob("*.py") if projects not in p.parents)
    return cases


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.py"))}


def compiles(data: bytes, name: str) -> bool:
    try:
        compile(data, name, "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError):
        return False


def keys(findings) -> Counter:
    return Counter(finding_key(f) for f in findings if not f.code.startswith(EXEMPT))


def check_keys(root: Path) -> Counter:
    cfg = Config()
    report = run_check([root], cfg, root=root, use_cache=False)
    return keys(select(report, cfg))


def assert_fix_is_sound(before: dict, after: dict, again: dict, found_before: Counter, found_after: Counter):
    for name, data in after.items():
        if compiles(before.get(name, b""), name):
            assert compiles(data, name), f"{name} no longer compiles after --fix"
    assert again == after, f"a second --fix changed {[n for n in after if again.get(n) != after[n]]}"
    new = found_after - found_before
    assert not new, f"--fix added findings: {sorted(new)}"


@pytest.mark.parametrize("case", fixture_cases(), ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_fixture_survives_fix_twice(case, tmp_path, capsys):
    root = tmp_path / "case"
    if case.is_dir():
        shutil.copytree(case, root)
    else:
        root.mkdir()
        shutil.copy(case, root / case.name)
    if not (root / "pyproject.toml").exists():
        (root / "pyproject.toml").write_text('[project]\nname = "case"\nversion = "0"\n')
    before = snapshot(root)
    found_before = check_keys(root)
    rc = main(["check", str(root), "--fix", "--no-cache", "-q"])
    out = capsys.readouterr()
    assert rc in (0, 1), out.out + out.err
    after = snapshot(root)
    found_after = check_keys(root)
    rc = main(["check", str(root), "--fix", "--no-cache", "-q"])
    out = capsys.readouterr()
    assert rc in (0, 1), out.out + out.err
    assert_fix_is_sound(before, after, snapshot(root), found_before, found_after)


def stdlib_sample(n: int = 150) -> list[Path]:
    lib = Path(sysconfig.get_paths()["stdlib"])
    skip = {"test", "tests", "idlelib", "lib2to3", "site-packages", "dist-packages", "turtledemo", "__pycache__", "ensurepip"}
    files = sorted(
        p for p in lib.rglob("*.py")
        if not skip & set(p.relative_to(lib).parts) and p.stat().st_size < 150_000 and compiles(p.read_bytes(), p.name)
    )
    step = max(1, len(files) // n)
    return [(lib, p) for p in files[::step][:n]]


@pytest.mark.slow
def test_stdlib_sample_survives_fix_twice(tmp_path, cli):
    root = tmp_path / "stdlib"
    for lib, path in stdlib_sample():
        target = root / path.relative_to(lib)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    (root / "pyproject.toml").write_text('[project]\nname = "sample"\nversion = "0"\n')
    # run from outside the copy: `python -m` puts the working directory first on sys.path,
    # where the copied `asyncio/` & co would shadow the real ones
    assert len(list(root.rglob("*.py"))) >= 100
    before = snapshot(root)

    def findings() -> Counter:
        r = cli("--no-cache", "--format", "json", root.name, cwd=tmp_path)
        assert r.returncode in (0, 1), r.stderr
        doc = json.loads(r.stdout)
        return Counter(
            (f["code"], finding_key(type("F", (), {"code": f["code"], "message": f["message"]})())[1])
            for f in doc["findings"] if not f["code"].startswith(EXEMPT)
        )

    found_before = findings()
    r = cli("--fix", "--no-cache", "-q", root.name, cwd=tmp_path)
    assert r.returncode in (0, 1), r.stderr
    after = snapshot(root)
    changed = [n for n in after if after[n] != before[n]]
    found_after = findings()
    r = cli("--fix", "--no-cache", "-q", root.name, cwd=tmp_path)
    assert r.returncode in (0, 1), r.stderr
    assert_fix_is_sound(before, after, snapshot(root), found_before, found_after)
    print(f"{len(after)} files, {len(changed)} fixed: {changed}", file=sys.stderr)
