"""Rich consoles for reports: colour only on a terminal and never with NO_COLOR set (non-empty)."""

from __future__ import annotations

import os
import sys
from typing import IO, Optional

from rich.console import Console

# Reports written to files or pipes are read later, often in wide viewers or CI logs.
_FILE_WIDTH = 120


def make_console(file: Optional[IO[str]] = None) -> Console:
    file = file if file is not None else sys.stdout
    terminal = hasattr(file, "isatty") and file.isatty()
    plain = not terminal or bool(os.environ.get("NO_COLOR"))  # set and not empty, as the convention says
    return Console(
        file=file,
        color_system=None if plain else "auto",
        force_terminal=False if plain else None,
        highlight=False,
        width=None if terminal else _FILE_WIDTH,
    )
