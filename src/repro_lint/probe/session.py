"""The recording in one process of a run: the run's main process (started by `runner`) or
a process it started, directly or not (see `processes`).

A session knows who its process is (the facts the parent side turns into a name such as
`worker 1` or `rank 0/worker 1`), holds the recorder and the RNG audit once torch is
imported, and writes the process's trace when the process ends.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import secrets
import signal
import sys
import warnings
from typing import Any, Optional

from repro_lint.probe import errors, processes

_ALERT = re.compile(r"does not have a deterministic implementation|use_deterministic_algorithms")
_SESSION: Optional["Session"] = None
_PROBLEMS: list[str] = []


def current() -> Optional["Session"]:
    return _SESSION


def note_problem(text: str) -> None:
    """Something kept the probe from following this process fully (said in the report)."""
    _PROBLEMS.append(text)


class Session:
    def __init__(self, config: dict, run_dir: str, *, root: str, child: bool, parent: Optional[dict] = None):
        self.config = config
        self.run_dir = run_dir
        self.root = root  # name of the run's top process: "main" or "rank R"
        self.child = child
        self.parent = parent or {}
        self.pid = os.getpid()
        self.token = secrets.token_hex(4)
        self.user: Any = None
        self.audit: Any = None
        self.recorder: Any = None
        self.files: Any = None
        self.alerts: dict[tuple, int] = {}
        self.compile_calls: dict[int, int] = {}
        self.spawned: list[dict] = []
        self.segments: list[list] = []  # [first op index, label or None (back to the process)]
        self.children = 0
        self.written = False
        self.stop_reason: Optional[str] = None
        self.final: Optional[list] = None  # what was alive where the recording ended
        self.idle = False  # waiting for work (a Pool worker between tasks)
        self.finishing = False  # writing the trace: a SIGTERM now must not cut it short

    # -- identity --------------------------------------------------------------------------
    @property
    def key(self) -> str:
        return f"{self.pid}-{self.token}"

    def facts_for_child(self) -> dict:
        self.children += 1
        return {
            "key": self.key, "ordinal": self.children, "segment": self.current_segment(),
            "rank": os.environ.get("RANK"), "root": self.root,
        }

    def current_segment(self) -> Optional[str]:
        return self.segments[-1][1] if self.segments else None

    def identity(self) -> dict:
        """What the parent side needs to name this process and place it in the tree."""
        facts: dict[str, Any] = {"key": self.key, "pid": self.pid, "root": self.root, "parent": self.parent.get("key")}
        facts["ordinal"] = self.parent.get("ordinal", 0)
        facts["parent_segment"] = self.parent.get("segment")
        facts["role"], facts["index"] = self._role()
        return facts

    def _role(self) -> tuple[str, Any]:
        if not self.child:
            return "root", None
        data = sys.modules.get("torch.utils.data")
        info = data.get_worker_info() if data is not None and hasattr(data, "get_worker_info") else None
        if info is not None:
            return "worker", info.id
        mp = sys.modules.get("multiprocessing")
        process = mp.current_process() if mp is not None else None
        target = getattr(process, "_target", None)
        if target is not None and getattr(target, "__module__", "") == "torch.multiprocessing.spawn":
            args = getattr(process, "_args", ())
            if len(args) > 1 and isinstance(args[1], int):
                return "spawn", args[1]
        rank = os.environ.get("RANK")
        if rank is not None and rank != self.parent.get("rank"):
            return "rank", rank
        if process is not None and process.name != "MainProcess":
            identity = getattr(process, "_identity", ())
            if identity:
                self.parent["ordinal"] = identity[-1]
            return "process", process.name
        return ("fork" if self.parent.get("forked") else "subprocess"), self.parent.get("ordinal", 0)

    # -- recording -----------------------------------------------------------------------
    def begin_recording(self, target_roots: list[str]) -> None:
        """Set up the recorder (torch is imported). The caller pushes it as a dispatch mode."""
        from repro_lint.probe.frames import UserCode
        from repro_lint.probe.recorder import Recorder, watch_buffers
        from repro_lint.probe.rng_audit import RngAudit

        config = self.config
        self.user = UserCode(target_roots)
        self.audit = RngAudit(self.user, lambda: len(self.recorder.ops) if self.recorder else 0)
        self.audit.seed_shift = int(config.get("seed_shift") or 0)
        self.audit.install(config["rng_catalog"])
        self.recorder = Recorder(
            self.user, self.audit, max_ops=config["max_ops"], fingerprints=config["fingerprints"],
            predict=config["predict"], stop_program=not self.child,
        )
        self.recorder.segment = self.current_segment()
        from repro_lint.probe.files import FileWatch

        self.files = FileWatch(
            self.user.location_id, lambda: len(self.recorder.ops) if self.recorder else 0, self.run_dir,
            lambda path: not self.user.is_user_file(path),
        )
        self.files.install()
        watch_buffers()
        self._watch_alerts()

    def enter_segment(self, label: str) -> None:
        """Ops from here on belong to a job or task (compared with the same job of the other
        runs, whichever process ran it)."""
        self.segments.append([len(self.recorder.ops) if self.recorder else 0, label])
        if self.recorder is not None:
            self.recorder.segment = label

    def leave_segment(self) -> None:
        self.segments.append([len(self.recorder.ops) if self.recorder else 0, None])
        if self.recorder is not None:
            self.recorder.segment = None

    def note_compile(self, frame) -> None:
        loc = self.user.location_id(frame) if self.user else -1
        self.compile_calls[loc] = self.compile_calls.get(loc, 0) + 1

    def _watch_alerts(self) -> None:
        """Collect determinism alerts (warnings with warn_only=True) with their op and line."""
        show = warnings.showwarning

        def showwarning(message, category, filename, lineno, file=None, line=None):
            try:
                if note_alert(message):
                    return None
            except Exception as exc:  # the probe's failure: the warning is shown as usual
                errors.record(errors.OTHER, exc, "warning")
            return show(message, category, filename, lineno, file, line)

        def note_alert(message) -> bool:
            text = str(message)
            session = _SESSION  # a forked child's own session, not the one that installed this
            if not _ALERT.search(text) or session is None:
                return False
            recorder = session.recorder
            name_id, loc = recorder.current if recorder else (-1, -1)
            if loc < 0 and session.user is not None:
                loc = session.user.location_id(sys._getframe(1))
            op = recorder.names[name_id] if recorder and name_id >= 0 else None
            if op is None:  # compiled code runs without the op hook: the alert names its kernel
                named = re.match(r"(\S+) does not have a deterministic implementation", text)
                op = named.group(1) if named else None
            key = (text.split(". ")[0], op, loc)
            session.alerts[key] = session.alerts.get(key, 0) + 1
            return True

        warnings.showwarning = showwarning
        # Every occurrence counts, not only the first per location.
        warnings.filterwarnings("always", message=r"(?s).*(" + _ALERT.pattern + ")")


    # -- the trace -------------------------------------------------------------------------
    def trace(self) -> dict:
        recorder, audit = self.recorder, self.audit

        def records(table):
            return [
                {"source": r.source, "function": r.function, "location": r.location, "seeded": r.seeded,
                 "count": r.count, "first_op": r.first_op, "importing": r.importing, "kind": r.kind, "values": r.values}
                for r in table.values()
            ]

        data: dict[str, Any] = {
            "process": self.identity(),
            "segments": self.segments,
            "spawned": self.spawned,
            "problems": list(_PROBLEMS),
            "probe_errors": errors.recorded(),
            "files": list(self.files.opened.values()) if self.files is not None else [],
            "saves": self.files.saves if self.files is not None else [],
            "steps": self.files.steps if self.files is not None else [],
            "compile_calls": [[loc, n] for loc, n in self.compile_calls.items()],
            "alerts": [{"message": m, "op": op, "location": loc, "count": n} for (m, op, loc), n in self.alerts.items()],
        }
        if recorder is None:
            data.update(recorded=False, names=[], ops=[], draws=[], seeds=[], predicted=[], locations=[],
                        sinks=[], state=[], final=[], stop_reason=self.stop_reason)
            return data
        data.update(
            recorded=True,
            names=recorder.names,
            ops=recorder.ops,
            draws=records(audit.draws),
            seeds=records(audit.seeds),
            predicted=[
                {"id": i, "op": op, "location": loc, "device": dev, "backward": bw, "count": n}
                for (i, op, loc, dev, bw), n in recorder.predicted.items()
            ],
            sinks=recorder.sinks,
            state=[[birth, fp] for birth, fp in recorder.state.items()],
            final=self.final if self.final is not None else recorder.final_state(),
            stop_reason=recorder.stop_reason or self.stop_reason,
            locations=self.user.locations,
        )
        return data

    def finish(self, reason: Optional[str] = None) -> None:
        """A child's end: write its trace once (exit, exec, termination)."""
        if self.written or not self.child or os.getpid() != self.pid:
            return
        self.written = self.finishing = True
        if self.recorder is not None:
            self.recorder.recording = False
        if reason in ("terminated", "exec"):
            self.stop_reason = reason
        folder = processes.procs_dir(self.run_dir)
        try:
            processes.write_json(folder / f"{self.key}.json", self.trace())
        except Exception as exc:  # said in the report: this process was not recorded
            try:
                (folder / f"{self.key}.failed").write_text(f"{type(exc).__name__}: {exc}")
            except OSError:
                pass
        self.finishing = False

    def announce(self) -> None:
        try:
            processes.write_json(
                processes.procs_dir(self.run_dir) / f"{self.key}.start",
                {"pid": self.pid, "parent": self.parent.get("key"), "root": self.root},
            )
            if self.recorder is not None:
                self.announce_torch()
        except OSError:
            pass

    def announce_torch(self) -> None:
        """This process imported torch: it may record, so its trace is waited for."""
        try:
            (processes.procs_dir(self.run_dir) / f"{self.key}.torch").touch()
        except OSError:
            pass


def start_root(config: dict, run_dir: str, root: str) -> Session:
    global _SESSION
    _SESSION = Session(config, run_dir, root=root, child=False)
    processes.procs_dir(run_dir).mkdir(parents=True, exist_ok=True)
    os.environ.update(processes.child_environment(run_dir))
    _install_module_hooks()
    return _SESSION


def start_exec_child() -> None:
    """Called by site/sitecustomize.py in every Python program a run starts with exec."""
    global _SESSION
    run_dir = os.environ.get(processes.ENV_RUN)
    if not run_dir or _SESSION is not None:
        return
    try:
        parent = json.loads(os.environ.get(processes.ENV_PARENT) or "{}")
        config = json.loads((processes.procs_dir(run_dir).parent / "child-config.json").read_text())
    except (OSError, ValueError):
        return
    _SESSION = Session(config, run_dir, root=parent.get("root") or "main", child=True, parent=parent)
    _SESSION.announce()
    atexit.register(_at_exit)
    _terminate_writes_trace()
    _install_module_hooks()
    after = _after_import()
    after.add("torch", _start_torch_child)


def _start_torch_child(torch) -> None:
    session = _SESSION
    if session is None or session.recorder is not None:
        return
    config = session.config
    # Like a fresh interpreter, but from a seed that differs between runs (see runner).
    torch.manual_seed(config["child_torch_seed"])
    if config["deterministic"]:
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.use_deterministic_algorithms = lambda *args, **kwargs: None
    from repro_lint.probe.hooks import install_sinks

    session.begin_recording(config["user_roots"])
    install_sinks(session)
    session.announce_torch()
    if not config.get("compiled"):
        session.recorder.__enter__()  # recorded until the process ends


def _at_exit() -> None:
    if _SESSION is not None:
        _SESSION.finish("exit")


def _terminate_writes_trace() -> None:
    def on_term(signum, frame):
        session = _SESSION
        if session is not None and session.finishing:
            # already exiting and writing its trace (a Pool terminates workers that are
            # still on their way out): let it finish, the process ends right after
            return
        if session is not None:
            session.finish("exit" if session.idle else "terminated")
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    try:
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, on_term)
    except (ValueError, OSError):  # not the main thread
        pass


def _note_spawn(executable: str, argv: list[str], pid: int) -> None:
    session = _SESSION
    if session is None:
        return
    entry = {"pid": pid, "executable": os.path.basename(executable), "python": processes.is_python(executable),
             "argv": argv[:4]}
    session.spawned.append(entry)


def _before_exec() -> None:
    session = _SESSION
    if session is not None and session.child:
        session.finish("exec")


_fork_facts: Optional[dict] = None


def _before_fork() -> None:
    global _fork_facts
    session = _SESSION
    _fork_facts = dict(session.facts_for_child(), forked=True) if session is not None else None


def _after_fork_in_child() -> None:
    global _SESSION
    parent, facts = _SESSION, _fork_facts
    if parent is None or facts is None:
        return
    child = Session(parent.config, parent.run_dir, root=parent.root, child=True, parent=facts)
    child.user, child.audit, child.recorder, child.files = parent.user, parent.audit, parent.recorder, parent.files
    child.alerts = {}
    _SESSION = child
    if child.recorder is not None:
        child.recorder.start_fresh(stop_program=False)
        child.audit.start_fresh()
        if child.files is not None:
            child.files.start_fresh()
    _PROBLEMS.clear()
    errors.clear()
    child.announce()
    _terminate_writes_trace()


def _install_module_hooks() -> None:
    """Once per interpreter (forked children inherit them)."""
    from repro_lint.probe import hooks

    after = _after_import()
    after.add("hydra.core.utils", hooks.wrap_hydra_run_job)
    after.add("multiprocessing.pool", hooks.wrap_pool_worker)
    watch = processes.ExecWatch(os.environ[processes.ENV_RUN], _facts_for_child, _note_spawn, _before_exec)
    watch.install()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
    original_exit = os._exit

    def _exit(code):
        session = _SESSION
        if session is not None and session.child:
            session.finish("exit")
        original_exit(code)

    os._exit = _exit


def _facts_for_child() -> dict:
    return _SESSION.facts_for_child() if _SESSION is not None else {}


_AFTER: Optional[processes.AfterImport] = None


def _after_import() -> processes.AfterImport:
    global _AFTER
    if _AFTER is None:
        _AFTER = processes.AfterImport()
    return _AFTER
