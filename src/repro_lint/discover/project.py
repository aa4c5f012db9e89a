"""The project on disk: its root, its Python files, and their module names."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from pathlib import Path
from typing import Any, Iterable, Optional

from repro_lint.core import catalog
from repro_lint.core.bounded_read import read_text
from repro_lint.core.leftovers import SUFFIX as LEFTOVER_SUFFIX, is_leftover_name
from repro_lint.discover.ignore_rules import IgnoreRules
from repro_lint.discover.named_path import start_folder
from repro_lint.discover.notebook import SUFFIX as NOTEBOOK_SUFFIX

# the files checked: Python sources, stubs and Jupyter notebooks
SOURCE_SUFFIXES = (".py", ".pyi", NOTEBOOK_SUFFIX)

def find_root(paths: Iterable[Path], anchor: Optional[Path] = None) -> Path:
    """The nearest folder above the first path holding `pyproject.toml`, else `.git`, else the
    path's folder. Where the path is comes from where the user stands (`anchor`, default the
    working folder) and the path as named, never from a link's target (`named_path`)."""
    base = start_folder(next(iter(paths), None), anchor)
    for folder in [base, *base.parents]:
        if (folder / "pyproject.toml").is_file():
            return folder
    for folder in [base, *base.parents]:
        if (folder / ".git").exists():
            return folder
    return base


def is_project_root(folder: Path) -> bool:
    """Whether `folder` holds what `find_root` looks for (`pyproject.toml`, `.git`): not a
    folder it fell back to for files outside any project."""
    return (folder / "pyproject.toml").is_file() or (folder / ".git").exists()


def module_name(path: "Path | str", root: Path, resolved: bool = False) -> tuple[str, bool]:
    """Dotted module name of `path` relative to the project root (or its `src/` layout root).
    `resolved` says `path` is resolved already (resolving costs system calls per folder)."""
    full = str(path) if resolved else str(Path(path).resolve())
    prefix = str(root).rstrip(os.sep) + os.sep
    rel = full[len(prefix):] if full.startswith(prefix) else os.path.basename(full)
    parts = os.path.splitext(rel)[0].split(os.sep) if rel else []
    if os.altsep:
        parts = [q for part in parts for q in part.split(os.altsep)]
    if parts and parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    is_package = bool(parts) and parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    elif full.endswith(NOTEBOOK_SUFFIX) and parts:
        parts[-1] += "-ipynb"  # no import statement can name it: nothing imports a notebook
    return ".".join(parts), is_package


@functools.lru_cache(maxsize=None)
def _glob_pattern(key: str) -> "re.Pattern[str]":
    """The globs of the catalog's `key` as one pattern (what `fnmatchcase` matches with each:
    asked for every file of a project, glob by glob it took a second on 38,000 files)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in catalog.load("program")[key]) or "(?!)")


def _matches(rel: str, key: str) -> bool:
    pattern = _glob_pattern(key)
    return pattern.match(rel) is not None or pattern.match(rel.rsplit("/", 1)[-1]) is not None


def mark_path(info: Any, rel: str) -> None:
    """Set what a file's path (relative to the root, with "/") says about its module: a test
    file, a module that is never an entry point (`setup.py`, a docs `conf.py`, ...); a
    notebook does work at top level (it runs top to bottom, and nothing imports it), which
    makes it an entry point."""
    info.is_test = _matches(rel, "test-globs")
    info.never_entry = info.is_package or _matches(rel, "never-entry-globs")
    if rel.endswith(NOTEBOOK_SUFFIX):
        info.module_work = True


_SIDE_SUFFIXES = (".yaml", ".yml", ".toml", ".cfg", ".txt")


def is_side_file(folder: str, name: str) -> bool:
    """A file besides the Python sources whose content findings depend on: a torch requirement
    (pyproject.toml, setup.cfg, requirements files, conda environments) or a Hydra config."""
    if name.endswith((".yaml", ".yml")):
        return True
    if name in ("pyproject.toml", "setup.cfg"):
        return True
    return name.endswith(".txt") and (name.startswith("requirements") or os.path.basename(folder) == "requirements")


class FolderResolver:
    """`Path.resolve`, with each folder resolved once: a project asks for every file in it,
    and resolving costs a system call per path component."""

    def __init__(self) -> None:
        self._folders: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        """The resolved form of `path`, as a string (no `Path` objects: cheaper per file)."""
        if os.path.islink(path):
            return str(Path(path).resolve())
        folder, name = os.path.split(path)
        return os.path.join(self.folder(folder), name)

    def folder(self, folder: str) -> str:
        """The resolved form of the folder `folder` (its own links followed)."""
        hit = self._folders.get(folder)
        if hit is None:
            hit = self._folders[folder] = str(Path(folder or ".").resolve())
        return hit


class Discovery:
    """Finds Python files under given paths, honouring .gitignore and excludes."""

    def __init__(self, root: Path, exclude: list[str]) -> None:
        self.root = root
        self.skip_dirs = set(catalog.load("program")["skip-dirs"])
        # patterns skipped (too long, too many), one warning line each
        self.warnings: list[str] = []
        self.exclude = self._rules(exclude, "exclude") if exclude else None
        self._gitignores: dict[str, Optional[IgnoreRules]] = {}
        self.resolve = FolderResolver()
        # non-Python files rules read (requirement declarations, Hydra configs), seen by `walk`
        self.side_files: list[str] = []
        # temporary files of an interrupted `--fix` (`core.leftovers`), seen by `walk`
        self.leftovers: list[str] = []

    def excluded(self, rel: str) -> bool:
        """Whether the configuration's `exclude` patterns match `rel` (relative to the root, with "/")."""
        return self.exclude is not None and self.exclude.match_file(rel)

    def _rules(self, lines: list[str], source: str) -> IgnoreRules:
        rules = IgnoreRules.parse(lines, source)
        self.warnings.extend(rules.skipped)
        return rules

    def _gitignore(self, rel_folder: str) -> Optional[IgnoreRules]:
        """The rules of the `.gitignore` in the folder at `rel_folder` ("" for the root)."""
        try:
            return self._gitignores[rel_folder]
        except KeyError:
            pass
        spec = None
        gi = self.root / rel_folder / ".gitignore"
        if gi.is_file():
            try:
                spec = self._rules(read_text(gi).splitlines(), f"{rel_folder}/.gitignore" if rel_folder else ".gitignore")
            except OSError:
                spec = None
        self._gitignores[rel_folder] = spec
        return spec

    def _ignored(self, path: Path, is_dir: bool) -> bool:
        resolved = self.resolve(str(path))
        prefix = str(self.root).rstrip(os.sep) + os.sep
        rel = resolved[len(prefix):].replace(os.sep, "/") if resolved.startswith(prefix) else path.name
        return self._ignored_rel(rel, is_dir)

    def _ignored_rel(self, rel: str, is_dir: bool) -> bool:
        """Whether the file or folder at `rel` (relative to the root, with "/") is excluded."""
        if self.excluded(rel + "/" if is_dir else rel):
            return True
        # .gitignore files from the root down to the file's folder
        start = 0
        while True:
            spec = self._gitignore(rel[: start - 1] if start else "")
            if spec is not None and spec.match_file(rel[start:] + "/" if is_dir else rel[start:]):
                return True
            start = rel.find("/", start) + 1
            if not start:
                return False

    def _is_venv(self, folder: str) -> bool:
        """A Python environment: venv and virtualenv write `pyvenv.cfg`, conda `conda-meta/`,
        older virtualenv only its activation scripts. (A folder called `env` is more often a
        package of RL environments than an environment, so the name alone skips nothing.)"""
        join = os.path.join
        return (
            os.path.isfile(join(folder, "pyvenv.cfg"))
            or os.path.isdir(join(folder, "conda-meta"))
            or os.path.isfile(join(folder, "bin", "activate"))
            or os.path.isfile(join(folder, "Scripts", "activate.bat"))
        )

    def finds(self, path: Path) -> bool:
        """Whether walking the root would find the file at `path` (a source file inside the
        root, in no skipped, ignored or excluded folder, and not ignored or excluded itself)."""
        if not path.name.endswith(SOURCE_SUFFIXES):
            return False
        full = Path(self.resolve(str(path.absolute())))
        try:
            rel = full.relative_to(self.root)
        except ValueError:
            return False
        folder = self.root
        for part in rel.parts[:-1]:
            folder = folder / part
            if part in self.skip_dirs or part.endswith(".egg-info") or self._is_venv(str(folder)) or self._ignored(folder, True):
                return False
        return not self._ignored(full, False)

    def walk(self, path: Path, explicit: bool = True) -> Iterable[Path]:
        """Python files and notebooks under `path`, folders first-to-last in name order, a
        folder's files before its subfolders. An explicitly named one is always included (a
        file of another kind never is)."""
        if path.is_file():
            if path.name.endswith(SOURCE_SUFFIXES) and (explicit or not self._ignored(path, False)):
                yield path
            return
        seen: set[tuple[int, int]] = set()
        root_prefix = str(self.root).rstrip(os.sep) + os.sep
        stack = [str(path)]
        while stack:
            folder = stack.pop()
            try:
                st = os.stat(folder)
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:  # a symlink loop: do not descend again
                continue
            seen.add(key)
            # where the folder is relative to the root: files' excludes are matched on that
            real = self.resolve.folder(folder)
            if real + os.sep == root_prefix:
                rel_folder: Optional[str] = ""
            elif real.startswith(root_prefix):
                rel_folder = real[len(root_prefix):].replace(os.sep, "/") + "/"
            else:
                rel_folder = None
            subfolders = []
            for entry in entries:
                name = entry.name
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    continue
                if is_dir:
                    sub = os.path.join(folder, name)
                    if entry.is_symlink() and not (self.resolve.folder(sub) + os.sep).startswith(root_prefix):
                        continue  # a link out of the project (`data -> /`) is not walked
                    if name in self.skip_dirs or name.endswith(".egg-info") or self._is_venv(sub) or self._ignored(Path(sub), True):
                        continue
                    subfolders.append(sub)
                elif name.endswith(_SIDE_SUFFIXES) and is_side_file(folder, name):
                    if rel_folder is not None and not self._ignored_rel(rel_folder + name, False):
                        self.side_files.append(entry.path)
                elif name.endswith(LEFTOVER_SUFFIX):
                    if rel_folder is not None and is_leftover_name(name) and not entry.is_symlink():
                        self.leftovers.append(entry.path)
                elif name.endswith(SOURCE_SUFFIXES):
                    if entry.is_symlink() or rel_folder is None:
                        ignored = self._ignored(Path(entry.path), False)
                    else:
                        ignored = self._ignored_rel(rel_folder + name, False)
                    if not ignored:
                        yield Path(entry.path)
            stack.extend(reversed(subfolders))
