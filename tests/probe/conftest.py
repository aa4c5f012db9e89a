from __future__ import annotations

import importlib.util
import sys

import pytest

from sarif_schema import validate_sarif

from .helpers import SRC, run_probe, validate_report

if importlib.util.find_spec("repro_lint") is None:  # a source checkout that is not installed
    sys.path.insert(0, str(SRC))


@pytest.fixture
def probe(tmp_path):
    """Runs the probe as a user does; every report it writes must satisfy its schema (the
    JSON Schema shipped in the package, or the official SARIF 2.1.0 schema)."""

    def run(*args, fmt="json", **kwargs):
        output = tmp_path / f"report.{fmt}" if fmt in ("json", "sarif") else None
        result = run_probe("--format", fmt, *args, output=output, **kwargs)
        if result.report is not None and fmt == "json":
            validate_report(result.report)
        if result.report is not None and fmt == "sarif":
            validate_sarif(result.report)
        return result

    return run
