"""Running the probe as a user does, and finding marked lines in the test scripts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
SCRIPTS = Path(__file__).resolve().parent / "scripts"


def marker_line(script: str, marker: str) -> int:
    """The line of `script` that carries the comment `# MARKER`."""
    for number, line in enumerate((SCRIPTS / script).read_text().splitlines(), 1):
        if f"# {marker}" in line:
            return number
    raise AssertionError(f"{marker} not in {script}")


class ProbeResult:
    def __init__(self, proc: subprocess.CompletedProcess, report: dict | None):
        self.code = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.report = report


def run_probe(*args, cwd=SCRIPTS, env=None, output: Path | None = None, timeout=300) -> ProbeResult:
    """`python -m repro_lint probe ARGS`, as a user runs it; reads the report file if asked for."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", "NO_COLOR")}
    full_env["PYTHONPATH"] = str(SRC) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    extra = ["--output-file", str(output)] if output else []
    proc = subprocess.run(
        [sys.executable, "-m", "repro_lint", "probe", *extra, *map(str, args)],
        cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout,
    )
    report = json.loads(output.read_text()) if output and output.exists() and output.stat().st_size else None
    return ProbeResult(proc, report)


def validate_report(report: dict) -> None:
    """Against the JSON Schema the package ships for the report."""
    import jsonschema

    from repro_lint.probe import REPORT_SCHEMA

    schema = json.loads(REPORT_SCHEMA.read_text())
    jsonschema.validate(report, schema, cls=jsonschema.Draft202012Validator)

