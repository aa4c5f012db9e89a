"""Configuration: `[tool.repro-lint]` in pyproject.toml, validated, merged with the CLI."""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from repro_lint.core.bounded_read import TEXT_MAX_BYTES, read_regular
from repro_lint.core.suggest import did_you_mean, nearest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(Exception):
    """A user configuration problem: reported as one line, exit 2."""


_KEYS: dict[str, tuple] = {
    "select": (list,),
    "extend-select": (list,),
    "ignore": (list,),
    # ruff's deprecated spelling of `ignore`, still accepted by ruff: added to `ignore`
    "extend-ignore": (list,),
    "per-file-ignores": (dict,),
    "extend-per-file-ignores": (dict,),
    # which rules' fixes `--fix` applies (ruff's keys: all by default, the more specific wins)
    "fixable": (list,),
    "unfixable": (list,),
    "exclude": (list,),
    "extend-exclude": (list,),
    "seed": (int,),
    "warn-only": (bool,),
    "seeders": (dict,),
    "rng-consumers": (dict,),
    "target-torch-version": (str,),
    "numpy-fix": (str,),
    "check-tests": (bool,),
    "cache-dir": (str,),
}
# What RPL101's fix does for numpy (see README, "With ruff"): seed the legacy global
# generator, or, where the program allows it, draw from a seeded `Generator` instead.
NUMPY_FIXES = ("seed", "generator")


@dataclass
class Config:
    path: Optional[Path] = None
    select: list[str] = field(default_factory=lambda: ["RPL"])
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    extend_per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    fixable: list[str] = field(default_factory=lambda: ["ALL"])
    unfixable: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    extend_exclude: list[str] = field(default_factory=list)
    seed: int = 0
    warn_only: bool = False
    seeders: dict[str, list[str]] = field(default_factory=dict)
    rng_consumers: dict[str, str] = field(default_factory=dict)
    target_torch_version: Optional[str] = None
    numpy_fix: str = "seed"
    # findings in test files (`tests/`, `test_*.py`, ...) are shown only when asked for
    check_tests: bool = False
    # where the cache is kept (`cache-dir`, `--cache-dir`, REPRO_LINT_CACHE_DIR); None: at
    # the project root, `.repro_lint_cache/`
    cache_dir: Optional[Path] = None

    def settings(self) -> dict[str, Any]:
        """What rules may read (and what result caches are keyed on)."""
        return {
            "seed": self.seed,
            "warn-only": self.warn_only,
            "target-torch-version": self.target_torch_version,
            "numpy-fix": self.numpy_fix,
        }

    def matcher_key(self) -> tuple:
        return (
            tuple(sorted((k, tuple(v)) for k, v in self.seeders.items())),
            tuple(sorted(self.rng_consumers.items())),
        )

    def fingerprint(self) -> str:
        return repr((self.settings(), self.matcher_key()))

    # -- rule selection ------------------------------------------------------------
    def enabled(self, code: str, rel_path: str) -> bool:
        if not _chosen(code, self.select + self.extend_select, self.ignore):
            return False
        for ignores in (self.per_file_ignores, self.extend_per_file_ignores):
            for pattern, codes in ignores.items():
                if _longest(code, codes) >= 0 and _pattern(pattern).match_file(rel_path):
                    return False
        return True

    def fix_allowed(self, code: str, opt_in: bool = False) -> bool:
        """Whether `--fix` may apply the rule's fixes (`fixable`, less `unfixable`); a rule
        whose fix is opt-in needs `fixable` to name it or its prefix (`ALL` does not)."""
        if opt_in:
            return _chosen(code, [p for p in self.fixable if p.upper() not in ("ALL", "")], self.unfixable)
        return _chosen(code, self.fixable, self.unfixable)


def _chosen(code: str, chosen: list[str], removed: list[str]) -> bool:
    """In `chosen` and not taken out by `removed`: the longer matching prefix wins, a tie removes."""
    picked = _longest(code, chosen)
    dropped = _longest(code, removed)
    return picked >= 0 and picked > dropped


@functools.lru_cache(maxsize=256)
def _pattern(pattern: str) -> Any:
    """A `per-file-ignores` pattern, in the gitignore syntax that `exclude` uses too
    (`scripts/`, `*_test.py`, `/train.py`; a pattern without a slash matches at any depth)."""
    from repro_lint.discover.ignore_rules import IgnoreRules

    return IgnoreRules.parse([pattern], "per-file-ignores")


def _longest(code: str, prefixes: list[str]) -> int:
    """Length of the longest prefix in `prefixes` matching `code` (-1 if none): more specific wins."""
    best = -1
    for p in prefixes:
        p = p.upper()
        if p == "ALL":
            p = ""
        if code.startswith(p) and len(p) > best:
            best = len(p)
    return best


def known_code(code: str, known: list[str]) -> bool:
    c = code.upper()
    return c == "ALL" or any(k.startswith(c) for k in known)


def load_config(path: Optional[Path], known_codes: list[str], sources: tuple[str, ...]) -> Config:
    """Read `[tool.repro-lint]` from `path` (a pyproject.toml or a repro-lint.toml)."""
    cfg = Config(path=path)
    if path is None:
        return cfg
    try:
        data = _read_toml(path)
    except FileNotFoundError:
        raise ConfigError(f"{path}: configuration file not found")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc.strerror or exc}")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}")
    tools = data.get("tool") if isinstance(data.get("tool"), dict) else {}
    if "repro-lint" not in tools:
        _misspelt_section(path, tools)
    if path.name == "pyproject.toml":
        section = tools.get("repro-lint")
        prefix = "tool.repro-lint"
        if section is None:
            return cfg
    else:
        section = tools.get("repro-lint", data)
        prefix = "tool.repro-lint" if "tool" in data else ""
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [{prefix}] must be a table")
    apply_settings(cfg, section, str(path), prefix, known_codes, sources)
    return cfg


def apply_settings(cfg: Config, section: dict, origin: str, prefix: str, known_codes: list[str], sources: tuple[str, ...]) -> None:
    """Validate the settings in `section` and set them on `cfg`; errors name `origin`."""
    path = origin
    for key, value in section.items():
        name = f"{prefix}.{key}" if prefix else key
        if key not in _KEYS:
            hint = did_you_mean(key, _KEYS) or f" (known: {', '.join(sorted(_KEYS))})"
            raise ConfigError(f"{path}: unknown configuration key `{name}`{hint}")
        types = _KEYS[key]
        if not isinstance(value, types) or (types == (int,) and isinstance(value, bool)):
            raise ConfigError(f"{path}: `{name}` must be {_type_name(types[0])}, got {_type_name(type(value))}")
        if key in ("select", "extend-select", "ignore", "extend-ignore", "fixable", "unfixable"):
            _check_codes(path, name, value, known_codes)
        if key in ("exclude", "extend-exclude"):
            _check_strings(path, name, value)
        if key in ("per-file-ignores", "extend-per-file-ignores"):
            for glob, codes in value.items():
                if not isinstance(codes, list):
                    raise ConfigError(f"{path}: `{name}.\"{glob}\"` must be a list of rule codes")
                _check_codes(path, f"{name}.\"{glob}\"", codes, known_codes)
        if key == "seeders":
            for qual, srcs in value.items():
                if not isinstance(srcs, list) or not all(isinstance(s, str) for s in srcs):
                    raise ConfigError(f"{path}: `{name}.\"{qual}\"` must be a list of sources ({', '.join(sources)})")
                bad = [s for s in srcs if s not in sources]
                if bad:
                    raise ConfigError(f"{path}: `{name}.\"{qual}\"`: unknown source `{bad[0]}` (known: {', '.join(sources)})")
        if key == "seed" and not 0 <= value < 2**32:
            raise ConfigError(f"{path}: `{name}` must be between 0 and {2**32 - 1} (what numpy's seeding accepts), got {value}")
        if key == "target-torch-version":
            from repro_lint.discover.requirements import setting_error

            problem = setting_error(value)
            if problem:
                raise ConfigError(f"{path}: `{name}`: {problem}")
        if key == "numpy-fix" and value not in NUMPY_FIXES:
            raise ConfigError(f"{path}: `{name}` must be one of {', '.join(repr(v) for v in NUMPY_FIXES)}, got {value!r}")
        if key == "rng-consumers":
            for qual, src in value.items():
                if src not in sources:
                    raise ConfigError(f"{path}: `{name}.\"{qual}\"`: unknown source `{src}` (known: {', '.join(sources)})")
        if key == "extend-ignore":
            cfg.ignore = [*cfg.ignore, *value]
            continue
        if key == "cache-dir":  # relative to the configuration file's folder, as ruff reads it
            base = Path(origin).parent if Path(origin).is_file() else Path.cwd()
            cfg.cache_dir = (base / Path(value).expanduser()).absolute()
            continue
        setattr(cfg, key.replace("-", "_"), value)


def apply_overrides(cfg: Config, overrides: list[str], known_codes: list[str], sources: tuple[str, ...]) -> None:
    """Apply `--config KEY=VALUE` settings (TOML, as ruff's `--config` takes them) over `cfg`."""
    for item in overrides:
        try:
            data = tomllib.loads(item)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"--config {item!r}: not a file and not a TOML `KEY = VALUE` setting ({exc})")
        section = data.get("tool", {}).get("repro-lint", data) if isinstance(data.get("tool"), dict) else data
        apply_settings(cfg, section, f"--config {item!r}", "", known_codes, sources)


def _type_name(t: type) -> str:
    return {list: "an array", dict: "a table", int: "an integer", bool: "a boolean", str: "a string", float: "a number"}.get(t, t.__name__)


def _check_strings(path: Path, name: str, value: list) -> None:
    for item in value:
        if not isinstance(item, str):
            raise ConfigError(f"{path}: `{name}` must be an array of strings")


def _check_codes(path: Path, name: str, codes: list, known: list[str]) -> None:
    _check_strings(path, name, codes)
    for code in codes:
        if not known_code(code, known):
            raise ConfigError(f"{path}: `{name}`: unknown rule code `{code}`")


def _read_toml(path: Path) -> dict:
    """A TOML file a repository ships: a regular file of bounded size (`bounded_read`)."""
    return tomllib.loads(read_regular(path, TEXT_MAX_BYTES).decode("utf-8"))


def _misspelt_section(path: Path, tools: dict) -> None:
    """A `[tool.*]` table whose name is a typo of `tool.repro-lint` (`[tool.repro_lint]`)
    is an error: left unread, its settings would silently do nothing."""
    for name in tools:
        if nearest(name, ["repro-lint"], cutoff=0.8):
            raise ConfigError(f"{path}: [tool.{name}] is not read: the section is [tool.repro-lint]")


CONFIG_FILES = ("pyproject.toml", "repro-lint.toml", ".repro-lint.toml")


def find_config(root: Path) -> Optional[Path]:
    """The configuration at the project root: `pyproject.toml` when it has a
    `[tool.repro-lint]` section (or a misspelt one, reported when loaded), else
    `repro-lint.toml`, else `.repro-lint.toml`."""
    for name in CONFIG_FILES:
        p = root / name
        if p.is_file():
            if name != "pyproject.toml":
                return p
            try:
                data = _read_toml(p)
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
                return p  # reported as an error when loaded
            tools = data.get("tool") if isinstance(data.get("tool"), dict) else {}
            if "repro-lint" in tools or any(nearest(t, ["repro-lint"], cutoff=0.8) for t in tools):
                return p
    return None
