from __future__ import annotations

import importlib.util
import sys

import pytest

from .helpers import SRC, run_probe

if importlib.util.find_spec("repro_lint") is None:  # a source checkout that is not installed
    sys.path.insert(0, str(SRC))


@pytest.fixture
def probe(tmp_path):
    def run(*args, fmt="json", **kwargs):
        output = tmp_path / f"report.{fmt}" if fmt in ("json", "sarif") else None
        return run_probe("--format", fmt, *args, output=output, **kwargs)

    return run
