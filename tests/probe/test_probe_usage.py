"""Usage errors are caught before any run starts; importing the CLI never imports torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from repro_lint.probe import cli

from .helpers import SRC


def test_cli_module_does_not_import_torch():
    code = "import sys, repro_lint.probe.cli, repro_lint.probe.env_cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(SRC)}, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize(
    "argv, message",
    [
        (["missing.py"], "no such file: missing.py"),
        (["-m", "not a module"], "is not PACKAGE.MODULE"),
        (["-m", "pkg.mod:"], "is not PACKAGE.MODULE"),
        ([], "give either SCRIPT or -m"),
        (["--runs", "1", "x.py"], "--runs must be at least 2"),
        (["--max-ops", "0", "x.py"], "must be at least 1"),
        (["x.py", "--epochs", "3"], "the program's own arguments go after --"),
    ],
)
def test_bad_usage(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").write_text("pass\n")
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_without_torch_prints_how_to_install(capsys, tmp_path, monkeypatch):
    script = tmp_path / "x.py"
    script.write_text("pass\n")
    real = cli.importlib.util.find_spec
    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert cli.main([str(script)]) == 2
    assert capsys.readouterr().err.strip() == cli.INSTALL_HINT


def test_started_by_torchrun_points_to_nproc_per_node(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").write_text("pass\n")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "none")
    assert cli.main(["x.py"]) == 2
    assert "--nproc-per-node" in capsys.readouterr().err
