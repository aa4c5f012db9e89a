"""Which stack frame is "the user's code": the innermost frame outside torch, numpy,
repro_lint, the standard library and installed packages."""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from types import CodeType, FrameType
from typing import Optional


# What cloudpickle (3.1 and later; joblib's loky workers) names the code of a function it
# sends by value, as a `__main__` script's functions are: the frame's globals still name the
# file (`__file__`), and its lines are the file's.
SHIPPED_CODE = "<dynamic-code>"


def code_file(frame: FrameType) -> str:
    """The file the code of `frame` was written in."""
    name = frame.f_code.co_filename
    if name == SHIPPED_CODE:
        shipped = frame.f_globals.get("__file__")
        if isinstance(shipped, str) and shipped.endswith(".py"):
            return shipped
    return name


def _module_dir(name: str) -> Optional[str]:
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    return os.path.dirname(os.path.realpath(path)) if path else None


def _library_roots() -> list[str]:
    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(path)
    try:
        roots.update(site.getsitepackages())
        roots.add(site.getusersitepackages())
    except AttributeError:  # some embedded interpreters lack these
        pass
    for name in ("torch", "numpy", "repro_lint"):
        path = _module_dir(name)
        if path:
            roots.add(path)
    return sorted({os.path.realpath(r) + os.sep for r in roots})


class UserCode:
    """Classifies source files and turns frames into interned locations.

    A location is `(path, line, function, column)`; the column is the 0-based byte offset
    of the expression that was executing (Python 3.11+), or -1.
    """

    def __init__(self, user_roots: list[str]):
        self._library = _library_roots()
        # The target itself is user code even when it lives among installed packages.
        self._user = [os.path.realpath(r) for r in user_roots]
        self._is_user: dict[str, bool] = {}
        self._loc_ids: dict[tuple[int, int], int] = {}
        self._codes: list[CodeType] = []  # keeps codes alive so their ids stay unique
        self.locations: list[tuple[str, int, str, int]] = []
        self._loc_index: dict[tuple, int] = {}

    def is_user_file(self, filename: str) -> bool:
        known = self._is_user.get(filename)
        if known is None:
            known = self._is_user[filename] = self._classify(filename)
        return known

    def _classify(self, filename: str) -> bool:
        if filename.startswith("<"):
            return False
        real = os.path.realpath(filename)
        if any(real == u or real.startswith(u + os.sep) for u in self._user):
            return True
        return not any(real.startswith(root) for root in self._library)

    def user_frame(self, frame: Optional[FrameType]) -> Optional[FrameType]:
        while frame is not None:
            if self.is_user_file(code_file(frame)):
                return frame
            frame = frame.f_back
        return None

    def location_id(self, frame: Optional[FrameType]) -> int:
        """Interned location of the innermost user frame at or above `frame`; -1 if none."""
        frame = self.user_frame(frame)
        if frame is None:
            return -1
        code = frame.f_code
        key = (id(code), frame.f_lasti)
        loc = self._loc_ids.get(key)
        if loc is None:
            self._codes.append(code)
            loc = self._loc_ids[key] = self.intern(_position(frame))
        return loc

    def intern(self, location: tuple[str, int, str, int]) -> int:
        loc = self._loc_index.get(location)
        if loc is None:
            loc = self._loc_index[location] = len(self.locations)
            self.locations.append(location)
        return loc


def _position(frame: FrameType) -> tuple[str, int, str, int]:
    code = frame.f_code
    line, col = frame.f_lineno, -1
    positions = getattr(code, "co_positions", None)
    if positions is not None and frame.f_lasti >= 0:
        for i, (start, _end, start_col, _end_col) in enumerate(positions()):
            if i == frame.f_lasti // 2:
                if start is not None:
                    line = start
                if start_col is not None:
                    col = start_col
                break
    return (os.path.abspath(code_file(frame)), line or 0, getattr(code, "co_qualname", code.co_name), col)
