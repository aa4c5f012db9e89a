"""Temporary files of `--fix` that an interrupted run left behind.

A fix is written to `.NAME.XXXXXXXX.repro-lint.tmp` beside the file and renamed over it; a
run killed with SIGKILL (or a machine that lost power) in between leaves that file. The
writer holds a lock on it while it writes (`hold`); a later run that writes fixes removes
those no process holds any more (`remove_stale`), and only those at least `MIN_AGE` seconds
old, so that one made a moment ago by a run that has not taken its lock yet stays. Where
file locks are not to be had, only age tells: such a file must be an hour old.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from typing import Iterable

try:
    import fcntl
except ImportError:  # pragma: no cover (Windows)
    fcntl = None  # type: ignore[assignment]

SUFFIX = ".repro-lint.tmp"
# what `tempfile.mkstemp(prefix=".NAME.", suffix=SUFFIX)` names: eight characters of its alphabet
_NAME = re.compile(r"\..+\.[a-z0-9_]{8}" + re.escape(SUFFIX))
MIN_AGE = 10.0
MIN_AGE_UNLOCKED = 3600.0


def is_leftover_name(name: str) -> bool:
    return name.endswith(SUFFIX) and _NAME.fullmatch(name) is not None


def hold(fd: int) -> None:
    """Mark the temporary file open at `fd` as being written (until it is closed)."""
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pass


def remove_stale(paths: Iterable[str]) -> list[str]:
    """Remove the temporary files among `paths` that no run is writing; the paths removed.
    A link, or anything but a regular file, is left alone."""
    removed = []
    now = time.time()
    for path in paths:
        if not is_leftover_name(os.path.basename(path)):
            continue
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            age = now - st.st_mtime
            if not stat.S_ISREG(st.st_mode) or age < (MIN_AGE if fcntl is not None else MIN_AGE_UNLOCKED):
                continue
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES) or age < MIN_AGE_UNLOCKED:
                        continue  # a run is writing it (or, without locks here, may be)
            os.unlink(path)
            removed.append(path)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed
