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
import re
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])
_ALERT = re.compile(r"does not have a deterministic implementation|use_deterministic_algorithms")


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

    from repro_lint.probe.frames import UserCode
    from repro_lint.probe.recorder import ProbeStop, Recorder
    from repro_lint.probe.rng_audit import RngAudit

    _prepare_interpreter(target)  # only now: the probe's own imports must not see the program's folder

    if config["device"] == "cuda" and not torch.cuda.is_available():
        result.update(status="no-cuda", error={"type": "RuntimeError", "message": "CUDA is not available"})
        return
    result["device"] = "cuda" if torch.cuda.is_available() else "cpu"
    # Every run starts the global torch generator from its own seed, so that a program which
    # relies on whatever seed torch starts with shows it, also where a generator's default
    # seed is fixed and would hide the dependence on one machine.
    torch.manual_seed(config["torch_seed"])
    if config["deterministic"]:
        torch.use_deterministic_algorithms(True, warn_only=True)
        # The program's own setting (often `use_deterministic_algorithms(args.flag)`) would end
        # the audit; in this run it is ignored.
        torch.use_deterministic_algorithms = lambda *args, **kwargs: None

    recorder: Any = None
    user = UserCode(_user_roots(target))
    audit = RngAudit(user, lambda: len(recorder.ops) if recorder else 0)
    audit.install(config["rng_catalog"])
    recorder = Recorder(
        user, audit, max_ops=config["max_ops"], fingerprints=config["fingerprints"], predict=config["predict"]
    )
    alerts = _watch_alerts(recorder, user)
    _pause_in_forked_children(recorder, audit)
    # The first op under any dispatch mode loads torch's compiler stack (seconds); do that
    # now, so that --timeout measures the program only.
    recorder.recording = False
    with recorder:
        torch.zeros(())
    recorder.recording = True
    if config.get("timeout"):
        signal.signal(signal.SIGALRM, lambda *_: recorder.stop("timeout") if recorder.recording else None)
        signal.setitimer(signal.ITIMER_REAL, float(config["timeout"]))
    try:
        try:
            with recorder:
                _run_target(target)
        finally:
            if config.get("timeout"):
                signal.setitimer(signal.ITIMER_REAL, 0)
            recorder.recording = False
            audit.active = False
    except ProbeStop:
        pass
    except SystemExit as exc:
        if exc.code not in (None, 0):
            error = {"type": "SystemExit", "message": f"status {exc.code}", "traceback": ""}
            result.update(status="script-exit", error=error)
    except TargetError as exc:
        result.update(status="target-error", error={"type": "TargetError", "message": str(exc)})
    except BaseException as exc:
        result.update(
            status="script-error",
            error={"type": type(exc).__name__, "message": str(exc), "traceback": _user_traceback(exc)},
        )
    result["stop_reason"] = recorder.stop_reason
    result.update(_trace(recorder, audit, user, alerts))
    if config["snapshot"]:
        from repro_lint.probe.env_snapshot import take_snapshot

        result["environment"] = take_snapshot()


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
    try:
        spec = importlib.util.find_spec(target["module"].split(".")[0])
    except Exception:
        return []
    locations = list(spec.submodule_search_locations or []) if spec else []
    return locations or ([spec.origin] if spec and spec.origin else [])


def _run_target(target: dict) -> None:
    import runpy

    if target["kind"] == "script":
        if not os.path.isfile(target["path"]):
            raise TargetError(f"no such file: {target['path']}")
        runpy.run_path(target["path"], run_name="__main__")
        return
    module_name, function = target["module"], target.get("function")
    if not function:
        try:
            importlib.util.find_spec(module_name)
        except ModuleNotFoundError as exc:
            raise TargetError(f"no module named {exc.name!r}") from None
        runpy.run_module(module_name, run_name="__main__", alter_sys=True)
        return
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise TargetError(f"no module named {exc.name!r}") from None
        raise
    fn = getattr(module, function, None)
    if not callable(fn):
        raise TargetError(f"module {module_name!r} has no function {function!r}")
    fn()


def _watch_alerts(recorder, user) -> dict[tuple, int]:
    """Collect determinism alerts (raised as warnings with warn_only=True) with their op and line."""
    alerts: dict[tuple, int] = {}
    show = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if not _ALERT.search(text):
            return show(message, category, filename, lineno, file, line)
        name_id, loc = recorder.current
        if loc < 0:
            loc = user.location_id(sys._getframe(1))
        op = recorder.names[name_id] if name_id >= 0 else None
        key = (text.split(". ")[0], op, loc)
        alerts[key] = alerts.get(key, 0) + 1

    warnings.showwarning = showwarning
    # Every occurrence counts, not only the first per location.
    warnings.filterwarnings("always", message=r"(?s).*(" + _ALERT.pattern + ")")
    return alerts


def _pause_in_forked_children(recorder, audit) -> None:
    # DataLoader workers fork from the recorded process; what they record is never read.
    def after_fork():
        recorder.recording = False
        audit.active = False

    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=after_fork)


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


def _trace(recorder, audit, user, alerts) -> dict:
    def records(table):
        return [
            {
                "source": r.source,
                "function": r.function,
                "location": r.location,
                "seeded": r.seeded,
                "count": r.count,
                "first_op": r.first_op,
            }
            for r in table.values()
        ]

    return {
        "names": recorder.names,
        "ops": recorder.ops,
        "draws": records(audit.draws),
        "seeds": records(audit.seeds),
        "alerts": [{"message": m, "op": op, "location": loc, "count": n} for (m, op, loc), n in alerts.items()],
        "predicted": [
            {"id": i, "op": op, "location": loc, "device": dev, "backward": bw, "count": n}
            for (i, op, loc, dev, bw), n in recorder.predicted.items()
        ],
        "locations": user.locations,
    }


if __name__ == "__main__":
    main(sys.argv[1])
