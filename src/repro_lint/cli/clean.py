"""`repro-lint clean`: remove the cache folders this tool made.

A folder is removed only when it is a real folder (not a link) named `.repro_lint_cache`
that holds the `.gitignore` the cache writes into itself: nothing else is ever deleted.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from repro_lint.core.bounded_read import read_regular
from repro_lint.check.cache import CACHE_DIR

_MARK = "# created by repro-lint"


def remove_caches(folders: list[Path]) -> tuple[list[str], list[str]]:
    """Remove the caches under `folders` and at their project roots: (removed, errors)."""
    from repro_lint.discover.project import find_root

    candidates: list[Path] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        candidates.append(find_root([folder]) / CACHE_DIR)
        for here, dirs, _files in os.walk(folder):
            if CACHE_DIR in dirs:
                candidates.append(Path(here) / CACHE_DIR)
                dirs.remove(CACHE_DIR)
    removed, errors, seen = [], [], set()
    for path in candidates:
        key = os.path.abspath(path)
        if key in seen or path.is_symlink() or not path.is_dir():
            continue
        seen.add(key)
        try:  # a small regular file, not a link (a FIFO or /dev/zero would hang or fill memory)
            ours = read_regular(path / ".gitignore", 4096, follow_links=False).decode(errors="replace").startswith(_MARK)
        except OSError:
            ours = False
        if not ours:
            errors.append(f"{path}: not removed: it does not look like a repro-lint cache")
            continue
        try:
            shutil.rmtree(path)
        except OSError as exc:
            errors.append(f"{path}: cannot remove it: {exc.strerror or exc}")
            continue
        removed.append(str(path))
    return removed, errors
