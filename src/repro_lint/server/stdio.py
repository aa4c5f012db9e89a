"""The server's standard input, read with bounds.

pygls reads a message's body with one `read(Content-Length)`, and a buffered reader makes
room for all of it before a byte arrives: `Content-Length: 1099511627776` was a
MemoryError. Here a body larger than `MAX_MESSAGE_BYTES` is refused (`MessageRefused`: the
stream cannot be followed past it, so the server stops with one line), and a smaller one is
read in pieces as it arrives. A header line is bounded too.
"""

from __future__ import annotations

from typing import BinaryIO

# The largest message taken: a document of the largest Python file the checker reads (10 MB)
# is several times smaller, even as JSON with every character escaped.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
MAX_HEADER_BYTES = 64 * 1024
_PIECE = 1024 * 1024


class MessageRefused(Exception):
    """A message too large to take (its message is the one line shown)."""


class BoundedInput:
    """What pygls reads messages from (`readline`, `read`), over the raw standard input."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw

    def readline(self, size: int = -1) -> bytes:
        line = self.raw.readline(MAX_HEADER_BYTES + 1)
        if len(line) > MAX_HEADER_BYTES:
            raise MessageRefused(f"a header line longer than {MAX_HEADER_BYTES:,} bytes")
        return line

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > MAX_MESSAGE_BYTES:
            raise MessageRefused(f"a message of {size:,} bytes (the most taken: {MAX_MESSAGE_BYTES:,})")
        pieces = []
        left = size
        while left > 0:
            piece = self.raw.read(min(left, _PIECE))
            if not piece:
                break
            pieces.append(piece)
            left -= len(piece)
        return b"".join(pieces)
