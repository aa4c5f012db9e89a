"""Golden fix pairs about the layout of what fixes write, whatever the rule:
`fixtures/style/<case>.py` becomes `<case>.fixed.py` under `--fix`, run in process like the
rules' own pairs (`fixture_harness.assert_golden_fix`: bytes, a second `--fix` changes nothing).
"""

from __future__ import annotations

import pytest

from fixture_harness import FIXTURES, assert_golden_fix, case_id, in_process, pairs_in

STYLE = FIXTURES / "style"


@pytest.mark.parametrize("case", pairs_in(STYLE), ids=case_id)
def test_golden_fix(case, tmp_path, monkeypatch, capsys):
    assert_golden_fix(case, tmp_path, in_process(monkeypatch, capsys))
