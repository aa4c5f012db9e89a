"""`--watch`: check, then check again whenever a file that the check reads changes (source
files, notebooks, configuration, requirements and Hydra configs), until interrupted."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Callable

# what a change can change the findings of
_WATCHED = (".py", ".pyi", ".ipynb", ".toml", ".cfg", ".txt", ".yaml", ".yml", ".gitignore")
# never walked: version control, environments, caches
_SKIPPED = {".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", ".repro_lint_cache", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox"}
INTERVAL = 0.5  # seconds between looks


def snapshot(paths: list[Path]) -> dict:
    """(modification time, size) of every watched file under `paths`."""
    out: dict = {}
    for path in paths:
        if path.is_file():
            try:
                st = path.stat()
                out[str(path)] = (st.st_mtime_ns, st.st_size)
            except OSError:
                pass
            continue
        for here, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if d not in _SKIPPED and not os.path.isfile(os.path.join(here, d, "pyvenv.cfg"))]
            for name in files:
                if name.endswith(_WATCHED):
                    full = os.path.join(here, name)
                    try:
                        st = os.stat(full)
                    except OSError:
                        continue
                    out[full] = (st.st_mtime_ns, st.st_size)
    return out


def watch(run: Callable[[], int], paths: list[Path]) -> int:
    """Run `run` now and after every change under `paths`; Ctrl-C ends it (exit 0)."""
    from repro_lint.discover.project import find_root

    # the project's configuration counts too, wherever the named paths are in it
    root = find_root(paths)
    watched = [*paths, *(root / name for name in ("pyproject.toml", "repro-lint.toml", ".repro-lint.toml") if (root / name).is_file())]
    try:
        print(f"[{time.strftime('%H:%M:%S')}] Checking in watch mode (Ctrl-C ends it).", file=sys.stderr, flush=True)
        seen = snapshot(watched)
        run()
        sys.stdout.flush()
        while True:
            time.sleep(INTERVAL)
            now = snapshot(watched)
            if now != seen:
                seen = now
                print(f"[{time.strftime('%H:%M:%S')}] File change detected, checking again.", file=sys.stderr, flush=True)
                run()
                sys.stdout.flush()
    except KeyboardInterrupt:
        return 0
