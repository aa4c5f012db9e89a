"""The end of a run's main process: let the processes it started finish and write their
traces, as they would at a normal interpreter exit, before the main process reports."""

from __future__ import annotations

import atexit
import gc
import os
import threading
import time
from typing import Any

from repro_lint.probe import processes

# How long the main process waits for its children to write their traces once the program
# has ended; a child still running with torch imported after that is reported as not recorded.
CHILD_WAIT_SECONDS = 30.0
_EXIT_HOOKS_SECONDS = 20.0


def end_children(session, config: dict) -> dict[str, Any]:
    _shutdown_dataloader_workers()
    if not _run_exit_hooks():
        from repro_lint.probe.session import note_problem

        note_problem(f"the program's exit handlers did not finish within {_EXIT_HOOKS_SECONDS:.0f} s")
    return {"unfinished": _wait_for_traces(session)}


def _shutdown_dataloader_workers() -> None:
    """DataLoader iterators the program keeps (persistent workers, an iterator in a global)
    would have their workers terminated at exit; shut them down the way the iterator does
    when it is deleted, so that the workers end normally."""
    import sys

    module = sys.modules.get("torch.utils.data.dataloader")
    cls = getattr(module, "_MultiProcessingDataLoaderIter", None)
    if cls is None:
        return
    for obj in gc.get_objects():
        # type(), not isinstance(): proxies and lazy modules among the objects must not run code
        if issubclass(type(obj), cls):
            try:
                obj._shutdown_workers()
            except Exception:
                pass


def _run_exit_hooks() -> bool:
    """What the interpreter runs at exit: thread-exit hooks (loky's executor shutdown) and
    atexit handlers (multiprocessing joins its children). Bounded: a hook that hangs must
    not hold up the probe."""

    def run():
        for hook in reversed(list(getattr(threading, "_threading_atexits", []))):
            try:
                hook()
            except Exception:
                pass
        try:
            atexit._run_exitfuncs()
        except Exception:
            pass

    worker = threading.Thread(target=run, name="repro-lint-exit-hooks", daemon=True)
    worker.start()
    worker.join(_EXIT_HOOKS_SECONDS)
    return not worker.is_alive()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_for_traces(session) -> list[dict[str, Any]]:
    """Children of this root that started but left no trace, once waiting is over."""
    folder = processes.procs_dir(session.run_dir)
    deadline = time.monotonic() + CHILD_WAIT_SECONDS
    while True:
        pending = []
        for start in folder.glob("*.start"):
            key = start.name[: -len(".start")]
            if (folder / f"{key}.json").exists():
                continue
            try:
                facts = processes.read_json(start)
            except (OSError, ValueError):
                continue
            if facts.get("root") != session.root:
                continue
            pid = int(facts.get("pid", 0))
            torch_imported = (folder / f"{key}.torch").exists()
            entry = {"key": key, "pid": pid, "alive": _alive(pid), "torch": torch_imported}
            failed = folder / f"{key}.failed"
            if failed.exists():
                entry["error"] = failed.read_text(errors="replace")
            pending.append(entry)
        # Children without torch cannot have recorded anything: do not wait for them
        # (resource trackers live until the main process is gone).
        waiting = [p for p in pending if p["alive"] and p["torch"]]
        if not waiting or time.monotonic() > deadline:
            return pending
        time.sleep(0.1)
