"""The packed body fields of a large project's cold check (`model.pack`) kept in an unnamed
temporary file instead of this process's memory, and read back when a field is decoded.

On a 38,000-file tree the bodies are about 100 MB marshalled. The fields other than events
stay so to the end of the check (decoded, used and let go again, field by field); the events
are decoded once, when the programs are built, and their bytes let go, leaving holes among
the objects that stay. In a file they cost the process nothing, and the system can drop
them from its page cache under pressure, which it cannot do with a process's own memory.

The file is made by `tempfile` (a file with no name on systems that have them, removed
when closed): nothing of the checked project names or places it. It is closed when no
facts refer to it any more. Where no such file can be made or written, fields stay in
memory as before.
"""

from __future__ import annotations

import os
import tempfile
import threading
from typing import Optional, Union

# Fields up to this size stay in memory (most modules' constants and loops: a few bytes,
# shared when equal, `shared_values`); what refers to a field in the file costs about 40.
SPILL_MIN_BYTES = 96
# Bytes gathered before each write (tests lower it to write often).
WRITE_BYTES = 1 << 20
# where a field lies: offset * _SIZES + size, one int
_SIZES = 1 << 32


class Spill:
    """An append-only file of byte strings, each named by an int (`put`, `get`)."""

    def __init__(self, file) -> None:
        self._file = file
        self._fd = file.fileno()
        self._written = 0  # bytes in the file; the rest are in `_pending`
        self._pending = bytearray()
        self._broken = False
        # (seek and read where there is no pread: threads of a language server share facts)
        self._lock = threading.Lock()

    @classmethod
    def open(cls) -> Optional["Spill"]:
        try:
            return cls(tempfile.TemporaryFile(prefix="repro-lint-"))
        except OSError:
            return None

    def put(self, data: bytes) -> Union[int, bytes]:
        """Where `data` now lies, or `data` itself when it stays in memory (small, too large
        to name, or the file cannot be written)."""
        size = len(data)
        if size < SPILL_MIN_BYTES or size >= _SIZES or self._broken:
            return data
        offset = self._written + len(self._pending)
        self._pending += data
        if len(self._pending) >= WRITE_BYTES:
            self._write()
            if self._broken:
                return data
        return offset * _SIZES + size

    def _write(self) -> None:
        view = memoryview(self._pending)
        done = 0
        try:
            while done < len(view):
                done += os.write(self._fd, view[done:])
        except OSError:
            # (a full disk): what was not written is kept in `_pending`, read from there,
            # and nothing more goes to the file
            self._broken = True
        finally:
            view.release()
        self._written += done
        del self._pending[:done]

    def held(self) -> tuple[int, int]:
        """(bytes in the file, bytes gathered and not written yet): for tests and diagnostics."""
        return self._written, len(self._pending)

    def get(self, where: int) -> bytes:
        """The bytes put at `where`."""
        offset, size = divmod(where, _SIZES)
        if offset >= self._written:
            start = offset - self._written
            return bytes(self._pending[start:start + size])
        pread = getattr(os, "pread", None)
        if pread is not None:
            data = pread(self._fd, size, offset)
            while len(data) < size:  # (a short read, which regular files do not give)
                more = pread(self._fd, size - len(data), offset + len(data))
                if not more:
                    break
                data += more
        else:  # pragma: no cover - Windows
            with self._lock:
                os.lseek(self._fd, offset, os.SEEK_SET)
                data = os.read(self._fd, size)
        if len(data) != size:
            raise OSError(f"the temporary file of packed facts ended early ({len(data)} of {size} bytes)")
        return data


def take(info, spill: Spill) -> None:
    """Move the packed body fields of `info` to `spill`."""
    packed = info.__dict__.get("_packed")
    if packed is None or len(packed) > 5:
        return
    moved = False
    for i in range(5):
        data = packed[i]
        if data is not None:
            where = spill.put(data)
            if type(where) is int:
                packed[i] = where
                moved = True
    if moved:
        packed.append(spill)  # (what the ints name: `model.packed_field`)
