"""The fixtures are where `fixtures/README.md` says, and every folder of them is run by a
test: a rule folder by its family's driver (`fixture_harness.family_driver`), the shared
folders by the tests named in `fixture_harness.SHARED_FOLDERS`."""

from __future__ import annotations

import re

from fixture_harness import FIXTURES, REPO, RULE_FOLDER, SHARED_FOLDERS, families, fixed_of, pairs_in, rule_folders

from repro_lint.core import catalog

TESTS = REPO / "tests"
DRIVER = re.compile(r"""\bfamily_driver\(\s*["'](RPL\d)["']\s*\)""")


def drivers() -> dict[str, list[str]]:
    """family -> the test files that bind its driver."""
    out: dict[str, list[str]] = {}
    for path in sorted((TESTS / "rules").rglob("test_*.py")):
        for family in DRIVER.findall(path.read_text(encoding="utf-8")):
            out.setdefault(family, []).append(path.relative_to(REPO).as_posix())
    return out


def test_every_folder_is_a_rule_or_a_shared_one():
    folders = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
    strays = [name for name in folders if not RULE_FOLDER.fullmatch(name) and name not in SHARED_FOLDERS]
    assert not strays, f"fixtures/ folders that no test runs (see fixtures/README.md): {strays}"
    for name, test in SHARED_FOLDERS.items():
        assert (FIXTURES / name).is_dir() and (REPO / test).is_file(), (name, test)


def test_every_rule_folder_names_a_documented_rule():
    undocumented = [p.name for p in rule_folders() if p.name not in catalog.rule_docs()]
    assert not undocumented, f"fixture folders of codes that have no document in rules/: {undocumented}"
    assert len(rule_folders()) >= 13 and {"RPL101", "RPL102"} <= {p.name for p in rule_folders()}


def test_every_family_has_one_driver():
    found = drivers()
    missing = [family for family in families() if family not in found]
    assert not missing, (
        f"fixtures of {missing} are run by no driver: add tests/rules/<family>/test_<family>_cases.py "
        "binding `family_driver(\"RPLn\")` (copy tests/rules/seeding/test_seeding_cases.py)"
    )
    twice = {family: files for family, files in found.items() if len(files) > 1}
    assert not twice, f"families run by more than one driver: {twice}"
    assert set(found) >= {"RPL1", "RPL2", "RPL3", "RPL4"}


def test_a_rule_folder_holds_cases_and_its_golden_pairs_only():
    for folder in rule_folders():
        for path in folder.iterdir():
            if path.name == "__pycache__":
                continue
            assert path.suffix == ".py" or (path.name == "fix" and path.is_dir()), f"{path}: not a case of {folder.name}"
        assert list(folder.glob("*.py")), f"{folder.name} has no detection case"
        for path in (folder / "fix").glob("*") if (folder / "fix").is_dir() else ():
            assert path.suffix in (".py", ".toml"), f"{path}: not part of a golden pair"


def test_every_golden_case_has_its_result_and_settings_their_case():
    folders = [folder / "fix" for folder in rule_folders()] + [FIXTURES / "style", FIXTURES / "combined"]
    cases = [case for folder in folders for case in pairs_in(folder)]
    assert {case.parent.parent.name for case in cases if case.parent.name == "fix"} >= {"RPL101", "RPL102"}
    assert pairs_in(FIXTURES / "style")
    for case in cases:
        assert fixed_of(case).exists(), f"{case} has no .fixed.py"
    for folder in folders:
        for path in folder.glob("*.fixed.py"):
            assert path.with_name(path.name[: -len(".fixed.py")] + ".py").exists(), f"{path} has no case"
        for path in folder.glob("*.toml"):
            assert path.with_suffix(".py").exists(), f"{path} configures no case"


def test_readme_names_every_shared_folder():
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    for name in SHARED_FOLDERS:
        assert f"{name}/" in readme, name
