"""Tests use the package's public names only: nothing imported from `repro_lint` starts with
an underscore, and no underscore name is read off (or patched into) what was imported from it.
A test that needs an internal knob gets a documented public one in src (read from the sources,
as `test_layers.py` reads src)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported: set[str] = set()  # local names bound to the package's modules and objects
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "repro_lint":
            for alias in node.names:
                if private(alias.name):
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                imported.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "repro_lint":
                    if any(private(part) for part in alias.name.split(".")):
                        found.append(f"line {node.lineno}: import {alias.name}")
                    imported.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr) and isinstance(node.value, ast.Name) and node.value.id in imported:
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("setattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in imported
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and private(node.args[1].value)
        ):
            found.append(f"line {node.lineno}: {node.func.attr}({node.args[0].id}, {node.args[1].value!r})")
    return found


def test_no_test_reaches_into_private_names():
    found = [f"{path.relative_to(TESTS)}: {use}" for path in sorted(TESTS.rglob("*.py")) for use in uses(path)]
    assert not found, "private names of repro_lint used by tests:\n" + "\n".join(found)


def test_the_check_sees_each_way_in(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import repro_lint.check.cache as cache\n"
        "from repro_lint.facts import batch, _hidden\n"
        "from repro_lint.check.cache import Cache\n\n"
        "def test(monkeypatch):\n"
        "    cache._secret.cache_clear()\n"
        "    monkeypatch.setattr(batch, '_extract_part', None)\n"
        "    batch.extract_part, Cache.__init__, cache.forget_user_key()\n"
    )
    assert sorted(use.split(": ", 1)[1] for use in uses(sample)) == [
        "cache._secret",
        "from repro_lint.facts import _hidden",
        "setattr(batch, '_extract_part')",
    ]
