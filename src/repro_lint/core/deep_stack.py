"""Running a function deeper than the interpreter's recursion limit allows.

CPython compiles files nested far deeper than the default limit of 1,000 frames lets
`ast` and a recursive walk follow: a 500-branch `elif` chain is 500 nested `If` nodes, a
sum of 2,990 terms 2,990 nested `BinOp`s. `run_deep` runs a function in a thread with a
large stack and a raised limit. It costs a thread start (about 0.1 ms), so callers use it
only for the rare file whose ordinary run raised `RecursionError`, or for a file so large
that finding that out would cost a parse of seconds.
"""

from __future__ import annotations

import sys
import threading
from typing import Callable, TypeVar

T = TypeVar("T")

# Deep enough for everything CPython compiles (its parser stops nesting at a few thousand
# levels, and each level costs the walk a few frames); the stack gives each frame several
# KB, which Python 3.9 and 3.10, whose frames live on the C stack, need.
STACK_BYTES = 256 * 1024 * 1024
RECURSION_LIMIT = 60_000

_LOCK = threading.Lock()  # the limit and the stack size of new threads are process-wide


def run_deep(fn: Callable[[], T]) -> T:
    """`fn()` in a thread with a large stack and a raised recursion limit; its result or
    its exception. RecursionError when no such thread can be started (a memory limit)."""
    outcome: list = []

    def target() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append((False, exc))

    with _LOCK:
        old_limit = sys.getrecursionlimit()
        try:
            old_size = threading.stack_size(STACK_BYTES)
        except (ValueError, RuntimeError) as exc:
            raise RecursionError("no thread with a larger stack can be started") from exc
        try:
            sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
            thread = threading.Thread(target=target, name="repro-lint-deep", daemon=True)
            try:
                thread.start()
            except RuntimeError as exc:
                raise RecursionError("no thread with a larger stack can be started") from exc
            thread.join()
        finally:
            threading.stack_size(old_size)
            sys.setrecursionlimit(old_limit)
    ok, value = outcome[0]
    if not ok:
        raise value
    return value
