"""The documents an editor has open, as the checker sees them, and the way back.

Three kinds of document:
- a Python file (`.py`, `.pyi`): its text is the module;
- a notebook document (LSP `notebookDocument/*`): its cells are written into a notebook
  (`.ipynb` JSON, markdown cells included so that cell numbers match) and read as the one
  module its code cells make (`repro_lint.discover.notebook`); findings go to the cell they are in;
- a `.ipynb` file opened as a text document (JSON): read as that notebook; findings go to
  the line of the file that holds the code, as SARIF output places them.

Locations come in module text (1-based lines, 1-based character columns) and go out in the
client's position units (`units`: the length of a string in them, UTF-16 unless the client
chose another encoding). Edited file contents (what the fix engine returns) go back as text
edits of the open documents.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from repro_lint.discover import notebook

Units = Callable[[str], int]
_LINE_END = re.compile(r"\r\n|\r|\n")
_KEEPENDS = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # lines with their ends, as LSP numbers them


def lines_of(text: str) -> list[str]:
    """Lines as LSP numbers them (`\\n`, `\\r\\n` and `\\r` end a line)."""
    return _LINE_END.split(text)


@dataclass
class Cell:
    uri: str
    code: bool  # a code cell (else markup)
    text: str
    version: Optional[int] = None


@dataclass
class Span:
    uri: str
    start: tuple  # (line, character), 0-based, client units
    end: tuple


@dataclass
class Doc:
    uri: str
    path: Path
    version: Optional[int]
    text: str = ""  # a text document's text
    cells: list = field(default_factory=list)  # a notebook document's cells
    metadata: dict = field(default_factory=dict)  # a notebook document's metadata
    notebook_document: bool = False

    @property
    def is_notebook(self) -> bool:
        return notebook.is_notebook(self.path)

    def version_of(self, uri: str) -> Optional[int]:
        """The version of the document `uri` (this one, or one of its cells)."""
        if uri == self.uri:
            return self.version
        return next((c.version for c in self.cells if c.uri == uri), None)

    @property
    def uris(self) -> list[str]:
        """The documents diagnostics are published for (a notebook document: its cells)."""
        return [c.uri for c in self.cells] if self.notebook_document else [self.uri]

    def data(self) -> bytes:
        """The content as the file would hold it."""
        if self.notebook_document:
            cells = [
                {"cell_type": "code" if c.code else "markdown", "metadata": {}, "source": c.text, **({"outputs": [], "execution_count": None} if c.code else {})}
                for c in self.cells
            ]
            meta = self.metadata if isinstance(self.metadata, dict) else {}
            return json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}, indent=1).encode("utf-8")
        if self.is_notebook:
            return self.text.encode("utf-8")
        return encode_python(self.text)

    def read_notebook(self) -> Optional["notebook.Notebook"]:
        try:
            return notebook.read(self.data())
        except notebook.NotebookError:
            return None

    # -- locations -----------------------------------------------------------------------------
    def span(self, line: int, col: int, end_line: int, end_col: int, units: Units, nb=None) -> Span:
        """Where a module-text range (1-based lines and character columns) is in the client's
        documents."""
        if not self.is_notebook:
            lines = self._lines()
            return Span(self.uri, _pos(lines, line, col, units), _pos(lines, end_line, end_col, units))
        nb = nb or self.read_notebook()
        if nb is None:
            return Span(self.uri, (0, 0), (0, 0))
        if not self.notebook_document:  # the JSON file: the line holding the code
            lines = self._lines()
            first, last = nb.file_line(line) - 1, nb.file_line(end_line) - 1
            last_text = lines[last] if 0 <= last < len(lines) else ""
            return Span(self.uri, (first, 0), (last, units(last_text)))
        cell, cell_line = nb.cell_position(line)
        end_cell, end_cell_line = nb.cell_position(end_line)
        if end_cell != cell:
            end_cell_line, end_col = cell_line, len(nb.cell_line(line)) + 1
        target = self.cells[cell - 1] if 0 < cell <= len(self.cells) else None
        if target is None:
            return Span(self.uri, (0, 0), (0, 0))
        lines = lines_of(target.text)
        return Span(target.uri, _pos(lines, cell_line, col, units), _pos(lines, end_cell_line, end_col, units))

    def _lines(self) -> list[str]:
        cached = self.__dict__.get("_line_cache")
        if cached is None or cached[0] is not self.text:
            cached = (self.text, lines_of(self.text))
            self.__dict__["_line_cache"] = cached
        return cached[1]

    # -- edits -------------------------------------------------------------------------------------
    def edits(self, new: bytes, units: Units) -> list[tuple[str, list[tuple[tuple, tuple, str]]]]:
        """The text edits that turn the documents into `new` (the file's edited content):
        [(uri, [((line, character), (line, character), new text)])]."""
        if not self.notebook_document:
            new_text = new.decode("utf-8") if self.is_notebook else decode_python(new)
            edit = minimal_edit(self.text, new_text, units)
            return [(self.uri, [edit])] if edit is not None else []
        after = notebook.read(new)
        out = []
        for cell in after.cells:
            source = "\n".join(cell.lines) + ("\n" if cell.trailing_newline else "")
            if cell.index >= len(self.cells):
                continue
            target = self.cells[cell.index]
            edit = minimal_edit(target.text, source, units)
            if edit is not None:
                out.append((target.uri, [edit]))
        return out


def _pos(lines: list[str], line: int, col: int, units: Units) -> tuple:
    """(0-based line, client units) of a 1-based line and 1-based character column."""
    i = min(max(line, 1), max(len(lines), 1)) - 1
    text = lines[i] if i < len(lines) else ""
    return (i, units(text[: max(col - 1, 0)]))


def minimal_edit(old: str, new: str, units: Units) -> Optional[tuple]:
    """One edit replacing the lines where `old` and `new` differ, or None if equal."""
    if old == new:
        return None
    a = _KEEPENDS.findall(old)
    b = _KEEPENDS.findall(new)
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    # the end of a last line without a line end is that line's end, not a line after it
    end_pos = (end_a, 0)
    if end_a == len(a) and a and not a[-1].endswith(("\n", "\r")):
        end_pos = (end_a - 1, units(a[-1]))
    return ((start, 0), end_pos, "".join(b[start:end_b]))


def encode_python(text: str) -> bytes:
    """A Python buffer's text as the file's bytes: in the encoding its coding cookie names
    (UTF-8 otherwise), so that reading it back gives the same text."""
    data = text.encode("utf-8", errors="surrogatepass")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return data
    if encoding in ("utf-8", "utf-8-sig"):
        return data
    try:
        return text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return data


def decode_python(data: bytes) -> str:
    from repro_lint.facts.sourcetext import decode_source

    return decode_source(data)


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2
