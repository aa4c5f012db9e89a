"""Jupyter notebooks read as one Python module, and edited text written back into them.

A notebook runs top to bottom, so its code cells, in order, are one module (an entry
point). Reading maps the file to that module's text and keeps, for every line, the cell and
the line in the cell it came from; extraction, the index, the rules and the fix engine see
only the text. IPython syntax (line magics `%pip`, shell escapes `!ls`, help `obj?`, cell
magics `%%bash`) becomes placeholder lines, so that the lines keep their numbers; the body
of a cell magic that runs Python in the notebook's namespace (`%%time`) stays code.

Writing back replaces only the `source` of the cells whose lines changed, in the file's own
layout (list or string, indentation, line ends); outputs, metadata and ids are untouched
bytes. Edited text that changes, moves or drops a placeholder is refused: a fix never
writes into a magic or shell line.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import json
import re
from dataclasses import dataclass, field
from json.decoder import scanstring
from typing import Optional

from repro_lint.core import catalog

SUFFIX = ".ipynb"
_PLACEHOLDER = "# repro-lint magic {n}"
# a line magic, shell escape or help request (`%pip ...`, `!ls`, `?np.random`), a help
# suffix (`np.random.seed?`), or an assignment from one (`files = !ls`)
_ESCAPE = re.compile(r"^([ \t]*)(?:[%!?]|[\w.]+\?{1,2}[ \t]*$|[\w.\[\], \t*]+=[ \t]*[%!])")
_WS = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"[^\s,\]}]+")


# ModuleInfo.extra key of a notebook's facts: `Notebook.cell_starts`
CELL_STARTS = "cell_starts"


class NotebookError(Exception):
    """The file is not a notebook this tool can read, or edited text cannot go back into it."""


def is_notebook(path: object) -> bool:
    return str(path).endswith(SUFFIX)


@dataclass
class _Cell:
    index: int  # position in the file's `cells` array (0-based)
    lines: list  # its source lines, without line ends
    trailing_newline: bool
    as_list: bool  # `source` is a list of strings (else one string)
    span: tuple = (0, 0)  # the `source` value in the file's text
    open_ws: str = ""  # the layout of a list: what stands after `[` and before `]`
    close_ws: str = ""
    pieces: tuple = ((), ())  # (offsets in the joined source, offsets in the file text) of its strings


@dataclass
class Notebook:
    raw: str  # the file's text (without a BOM)
    bom: bool
    cells: list  # the code cells read as Python, in order
    lines: list  # the module's lines
    origin: list  # module line (0-based) -> (position in `cells`, line in the cell, 0-based)
    magics: dict  # placeholder line -> (position in `cells`, line in the cell)
    ascii: bool = False  # the file escapes non-ASCII characters
    _file_lines: Optional[list] = field(default=None, repr=False)

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)

    # -- locations -----------------------------------------------------------------------
    def _where(self, line: int) -> tuple:
        if not self.origin:
            return (None, 0)
        return self.origin[min(max(line, 1), len(self.origin)) - 1]

    def cell_position(self, line: int) -> tuple:
        """(cell number, 1-based in the file's cells, line in the cell, 1-based) of a module line."""
        pos, j = self._where(line)
        if pos is None:
            return (1, 1)
        return (self.cells[pos].index + 1, j + 1)

    def cell_starts(self) -> tuple:
        """(first module line, 1-based; cell number, 1-based in the file's cells) of each code
        cell: how the rules name a line of the module in their messages (`rules.line_words`)."""
        out = []
        last = None
        for i, (pos, _) in enumerate(self.origin):
            if pos != last:
                out.append((i + 1, self.cells[pos].index + 1))
                last = pos
        return tuple(out)

    def cell_line(self, line: int) -> str:
        """The text of a module line as the cell has it (a magic line as written)."""
        pos, j = self._where(line)
        return "" if pos is None else self.cells[pos].lines[j]

    def file_line(self, line: int) -> int:
        """The line of the `.ipynb` file (1-based) holding a module line: where code scanning
        and annotations point."""
        pos, j = self._where(line)
        if pos is None:
            return 1
        cell = self.cells[pos]
        offset = sum(len(x) + 1 for x in cell.lines[:j])
        joined, raw = cell.pieces
        at = raw[max(bisect.bisect_right(joined, offset) - 1, 0)] if raw else cell.span[0]
        if self._file_lines is None:
            self._file_lines = [m.start() for m in re.finditer("\n", self.raw)]
        return bisect.bisect_right(self._file_lines, at) + 1

    # -- writing back ----------------------------------------------------------------------
    def cell_sources(self, text: str) -> dict:
        """The new source of every cell that `text` (edited module text) changes, by position
        in `cells`. Raises NotebookError when a placeholder was changed, moved or dropped."""
        new = text.replace("\r\n", "\n").split("\n")
        if new and new[-1] == "":
            new.pop()
        if new == self.lines:
            return {}
        if not self.cells:
            raise NotebookError("the notebook has no code cell to write into")
        owner = self._owners(new)
        per_cell: dict = {pos: [] for pos in range(len(self.cells))}
        for line, pos in zip(new, owner):
            per_cell[pos].append(line)
        found: dict = {}
        for pos, lines in per_cell.items():
            for line in lines:
                if line in self.magics:
                    found.setdefault(line, []).append(pos)
        for ph, (pos, j) in self.magics.items():
            if found.get(ph) != [pos]:
                raise NotebookError(
                    f"an edit would change a magic or shell line (cell {self.cells[pos].index + 1}, line {j + 1}); not written"
                )
        out = {}
        start = 0
        for pos, cell in enumerate(self.cells):
            old = self.lines[start:start + len(cell.lines)]
            start += len(cell.lines)
            lines = per_cell[pos]
            if lines == old:
                continue
            if [x for x in lines if x in self.magics] != [x for x in old if x in self.magics]:
                raise NotebookError(f"an edit would reorder the magic lines of cell {cell.index + 1}; not written")
            restored = [cell.lines[self.magics[x][1]] if x in self.magics else x for x in lines]
            # blank lines an edit left at a cell's edges are not the cell's own
            while restored and not restored[-1].strip() and not (cell.lines and not cell.lines[-1].strip()):
                restored.pop()
            while restored and not restored[0].strip() and not (cell.lines and not cell.lines[0].strip()):
                restored.pop(0)
            out[pos] = "\n".join(restored) + ("\n" if cell.trailing_newline and restored else "")
        return out

    def _owners(self, new: list) -> list:
        """The cell (position in `cells`) each line of the edited text belongs to: an unchanged
        line stays in its cell, an added one joins the cell of the line before it (of the line
        after it where that cell holds only magic or shell lines)."""
        owner = [0] * len(new)
        matcher = difflib.SequenceMatcher(None, self.lines, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for k in range(j2 - j1):
                    owner[j1 + k] = self.origin[i1 + k][0]
            elif tag == "replace":  # line for line, the rest with the last replaced line
                for k in range(j2 - j1):
                    owner[j1 + k] = self.origin[min(i1 + k, i2 - 1)][0]
            elif tag == "insert":
                pos = self.origin[i1 - 1][0] if i1 > 0 else self.origin[0][0]
                if i1 < len(self.lines) and pos in self._shell_only():
                    pos = self.origin[i1][0]  # not into a cell of shell lines (`!pip install ...`)
                for k in range(j1, j2):
                    owner[k] = pos
        return owner

    def _shell_only(self) -> set:
        """The cells (positions in `cells`) with magic or shell lines and nothing else to run
        (comments aside: `#!pip install ...` left commented out)."""
        out = set()
        for i, (pos, _) in enumerate(self.origin):
            line = self.lines[i].strip()
            if line and line[0] != "#" and self.lines[i] not in self.magics:
                out.add(-1 - pos)  # (a cell with a line of code)
        return {pos for pos in range(len(self.cells)) if -1 - pos not in out and any(p == pos for p, _ in self.magics.values())}

    def render(self, text: str) -> bytes:
        """The file's bytes with `text` (edited module text) written into its cells."""
        changes = self.cell_sources(text)
        raw = self.raw
        for pos in sorted(changes, key=lambda p: -self.cells[p].span[0]):
            cell = self.cells[pos]
            start, end = cell.span
            raw = raw[:start] + self._serialise(cell, changes[pos]) + raw[end:]
        return ("\ufeff" + raw if self.bom else raw).encode("utf-8")

    def _serialise(self, cell: _Cell, source: str) -> str:
        dump = lambda s: json.dumps(s, ensure_ascii=self.ascii)  # noqa: E731
        if not cell.as_list:
            return dump(source)
        items = re.findall(r"[^\n]*\n|[^\n]+$", source)
        if not items:
            return "[]"
        return "[" + cell.open_ws + ("," + cell.open_ws).join(dump(s) for s in items) + cell.close_ws + "]"

    def cell_diffs(self, display: str, text: str, unified_diff) -> str:
        """A unified diff per changed cell, each named `PATH:cell N`."""
        out = []
        for pos, source in sorted(self.cell_sources(text).items()):
            cell = self.cells[pos]
            old = "\n".join(cell.lines) + ("\n" if cell.trailing_newline else "")
            out.append(unified_diff(f"{display}:cell {cell.index + 1}", old, source))
        return "".join(out)


# -- reading ----------------------------------------------------------------------------
def read(data: bytes) -> Notebook:
    """The notebook in `data` (the file's bytes). Raises NotebookError (one line)."""
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"not a notebook: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    bom = raw.startswith("\ufeff")
    if bom:
        raw = raw[1:]
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a notebook: invalid JSON: {exc}") from None
    except RecursionError:
        raise NotebookError("not a notebook: its JSON is nested too deeply") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        if isinstance(doc, dict) and "worksheets" in doc:
            raise NotebookError("nbformat 3 notebooks are not supported (convert it: `jupyter nbconvert --to notebook --nbformat 4`)")
        raise NotebookError("not a notebook: no `cells` list at the top level")
    nb = Notebook(raw, bom, [], [], [], {}, ascii=_escapes_non_ascii(raw))
    if not _is_python(doc.get("metadata")):
        return nb
    spans = _source_spans(raw)
    settings = catalog.load("notebook")
    cell_magics = frozenset(settings.get("python-cell-magics", ()))
    for index, item in enumerate(doc["cells"]):
        if not isinstance(item, dict) or item.get("cell_type") != "code":
            continue
        source = item.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            joined, as_list = "".join(source), True
        elif isinstance(source, str):
            joined, as_list = source, False
        else:
            raise NotebookError(f"not a notebook: cell {index + 1}: `source` is neither a string nor a list of strings")
        lines = joined.split("\n") if joined else []
        trailing = joined.endswith("\n")
        if trailing:
            lines.pop()
        cell = _Cell(index, lines, trailing, as_list)
        if index in spans:
            cell.span, cell.open_ws, cell.close_ws, cell.pieces = spans[index]
        pos = len(nb.cells)
        nb.cells.append(cell)
        skipped = _escape_lines(lines, cell_magics)
        for j, line in enumerate(lines):
            if j in skipped:
                indent = skipped[j]
                ph = _PLACEHOLDER.format(n=len(nb.magics) + 1)
                ph = f"{indent}pass  {ph}" if indent else ph  # an indented block may hold nothing else
                nb.magics[ph] = (pos, j)
                line = ph
            nb.lines.append(line)
            nb.origin.append((pos, j))
    return nb


def python_source(data: bytes) -> bytes:
    """The module text of the notebook in `data`, as UTF-8 bytes (what extraction parses)."""
    return read(data).text.encode("utf-8")


def _is_python(metadata: object) -> bool:
    if not isinstance(metadata, dict):
        return True
    names = catalog.load("notebook").get("python-languages", ["python"])
    for key, sub in (("kernelspec", "language"), ("language_info", "name")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(sub), str):
            return value[sub].lower() in names
    return True


def _escapes_non_ascii(raw: str) -> bool:
    """Whether the file was written with non-ASCII characters escaped (`\\u00e9`)."""
    return raw.isascii() and "\\u" in raw


def _escape_lines(lines: list, cell_magics: frozenset) -> dict:
    """Lines of a cell that are IPython syntax, not Python: line -> the indentation of the
    placeholder that stands for it."""
    first = next((j for j, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        words = lines[first].lstrip()[2:].split(None, 1)
        if not words or words[0] not in cell_magics:
            return {j: "" for j in range(len(lines))}  # not Python (or not run here): the whole cell
        body = _line_escapes(lines[first + 1:])
        out = {first: ""}
        out.update({first + 1 + j: indent for j, indent in body.items()})
        return out
    return _line_escapes(lines)


def _line_escapes(lines: list) -> dict:
    if not any(_ESCAPE.match(line) for line in lines):
        return {}
    try:  # valid Python as it is (a `%` line inside a string): nothing to skip
        ast.parse("\n".join(lines))
        return {}
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    out: dict = {}
    continued: Optional[str] = None
    for j, line in enumerate(lines):
        if continued is not None:
            out[j] = continued
        else:
            m = _ESCAPE.match(line)
            if m is None:
                continue
            out[j] = m.group(1)
        continued = out[j] if line.rstrip().endswith("\\") else None
    return out


# -- where the cells' sources are in the file's text -----------------------------------------
def _ws(s: str, i: int) -> int:
    return _WS.match(s, i).end()  # type: ignore[union-attr]


def _skip(s: str, i: int) -> int:
    """The end of the JSON value starting at `s[i]` (the text is valid JSON)."""
    depth = 0
    while True:
        c = s[i]
        if c == '"':
            i = scanstring(s, i + 1)[1]
        elif c in "[{":
            depth += 1
            i += 1
        elif c in "]}":
            depth -= 1
            i += 1
        elif c in ",: \t\r\n":
            i += 1
            continue
        else:
            i = _SCALAR.match(s, i).end()  # type: ignore[union-attr]
        if depth == 0:
            return i


def _members(s: str, i: int) -> list:
    """(key, value start, value end) of the object starting at `s[i]`."""
    out = []
    i = _ws(s, i + 1)
    if s[i] == "}":
        return out
    while True:
        key, i = scanstring(s, i + 1)
        i = _ws(s, _ws(s, i) + 1)
        end = _skip(s, i)
        out.append((key, i, end))
        i = _ws(s, end)
        if s[i] != ",":
            return out
        i = _ws(s, i + 1)


def _items(s: str, i: int) -> list:
    """(start, end) of the values of the array starting at `s[i]`."""
    out = []
    i = _ws(s, i + 1)
    if s[i] == "]":
        return out
    while True:
        end = _skip(s, i)
        out.append((i, end))
        i = _ws(s, end)
        if s[i] != ",":
            return out
        i = _ws(s, i + 1)


def _source_spans(s: str) -> dict:
    """Cell index -> (span of its `source` value, list layout after `[` and before `]`,
    (offsets in the joined source, offsets in the text) of its strings)."""
    out: dict = {}
    start = _ws(s, 0)
    cells = [(vs, ve) for key, vs, ve in _members(s, start) if key == "cells"]
    if not cells or s[cells[-1][0]] != "[":
        return out
    for index, (cs, _) in enumerate(_items(s, cells[-1][0])):
        if s[cs] != "{":
            continue
        for key, vs, ve in _members(s, cs):
            if key != "source":
                continue
            if s[vs] == "[":
                items = _items(s, vs)
                joined_at, raw_at, offset = [], [], 0
                for a, _b in items:
                    joined_at.append(offset)
                    raw_at.append(a)
                    offset += len(scanstring(s, a + 1)[0]) if s[a] == '"' else 0
                open_ws = s[vs + 1:items[0][0]] if items else ""
                close_ws = s[items[-1][1]:ve - 1] if items else ""
                out[index] = ((vs, ve), open_ws, close_ws, (tuple(joined_at), tuple(raw_at)))
            else:
                out[index] = ((vs, ve), "", "", ((0,), (vs,)))
    return out
