"""Configuration: `[tool.repro-lint]` in pyproject.toml, validated, merged with the CLI."""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from repro_lint.core.bounded_read import TEXT_MAX_BYTES, read_regular

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
    "per-file-ignores": (dict,),
    "exclude": (list,),
    "extend-exclude": (list,),
    "seed": (int,),
    "warn-only": (bool,),
    "seeders": (dict,),
    "rng-consumers": (dict,),
    "target-torch-version": (str,),
    "numpy-fix": (str,),
    "check-tests": (bool,),
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
        selected = _longest(code, self.select + self.extend_select)
        ignored = _longest(code, self.ignore)
        if selected < 0 or ignored > selected or (ignored == selected and ignored >= 0):
            return False
        for glob, codes in self.per_file_ignores.items():
            if fnmatch.fnmatchcase(rel_path, glob) or fnmatch.fnmatchcase(rel_path.rsplit("/", 1)[-1], glob):
                if _longest(code, codes) >= 0:
                    return False
        return True


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
    if path.name == "pyproject.toml":
        section = data.get("tool", {}).get("repro-lint")
        prefix = "tool.repro-lint"
        if section is None:
            return cfg
    else:
        section = data.get("tool", {}).get("repro-lint", data)
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
            raise ConfigError(f"{path}: unknown configuration key `{name}` (known: {', '.join(sorted(_KEYS))})")
        types = _KEYS[key]
        if not isinstance(value, types) or (types == (int,) and isinstance(value, bool)):
            raise ConfigError(f"{path}: `{name}` must be {_type_name(types[0])}, got {_type_name(type(value))}")
        if key in ("select", "extend-select", "ignore"):
            _check_codes(path, name, value, known_codes)
        if key in ("exclude", "extend-exclude"):
            _check_strings(path, name, value)
        if key == "per-file-ignores":
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


def find_config(root: Path) -> Optional[Path]:
    for name in ("pyproject.toml", "repro-lint.toml", ".repro-lint.toml"):
        p = root / name
        if p.is_file():
            if name != "pyproject.toml":
                return p
            try:
                data = _read_toml(p)
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
                return p  # reported as an error when loaded
            if "repro-lint" in data.get("tool", {}):
                return p
    return None
