"""Every annotated fixture produces exactly the findings its `# expect:` comments name."""

import pytest

from fixture_harness import actual_findings, expected_findings, materialise, project_cases, single_file_cases


@pytest.mark.parametrize("case", single_file_cases(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_single_file_fixture(case, tmp_path):
    # a rule's fixture folder checks that rule's family (RPL101/ -> RPL1): other families'
    # findings on the same code are covered by their own fixtures and the project cases
    root = materialise(case, tmp_path)
    family = case.parent.name[:4]
    assert actual_findings(root, only=[family]) == expected_findings(root)


@pytest.mark.parametrize("case", project_cases(), ids=lambda p: p.name)
def test_project_fixture(case, tmp_path):
    root = materialise(case, tmp_path)
    assert actual_findings(root) == expected_findings(root)
