"""A source file as read for fixing: its bytes, its text, and how to write text back.

Fixed text must come back in the file's own encoding: a UTF-8 BOM stays, a coding cookie
(`# -*- coding: latin-1 -*-`) keeps its encoding. Line endings need no care here: the text
keeps them as they are and the edits write new lines in the file's own style.
"""

from __future__ import annotations

import codecs
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

from repro_lint.bounded_read import read_regular

BOM = codecs.BOM_UTF8


class SourceError(Exception):
    """The file cannot be decoded or the fixed text cannot be encoded back."""


@dataclass(frozen=True)
class SourceFile:
    path: Path
    raw: bytes
    text: str  # decoded, without the BOM
    encoding: str  # codec name, without the `-sig` of a BOM
    bom: bool

    @classmethod
    def read(cls, path: Path) -> "SourceFile":
        return cls.from_bytes(path, read_regular(path))

    @classmethod
    def from_bytes(cls, path: Path, raw: bytes) -> "SourceFile":
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        except SyntaxError as exc:
            raise SourceError(f"cannot decode file: {exc}") from exc
        bom = raw.startswith(BOM)
        codec = "utf-8" if encoding == "utf-8-sig" else encoding
        body = raw[len(BOM):] if bom else raw
        try:
            text = body.decode(codec)
        except (UnicodeDecodeError, LookupError) as exc:
            raise SourceError(f"cannot decode file: {exc}") from exc
        return cls(path, raw, text, codec, bom)

    def encode(self, text: str) -> bytes:
        try:
            data = text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise SourceError(f"fixed text cannot be written as {self.encoding}: {exc}") from exc
        return BOM + data if self.bom else data
