"""Wrappers the recording installs in the program's libraries: Hydra's job runner and
multiprocessing.Pool's worker (jobs and tasks are compared one by one, whichever process
ran them), and the ways values leave torch (results for the verdict)."""

from __future__ import annotations

import functools
import sys
from multiprocessing.reduction import ForkingPickler
from typing import Optional

from repro_lint.probe import errors
from repro_lint.probe import session as sessions


def wrap_hydra_run_job(module) -> None:
    original = getattr(module, "run_job", None)
    if original is None or getattr(original, "__repro_lint_wrapped__", False):
        return

    @functools.wraps(original)
    def run_job(task_function, config, *args, **kwargs):
        label = _hydra_job(config)
        session = sessions.current()
        if label is None or session is None:
            return original(task_function, config, *args, **kwargs)
        try:
            session.enter_segment(label)
        except Exception as exc:
            errors.record(errors.OTHER, exc, "hydra job")
            return original(task_function, config, *args, **kwargs)
        try:
            return original(task_function, config, *args, **kwargs)
        finally:
            try:
                session.leave_segment()
            except Exception as exc:
                errors.record(errors.OTHER, exc, "hydra job")

    run_job.__repro_lint_wrapped__ = True  # type: ignore[attr-defined]
    module.run_job = run_job


def wrap_pool_worker(module) -> None:
    """A Pool hands its tasks to whichever worker is free: each task (`job.index`, numbered
    by the parent in the program's order) is a unit of its own."""
    original = getattr(module, "worker", None)
    if original is None or getattr(original, "__repro_lint_wrapped__", False):
        return

    @functools.wraps(original)
    def worker(inqueue, *args, **kwargs):
        return original(TaskQueue(inqueue), *args, **kwargs)

    worker.__repro_lint_wrapped__ = True  # type: ignore[attr-defined]
    module.worker = worker


class TaskQueue:
    """A Pool's task queue that marks where each task's ops begin."""

    def __init__(self, queue):
        self._queue = queue

    def __getattr__(self, name):
        return getattr(self._queue, name)

    def get(self, *args, **kwargs):
        session = sessions.current()
        if session is not None:
            session.idle = True  # terminated while waiting here, the worker had finished its work
        try:
            task = self._waking_get(*args, **kwargs)
        finally:
            if session is not None:
                session.idle = False
        if session is not None:
            if session.current_segment() is not None:
                session.leave_segment()
            if isinstance(task, tuple) and len(task) == 5:
                session.enter_segment(f"task {task[0]}.{task[1]}")
        return task

    def _waking_get(self, *args, **kwargs):
        """`SimpleQueue.get`, waiting in short slices. The recording's SIGTERM handler (which
        writes the worker's trace when the Pool terminates it) is Python code: it runs only
        once the main thread is back in the interpreter, and a signal the kernel hands to
        another thread (torch's) never wakes a wait on the queue's lock or pipe. The Pool
        terminates its workers while one of them may wait there for good (it holds the lock
        for itself when it shuts down)."""
        queue = self._queue
        lock, reader = getattr(queue, "_rlock", None), getattr(queue, "_reader", None)
        if args or kwargs or lock is None or reader is None:
            return queue.get(*args, **kwargs)
        while not lock.acquire(timeout=_WAKE_SECONDS):
            pass
        try:
            while not reader.poll(_WAKE_SECONDS):
                pass
            data = reader.recv_bytes()
        finally:
            lock.release()
        return ForkingPickler.loads(data)


# How often a Pool worker waiting for a task returns to the interpreter (signals are run there).
_WAKE_SECONDS = 0.1


def _hydra_job(config) -> Optional[str]:
    """`job N` for a job of a multirun; None for a single run."""
    try:
        from omegaconf import OmegaConf

        if not str(OmegaConf.select(config, "hydra.mode")).endswith("MULTIRUN"):
            return None
        return f"job {OmegaConf.select(config, 'hydra.job.num')}"
    except Exception:
        return None


def install_sinks(session) -> None:
    """Values that leave torch for Python, a file or another process are results: record
    their fingerprints (`sinks`), in the order they leave."""
    import torch

    recorder = session.recorder

    def wrap(owner, name, kind):
        original = getattr(owner, name)

        def sink(self, *args, **kwargs):
            try:
                frame = sys._getframe(1)
                # the probe's own fingerprints read values too
                if isinstance(self, torch.Tensor) and not frame.f_globals.get("__name__", "").startswith("repro_lint."):
                    recorder.note_sink(kind, self, frame)
            except Exception as exc:
                errors.record(errors.RESULTS, exc, name)
            return original(self, *args, **kwargs)

        sink.__name__ = getattr(original, "__name__", name)
        sink.__qualname__ = getattr(original, "__qualname__", name)
        setattr(owner, name, sink)

    for name in ("numpy", "tolist"):
        wrap(torch.Tensor, name, name)
    wrap(torch.Tensor, "__reduce_ex__", "pickle")
    wrap(torch.nn.Parameter, "__reduce_ex__", "pickle")
    try:
        from multiprocessing.reduction import ForkingPickler

        for cls, reducer in list(ForkingPickler._extra_reducers.items()):
            if isinstance(cls, type) and issubclass(cls, torch.Tensor):
                ForkingPickler._extra_reducers[cls] = _sending(reducer, recorder)
        # Data from other processes is unpickled when it arrives, in whatever order the
        # senders finish (DataLoader workers): the ops that rebuild it are transport, not the
        # program's. Its values count where the program uses them.
        loads = ForkingPickler.loads

        def receive(*args, **kwargs):
            with torch._C._DisableTorchDispatch():
                return loads(*args, **kwargs)

        ForkingPickler.loads = staticmethod(receive)
    except Exception as exc:
        sessions.note_problem(f"tensors sent to other processes are not watched: {exc}")
    original_compile = torch.compile

    def compile(*args, **kwargs):
        session_now = sessions.current()
        try:
            # `@torch.compile(mode=...)` first returns a decorator: count the call that gets the code
            if session_now is not None and (args and args[0] is not None or kwargs.get("model") is not None):
                session_now.note_compile(sys._getframe(1))
        except Exception as exc:
            errors.record(errors.OTHER, exc, "torch.compile")
        return original_compile(*args, **kwargs)

    compile.__wrapped__ = original_compile  # type: ignore[attr-defined]
    torch.compile = compile


def _sending(reducer, recorder):
    def reduce(tensor):
        try:
            recorder.note_sink("send", tensor, None)
        except Exception as exc:
            errors.record(errors.RESULTS, exc, "send")
        return reducer(tensor)

    return reduce
