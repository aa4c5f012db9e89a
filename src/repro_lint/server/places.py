"""Where an open document belongs: to a project inside a workspace folder, or to nothing.

The client says which folders the user opened (`workspaceFolders`, else `rootUri`). A
document in one of them, whose file (links followed) is in one of them too, is checked with
its project, whose root is found as `repro-lint check` finds it but never above the folder:
a stray `.git` in a home folder must not make the server read the home folder. Any other
document (a file opened from elsewhere, `/root/x.py`; a link in the workspace to a file
outside it) is checked alone, from its text, with nothing else read, and no code action
edits it: code actions edit only files inside the workspace.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional

from repro_lint.discover.project import find_root


class Folder:
    """A workspace folder: as the client names it, and where it really is."""

    def __init__(self, path: Path) -> None:
        self.named = Path(os.path.normpath(os.path.abspath(path)))
        self.real = Path(os.path.realpath(path))

    def rebased(self, path: Path) -> Optional[Path]:
        """`path` (absolute, as named) as a path under the real folder; None when it is not
        in the folder."""
        for base in (self.named, self.real):
            try:
                return self.real / path.relative_to(base)
            except ValueError:
                continue
        return None


def folders(paths: Iterable[Path]) -> list[Folder]:
    """The workspace folders, the deepest first (a document belongs to the nearest)."""
    out = [Folder(p) for p in paths]
    return sorted(out, key=lambda f: len(f.real.parts), reverse=True)


def contains(folders: list[Folder], path: Path) -> bool:
    """Whether the file at `path` (links followed) is inside a workspace folder."""
    real = os.path.realpath(path)
    return any(real == str(f.real) or real.startswith(str(f.real).rstrip(os.sep) + os.sep) for f in folders)


def project_root(folders: list[Folder], path: Path) -> Optional[Path]:
    """The root of the project of the document at `path` (absolute, as the client names it),
    at or below its workspace folder; None when the document is to be checked alone."""
    named = Path(os.path.normpath(path))
    for folder in folders:
        inside = folder.rebased(named)
        if inside is None:
            continue
        if not contains(folders, inside):
            return None  # a link to a file outside the workspace
        root = find_root([inside], anchor=folder.real)
        try:
            root.relative_to(folder.real)
            return root
        except ValueError:
            return folder.real  # (the project's root lies above the folder the user opened)
    return None
