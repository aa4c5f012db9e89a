"""Where a path named on the command line (or opened in an editor) is, for finding its
project's root: from where the user stands and the path as named, never from the target of
a link the path goes through.

A checked repository can hold links (`evil.py -> ../victim/x.py`, `vendor -> /etc`): were the
root taken from a link's target, `--fix` would write there, the cache would be made there,
and discovery would walk there. So the part of a path below the working folder is followed
name by name and stops at the first link. A path elsewhere (absolute, or up with `..`) is
followed from the file system's root: its links are followed only above the first folder
that holds `pyproject.toml` or `.git` (a home folder that is a link), never inside a project.
The last name of a path is never followed: a linked file or folder named is where its link
is.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


def _is_project(folder: Path) -> bool:
    return (folder / "pyproject.toml").is_file() or (folder / ".git").exists()


def start_folder(path: Optional[Path], anchor: Optional[Path] = None) -> Path:
    """The folder a project's root is looked for from: the named path when it is a folder
    reached without following a link, else the folder that holds what it names.
    `anchor`: where the user stands (default: the working folder)."""
    here = Path(os.path.realpath(anchor)) if anchor is not None else Path(os.getcwd())
    if path is None:
        return here
    named = Path(os.path.normpath(path if Path(path).is_absolute() else here / path))
    try:
        parts = named.relative_to(here).parts
        current, inside = here, True
    except ValueError:
        parts = named.parts[1:]
        current, inside = Path(named.anchor), False
    for i, part in enumerate(parts):
        step = current / part
        if os.path.islink(step):
            if inside or i == len(parts) - 1:
                break
            step = Path(os.path.realpath(step))
        current = step
        if not inside and _is_project(current):
            inside = True
    return current if current.is_dir() else current.parent
