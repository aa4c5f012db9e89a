"""Every annotated project (`fixtures/projects/<name>/`, several files checked as one
project, every rule on) produces exactly the findings its `# expect:` comments name."""

import pytest

from fixture_harness import actual_findings, expected_findings, materialise, project_cases


@pytest.mark.parametrize("case", project_cases(), ids=lambda p: p.name)
def test_project_fixture(case, tmp_path):
    root = materialise(case, tmp_path)
    assert actual_findings(root) == expected_findings(root)
