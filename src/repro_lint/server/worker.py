"""The one thread that owns the `Session`: the protocol's thread posts work to it, and it
checks the projects whose documents changed once they have been quiet for the debounce
time. Nothing that fails here stops it."""

from __future__ import annotations

import collections
import threading
import time
import traceback
from concurrent.futures import Future
from typing import Callable, Optional

from lsprotocol import types

from repro_lint.server.session import SOURCE, Session


class Worker:
    def __init__(self, session: Session) -> None:
        self.session = session
        self._tasks: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="repro-lint-worker", daemon=True)
        self._thread.start()

    def post(self, fn: Callable[[], object]) -> Future:
        """Run `fn` on the worker thread, in order with everything posted before it."""
        fut: Future = Future()
        with self._cond:
            self._tasks.append((fn, fut))
            self._cond.notify()
        return fut

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify()

    def _next(self) -> Optional[tuple]:
        """The next task, or None when a check is due; waits for either."""
        with self._cond:
            while not self._stopping:
                due = self.session.due()
                if due is not None and due <= time.monotonic():
                    return None
                if self._tasks:
                    return self._tasks.popleft()
                self._cond.wait(None if due is None else max(due - time.monotonic(), 0.0))
            raise _Stop

    def _run(self) -> None:
        while True:
            try:
                task = self._next()
            except _Stop:
                return
            if task is None:
                self._guarded(self.session.check_due)
                continue
            fn, fut = task
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except BaseException as exc:  # the request fails; the server goes on
                fut.set_exception(exc)

    def _guarded(self, fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception as exc:
            try:
                self.session.log(f"{SOURCE}: internal error: {type(exc).__name__}: {exc}\n{traceback.format_exc()}", types.MessageType.Error)
            except Exception:
                pass


class _Stop(Exception):
    pass
