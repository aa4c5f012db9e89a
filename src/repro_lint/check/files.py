"""The files of a check: the paths named and the project files beside them, how each is read
(regular files inside the project, a size cap) and how its path is shown."""

from __future__ import annotations


import errno
import functools
import os
from pathlib import Path
from typing import Optional

from repro_lint.core.bounded_read import is_inside, read_regular
from repro_lint.discover.config import Config
from repro_lint.facts.model import ModuleInfo
from repro_lint.discover.project import Discovery, FolderResolver, mark_path



@functools.lru_cache(maxsize=4)
def _resolved_cwd(cwd: str) -> str:
    return Path(cwd).resolve().as_posix().rstrip("/") + "/"


def display_path(path: Path, resolved: Optional[str] = None) -> str:
    """The path as shown to the user: relative to the working folder when inside it.
    `resolved` is `str(path.resolve())` when the caller has it already (resolving is slow)."""
    if resolved is None:
        full = path.resolve().as_posix()
    else:
        full = resolved if os.sep == "/" else Path(resolved).as_posix()
    cwd = _resolved_cwd(os.getcwd())
    if full.startswith(cwd):
        return full[len(cwd):]
    return "." if full + "/" == cwd else full


class PathError(Exception):
    """A path given on the command line does not exist."""


def collect_files(
    paths: list[Path], cfg: Config, root: Path, side: Optional[list] = None, warnings: Optional[list] = None,
    leftovers: Optional[list] = None,
) -> tuple[list[Path], list[Path]]:
    """(every project file for the index, the files to report on); `side` receives the
    project's other files that rules read (`project.is_side_file`), `warnings` a line for
    each ignore pattern skipped, `leftovers` the temporary files of `--fix` seen."""
    disc = Discovery(root, list(cfg.exclude) + list(cfg.extend_exclude))
    project = list(disc.walk(root, explicit=False)) if root.is_dir() else []
    if side is not None:
        side.extend(disc.side_files)
    targets: list[Path] = []
    for p in paths:
        if not p.exists():
            raise PathError(f"{p}: no such file or directory")
        if p.is_dir() and p.resolve() == root:
            targets.extend(project)  # the whole project: walked once
            continue
        for f in disc.walk(p, explicit=True):
            if p.is_file() and disc.excluded(display_rel(f, root)):
                continue  # excluded files stay excluded when named (pre-commit names them)
            targets.append(f)
    if warnings is not None:
        warnings.extend(disc.warnings)
    if leftovers is not None:
        leftovers.extend(disc.leftovers)
    return project, targets


def read_source(path: Path, resolved: str, root: Path) -> bytes:
    """The bytes of a project's Python file (`resolved`: its resolved path). A link to a
    file outside the project is not read: a cloned repository could point one at any file
    its user can read, and a report shows the source lines of its findings."""
    if not is_inside(resolved, str(root)) and os.path.islink(path):
        raise OSError(errno.EACCES, "it is a link to a file outside the project", str(path))
    return read_regular(path)


def display_rel(path: Path, root: Path, resolve: Optional[FolderResolver] = None) -> str:
    """`path` relative to the (resolved) root, with `/`; its name when it is outside.
    `resolve`: a resolver that has resolved the path's folder already (many files)."""
    resolved = resolve(str(path.absolute())) if resolve is not None else str(path.resolve())
    top = str(root)
    if not is_inside(resolved, top) or resolved == top:
        return path.name
    rel = resolved[len(top.rstrip(os.sep)) + 1:]
    return rel if os.sep == "/" else rel.replace(os.sep, "/")


def mark_tests(infos: dict[str, ModuleInfo], root: Path) -> None:
    """Set what each file's path (a resolved-path key) relative to the root says of it."""
    prefix = root.as_posix().rstrip("/") + "/"
    for k, info in infos.items():
        rel = k if os.sep == "/" else Path(k).as_posix()
        mark_path(info, rel[len(prefix):] if rel.startswith(prefix) else rel.rpartition("/")[2])
