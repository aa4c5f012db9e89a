"""A check that reuses the last run's work (facts, the map of which programs reach which
modules) reports exactly what a check from scratch reports, after any sequence of edits,
additions, deletions and renames of files (issue: pre-commit runs on large projects)."""

import json
import random
import re
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import make_corpus  # noqa: E402

# Lines put at the start of a function body: draws, seeds, flags, training (which makes an
# imported module with a main block an entry point), and a call of a seeding helper.
BODY_LINES = [
    "random.random()",
    "np.random.rand(3)",
    "torch.manual_seed(0)",
    "random.seed(1)",
    "torch.backends.cudnn.benchmark = True",
    "loss.backward()",
    "helper_seed()",
    "pass",
]

TOOLS = '''"""Evaluation helpers; runnable on their own."""

import random

import torch


def helper_seed():
    torch.manual_seed(0)


def evaluate(model):
    return float(random.random())


def run():
    evaluate(None)


if __name__ == "__main__":
    run()
'''


def _project(root: Path) -> None:
    (root / "pyproject.toml").write_text('[project]\nname = "inc"\nversion = "0"\n')
    make_corpus.write_labs(root / "labs", 2, seed=3)
    # an imported module with a main block: whether it is a program depends on its body
    (root / "labs" / "lab_00" / "tools.py").write_text(TOOLS)
    script = root / "labs" / "lab_00" / "train_00.py"
    script.write_text(script.read_text().replace("import argparse\n", "import argparse\n\nfrom labs.lab_00.tools import evaluate, helper_seed\n", 1))


def _sources(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if ".repro_lint_cache" not in p.parts)


def _edit_body(rng: random.Random, path: Path) -> None:
    lines = path.read_text().split("\n")
    defs = [i for i, line in enumerate(lines) if re.match(r"\s*def .*:\s*$", line)]
    if not defs:
        lines.append(rng.choice(BODY_LINES[:5]))
    else:
        i = rng.choice(defs)
        indent = len(lines[i]) - len(lines[i].lstrip()) + 4
        lines.insert(i + 1, " " * indent + rng.choice(BODY_LINES))
    path.write_text("\n".join(lines))


def _step(rng: random.Random, root: Path, n: int) -> list[Path]:
    """One random change of the project; the files pre-commit would name afterwards."""
    files = _sources(root)
    plain = [p for p in files if p.name != "__init__.py"]
    kind = rng.choice(["body", "body", "body", "outline", "add", "delete", "rename", "break"])
    path = rng.choice(plain)
    if kind == "body":
        _edit_body(rng, path)
        return [path]
    if kind == "outline":
        with path.open("a") as fh:
            fh.write(f"\n\ndef added_{n}():\n    return random.random()\n")
        return [path]
    if kind == "add":
        new = path.with_name(f"copy_{n}.py")
        shutil.copyfile(path, new)
        return [new]
    if kind == "delete":
        path.unlink()
        return [rng.choice([p for p in plain if p != path])]
    if kind == "rename":
        new = path.with_name(f"renamed_{n}.py")
        path.rename(new)
        return [new]
    with path.open("a") as fh:  # a syntax error, kept or fixed by a later edit of the file
        fh.write("\ndef broken(:\n")
    return [path]


def _check(cli, root: Path, names: list, *extra: str) -> dict:
    r = cli("check", *names, "--format", "json", "--exit-zero", *extra, cwd=root)
    assert r.returncode in (0, 2), r.stderr
    out = json.loads(r.stdout)
    return {"findings": out["findings"], "errors": out["errors"]}


@pytest.mark.slow
def test_incremental_checks_equal_checks_from_scratch(tmp_path, cli):
    root = tmp_path / "proj"
    root.mkdir()
    _project(root)
    rng = random.Random(17)
    first = _check(cli, root, ["."])  # fills the cache and the map of programs
    assert first == _check(cli, root, ["."], "--no-cache")
    assert first["findings"]
    seen_findings_in_named = 0
    for n in range(8):
        named = _step(rng, root, n)
        # pre-commit names the changed files; an unchanged file named with them too
        extra = rng.choice([p for p in _sources(root) if p not in named])
        names = [p.relative_to(root).as_posix() for p in [*named, extra]]
        incremental = _check(cli, root, names)
        scratch = _check(cli, root, names, "--no-cache")
        assert incremental == scratch, f"step {n}: {names}"
        seen_findings_in_named += len(incremental["findings"])
        if n % 3 == 2:  # the whole project too, from what the named checks left in the cache
            assert _check(cli, root, ["."]) == _check(cli, root, ["."], "--no-cache"), f"step {n}: whole project"
    assert seen_findings_in_named  # the named checks had findings to get right


@pytest.mark.slow
def test_body_edit_of_a_helper_changes_findings_of_the_named_file(tmp_path, cli):
    """The map of programs is reused after an edit that keeps the file's outline, and the
    findings still follow the edit: a seeding helper that stops seeding makes the programs
    reaching it draw unseeded, reported in the named helper's module."""
    root = tmp_path / "proj"
    root.mkdir()
    _project(root)
    seeding = root / "labs" / "lab_00" / "seeding.py"
    name = seeding.relative_to(root).as_posix()
    _check(cli, root, ["."])
    before = _check(cli, root, [name])
    text = seeding.read_text()
    seeding.write_text(text.replace("def set_seed(seed: int = 0) -> None:\n", "def set_seed(seed: int = 0) -> None:\n    random.random()\n", 1))
    after = _check(cli, root, [name])
    assert (root / ".repro_lint_cache").is_dir()
    assert after == _check(cli, root, [name], "--no-cache")
    assert after["findings"] != before["findings"]


@pytest.mark.slow
def test_module_that_starts_training_through_an_edited_file_becomes_a_program(tmp_path, cli):
    """An imported module with a main block is a program only when its main trains. Its
    main starts training through another file when that file's body is edited; a check
    naming both files reports what the new program does (located in its own module)."""
    root = tmp_path / "proj"
    root.mkdir()
    _project(root)
    core = root / "labs" / "lab_00" / "evalcore.py"
    core.write_text("import random\n\n\ndef score(loss):\n    return 0\n")
    tools = root / "labs" / "lab_00" / "tools.py"
    text = tools.read_text().replace("float(random.random())", "0.0")
    tools.write_text(text.replace("def run():\n", "def run():\n    from labs.lab_00.evalcore import score\n    score(None)\n", 1))
    names = [core.relative_to(root).as_posix(), tools.relative_to(root).as_posix()]
    _check(cli, root, ["."])
    assert _check(cli, root, names)["findings"] == []
    core.write_text("import random\n\n\ndef score(loss):\n    loss.backward()\n    return random.random()\n")
    after = _check(cli, root, names)
    assert after == _check(cli, root, names, "--no-cache")
    assert "RPL101" in [f["code"] for f in after["findings"]]


@pytest.mark.slow
def test_edit_seen_through_a_package_init_equals_a_check_from_scratch(tmp_path, cli):
    """A module inside a package sees what the package's `__init__.py` imports (the models
    `nets/__init__.py` imports, for `nets/helpers.py`): an edit of one of them changes what
    that module's calls reach, although the module imports nothing of the project."""
    root = tmp_path / "proj"
    shutil.copytree(REPO / "fixtures" / "projects" / "package_initialisation", root)
    (root / "pyproject.toml").write_text("")
    first = _check(cli, root, ["."])
    assert "RPL103" in [f["code"] for f in first["findings"]]
    models = root / "nets" / "models.py"
    models.write_text(models.read_text().replace("def reset_parameters(self):", "def reset(self):"))
    named = _check(cli, root, ["nets/models.py"])
    assert named == _check(cli, root, ["nets/models.py"], "--no-cache")
    after = _check(cli, root, ["."])
    assert after == _check(cli, root, ["."], "--no-cache")
    assert "RPL103" not in [f["code"] for f in after["findings"]]
