"""The project on disk: its root, its Python files, and their module names."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Iterable, Optional

import pathspec

from repro_lint import catalog


def find_root(paths: Iterable[Path]) -> Path:
    """The nearest folder above the first path holding `pyproject.toml`, else `.git`, else the path's folder."""
    start = None
    for p in paths:
        start = p.resolve()
        break
    if start is None:
        start = Path.cwd().resolve()
    base = start if start.is_dir() else start.parent
    for folder in [base, *base.parents]:
        if (folder / "pyproject.toml").is_file():
            return folder
    for folder in [base, *base.parents]:
        if (folder / ".git").exists():
            return folder
    return base


def module_name(path: Path, root: Path, resolved: bool = False) -> tuple[str, bool]:
    """Dotted module name of `path` relative to the project root (or its `src/` layout root).
    `resolved` says `path` is resolved already (resolving costs system calls per folder)."""
    try:
        rel = (path if resolved else path.resolve()).relative_to(root)
    except ValueError:
        rel = Path(path.name)
    parts = list(rel.with_suffix("").parts)
    if parts and parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    is_package = bool(parts) and parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def is_test_path(rel: str) -> bool:
    globs = catalog.load("program")["test-globs"]
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(rel, g) or fnmatch.fnmatchcase(name, g) for g in globs)


class FolderResolver:
    """`Path.resolve`, with each folder resolved once: a project asks for every file in it,
    and resolving costs a system call per path component."""

    def __init__(self) -> None:
        self._folders: dict[Path, Path] = {}

    def __call__(self, path: Path) -> Path:
        if path.is_symlink():
            return path.resolve()
        parent = self._folders.get(path.parent)
        if parent is None:
            parent = self._folders[path.parent] = path.parent.resolve()
        return parent / path.name


class Discovery:
    """Finds Python files under given paths, honouring .gitignore and excludes."""

    def __init__(self, root: Path, exclude: list[str]) -> None:
        self.root = root
        self.skip_dirs = set(catalog.load("program")["skip-dirs"])
        self.exclude = pathspec.PathSpec.from_lines("gitwildmatch", exclude)
        self._gitignores: dict[Path, Optional[pathspec.PathSpec]] = {}
        self.resolve = FolderResolver()

    def _gitignore(self, folder: Path) -> Optional[pathspec.PathSpec]:
        if folder not in self._gitignores:
            spec = None
            gi = folder / ".gitignore"
            if gi.is_file():
                try:
                    spec = pathspec.PathSpec.from_lines("gitwildmatch", gi.read_text(errors="replace").splitlines())
                except (OSError, ValueError):
                    spec = None
            self._gitignores[folder] = spec
        return self._gitignores[folder]

    def _ignored(self, path: Path, is_dir: bool) -> bool:
        try:
            rel = self.resolve(path).relative_to(self.root).as_posix()
        except ValueError:
            rel = path.name
        probe = rel + "/" if is_dir else rel
        if self.exclude.match_file(probe):
            return True
        # .gitignore files from the root down to the file's folder
        folder = self.root
        parts = Path(rel).parts
        for i in range(len(parts)):
            spec = self._gitignore(folder)
            if spec is not None:
                sub = "/".join(parts[i:]) + ("/" if is_dir else "")
                if spec.match_file(sub):
                    return True
            folder = folder / parts[i]
        return False

    def _is_venv(self, folder: Path) -> bool:
        return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()

    def walk(self, path: Path, explicit: bool = True) -> Iterable[Path]:
        """Python files under `path`. An explicitly named file is always included."""
        if path.is_file():
            if explicit or (path.suffix in (".py", ".pyi") and not self._ignored(path, False)):
                yield path
            return
        seen: set[tuple[int, int]] = set()
        for dirpath, dirnames, filenames in os.walk(path, followlinks=True):
            d = Path(dirpath)
            try:
                st = d.stat()
            except OSError:
                dirnames[:] = []
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:  # a symlink loop: do not descend again
                dirnames[:] = []
                continue
            seen.add(key)
            keep = []
            for name in sorted(dirnames):
                sub = d / name
                if name in self.skip_dirs or name.endswith(".egg-info") or self._is_venv(sub) or self._ignored(sub, True):
                    continue
                keep.append(name)
            dirnames[:] = keep
            for name in sorted(filenames):
                if name.endswith((".py", ".pyi")):
                    f = d / name
                    if not self._ignored(f, False):
                        yield f
