"""The torch releases a program (or a module) targets: the `target-torch-version` setting,
else the requirement nearest its folder (read once per folder and project index: it reads
files), for rules whose facts changed between releases."""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any, Optional

from repro_lint.analysis.context import Context
from repro_lint.core import catalog
from repro_lint.discover.requirements import Target, declared, declaring_folders, release, torch_target
from repro_lint.facts.model import ModuleInfo
from repro_lint.index.program import Program


_TARGETS: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def program_target(ctx: Context, program: Optional[Program] = None, module: Optional[ModuleInfo] = None) -> Target:
    """The torch releases a program targets: the requirement nearest its entry module (or
    nearest `module`, for a rule that checks modules); the project's without either."""
    per_folder = _TARGETS.setdefault(ctx.index, {})
    info = program.entry if program is not None else module
    start = resolved_folder(ctx, info.path) if info is not None and ctx.index.root is not None else None
    hit = per_folder.get(start)
    if hit is None:
        hit = per_folder[start] = torch_target(ctx.settings.get("target-torch-version"), ctx.index.root, start)
    return hit


_FOLDERS: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def resolved_folder(ctx: Context, path: str) -> Path:
    """The resolved folder of a module (resolved once per path and project index: several
    rules ask for every program, and programs share entry modules)."""
    per_path = _FOLDERS.setdefault(ctx.index, {})
    hit = per_path.get(path)
    if hit is None:
        hit = per_path[path] = Path(path).resolve().parent
    return hit


def reseeds_workers(ctx: Context, program: Optional[Program] = None, module: Optional[ModuleInfo] = None) -> bool:
    """Whether every targeted release reseeds DataLoader workers' global RNGs (python's
    `random`, numpy's, torch's) from the loader's base seed: since 1.9. A project that
    declares no torch requirement, or one without a lower bound, targets current releases
    (spec, large repositories 8)."""
    target = program_target(ctx, program, module)
    since = catalog.load("dataloading")["workers-reseed-globals-since"]
    # (a requirement without a lower bound, `torch` alone, installs a current release)
    return target.source == "undeclared" or target.lower is None or not target.admits_before(since)


def admits_before(ctx: Context, program: Program, package: str, version: str) -> bool:
    """Whether a release of `package` before `version` is among those the project declares for
    the program (the nearest folder that declares it; a declaration without a lower bound
    admits every release). A package the project does not declare: a current release."""
    root = ctx.index.root
    if root is None:
        return False
    start = resolved_folder(ctx, program.entry.path)
    memo = _DECLARED.setdefault(ctx.index, {})
    key = (start, package)
    found = memo.get(key)
    if found is None:
        found = []
        for folder in declaring_folders(root, start):
            found = declared(folder, package)
            if found:
                break
        memo[key] = found
    limit = release(version)
    return any(lower is None or limit is not None and lower < limit for _, lower in found)


_DECLARED: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def targets_before(ctx: Context, version: str, program: Optional[Program] = None, module: Optional[ModuleInfo] = None) -> str:
    """Where the project declares a torch release before `version` for the program (or the
    module), e.g. "torch>=0.4.0 in requirements.txt"; "" when every targeted release is that
    one or later (a project that declares none, or no lower bound, targets current releases)."""
    target = program_target(ctx, program, module)
    if target.source == "undeclared" or target.lower is None or not target.admits_before(version):
        return ""
    return target.where
