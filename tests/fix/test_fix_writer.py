"""Fixed files are written atomically, keep their mode, and are not written over changes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import SRC
from repro_lint.discover.config import Config
from repro_lint.check.run import run_check
from repro_lint.check.select import select
from repro_lint.fix import rounds
from repro_lint.fix import writer
from repro_lint.fix.rounds import apply_fixes

# a program with determinism intent and no seed of its own: RPL102's fix adds `SEED`
GENERATOR = (
    "import numpy as np\nimport torch\n\ntorch.backends.cudnn.benchmark = False\nrng = np.random.default_rng()\n\n"
    'if __name__ == "__main__":\n    print(rng.random())\n'
)
FIXED = GENERATOR.replace("import torch\n\n", "import torch\n\nSEED = 0\n\n").replace("default_rng()", "default_rng(seed=SEED)")


def fix(root: Path, write: bool = True):
    cfg = Config()
    old = os.getcwd()
    os.chdir(root)
    try:
        report = run_check([Path(".")], cfg, root=root, use_cache=False)
        return apply_fixes(report, select(report, cfg), cfg, write=write, use_cache=False)
    finally:
        os.chdir(old)


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.endswith(writer.TEMP_SUFFIX))


def test_fix_writes_and_keeps_the_mode(project):
    path = project("lib.py", GENERATOR)
    os.chmod(path, 0o751)
    outcome = fix(project.root)
    assert outcome.errors == [] and outcome.fixed == 1 and outcome.changed_paths == ["lib.py"]
    assert path.read_text() == FIXED
    assert (path.stat().st_mode & 0o777) == 0o751
    assert leftovers(project.root) == []


def test_failing_replace_leaves_the_original_and_no_temporary_file(project, monkeypatch):
    path = project("lib.py", GENERATOR)

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer.os, "replace", broken)
    outcome = fix(project.root)
    assert outcome.errors and outcome.errors[0].startswith("lib.py: fix not written:")
    assert path.read_text() == GENERATOR
    assert leftovers(project.root) == []


def test_interrupt_in_the_middle_of_writing(project, monkeypatch):
    path = project("lib.py", GENERATOR)
    real_fdopen = os.fdopen

    class HalfWriter:
        """Writes half of the data, then the user presses Ctrl-C."""

        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            self.fh.write(data[: len(data) // 2])
            self.fh.flush()
            raise KeyboardInterrupt

    monkeypatch.setattr(writer.os, "fdopen", lambda fd, mode: HalfWriter(real_fdopen(fd, mode)))
    with pytest.raises(KeyboardInterrupt):
        fix(project.root)
    assert path.read_text() == GENERATOR
    assert leftovers(project.root) == []


def test_file_changed_on_disk_is_not_overwritten(project, monkeypatch):
    path = project("lib.py", GENERATOR)
    real = rounds.write_atomic

    def edit_meanwhile(*args, **kwargs):  # the user saves the file just before the fix is written
        path.write_text(GENERATOR + "print('edited in the editor')\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(rounds, "write_atomic", edit_meanwhile)
    outcome = fix(project.root)
    assert outcome.errors == ["lib.py: fix not written: it changed on disk while it was being fixed; not written"]
    assert path.read_text() == GENERATOR + "print('edited in the editor')\n"
    assert outcome.changed_paths == [] and outcome.fixed == 0


def test_write_atomic_refuses_changed_content(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 2\n")
    with pytest.raises(writer.ChangedOnDisk):
        writer.write_atomic(path, b"x = 3\n", expected=b"x = 1\n")
    assert path.read_bytes() == b"x = 2\n"


def test_symlinked_file_is_fixed_where_it_lives(project):
    real = project("src/real.py", GENERATOR)
    link = project.root / "lib.py"
    link.symlink_to(real)
    writer.write_atomic(link, FIXED.encode(), GENERATOR.encode(), root=project.root)  # a link inside the project
    assert link.is_symlink() and real.read_text() == FIXED


KILLED = textwrap.dedent('''\
    import os, sys, time
    from pathlib import Path
    from repro_lint.fix import writer

    real_fsync = os.fsync

    def slow_fsync(fd):
        Path("ready").write_text("writing")
        time.sleep(60)

    writer.os.fsync = slow_fsync
    writer.write_atomic(Path("lib.py"), b"rng = 'half written' " * 1000, Path("lib.py").read_bytes())
''')


@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or sys.platform == "win32", reason="POSIX signals")
def test_terminated_while_writing(project):
    path = project("lib.py", GENERATOR)
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.Popen([sys.executable, "-c", KILLED], cwd=project.root, env=env)
    try:
        deadline = time.monotonic() + 60
        while not (project.root / "ready").exists():
            assert proc.poll() is None, "the writer exited early"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert leftovers(project.root), "the temporary file should exist while writing"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    assert path.read_text() == GENERATOR
    assert leftovers(project.root) == []
