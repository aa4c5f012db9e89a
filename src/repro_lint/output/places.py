"""Where the formats read by CI services put a finding: the lines of the file itself (for a
notebook, the `.ipynb` lines that hold the code, as in SARIF and GitHub annotations, with
`cell N:LINE:COL` leading the message), and paths relative to the project root."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from repro_lint.core.findings import Finding, Location
from repro_lint.output.locations import Locator


@dataclass(frozen=True)
class Place:
    line: int
    col: int
    end_line: int
    end_col: int
    prefix: str  # `cell N:LINE:COL: ` in a notebook, else ""


def place(loc: Location, locator: Locator) -> Place:
    in_file = locator.file_lines(loc)
    if in_file is None:
        return Place(loc.line, loc.col, loc.end_line, max(loc.end_col, 1), "")
    shown = locator.shown(loc)
    return Place(in_file[0], 1, in_file[1], 1, f"cell {shown.cell}:{shown.line}:{shown.col}: ")


def project_path(path: str, root: Optional[Path]) -> str:
    """`path` (relative to the working folder) relative to the project root, with "/"; the
    path as given when it lies outside the root."""
    if root is None:
        return path.replace(os.sep, "/")
    full = Path(os.path.normpath(Path.cwd() / path))
    try:
        return full.relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.replace(os.sep, "/")


def fingerprint(f: Finding, path: str, occurrence: int) -> str:
    """A finding's identity across runs: rule, file, message without numbers (they move
    with edits) and its occurrence among equal ones."""
    message = re.sub(r"\d+", "#", f.message)
    return hashlib.blake2b(f"{f.code}\0{path}\0{message}\0{occurrence}".encode(), digest_size=16).hexdigest()
