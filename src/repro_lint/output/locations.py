"""Locations as each output shows them.

Findings are located in module text: for a `.py` file its lines, for a notebook the text its
code cells make (`repro_lint.discover.notebook`). Outputs for people show a notebook location as
`train.ipynb:cell 3:2:5` (cell number among all the file's cells, line in the cell, column);
JSON adds the cell number and gives lines in the cell; SARIF and GitHub annotations point at
the line of the `.ipynb` file that holds the code, which is what code scanning can show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from repro_lint.discover import notebook
from repro_lint.core.findings import Location


@dataclass(frozen=True)
class Shown:
    """A location as shown: `cell` is None outside notebooks; lines are in the cell."""

    path: str
    cell: Optional[int]
    line: int
    col: int
    end_line: int
    end_col: int

    @property
    def label(self) -> str:
        where = f"{self.path}:cell {self.cell}:" if self.cell is not None else f"{self.path}:"
        return f"{where}{self.line}:{self.col}"


# how many files' lines `Locator.source_line` keeps
_LINES_KEPT = 8


class Locator:
    """Reads the notebooks that findings point into (once each) to map their locations.
    `overrides` holds contents that are not on disk (a buffer read from stdin)."""

    def __init__(self, overrides: Optional[dict] = None) -> None:
        self.overrides = dict(overrides or {})
        self._notebooks: dict = {}
        self._lines: dict = {}

    def notebook(self, path: str) -> Optional["notebook.Notebook"]:
        if not notebook.is_notebook(path):
            return None
        if path not in self._notebooks:
            try:
                data = self.overrides.get(path)
                if data is None:
                    with open(path, "rb") as fh:
                        data = fh.read()
                self._notebooks[path] = notebook.read(data)
            except (OSError, notebook.NotebookError):
                self._notebooks[path] = None
        return self._notebooks[path]

    def shown(self, loc: Location) -> Shown:
        nb = self.notebook(loc.path)
        if nb is None:
            return Shown(loc.path, None, loc.line, loc.col, loc.end_line, loc.end_col)
        cell, line = nb.cell_position(loc.line)
        end_cell, end_line = nb.cell_position(loc.end_line)
        if end_cell != cell:  # an end past the cell (the end of the text): the cell's last column
            end_line, end_col = line, len(nb.cell_line(loc.line)) + 1
        else:
            end_col = loc.end_col
        return Shown(loc.path, cell, line, loc.col, end_line, end_col)

    def label(self, loc: Location) -> str:
        return self.shown(loc).label

    def file_lines(self, loc: Location) -> Optional[tuple]:
        """(start line, end line) in the notebook file itself, or None for a `.py` file."""
        nb = self.notebook(loc.path)
        if nb is None:
            return None
        return nb.file_line(loc.line), nb.file_line(loc.end_line)

    def source_line(self, path: str, line: int) -> Optional[str]:
        """The text of a line as the user sees it (a notebook's cell line)."""
        nb = self.notebook(path)
        if nb is not None:
            return nb.cell_line(line) if 0 < line <= len(nb.lines) else None
        lines = self._lines.get(path)
        if lines is None:
            lines = self._lines[path] = _read_lines(path, self.overrides.get(path))
            # findings come sorted by file: a few files' lines are enough, and a large
            # project's report does not hold every flagged file's text until it ends
            if len(self._lines) > _LINES_KEPT:
                del self._lines[next(iter(self._lines))]
        return lines[line - 1] if 0 < line <= len(lines) else None


def _read_lines(path: str, data: Optional[bytes]) -> list:
    from repro_lint.facts.sourcetext import decode_source, split_lines

    try:
        if data is None:
            with open(path, "rb") as fh:
                data = fh.read()
        return split_lines(decode_source(data))
    except (OSError, UnicodeDecodeError, SyntaxError, LookupError):
        return []
