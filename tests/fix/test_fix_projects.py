"""Golden fix projects: `fixtures/fix_projects/<case>/` is a whole project that `repro-lint --fix`
runs on; every `X.py` with an `X.fixed.py` beside it must become that file, every other `.py`
must stay byte for byte as it was (libraries' module level, tests, code only other programs
reach), and a second `--fix` changes nothing. `case.toml` (optional) configures the run like
the single-file golden pairs (`[tool.repro-lint]`, `unsafe = true`), and may list
`expect-stdout = [...]` strings the first run prints (for fixes that are refused and say why).
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from fixture_harness import in_process

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
PROJECTS = REPO / "fixtures" / "fix_projects"


@pytest.fixture
def cli(monkeypatch, capsys):
    """The golden runs of this module go through the entry point in this process (the
    family drivers run one through `python -m repro_lint`)."""
    return in_process(monkeypatch, capsys)


def cases() -> list[Path]:
    return sorted(p for p in PROJECTS.iterdir() if p.is_dir()) if PROJECTS.is_dir() else []


def materialise(case: Path, tmp: Path) -> tuple[Path, list[str], dict]:
    root = tmp / case.name
    shutil.copytree(case, root, ignore=shutil.ignore_patterns("*.fixed.py", "case.toml", "__pycache__"))
    settings = case / "case.toml"
    head, args, conf = "", [], {}
    if settings.exists():
        head = settings.read_text(encoding="utf-8")
        conf = tomllib.loads(head)
        if conf.get("unsafe") is True:
            args.append("--unsafe-fixes")
        head = "\n".join(line for line in head.splitlines() if not line.startswith(("unsafe", "expect-stdout")))
    (root / "pyproject.toml").write_text(head + '\n[project]\nname = "case"\nversion = "0"\n', encoding="utf-8")
    return root, args, conf


def test_cases_are_found():
    assert len(cases()) >= 6
    for case in cases():
        assert any(case.rglob("*.fixed.py")) or (case / "case.toml").exists(), f"{case.name} fixes nothing and says nothing"


@pytest.mark.parametrize("case", cases(), ids=lambda p: p.name)
def test_project_fix(case, tmp_path, cli):
    root, args, conf = materialise(case, tmp_path)
    before = {p.relative_to(root): p.read_bytes() for p in root.rglob("*.py")}
    r = cli("--fix", "--no-cache", *args, ".", cwd=root)
    assert r.returncode in (0, 1), r.stderr + r.stdout
    for text in conf.get("expect-stdout", []):
        assert text in r.stdout, r.stdout
    for rel, original in before.items():
        golden = case / rel.with_name(rel.stem + ".fixed.py")
        expected = golden.read_bytes() if golden.exists() else original
        got = (root / rel).read_bytes()
        assert got == expected, (
            f"{rel}: --fix output differs from {'its .fixed.py' if golden.exists() else 'the original (it must not change)'}\n"
            f"--- got ---\n{got.decode('utf-8', 'replace')}\n--- stdout ---\n{r.stdout}\n--- stderr ---\n{r.stderr}"
        )
    again = cli("--fix", "--no-cache", *args, ".", cwd=root)
    assert again.returncode in (0, 1), again.stderr
    assert "Fixed " not in again.stdout, again.stdout
    for rel in before:
        golden = case / rel.with_name(rel.stem + ".fixed.py")
        assert (root / rel).read_bytes() == (golden.read_bytes() if golden.exists() else before[rel]), f"a second --fix changed {rel}"


UNGUARDED = ("    if args.seed is not None:\n        torch.manual_seed(args.seed)\n        torch.backends.cudnn.deterministic = True\n", "    torch.manual_seed(args.seed)\n")


@pytest.mark.parametrize("case,edit", [("spawn_workers", None), ("spawn_workers", UNGUARDED), ("spawn_unseeded", None)])
def test_safe_then_unsafe_run_gives_what_one_unsafe_run_gives(case, edit, tmp_path, cli):
    """Deterministic algorithms go after the cuDNN flags whether the flags came in the same
    run or in an earlier safe run (at the start of a spawned function too)."""
    one, _, _ = materialise(PROJECTS / case, tmp_path / "one")
    two, _, _ = materialise(PROJECTS / case, tmp_path / "two")
    for root in (one, two):
        for path in root.glob("*.py"):
            if edit is not None:
                assert edit[0] in path.read_text()
                path.write_text(path.read_text().replace(*edit))
    same_either_way(one, two, cli)


def test_flags_at_the_start_of_the_main_block_keep_their_order(tmp_path, cli):
    source = textwrap.dedent("""\
        import torch
        import torch.nn.functional as F

        if __name__ == "__main__":
            torch.backends.cudnn.benchmark = False
            print(F.conv2d(torch.ones(1, 3, 8, 8), torch.ones(8, 3, 3, 3)).sum())
        """)
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyproject.toml").write_text('[project]\nname = "case"\nversion = "0"\n')
        (tmp_path / name / "run.py").write_text(source)
    same_either_way(tmp_path / "one", tmp_path / "two", cli)


def same_either_way(one: Path, two: Path, cli) -> None:
    """One unsafe --fix in `one`; a safe then an unsafe one in `two`: the same files."""
    assert cli("--fix", "--unsafe-fixes", "--no-cache", ".", cwd=one).returncode in (0, 1)
    assert cli("--fix", "--no-cache", ".", cwd=two).returncode in (0, 1)
    assert cli("--fix", "--unsafe-fixes", "--no-cache", ".", cwd=two).returncode in (0, 1)
    for path in one.glob("*.py"):
        text = path.read_text()
        assert "use_deterministic_algorithms(True)" in text
        assert text.index("cudnn.benchmark = False") < text.index("use_deterministic_algorithms(True)")
        assert text.index("cudnn.deterministic = True") < text.index("use_deterministic_algorithms(True)")
        assert (two / path.name).read_text() == text
