"""Progress of a long check on the terminal (stderr): the stage and its count, drawn by rich
and erased when the check ends. Never in a pipe, a file or a CI log, never with `--quiet`
or `--silent`, and never on stdout, whose report stays the same in every format."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator, Optional

from repro_lint.core import progress

# fewer files than this are checked in a moment: nothing is drawn for them
MIN_FILES = 100


def wanted(quiet: bool) -> bool:
    """On an interactive terminal only: stderr a terminal, not `TERM=dumb`, no `CI` variable."""
    if quiet or os.environ.get("CI") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


class _Bar:
    """A rich progress display, started at the first stage with enough files to count."""

    def __init__(self) -> None:
        self._progress = None
        self._task = None

    def stage(self, name: str, total: Optional[int]) -> None:
        if self._progress is None:
            if total is None or total < MIN_FILES:
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            console = Console(file=sys.stderr)
            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=console, transient=True,
            )
            self._progress.start()
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(name, total=total)

    def advance(self, n: int) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, n)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


@contextlib.contextmanager
def shown(enabled: bool) -> Iterator[None]:
    """Progress drawn while the block runs, when `enabled`."""
    if not enabled:
        yield
        return
    bar = _Bar()
    previous = progress.install(bar)
    try:
        yield
    finally:
        progress.install(previous)
        bar.stop()
