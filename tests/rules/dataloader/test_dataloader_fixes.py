"""Golden fix pairs of RPL301/RPL302: `repro-lint --fix --select CODE` turns `<case>.py` into
`<case>.fixed.py`, the result is clean for that rule, and fixing it again changes nothing."""

from pathlib import Path

import pytest

from fixture_harness import FIXTURES, case_id, make_case, pairs_in
from repro_lint.cli.main import main

CASES = [p for code in ("RPL301", "RPL302") for p in pairs_in(FIXTURES / code / "fix")]


def fix(root: Path, code: str, capsys, clean: bool = True) -> None:
    rc = main(["check", str(root), "--fix", "--no-cache", "--select", code, "-q"])
    out = capsys.readouterr()
    if clean:
        assert rc == 0, out.out + out.err  # everything fixed: nothing left to report
    else:  # a case without a fix: the finding stays and says why
        assert rc == 1 and "Not fixed automatically" in out.out, out.out + out.err


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_golden_fix(case, tmp_path, capsys):
    code = case.parent.parent.name
    root, target, _ = make_case(case, tmp_path)  # with the case's settings (`<case>.toml`)
    expected = case.with_name(case.stem + ".fixed.py").read_text()
    clean = expected != case.read_text()
    fix(root, code, capsys, clean)
    assert target.read_text() == expected
    fix(root, code, capsys, clean)
    assert target.read_text() == expected


def test_every_case_has_a_golden_result():
    assert CASES
    for case in CASES:
        assert case.with_name(case.stem + ".fixed.py").is_file(), case


def _project_with_a_worker_seeder(root):
    """A project whose `helpers.seeding` seeds workers, and a `lib.py` whose loader has none,
    for torch 1.8 (whose workers do not reseed numpy: seeding them is the fix there)."""
    (root / "pyproject.toml").write_text('[project]\nname = "case"\nversion = "0"\ndependencies = ["torch>=1.8,<1.9"]\n')
    (root / "helpers").mkdir()
    (root / "helpers" / "__init__.py").write_text("")
    (root / "helpers" / "seeding.py").write_text(
        "import random\n\nimport numpy as np\nimport torch\n\n\n"
        "def worker_init(worker_id):\n"
        "    seed = torch.initial_seed() % 2**32\n"
        "    np.random.seed(seed)\n"
        "    random.seed(seed)\n"
    )
    lib = root / "lib.py"
    lib.write_text("from torch.utils.data import DataLoader\n\n\ndef build(ds):\n    return DataLoader(ds, num_workers=2)\n")
    return lib


def test_worker_seeder_of_another_module_is_imported(tmp_path, capsys):
    lib = _project_with_a_worker_seeder(tmp_path)
    fix(tmp_path, "RPL302", capsys)
    text = lib.read_text()
    assert "import helpers.seeding\n" in text
    assert "DataLoader(ds, num_workers=2, worker_init_fn=helpers.seeding.worker_init)" in text
    assert "def seed_worker" not in text


def test_the_fix_names_another_modules_worker_seeder_by_its_dotted_name(tmp_path, cli):
    _project_with_a_worker_seeder(tmp_path)
    r = cli("check", "--no-cache", "--select", "RPL302", "lib.py", cwd=tmp_path)
    assert "pass the project's worker seeding function `helpers.seeding.worker_init`" in r.stdout, r.stdout
    assert "{mod:" not in r.stdout
