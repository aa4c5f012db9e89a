"""The examples in each rule's TOML are executed: docs and behaviour cannot drift."""

import pytest

from repro_lint.core import catalog
from fixture_harness import actual_findings

DOCS = catalog.rule_docs()

@pytest.mark.parametrize("code", list(DOCS))
def test_bad_example_produces_exactly_this_rule(code, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0"\n')
    (tmp_path / "example.py").write_text(DOCS[code].bad.lstrip())
    codes = {c for _, _, c in actual_findings(tmp_path)}
    assert codes == {code}


@pytest.mark.parametrize("code", list(DOCS))
def test_good_example_produces_nothing(code, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0"\n')
    (tmp_path / "example.py").write_text(DOCS[code].good.lstrip())
    assert actual_findings(tmp_path) == set()


@pytest.mark.parametrize("code", list(DOCS))
def test_doc_is_complete(code):
    doc = DOCS[code]
    assert doc.name and doc.summary and doc.why.strip()
    assert doc.fix in ("none", "safe", "unsafe", "sometimes")
    assert doc.fix == "none" or doc.fix_description
