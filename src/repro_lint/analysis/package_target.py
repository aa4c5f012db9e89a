"""The releases of a package other than torch (albumentations, flash-attn, xformers) that a
program targets, for rules whose facts changed between that package's releases: the
requirement nearest the program's entry module, read once per folder, package and project
index (it reads files). A project that declares no requirement targets current releases."""

from __future__ import annotations

import weakref
from dataclasses import replace
from typing import Any, Optional

from repro_lint.analysis.context import Context
from repro_lint.analysis.torch_target import resolved_folder
from repro_lint.discover.requirements import Target, package_target
from repro_lint.facts.model import ModuleInfo
from repro_lint.index.program import Program

_TARGETS: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def target_of(ctx: Context, package: str, program: Optional[Program] = None, module: Optional[ModuleInfo] = None) -> Target:
    """The releases of `package` the program (or `module`) targets. For torch the
    `target-torch-version` setting comes first, as for `torch_target.program_target`."""
    per_folder = _TARGETS.setdefault(ctx.index, {})
    info = program.entry if program is not None else module
    start = resolved_folder(ctx, info.path) if info is not None and ctx.index.root is not None else None
    key = (start, package)
    hit = per_folder.get(key)
    if hit is None:
        setting = ctx.settings.get("target-torch-version") if package == "torch" else None
        hit = package_target(package, ctx.index.root, start, setting)
        if hit.source == "setting":
            hit = replace(hit, where=f"target-torch-version = {hit.where!r}")
        per_folder[key] = hit
    return hit


def admits_older(target: Target, version: str) -> bool:
    """Whether the releases a project installs may be older than `version`: a requirement
    without a lower bound (or none at all) installs the newest release it admits, so then
    only an upper bound below `version` says so (what a rule reports on)."""
    if target.lower is None:
        return not target.admits_from(version)
    return target.admits_before(version)


def has_everywhere(target: Target, since: str) -> bool:
    """Whether every release the project declares has what `since` added (a keyword, a
    setting: spec "Fixes" 14, what a fix may use). A package the project does not declare is
    a current release; a declaration without a lower bound admits every release."""
    if target.source == "undeclared":
        return True
    return target.lower is not None and not target.admits_before(since)


def shown(target: Target) -> str:
    """How a message names what the project targets."""
    if target.source == "undeclared":
        return "no requirement is declared"
    return target.where
