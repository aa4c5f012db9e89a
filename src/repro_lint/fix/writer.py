"""Writing fixed files atomically.

The new content goes to a temporary file in the same folder (same file system, so the
rename is atomic), gets the original's permission bits, and replaces the original with
`os.replace`. An interrupted write leaves the original as it was and removes the
temporary file; SIGTERM is turned into an exception while writing so that cleanup runs
then too (SIGKILL cannot be caught: then a hidden `.NAME.*.repro-lint.tmp` may remain,
but never a half-written source file; the next run that writes fixes removes it, see
`core.leftovers`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
import threading
from pathlib import Path
from typing import Optional

from repro_lint.core.bounded_read import is_inside, read_regular
from repro_lint.core.leftovers import SUFFIX as TEMP_SUFFIX, hold


class NotWritten(Exception):
    """The fix is not written; the message says why."""


class ChangedOnDisk(NotWritten):
    """The file changed between reading it and writing the fix."""


class _Terminated(BaseException):
    pass


@contextlib.contextmanager
def _sigterm_raises():
    """While writing, a default-handled SIGTERM raises (so the temporary file is removed),
    then terminates the process as it would have."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def handler(signum, frame):
        raise _Terminated()

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    except _Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        raise
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def write_atomic(path: Path, data: bytes, expected: bytes, root: Optional[Path] = None) -> None:
    """Replace `path` with `data`, unless its content is no longer `expected`.

    A symlinked source is fixed where it lives, but only inside the project `root`: a
    cloned repository can hold links to any file its user can write. A read-only file is
    not replaced (its mode says it is not to be edited), as other fixers do."""
    target = Path(os.path.realpath(path))
    if root is not None and not is_inside(str(target), os.path.realpath(root)):
        raise NotWritten(f"it is a link to {target}, outside the project" if os.path.islink(path) else "it is outside the project")
    try:
        current = read_regular(target)
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError as exc:
        raise ChangedOnDisk(f"cannot read it again before writing: {exc.strerror or exc}") from exc
    if current != expected:
        raise ChangedOnDisk("it changed on disk while it was being fixed; not written")
    if not mode & 0o222 or not os.access(target, os.W_OK):
        raise NotWritten("the file is read-only")
    with _sigterm_raises():
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=TEMP_SUFFIX)
        hold(fd)  # (released when the file is closed, or the process ends)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
