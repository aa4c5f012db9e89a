"""Progress of a long check: the stages and counts the layers below the command line report
(files read, files analysed, programs checked). Nothing is shown unless the command line
installs a reporter (on a terminal only); a forked worker's reports are dropped."""

from __future__ import annotations

import os
from typing import Optional, Protocol


class Reporter(Protocol):
    def stage(self, name: str, total: Optional[int]) -> None: ...

    def advance(self, n: int) -> None: ...


_current: Optional[Reporter] = None
_owner = 0  # the process that installed it: a forked copy's counts are not this run's


def install(reporter: Optional[Reporter]) -> Optional[Reporter]:
    """Make `reporter` receive the reports (None: none); returns the one it replaces."""
    global _current, _owner
    previous, _current, _owner = _current, reporter, os.getpid()
    return previous


def stage(name: str, total: Optional[int] = None) -> None:
    if _current is not None and os.getpid() == _owner:
        _current.stage(name, total)


def advance(n: int = 1) -> None:
    if _current is not None and os.getpid() == _owner:
        _current.advance(n)
