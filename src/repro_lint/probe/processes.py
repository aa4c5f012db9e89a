"""Following a run into the processes it starts.

Every recorded process leaves files in the run's folder (`procs/`): `<id>.start` when it
begins, `<id>.json` (its trace) when it ends, and `<id>.spawned` lines for the programs it
started with exec. Forked children (DataLoader workers, `multiprocessing` with fork)
inherit the recorder and start a fresh trace; exec'd Python children (spawn, loky,
`subprocess`) find `site/sitecustomize.py` first on PYTHONPATH and start recording when
they import torch. This module holds the plumbing; `session` the recording.

Imported at the start of every Python child of a run: stdlib only, no torch.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

ENV_RUN = "REPRO_LINT_PROBE_RUN"  # the run's folder; set for the run's processes only
ENV_PARENT = "REPRO_LINT_PROBE_PARENT"  # JSON facts of the process that exec'd this one
SITE_DIR = str(Path(__file__).resolve().parent / "site")
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def procs_dir(run_dir: str) -> Path:
    return Path(run_dir) / "procs"


def write_json(path: Path, data: Any) -> None:
    """Write whole or not at all: readers never see half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")))
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def child_environment(run_dir: str, environ: Optional[dict[str, str]] = None) -> dict[str, str]:
    """The variables a process of the run passes on, so that its Python children record."""
    environ = os.environ if environ is None else environ
    path = [SITE_DIR, PACKAGE_ROOT]
    path += [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p and p not in path]
    return {ENV_RUN: run_dir, "PYTHONPATH": os.pathsep.join(path)}


def is_python(executable: str) -> bool:
    name = os.path.basename(executable)
    if name.startswith("python") or name.startswith("pypy"):
        return True
    try:
        return os.path.realpath(executable) == os.path.realpath(sys.executable)
    except OSError:
        return False


class ExecWatch:
    """Wraps the ways a process starts programs, so that children are recorded and counted.

    `on_spawn(executable, argv, pid)` is told of every program started; `parent_facts()`
    gives what the child learns of its parent through ENV_PARENT.
    """

    def __init__(self, run_dir: str, parent_facts, on_spawn, before_exec):
        self.run_dir = run_dir
        self.parent_facts = parent_facts
        self.on_spawn = on_spawn
        self.before_exec = before_exec

    def _env_list(self, env: Any) -> Any:
        extra = dict(child_environment(self.run_dir), **{ENV_PARENT: json.dumps(self.parent_facts())})
        if env is None:
            items = dict(os.environb) if hasattr(os, "environb") else {k.encode(): v.encode() for k, v in os.environ.items()}
        else:
            items = {}
            for entry in env:
                raw = entry if isinstance(entry, bytes) else os.fsencode(entry)
                key, _, value = raw.partition(b"=")
                items[key] = value
        if b"PYTHONPATH" in items and extra["PYTHONPATH"]:
            extra["PYTHONPATH"] = os.pathsep.join(
                [extra["PYTHONPATH"]] + [p for p in os.fsdecode(items[b"PYTHONPATH"]).split(os.pathsep) if p not in extra["PYTHONPATH"].split(os.pathsep)]
            )
        for key, value in extra.items():
            items[os.fsencode(key)] = os.fsencode(value)
        return [k + b"=" + v for k, v in items.items()]

    def install(self) -> None:
        import _posixsubprocess

        original = _posixsubprocess.fork_exec
        watch = self

        def fork_exec(*args):
            args = list(args)
            if len(args) > 5 and (args[5] is None or isinstance(args[5], (list, tuple))):
                args[5] = watch._env_list(args[5])
            pid = original(*args)
            try:
                executables = [os.fsdecode(e) for e in (args[1] or [])]
                argv = [os.fsdecode(a) for a in (args[0] or [])]
                watch.on_spawn(executables[0] if executables else (argv[0] if argv else "?"), argv, pid)
            except Exception:
                pass
            return pid

        _posixsubprocess.fork_exec = fork_exec
        subprocess = sys.modules.get("subprocess")
        if getattr(subprocess, "_fork_exec", None) is original:  # bound at its import
            subprocess._fork_exec = fork_exec
        for name in ("posix_spawn", "posix_spawnp"):
            spawn = getattr(os, name, None)
            if spawn is not None:
                setattr(os, name, self._spawn_wrapper(spawn))
        for name in ("execv", "execve"):
            setattr(os, name, self._exec_wrapper(getattr(os, name), name == "execve"))

    def _spawn_wrapper(self, original):
        watch = self

        def posix_spawn(path, argv, env, *args, **kwargs):
            items = watch._env_list([f"{k}={v}" for k, v in env.items()])
            env = dict(os.fsdecode(i).split("=", 1) for i in items)
            pid = original(path, argv, env, *args, **kwargs)
            try:
                watch.on_spawn(os.fsdecode(path), [os.fsdecode(a) for a in argv], pid)
            except Exception:
                pass
            return pid

        return posix_spawn

    def _exec_wrapper(self, original, with_env: bool):
        watch = self

        def execv(path, argv, *rest):
            # This process becomes another program: its trace ends here, and a Python
            # program it becomes records under the same parent.
            watch.before_exec()
            if with_env:
                env = dict(os.fsdecode(i).split("=", 1) for i in watch._env_list([f"{k}={v}" for k, v in rest[0].items()]))
                return original(path, argv, env)
            os.environ.update(child_environment(watch.run_dir))
            return original(path, argv)

        return execv


class AfterImport:
    """Runs callbacks right after a module is imported (at once if it is already), before
    code that imports names from it can take them: `from hydra.core.utils import run_job`
    must get the wrapped function."""

    def __init__(self) -> None:
        self.callbacks: dict[str, list] = {}

    def add(self, module: str, callback) -> None:
        if module in sys.modules:
            _safely(callback, sys.modules[module])
            return
        self.callbacks.setdefault(module, []).append(callback)
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def find_spec(self, name, path, target=None):
        callbacks = self.callbacks.pop(name, None)
        if not callbacks:
            return None
        import importlib.util

        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            if self.callbacks:
                sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            for callback in callbacks:
                _safely(callback, module)

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            return spec
        return spec


def _safely(callback, module) -> None:
    try:
        callback(module)
    except Exception as exc:  # the program's import must not fail because of the probe
        from repro_lint.probe import session

        session.note_problem(f"{getattr(module, '__name__', module)}: {type(exc).__name__}: {exc}")
