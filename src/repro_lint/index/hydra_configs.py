"""Hydra configuration files: where an app's configs are, the classes and functions they
name, and the seed key its primary config defines. The one reader of Hydra configs.

A line match is enough (`_target_: pkg.models.Net`; Hydra 0.11's `class:`; `seed: 42`); no
YAML library is needed. The config keys come from `rules/catalog/frameworks.toml`. Only
regular files of bounded size inside the project are read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from repro_lint.core.bounded_read import is_inside, read_text

# Folders of config files read at most this deep and this many files per folder: the
# configuration of one app, not a data set that happens to be YAML.
_MAX_FILES = 2000
# a top-level `seed:` key in a config file
_YAML_SEED = re.compile(r"^(seed|random_seed|rng_seed)\s*:")
YAML_MAX_BYTES = 1 << 20


def line_pattern(keys: tuple[str, ...]) -> re.Pattern:
    """A config line `key: dotted.name` (in a list item too) for any of `keys`."""
    alternatives = "|".join(re.escape(k) for k in keys)
    return re.compile(rf"^\s*(?:-\s+)?(?:{alternatives})\s*:\s*['\"]?([A-Za-z_][\w.]*)['\"]?\s*(?:#.*)?$")


def primary_config(module_path: str, config_path: str, config_name: Optional[str]) -> tuple[Path, Optional[str]]:
    """(the config folder, the primary config's name) of a Hydra main. `config_path` is
    relative to the module's folder; in Hydra 0.11 it named the primary config file itself
    (`config_path="conf/config.yaml"`, no `config_name`), whose folder holds the others."""
    folder = Path(module_path).resolve().parent / config_path
    if config_name is None and folder.suffix in (".yaml", ".yml"):
        return folder.parent, folder.name
    return folder, config_name


def config_folder(module_path: str, config_path: str, root: Path) -> Optional[Path]:
    """The folder holding a Hydra main's config files, inside the project root, or None."""
    if not config_path:
        return None
    try:
        folder = primary_config(module_path, config_path, None)[0].resolve()
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
    found: dict[str, None] = {}
    for text in _yaml_texts(folder, root):
        for line in text.splitlines():
            match = pattern.match(line)
            if match:
                found[match.group(1)] = None
    return tuple(found)


def hydra_seed_key(config_folder: Optional[Path], root: Optional[Path], config_name: Optional[str] = None) -> Optional[str]:
    """The seed key that the config a Hydra app composes defines at top level (`seed: 42`):
    in its primary config file (`config_name`), or in a config its defaults list pulls in at
    the top level (a file of the same folder, or a group option whose file says
    `# @package _global_`). None when the app names no primary config, when the key is
    null there (`cfg.seed` would be None), or when no file of the composition defines it:
    reading `cfg.seed` from a config without the key raises in Hydra's struct mode.
    Only regular files inside the project are read."""
    if config_folder is None or root is None or not config_name:
        return None
    try:
        folder = config_folder.resolve()
        inside = str(root.resolve())
        folder.relative_to(inside)
    except (OSError, ValueError):
        return None
    seen: set = set()
    todo = [(folder / config_name, True)]
    while todo and len(seen) < 50:
        path, top = todo.pop(0)
        if path.suffix not in (".yaml", ".yml"):
            path = path.with_name(path.name + ".yaml")
        if path in seen:
            continue
        seen.add(path)
        text = _config_text(path, inside)
        if text is None:
            continue
        if not top and not _GLOBAL_PACKAGE.search(text):
            continue  # a group's file lands under its group's key, not at the top level
        key = _top_level_seed(text)
        if key is not None:
            return key or None
        for group, option in _defaults(text):
            todo.append((folder / option, True) if group is None else (folder / group / option, False))
    return None


_GLOBAL_PACKAGE = re.compile(r"^#\s*@package\s+_global_\s*$", re.M)
_DEFAULT_ITEM = re.compile(r"^\s*-\s+(?:(?:override\s+)?([\w/.-]+)\s*:\s*)?['\"]?([\w/.-]+)['\"]?\s*(?:#.*)?$")


def _config_text(path: Path, inside: str) -> Optional[str]:
    if not is_inside(os.path.realpath(path), inside):
        return None  # a link out of the project
    try:
        return read_text(path, YAML_MAX_BYTES)  # a regular file, at most this size
    except OSError:
        return None


def _top_level_seed(text: str) -> Optional[str]:
    """The seed key at the top level of a config text; "" when its value is null."""
    for line in text.splitlines():
        match = _YAML_SEED.match(line)
        if match:
            value = line[match.end():].split("#", 1)[0].strip()
            return "" if value in ("", "null", "~", "None") else match.group(1)
    return None


def _defaults(text: str) -> list[tuple[Optional[str], str]]:
    """The entries of a config's `defaults:` list: (group or None, option or file name)."""
    out: list = []
    in_defaults = False
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace() and not line.startswith("-"):
            in_defaults = line.split(":", 1)[0].strip() == "defaults"
            continue
        if in_defaults:
            match = _DEFAULT_ITEM.match(line)
            if match and match.group(2) not in ("_self_", "null"):
                out.append((match.group(1), match.group(2)))
    return out


def applied_names(folder: Path, pattern: re.Pattern, root: Optional[Path] = None, depth: int = 3) -> tuple[str, ...]:
    """The dotted names that the YAML files under `folder` (at most `depth` folders down) apply
    (`!apply:module.function`, as the pattern's group), in file and line order: what a config
    loader that calls them runs. Bounded as `config_targets`."""
    found: dict[str, None] = {}
    for text in _yaml_texts(folder, root, depth):
        for match in pattern.finditer(text):
            found[match.group(1)] = None
    return tuple(found)


def _yaml_texts(folder: Path, root: Optional[Path], depth: Optional[int] = None):
    """The texts of the YAML files under `folder` (at most `depth` folders down), in path
    order: regular files of bounded size, none whose real location is outside `root`."""
    try:
        files = sorted(
            p for p in [*folder.rglob("*.yaml"), *folder.rglob("*.yml")] if depth is None or len(p.relative_to(folder).parts) <= depth
        )[:_MAX_FILES]
    except OSError:
        return
    inside = str(root.resolve()) if root is not None else None
    for yml in files:
        if inside is not None and not is_inside(os.path.realpath(yml), inside):
            continue
        try:
            yield read_text(yml)
        except OSError:
            continue
