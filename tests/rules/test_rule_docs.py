"""The examples in each rule's TOML are executed: docs and behaviour cannot drift."""

import pytest

from repro_lint.core import catalog
from fixture_harness import actual_findings

DOCS = catalog.rule_docs()

# Documents whose bad example the rule no longer reports: the document is out of date (rules/
# is not changed from here), so the test is expected to fail until it is brought up to date.
STALE_BAD_EXAMPLES = {
    "RPL302": "rules/RPL302.toml: the bad example's loader gets a dataset of unknown kind and the "
    "project declares no torch requirement; on torch >= 1.9 RPL302 reports only datasets that hold "
    "a generator (spec, large repositories 8), so the example shows nothing; its `why` and fix "
    "description also still describe the seed_worker fix only",
}


@pytest.mark.parametrize(
    "code",
    [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=STALE_BAD_EXAMPLES[c])) if c in STALE_BAD_EXAMPLES else c for c in DOCS],
)
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
