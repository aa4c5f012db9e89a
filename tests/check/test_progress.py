"""Progress on long runs: drawn on a terminal's stderr only, never in a pipe, in CI or with
--quiet, and the report on stdout is the same with it or without it."""

import os
import pty
import subprocess
import sys
import threading

from conftest import SRC

BAD = "import numpy as np\n\nprint(np.random.rand(3))\n"


def _run(cwd, *args, **env_changes):
    """The check with stdout a pipe and stderr a terminal: (stdout, what the terminal got)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "FORCE_COLOR")}
    env.update({"PYTHONPATH": str(SRC), "TERM": "xterm", "COLUMNS": "100", **env_changes})
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "repro_lint", "check", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    seen = bytearray()

    def drain():
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal's other end closed
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    out = proc.stdout.read()
    proc.wait(timeout=300)
    reader.join(timeout=30)
    os.close(master)
    return out.decode(), seen.decode(errors="replace")


def _many_files(project, n=150):
    for i in range(n):
        project(f"pkg/m{i}.py", BAD if i % 10 == 0 else f"VALUE = {i}\n")


def test_progress_on_a_terminal_and_the_same_report(project):
    _many_files(project)
    out, terminal = _run(project.root, "-n", "--output-format", "concise")
    assert "Reading files" in terminal and "Checking files and programs" in terminal, terminal[:500]
    piped = subprocess.run([sys.executable, "-m", "repro_lint", "check", "-n", "--output-format", "concise"], cwd=project.root,
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert out == piped.stdout and out.count(": RPL101") == 15
    assert "Reading files" not in piped.stderr  # a pipe gets none


def test_no_progress_in_ci_with_quiet_or_for_a_few_files(project, tmp_path_factory):
    _many_files(project)
    for args, env in ((["-n"], {"CI": "true"}), (["-n", "-q"], {}), (["-n", "-s"], {}), (["-n"], {"TERM": "dumb"})):
        _, terminal = _run(project.root, *args, **env)
        assert "Reading files" not in terminal and "Checking" not in terminal, (args, env)
    _, terminal = _run(project.root, "-n", "pkg/m1.py", "pkg/m2.py")  # still the whole project read
    assert "Reading files" in terminal
    small = tmp_path_factory.mktemp("small")
    (small / "pyproject.toml").write_text('[project]\nname = "s"\nversion = "0"\n')
    (small / "train.py").write_text(BAD)
    _, terminal = _run(small, "-n")
    assert "Reading files" not in terminal
