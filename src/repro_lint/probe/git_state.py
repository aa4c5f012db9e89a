"""The commit and uncommitted changes of a git checkout, read without running any of the
checkout's own code.

A checkout's `.git/config` can name programs that plain git commands run: `core.fsmonitor`
(run by `git status`), hooks (`post-index-change` when status refreshes the index), clean
filters of `.gitattributes` drivers, external diff drivers and text conversions. An editable
install or a probed project may be anyone's checkout, so git runs here with all of those
switched off: no system or global configuration, no hooks, no fsmonitor, every filter driver
the checkout configures emptied, no external diff or textconv, no optional locks (nothing is
written), no submodules, and none of the caller's `GIT_*` variables.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any, Optional

_TIMEOUT = 10
_SAFE = (
    "core.fsmonitor=false", f"core.hooksPath={os.devnull}", "core.untrackedCache=false", "diff.external=",
    "submodule.recurse=false", "status.submoduleSummary=false", "core.pager=cat", "protocol.allow=never",
)


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_ATTR_NOSYSTEM="1", GIT_OPTIONAL_LOCKS="0",
        GIT_TERMINAL_PROMPT="0", LC_ALL="C",
    )
    return env


def git(path: str, *args: str, drivers: tuple[str, ...] = ()) -> Optional[str]:
    """Output of `git -C path ARGS` with the checkout's programs switched off; None on failure."""
    if not os.path.isdir(path):
        return None
    options: list[str] = []
    for setting in _SAFE:
        options += ["-c", setting]
    for name in drivers:
        for key in ("clean", "smudge", "process"):
            options += ["-c", f"filter.{name}.{key}="]
        options += ["-c", f"filter.{name}.required=false"]
    try:
        proc = subprocess.run(
            ["git", *options, "-C", path, *args], capture_output=True, text=True, timeout=_TIMEOUT,
            errors="replace", env=_environment(), stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _filter_drivers(path: str) -> tuple[str, ...]:
    """Filter drivers the checkout's configuration defines (reading configuration runs nothing)."""
    out = git(path, "config", "--get-regexp", r"^filter\.")
    names = []
    for line in (out or "").splitlines():
        match = re.match(r"filter\.(.+)\.[^.\s]+\s", line + " ")
        if match and match.group(1) not in names:
            names.append(match.group(1))
    return tuple(names)


def checkout_state(path: str, *, with_diff: bool = False, untracked: bool = True) -> dict[str, Any]:
    """`root`, `git_commit`, `dirty`, `modified` and `untracked` counts (and `diff` against HEAD);
    `git_commit` and `dirty` are None outside a checkout."""
    root = git(path, "rev-parse", "--show-toplevel")
    commit = git(path, "rev-parse", "HEAD")
    if root is None or commit is None:
        return {"git_commit": None, "dirty": None}
    drivers = _filter_drivers(path)
    status = git(
        path, "status", "--porcelain", "--ignore-submodules=all",
        f"--untracked-files={'normal' if untracked else 'no'}", drivers=drivers,
    )
    lines = (status or "").splitlines()
    state: dict[str, Any] = {
        "root": root.strip(),
        "git_commit": commit.strip(),
        "dirty": bool(lines) if status is not None else None,
        "modified": sum(1 for line in lines if not line.startswith("??")),
    }
    if untracked:
        state["untracked"] = sum(1 for line in lines if line.startswith("??"))
    if with_diff and lines:
        state["diff"] = (git(path, "diff", "HEAD", "--no-ext-diff", "--no-textconv", "--no-color", drivers=drivers) or "").strip()
    return state
