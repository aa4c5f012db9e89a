"""Reading files a checked repository ships: regular files only, and never more than a cap.

A repository can hold a FIFO named `x.py` (reading it waits forever), a link to `/dev/zero`
(reading it never ends) or a huge file. Each read here opens without blocking, refuses what
is not a regular file, and stops at a size cap, raising `OSError` with a one-line reason that
callers report like any other unreadable file.
"""

from __future__ import annotations

import errno
import os
import stat

# Python sources larger than this are not checked (the largest real modules, generated
# data tables, are a few MB; parsing 10 MB takes seconds and GBs of memory).
PYTHON_MAX_BYTES = 10 * 1024 * 1024
# Configuration the checker reads besides Python: Hydra YAML, pyproject.toml,
# requirements files, .gitignore files.
TEXT_MAX_BYTES = 2 * 1024 * 1024

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _megabytes(limit: int) -> str:
    return f"{limit / (1024 * 1024):g} MB"


def read_regular(path: "os.PathLike[str] | str", limit: int = PYTHON_MAX_BYTES, follow_links: bool = True) -> bytes:
    """The bytes of the regular file at `path`; `OSError` when it is something else (a
    folder, a FIFO, a device), larger than `limit`, or (with `follow_links=False`) a link."""
    flags = _FLAGS if follow_links else _FLAGS | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if st.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {_megabytes(limit)}", str(path))
        chunks = []
        left = limit + 1  # one byte more than allowed tells a file that grew past the cap
        while left > 0:
            chunk = os.read(fd, min(left, max(st.st_size, 1 << 16)))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {_megabytes(limit)}", str(path))
    return data


def read_text(path: "os.PathLike[str] | str", limit: int = TEXT_MAX_BYTES) -> str:
    """A small configuration file's text (UTF-8, undecodable bytes replaced)."""
    return read_regular(path, limit).decode("utf-8", errors="replace")


def is_inside(path: str, root: str) -> bool:
    """Whether the resolved `path` is `root` or below it (both resolved)."""
    root = root.rstrip(os.sep)
    return path == root or path.startswith(root + os.sep)
