"""The project's code style, as its formatter and linter settings describe it.

Fixes write code the way the project's tools want it: the line length (ruff, else black,
else flake8; 88 when none is configured) decides when a call gets wrapped, and the import
sorter's settings decide where a new import goes. Settings are read from the configuration
files nearest to the fixed file, up to the project root, the way the tools find them:

- ruff: `ruff.toml`, `.ruff.toml`, or `pyproject.toml` with a `[tool.ruff]` table;
  `line-length`, and `[lint.isort]` (or the older `[isort]`) `known-first-party`,
  `known-third-party`, `known-local-folder`, `force-sort-within-sections`, `lines-after-imports`;
- black: `[tool.black] line-length` in `pyproject.toml`;
- flake8: `max-line-length` in `.flake8`, `setup.cfg` or `tox.ini` (`[flake8]`);
- isort (when no ruff configuration applies): `[tool.isort]` in `pyproject.toml`, `.isort.cfg`,
  `[isort]`/`[tool:isort]` in `setup.cfg`/`tox.ini`: `profile`, `known_first_party`,
  `known_third_party`, `known_local_folder`, `force_sort_within_sections`, `lines_after_imports`.

A file that cannot be read or parsed counts as absent: style never stops a fix.
"""

from __future__ import annotations

import configparser
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_LINE_LENGTH = 88
# isort profiles that sort `import x` and `from x import y` together by module name
_SORT_WITHIN_PROFILES = frozenset({"google", "open_stack", "plone"})


@dataclass(frozen=True)
class Style:
    line_length: int = DEFAULT_LINE_LENGTH
    known_first_party: frozenset = field(default_factory=frozenset)
    known_third_party: frozenset = field(default_factory=frozenset)
    known_local_folder: frozenset = field(default_factory=frozenset)
    force_sort_within_sections: bool = False
    lines_after_imports: int = -1  # -1: one blank line before code, two before a def or class


def _toml(path: Path) -> Optional[dict]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _ini(path: Path) -> Optional[configparser.ConfigParser]:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        with path.open(encoding="utf-8") as fh:
            parser.read_file(fh)
    except (OSError, configparser.Error, UnicodeDecodeError):
        return None
    return parser


def _int(value) -> Optional[int]:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _length(value) -> Optional[int]:
    n = _int(value)
    return n if n is not None and n > 0 else None


def _names(value) -> frozenset:
    if isinstance(value, str):
        value = value.replace("\n", ",").split(",")
    if not isinstance(value, (list, tuple)):
        return frozenset()
    return frozenset(str(v).strip() for v in value if str(v).strip())


def _bool(value) -> Optional[bool]:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "on", "false", "0", "no", "off"):
        return value.strip().lower() in ("true", "1", "yes", "on")
    return None


def _dashed(table: dict) -> dict:
    """isort's keys in either spelling (`known_first_party` / `known-first-party`)."""
    return {str(k).replace("-", "_"): v for k, v in table.items()}


@dataclass
class _Found:
    """Settings found so far while walking up: the nearest source of each wins."""

    ruff: Optional[dict] = None  # the ruff table (top level of ruff.toml, or [tool.ruff])
    black_length: Optional[int] = None
    black_seen: bool = False
    flake8_length: Optional[int] = None
    isort: Optional[dict] = None


def _read_dir(folder: Path, found: _Found) -> None:
    if found.ruff is None:
        for name in ("ruff.toml", ".ruff.toml"):
            data = _toml(folder / name) if (folder / name).is_file() else None
            if data is not None:
                found.ruff = data
                break
    pyproject = _toml(folder / "pyproject.toml") if (folder / "pyproject.toml").is_file() else None
    tool = pyproject.get("tool", {}) if isinstance(pyproject, dict) else {}
    if not isinstance(tool, dict):
        tool = {}
    if found.ruff is None and isinstance(tool.get("ruff"), dict):
        found.ruff = tool["ruff"]
    if not found.black_seen and pyproject is not None:
        # black reads the nearest pyproject.toml; without a line-length its default is 88
        found.black_seen = isinstance(tool.get("black"), dict)
        if found.black_seen:
            found.black_length = _length(tool["black"].get("line-length")) or DEFAULT_LINE_LENGTH
    if found.isort is None and isinstance(tool.get("isort"), dict):
        found.isort = _dashed(tool["isort"])
    for name in (".flake8", "setup.cfg", "tox.ini", ".isort.cfg"):
        if not (folder / name).is_file():
            continue
        ini = _ini(folder / name)
        if ini is None:
            continue
        if found.flake8_length is None and ini.has_section("flake8"):
            found.flake8_length = _length(ini["flake8"].get("max-line-length") or ini["flake8"].get("max_line_length"))
        if found.isort is None:
            for section in ("settings", "isort", "tool:isort") if name == ".isort.cfg" else ("isort", "tool:isort"):
                if ini.has_section(section):
                    found.isort = _dashed(dict(ini[section]))
                    break


def _ruff_isort(ruff: dict) -> dict:
    lint = ruff.get("lint", {})
    table = lint.get("isort") if isinstance(lint, dict) else None
    if not isinstance(table, dict):
        table = ruff.get("isort", {})
    return _dashed(table) if isinstance(table, dict) else {}


@lru_cache(maxsize=256)
def _style_of(folder: str, root: str) -> Style:
    found = _Found()
    here = Path(folder)
    top = Path(root)
    while True:
        _read_dir(here, found)
        if here == top or here.parent == here or top not in here.parents:
            break
        here = here.parent
    if found.ruff is not None:
        length = _length(found.ruff.get("line-length")) or DEFAULT_LINE_LENGTH
        isort = _ruff_isort(found.ruff)
        sort_within = _bool(isort.get("force_sort_within_sections"))
    else:
        length = found.black_length or found.flake8_length or DEFAULT_LINE_LENGTH
        isort = found.isort or {}
        sort_within = _bool(isort.get("force_sort_within_sections"))
        if sort_within is None:
            sort_within = str(isort.get("profile", "")).strip().lower() in _SORT_WITHIN_PROFILES
    after = _int(isort.get("lines_after_imports"))
    if after is not None and after < -1:
        after = None
    return Style(
        line_length=length,
        known_first_party=_names(isort.get("known_first_party", ())),
        known_third_party=_names(isort.get("known_third_party", ())),
        known_local_folder=_names(isort.get("known_local_folder", ())),
        force_sort_within_sections=bool(sort_within),
        lines_after_imports=after if after is not None else -1,
    )


def style_for(path: Path, root: Path) -> Style:
    """The style that applies to the file `path` of the project at `root`."""
    try:
        folder = Path(path).resolve().parent
        top = Path(root).resolve()
    except OSError:
        return Style()
    if folder != top and top not in folder.parents:
        folder = top
    return _style_of(str(folder), str(top))
