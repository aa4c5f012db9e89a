"""One probe run, in its own process: run the user's program under the recorder and write
what was seen to a JSON file. Started by `repro_lint.probe.launch`; not a user command.

The result file always gets written when this process survives: the parent tells a
failing program apart from a crash by its presence.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])
_KEPT: list = []  # what a rank's program held, kept until the process exits


class TargetError(Exception):
    """The target cannot be found (not: the target raised)."""


def main(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    result: dict[str, Any] = {"status": "ok", "stop_reason": None, "error": None}
    started = time.monotonic()
    try:
        _run(config, result)
    except BaseException as exc:  # a fault of the probe itself: report it, never a traceback
        result.update(status="probe-error", error={"type": type(exc).__name__, "message": str(exc)})
    result["seconds"] = round(time.monotonic() - started, 3)
    if result.get("error"):
        from repro_lint.probe.redact import redact_tree

        result["error"] = redact_tree(result["error"])  # the program's message, even in a temporary file
    Path(config["result_path"]).write_text(json.dumps(result, separators=(",", ":")))
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    # Leave at once: threads or atexit hooks the program left behind must not hold up the probe.
    os._exit(0)


def _run(config: dict, result: dict) -> None:
    target = config["target"]
    try:
        import torch
    except Exception as exc:
        result.update(status="no-torch", error={"type": type(exc).__name__, "message": str(exc)})
        return

    from repro_lint.probe import session as sessions
    from repro_lint.probe.recorder import ProbeStop

    _prepare_interpreter(target)  # only now: the probe's own imports must not see the program's folder

    if config["device"] == "cuda" and not torch.cuda.is_available():
        result.update(status="no-cuda", error={"type": "RuntimeError", "message": "CUDA is not available"})
        return
    result["device"] = "cuda" if torch.cuda.is_available() else "cpu"
    run_dir = config["run_dir"]
    session = sessions.start_root(config, run_dir, config["root"])
    roots = _user_roots(target)
    _write_child_config(config, run_dir, roots)
    # Every run starts the global torch generator from its own seed, so that a program which
    # relies on whatever seed torch starts with shows it, also where a generator's default
    # seed is fixed and would hide the dependence on one machine.
    torch.manual_seed(config["torch_seed"])
    if config["deterministic"]:
        torch.use_deterministic_algorithms(True, warn_only=True)
        # The program's own setting (often `use_deterministic_algorithms(args.flag)`) would end
        # the audit; in this run it is ignored.
        torch.use_deterministic_algorithms = lambda *args, **kwargs: None

    session.begin_recording(roots)
    from repro_lint.probe.hooks import install_sinks

    install_sinks(session)
    recorder = session.recorder
    # The audit of a program that compiles runs without the dispatch mode, which would make
    # torch.compile run everything eagerly: alerts from compiled kernels must be seen.
    dispatch = not config.get("compiled")
    if dispatch:
        # The first op under any dispatch mode loads torch's compiler stack (seconds); do that
        # now, so that --timeout measures the program only.
        recorder.recording = False
        with recorder:
            torch.zeros(())
        recorder.recording = True
    if config.get("timeout"):
        signal.signal(signal.SIGALRM, lambda *_: _time_up(recorder, dispatch))
        signal.setitimer(signal.ITIMER_REAL, float(config["timeout"]))
    _watch_peer_stop(config, recorder)
    if config.get("ranks"):
        recorder.on_stop = lambda reason: _tell_peers(config, reason)
    held = None
    try:
        try:
            if dispatch:
                with recorder:
                    held = _run_target(target)
            else:
                held = _run_target(target)
        finally:
            if config.get("timeout"):
                signal.setitimer(signal.ITIMER_REAL, 0)
            recorder.recording = False
            session.audit.active = False
    except ProbeStop:
        # The program's frames are alive until this handler ends: what they hold is the
        # state the recording stopped at.
        session.final = recorder.final_state()
    except SystemExit as exc:
        if exc.code not in (None, 0):
            message = exc.code if isinstance(exc.code, str) else f"status {exc.code}"
            result.update(status="script-exit", error={"type": "SystemExit", "message": message, "traceback": ""})
    except TargetError as exc:
        result.update(status="target-error", error={"type": "TargetError", "message": str(exc)})
    except BaseException as exc:
        if _peer_stopped(config):
            # Another rank was stopped (or failed) first; this rank's collective with it then
            # fails ("Connection closed by peer"): the probe's doing, not the program's.
            recorder.stop_reason = recorder.stop_reason or "peer-stopped"
            session.final = recorder.final_state()
            _KEPT.append(exc)  # its traceback holds the program's frames (see below)
        else:
            result.update(
                status="script-error",
                error={"type": type(exc).__name__, "message": str(exc), "traceback": _user_traceback(exc)},
            )
    if session.final is None:
        session.final = recorder.final_state()
    if config.get("compiled"):
        result["compiled_graphs"] = _compiled_graphs()
    if config.get("ranks"):
        # Freeing a rank's objects here can deadlock: the process group's destructor joins
        # its threads while holding the GIL, and a thread that still holds the recorder (a
        # Python object in its thread-local state) needs the GIL to let it go. The process
        # ends with os._exit, so they are simply kept.
        _KEPT.append(held)
    del held
    result["stop_reason"] = recorder.stop_reason
    if result["status"] == "ok":
        from repro_lint.probe import ending

        result["children"] = ending.end_children(session, config)
    result.update(session.trace())
    if config["snapshot"]:
        from repro_lint.probe.env_snapshot import take_snapshot

        project = os.path.dirname(target["path"]) if target["kind"] == "script" else os.getcwd()
        result["environment"] = take_snapshot(project=project)


def _compiled_graphs() -> int:
    """How many graphs torch.compile built in this process (the audit's proof that it compiled)."""
    utils = sys.modules.get("torch._dynamo.utils")
    try:
        return int(utils.counters["stats"]["unique_graphs"]) if utils is not None else 0
    except Exception:
        return 0


# A stop raised by the timeout's signal handler is lost when the signal lands in a weakref
# callback or a `__del__` (the interpreter prints "Exception ignored in ..." and goes on):
# the alarm is set again, and stops the program at its next firing (the runner disarms it
# once the program is stopped).
_STOP_RETRY_S = 0.25


def _time_up(recorder, dispatch: bool) -> None:
    from repro_lint.probe.recorder import ProbeStop

    signal.setitimer(signal.ITIMER_REAL, _STOP_RETRY_S)
    if recorder.recording or not dispatch:
        recorder.stop("timeout", asynchronous=True)
    elif recorder.stop_reason == "timeout":
        raise ProbeStop("timeout")  # an earlier stop was lost, and no op has run since
    if not dispatch:
        raise ProbeStop("timeout")  # no op hook to stop at: stop here


def _tell_peers(config: dict, reason: str) -> None:
    """This rank stops recording (--max-ops, --timeout): the others are told at once, so that
    they stop too rather than wait for this one in a collective it will not enter."""
    if reason != "peer-stopped":
        (Path(config["run_dir"]) / "stop").touch()


def _peer_stopped(config: dict) -> bool:
    return bool(config.get("ranks")) and (Path(config["run_dir"]) / "stop").exists()


def _watch_peer_stop(config: dict, recorder) -> None:
    """Ranks of a distributed run: when another rank stopped early, stop too (the file
    `stop` in the run's folder), so that no rank waits for a collective forever."""
    if not config.get("ranks"):
        return
    import threading

    flag = Path(config["run_dir"]) / "stop"

    def watch():
        while not flag.exists():
            time.sleep(0.1)
        if recorder.recording:
            recorder.stop("peer-stopped")

    threading.Thread(target=watch, name="repro-lint-peer-stop", daemon=True).start()


def _write_child_config(config: dict, run_dir: str, roots: list[str]) -> None:
    from repro_lint.probe.processes import write_json

    child = {k: v for k, v in config.items() if k not in ("result_path", "snapshot", "timeout")}
    child["user_roots"] = roots
    child["child_torch_seed"] = (config["torch_seed"] * 31 + 7) % (2**63 - 1)
    write_json(Path(run_dir) / "child-config.json", child)


def _prepare_interpreter(target: dict) -> None:
    # Look like `python script.py ARGS` / `python -m module ARGS` to the program.
    if target["kind"] == "script":
        sys.argv = [target["path"], *target["args"]]
        sys.path[0] = os.path.dirname(target["path"])
    else:
        sys.argv = [target["module"], *target["args"]]
        sys.path[0] = os.getcwd()


def _user_roots(target: dict) -> list[str]:
    if target["kind"] == "script":
        return [target["path"]]
    if target["module"].split(".")[0] in ("torch", "numpy", "repro_lint"):
        return []  # a launcher (`-m torch.distributed.run`): the user's code is the script it runs
    try:
        spec = importlib.util.find_spec(target["module"].split(".")[0])
    except Exception:
        return []
    locations = list(spec.submodule_search_locations or []) if spec else []
    return locations or ([spec.origin] if spec and spec.origin else [])


def _run_target(target: dict) -> Any:
    import runpy

    if target["kind"] == "script":
        if not os.path.isfile(target["path"]):
            raise TargetError(f"no such file: {target['path']}")
        return runpy.run_path(target["path"], run_name="__main__")  # its globals: results held to the end
    module_name, function = target["module"], target.get("function")
    if not function:
        try:
            importlib.util.find_spec(module_name)
        except ModuleNotFoundError as exc:
            raise TargetError(f"no module named {exc.name!r}") from None
        return runpy.run_module(module_name, run_name="__main__", alter_sys=True)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise TargetError(f"no module named {exc.name!r}") from None
        raise
    fn = getattr(module, function, None)
    if not callable(fn):
        raise TargetError(f"module {module_name!r} has no function {function!r}")
    return fn()


def _user_traceback(exc: BaseException) -> str:
    """The program's traceback without the probe's own frames."""
    te = traceback.TracebackException.from_exception(exc)
    seen = set()
    stack = [te]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        item.stack = traceback.StackSummary.from_list(_without_probe_frames(list(item.stack)))
        stack += [e for e in (item.__cause__, item.__context__) if e is not None]
    return "".join(te.format())


def _without_probe_frames(frames: list) -> list:
    """Drop the probe's frames and the torch frames that only exist because of it: the
    wrapper torch puts around every dispatch mode, and the op call the mode makes."""
    drop = set()
    for i, frame in enumerate(frames):
        if not _internal(frame.filename):
            continue
        drop.add(i)
        j = i - 1
        while j >= 0 and _path(frames[j].filename).endswith(("torch/_compile.py", "torch/_dynamo/eval_frame.py")):
            drop.add(j)
            j -= 1
        j = i + 1
        while j < len(frames) and _path(frames[j].filename).endswith("torch/_ops.py"):
            drop.add(j)
            j += 1
    return [f for i, f in enumerate(frames) if i not in drop]


def _path(filename: str) -> str:
    return filename.replace(os.sep, "/")


def _internal(filename: str) -> bool:
    path = os.path.realpath(filename)
    return path.startswith(_PACKAGE_DIR + os.sep) or os.path.basename(path) == "runpy.py" or filename.startswith("<frozen")


if __name__ == "__main__":
    main(sys.argv[1])
