"""Secrets never reach what the probe writes: its console (standard output and error), JSON,
SARIF and report files. The values are made up, built from parts so that no file of the
repository holds a whole token-shaped string."""

from __future__ import annotations

import json

import pytest

from .helpers import run_probe

pytestmark = pytest.mark.slow

HF = "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNm" + "12345678"
URL_PASSWORD = "p@ss" + "-W0rd-tail"  # holds an `@`: its tail must go too
OPTION_PASSWORD = "hunter" + "2-spaced"
NETRC_PASSWORD = "netrc" + "-S3cret"
SECRETS = [HF, URL_PASSWORD, "W0rd-tail", OPTION_PASSWORD, NETRC_PASSWORD]

FAILING = f'''
import sys
import torch

torch.manual_seed(0)
torch.rand(2)
raise RuntimeError(
    "download failed: token={HF} from https://ci:{URL_PASSWORD}@pypi.internal/simple "
    "(machine pypi.internal login ci password {NETRC_PASSWORD}) argv: " + " ".join(sys.argv[1:])
)
'''


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_a_failing_programs_message_is_redacted_everywhere(tmp_path, fmt):
    script = tmp_path / "train.py"
    script.write_text(FAILING)
    output = tmp_path / f"report.{fmt}"
    result = run_probe(
        "--format", fmt, "--no-deterministic-run", script, "--", "--password", OPTION_PASSWORD,
        cwd=tmp_path, output=output if fmt != "text" else None,
    )
    assert result.code == 2
    written = output.read_text() if output.exists() else ""
    assert "download failed" in result.stderr and "pypi.internal" in result.stderr  # the message is shown
    assert _leaks(result.stdout + result.stderr + written) == []


def test_a_secret_option_in_the_programs_arguments_is_redacted(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\n\ntorch.manual_seed(0)\ntorch.rand(2)\n")
    output = tmp_path / "report.json"
    result = run_probe(
        "--format", "json", "--no-deterministic-run", script, "--", "--db-password", OPTION_PASSWORD, "--epochs", "1",
        cwd=tmp_path, output=output,
    )
    assert result.code == 0, result.stderr
    assert _leaks(output.read_text() + result.stdout + result.stderr) == []
    assert json.loads(output.read_text())["target"]["args"] == ["--db-password", "<redacted>", "--epochs", "1"]
