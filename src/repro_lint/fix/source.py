"""A source file as read for fixing: its bytes, its text, and how to write text back.

Fixed text must come back in the file's own encoding: a UTF-8 BOM stays, a coding cookie
(`# -*- coding: latin-1 -*-`) keeps its encoding. Line endings need no care here: the text
keeps them as they are and the edits write new lines in the file's own style.
"""

from __future__ import annotations

import difflib
import codecs
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

from repro_lint.core.bounded_read import read_regular

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
        """The file as text to fix; a notebook is the module text of its code cells."""
        from repro_lint.discover import notebook

        if notebook.is_notebook(path):
            return NotebookSource.from_notebook(path, raw)
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

    def as_written(self, text: str) -> str:
        """`text` as it reads back once written (the same text, for a file of text)."""
        return text

    def diff(self, display: str, new_text: str) -> str:
        """What writing `new_text` changes, as a unified diff."""

        return unified_diff(display, self.text, new_text)


@dataclass(frozen=True)
class NotebookSource(SourceFile):
    """A notebook to fix: `text` is the module its code cells make; `encode` writes edited
    text back into the cells it changes (and refuses edits of magic lines)."""

    notebook: object = None

    @classmethod
    def from_notebook(cls, path: Path, raw: bytes) -> "NotebookSource":
        from repro_lint.discover import notebook

        try:
            nb = notebook.read(raw)
        except notebook.NotebookError as exc:
            raise SourceError(str(exc)) from exc
        return cls(path, raw, nb.text, "utf-8", False, nb)

    def encode(self, text: str) -> bytes:
        from repro_lint.discover import notebook

        try:
            return self.notebook.render(text)  # type: ignore[attr-defined]
        except notebook.NotebookError as exc:
            raise SourceError(str(exc)) from exc

    def as_written(self, text: str) -> str:
        """The module text of the cells `text` is written into: blank lines at a cell's end do
        not stay, so the next round's positions must be those of this text."""
        from repro_lint.discover import notebook

        try:
            return notebook.read(self.encode(text)).text
        except notebook.NotebookError as exc:
            raise SourceError(str(exc)) from exc

    def diff(self, display: str, new_text: str) -> str:
        from repro_lint.discover import notebook

        try:
            return self.notebook.cell_diffs(display, new_text, unified_diff)  # type: ignore[attr-defined]
        except notebook.NotebookError as exc:
            raise SourceError(str(exc)) from exc


def unified_diff(path: str, old: str, new: str) -> str:
    a, b = (path, path) if path.startswith("/") else (f"a/{path}", f"b/{path}")
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), a, b)
    out = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)
