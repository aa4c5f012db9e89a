"""Files a recorded process opens: a run that finds what an earlier run wrote (a cache, a
checkpoint, a "done" marker) takes another path than the run before it, which is not the
program's randomness but its files (named as such in the report).

`open` is wrapped in every recorded process; only what the program opens counts, not the
probe's own files. Stdlib only.
"""

from __future__ import annotations

import builtins
import io
import os
import sys
from typing import Any, Callable, Optional

from repro_lint.probe import errors

_LIMIT = 2000  # distinct (path, kind) per process: a dataset of many files must not grow the trace


class FileWatch:
    def __init__(self, location: Callable[[Any], int], op_index: Callable[[], int], skip: str, library: Callable[[str], bool]):
        self._location = location
        self._op_index = op_index
        self._skip = skip  # the run's own folder
        self._library = library  # paths of installed code (imports read them)
        self.opened: dict[tuple[str, str], dict[str, Any]] = {}
        self.saves: list[dict[str, Any]] = []  # what torch.save wrote (see `checkpoints`)
        self.steps: list[int] = []  # the op index after each optimizer step

    def start_fresh(self) -> None:
        self.opened = {}
        self.saves = []
        self.steps = []

    def install(self) -> None:
        original = builtins.open
        if getattr(original, "__repro_lint_wrapped__", False):
            return
        watch = self

        def open(file, mode="r", *args, **kwargs):  # noqa: A001 - the builtin's own name
            note = None
            try:
                note = watch._before(file, mode if isinstance(mode, str) else "r", sys._getframe(1))
            except Exception as exc:
                errors.record(errors.OTHER, exc, "open")
            handle = original(file, mode, *args, **kwargs)
            if note is not None:
                watch._after(note)
            return handle

        open.__repro_lint_wrapped__ = True  # type: ignore[attr-defined]
        open.__doc__ = original.__doc__
        builtins.open = open
        io.open = open
        torch = sys.modules.get("torch")
        if torch is not None:  # torch.save and torch.load write and read files without `open`
            torch.save = self._wrap(torch.save, "w", 1)
            torch.load = self._wrap(torch.load, "r", 0)
            try:
                from torch.optim.optimizer import register_optimizer_step_post_hook

                register_optimizer_step_post_hook(lambda *_: self.steps.append(self._op_index()))
            except Exception as exc:
                errors.record(errors.OTHER, exc, "optimizer steps")

    def _wrap(self, original, mode: str, position: int):
        watch = self

        def call(*args, **kwargs):
            note = None
            try:
                target = args[position] if len(args) > position else kwargs.get("f")
                if isinstance(target, (str, bytes, os.PathLike)):
                    note = watch._before(target, mode, sys._getframe(1))
            except Exception as exc:
                errors.record(errors.OTHER, exc, original.__name__)
            result = original(*args, **kwargs)
            if note is not None:
                watch._after(note)
            if mode == "w":
                watch._saved(args, kwargs, sys._getframe(1))
            return result

        call.__wrapped__ = original  # type: ignore[attr-defined]
        call.__name__, call.__qualname__, call.__doc__ = original.__name__, original.__qualname__, original.__doc__
        return call

    def _saved(self, args: tuple, kwargs: dict, frame) -> None:
        """A checkpoint written with torch.save: what it holds, where and at which step."""
        try:
            from repro_lint.probe.checkpoints import contents

            obj = args[0] if args else kwargs.get("obj")
            target = args[1] if len(args) > 1 else kwargs.get("f")
            path = os.path.abspath(os.fsdecode(os.fspath(target))) if isinstance(target, (str, bytes, os.PathLike)) else None
            self.saves.append({
                "path": path, "contents": contents(obj), "location": self._location(frame), "first_op": self._op_index(),
                "step": len(self.steps),
            })
        except Exception as exc:
            errors.record(errors.OTHER, exc, "torch.save")

    def _before(self, file: Any, mode: str, frame) -> Optional[tuple]:
        if isinstance(file, int) or len(self.opened) >= _LIMIT:
            return None
        if frame is not None and str(frame.f_globals.get("__name__", "")).startswith("repro_lint."):
            return None
        path = os.path.abspath(os.fsdecode(os.fspath(file)))
        if path.startswith((self._skip, "/proc/", "/sys/", "/dev/")) or self._library(path):
            return None
        kind = "write" if any(c in mode for c in "wax+") else "read"
        if (path, kind) in self.opened:
            return None
        return (path, kind, os.path.exists(path), frame)

    def _after(self, note: tuple) -> None:
        path, kind, existed, frame = note
        try:
            self.opened[(path, kind)] = {
                "path": path, "kind": kind, "existed": existed, "location": self._location(frame),
                "first_op": self._op_index(),
            }
        except Exception as exc:
            errors.record(errors.OTHER, exc, "open")
