"""Hydra configuration files: the classes and functions they name.

A line match is enough (`_target_: pkg.models.Net`; Hydra 0.11's `class:`); no YAML library
is needed. The config keys come from `rules/catalog/frameworks.toml`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from repro_lint.bounded_read import is_inside, read_text

# Folders of config files read at most this deep and this many files per folder: the
# configuration of one app, not a data set that happens to be YAML.
_MAX_FILES = 2000


def line_pattern(keys: tuple[str, ...]) -> re.Pattern:
    """A config line `key: dotted.name` (in a list item too) for any of `keys`."""
    alternatives = "|".join(re.escape(k) for k in keys)
    return re.compile(rf"^\s*(?:-\s+)?(?:{alternatives})\s*:\s*['\"]?([A-Za-z_][\w.]*)['\"]?\s*(?:#.*)?$")


def config_folder(module_path: str, config_path: str, root: Path) -> Optional[Path]:
    """The folder holding a Hydra main's config files, inside the project root, or None.

    `config_path` is relative to the module's folder; in Hydra 0.11 it named the primary
    config file itself (`config_path="conf/config.yaml"`), whose folder holds the others."""
    if not config_path:
        return None
    try:
        folder = (Path(module_path).resolve().parent / config_path).resolve()
        if folder.suffix in (".yaml", ".yml") and folder.is_file():
            folder = folder.parent
        if not folder.is_dir():
            return None
        folder.relative_to(root)  # never read outside the project
    except (OSError, ValueError, RuntimeError):
        return None
    return folder


def config_targets(folder: Path, pattern: re.Pattern, root: Optional[Path] = None) -> tuple[str, ...]:
    """The dotted names the config files under `folder` name, in file and line order. Only
    regular files of bounded size are read (a `.yaml` linked to /dev/zero or a FIFO is
    skipped), and none whose real location is outside the project `root`."""
    try:
        files = sorted([*folder.rglob("*.yaml"), *folder.rglob("*.yml")])[:_MAX_FILES]
    except OSError:
        return ()
    inside = str(root.resolve()) if root is not None else None
    found: dict[str, None] = {}
    for yml in files:
        if inside is not None and not is_inside(os.path.realpath(yml), inside):
            continue
        try:
            text = read_text(yml)
        except OSError:
            continue
        for line in text.splitlines():
            match = pattern.match(line)
            if match:
                found[match.group(1)] = None
    return tuple(found)
