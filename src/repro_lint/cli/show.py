"""`--show-settings` and `--show-files`: what a check would use and read, without checking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _toml(value: Any) -> str:
    """A setting's value written as TOML (JSON's strings, numbers and arrays are TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }" if value else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Path):
        return json.dumps(str(value))
    return json.dumps(value)


def settings_text(cfg: Any, root: Path, args: Any, no_cache: bool) -> str:
    """The resolved settings, as TOML under `[tool.repro-lint]`, with the options of the
    command line applied (`--select`, `--ignore`, `--exclude`, ...)."""
    from repro_lint.check.cache import Cache

    select = list(args.select) if args.select else cfg.select
    if no_cache:
        cache = "none"
    else:
        cache = str(Cache(root.resolve(), "", enabled=False, folder=cfg.cache_dir).dir)
    lines = [
        f"# Settings file: {cfg.path.resolve() if cfg.path else 'none (the defaults)'}",
        f"# Project root: {root.resolve()}",
        f"# Cache folder: {cache}",
        "[tool.repro-lint]",
    ]
    values = {
        "select": select,
        "extend-select": [*cfg.extend_select, *args.extend_select],
        "ignore": [*cfg.ignore, *args.ignore],
        "per-file-ignores": cfg.per_file_ignores,
        "extend-per-file-ignores": cfg.extend_per_file_ignores,
        "fixable": cfg.fixable,
        "unfixable": cfg.unfixable,
        "exclude": cfg.exclude,
        "extend-exclude": cfg.extend_exclude,
        "check-tests": cfg.check_tests,
        "seed": cfg.seed,
        "warn-only": cfg.warn_only,
        "target-torch-version": cfg.target_torch_version,
        "numpy-fix": cfg.numpy_fix,
        "seeders": cfg.seeders,
        "rng-consumers": cfg.rng_consumers,
    }
    for key, value in values.items():
        if value is None:
            lines.append(f"# {key} is not set")
        else:
            lines.append(f"{key} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def files_text(paths: list[Path], cfg: Any, root: Path) -> str:
    """The files a check of `paths` reports on (excludes, .gitignore files and skipped
    folders applied), one a line, sorted."""
    from repro_lint.check.files import collect_files, display_path

    _project, targets = collect_files(paths, cfg, root.resolve())
    shown = sorted({display_path(p) for p in targets})
    return "".join(f"{p}\n" for p in shown)
