"""Starts probe runs as fresh Python processes and reads back what they recorded."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import repro_lint

# Extra time a run gets past --timeout to import torch, stop and write its trace.
_GRACE_SECONDS = 60
# How long the other ranks get to finish once one rank has ended.
_PEER_GRACE_SECONDS = 60
_TAIL_LINES = 40

# The runner is started by code rather than `-m`, so that the working directory does not
# come first on sys.path while the probe imports (a local `json.py` must not shadow json).
_BOOTSTRAP = (
    "import sys; sys.path[0] = {root!r}; "
    "from repro_lint.probe import runner; runner.main(sys.argv[1])"
)


@dataclass
class RunPlan:
    index: int
    deterministic: bool = False
    hash_seed: Optional[str] = None  # None: inherited from the user's environment
    torch_seed: int = 0
    snapshot: bool = False
    role: str = "compared"  # or "deterministic-audit", "seed-varied", "resumed"
    args: Optional[list[str]] = None  # the program's arguments in this run, where they differ
    env: dict[str, str] = field(default_factory=dict)  # variables set for this run only
    seed_shift: int = 0  # added to every seed the program sets (--vary-seed)


@dataclass
class RunOutcome:
    plan: RunPlan
    roots: dict[str, dict[str, Any]]  # "main" or "rank R" -> the trace of that process
    children: list[dict[str, Any]] = field(default_factory=list)  # traces of the processes they started
    hash_seed: str = ""  # the run's PYTHONHASHSEED ("" when neither set nor inherited)

    @property
    def data(self) -> dict[str, Any]:
        """The first top process (main, or rank 0)."""
        return next(iter(self.roots.values()))


class RunFailed(Exception):
    """A run that produced no usable trace: the program raised, or the process died."""

    def __init__(
        self, kind: str, message: str, *, run: int, traceback: str = "", stderr: str = "", exc_type: str = ""
    ):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.run = run
        self.traceback = traceback
        self.stderr = stderr
        self.exc_type = exc_type  # the program's exception, for script-error


def plan_runs(runs: int, environ: dict[str, str]) -> list[RunPlan]:
    """The compared runs, then the run under deterministic algorithms.

    Each run gets its own PYTHONHASHSEED unless the user fixed one, so that code which
    depends on the iteration order of sets or dicts of strings shows it.
    """
    fixed = environ.get("PYTHONHASHSEED", "random") != "random"
    hash_seeds = _distinct(runs + 1, 2**32 - 1)
    torch_seeds = _distinct(runs + 1, 2**63 - 1)
    plans = [
        RunPlan(i + 1, hash_seed=None if fixed else str(hash_seeds[i]), torch_seed=torch_seeds[i], snapshot=i == 0)
        for i in range(runs)
    ]
    audit_hash_seed = None if fixed else str(hash_seeds[runs])
    plans.append(RunPlan(runs + 1, deterministic=True, hash_seed=audit_hash_seed, torch_seed=torch_seeds[runs]))
    return plans


def _distinct(n: int, upper: int) -> list[int]:
    values: list[int] = []
    while len(values) < n:
        v = 1 + secrets.randbelow(upper)
        if v not in values:
            values.append(v)
    return values


def launch(
    plan: RunPlan,
    base: dict[str, Any],
    workdir: Path,
    device: str,
    timeout: Optional[float],
    *,
    nproc: int = 0,
    stdin: Optional[Path] = None,
    compiled: bool = False,
) -> RunOutcome:
    """One run: the program (or, with `nproc`, that many ranks of it), with every process it
    starts recorded in the run's folder."""
    run_dir = workdir / f"run{plan.index}"
    run_dir.mkdir()
    target = base["target"] if plan.args is None else dict(base["target"], args=list(plan.args))
    config = dict(
        base,
        target=target,
        seed_shift=plan.seed_shift,
        torch_seed=plan.torch_seed,
        deterministic=plan.deterministic,
        fingerprints=not plan.deterministic,  # that run is audited, not compared
        snapshot=plan.snapshot,
        device=device,
        timeout=timeout,
        run_dir=str(run_dir),
        ranks=nproc,
        compiled=compiled,
    )
    env = dict(os.environ, **plan.env)
    if plan.hash_seed is not None:
        env["PYTHONHASHSEED"] = plan.hash_seed
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # the program must not find a GPU it could pick itself
    roots = [f"rank {r}" for r in range(nproc)] if nproc else ["main"]
    port = _free_port() if nproc else 0
    # The launcher holds the ranks' rendezvous store, as torchrun's agent does: a rank that
    # finishes first then takes nothing down that the others still wait on.
    store = _agent_store(port) if nproc else None
    procs = []
    for r, root in enumerate(roots):
        name = root.replace(" ", "")
        cfg = dict(config, root=root, result_path=str(run_dir / f"{name}.result.json"), snapshot=plan.snapshot and r == 0)
        config_path = run_dir / f"{name}.config.json"
        config_path.write_text(json.dumps(cfg))
        proc_env = dict(env, **_rank_environment(r, nproc, port, store is not None)) if nproc else env
        procs.append(_start(cfg, config_path, proc_env, run_dir / f"{name}.stderr", stdin))
    deadline = None if timeout is None else time.monotonic() + timeout + _GRACE_SECONDS
    try:
        _wait(procs, run_dir, deadline, plan.index)
    finally:
        del store
    traces: dict[str, dict[str, Any]] = {}
    failures: list[RunFailed] = []
    for proc in procs:
        try:
            traces[proc.root] = _result(proc, plan.index)
        except RunFailed as failure:
            failures.append(failure)
    if failures:
        # A rank that raised says more than the ranks it took down with it.
        failures.sort(key=lambda f: f.kind in ("crash", "timeout"))
        raise failures[0]
    hash_seed = plan.hash_seed or os.environ.get("PYTHONHASHSEED", "")
    return RunOutcome(plan, traces, _children(run_dir), hash_seed=hash_seed)


class _Proc:
    def __init__(self, root: str, popen: subprocess.Popen, result_path: Path, err_path: Path):
        self.root, self.popen, self.result_path, self.err_path = root, popen, result_path, err_path
        self.killed = False


def _start(cfg: dict, config_path: Path, env: dict, err_path: Path, stdin: Optional[Path]) -> _Proc:
    root = str(Path(repro_lint.__file__).resolve().parents[1])
    command = [sys.executable, "-c", _BOOTSTRAP.format(root=root), str(config_path)]
    with open(err_path, "wb") as err:
        source = open(stdin, "rb") if stdin is not None else subprocess.DEVNULL
        try:
            popen = subprocess.Popen(command, stdin=source, stdout=subprocess.DEVNULL, stderr=err, env=env)
        finally:
            if stdin is not None:
                source.close()
    return _Proc(cfg["root"], popen, Path(cfg["result_path"]), err_path)


def _wait(procs: list[_Proc], run_dir: Path, deadline: Optional[float], index: int) -> None:
    """Wait for every process of the run. Ranks: when one stops early or fails, the others
    are told to stop, and are ended if they do not (a rank waits for its peers forever)."""
    ended_at: Optional[float] = None
    while True:
        running = [p for p in procs if p.popen.poll() is None]
        if not running:
            return
        now = time.monotonic()
        if len(procs) > 1 and len(running) < len(procs):
            if ended_at is None:
                ended_at = now
                if any(_stopped_or_failed(p) for p in procs if p not in running):
                    (run_dir / "stop").touch()
            if now - ended_at > _PEER_GRACE_SECONDS:
                for p in running:
                    p.killed = True
                    p.popen.kill()
        if deadline is not None and now > deadline:
            for p in running:
                p.killed = True
                p.popen.kill()
            for p in running:
                p.popen.wait()
            raise RunFailed("timeout", f"run {index} did not stop within the time limit", run=index, stderr=_tail(running[0].err_path))
        time.sleep(0.05)


def _stopped_or_failed(proc: _Proc) -> bool:
    try:
        data = json.loads(proc.result_path.read_text())
    except (OSError, ValueError):
        return True
    return data.get("status") != "ok" or bool(data.get("stop_reason"))


def _result(proc: _Proc, index: int) -> dict[str, Any]:
    label = "" if proc.root == "main" else f" ({proc.root})"
    if not proc.result_path.exists():
        code = proc.popen.returncode
        how = f"signal {-code}" if code < 0 else f"status {code}"
        why = "it was ended after another rank stopped" if proc.killed else "the program may have called os._exit or crashed"
        raise RunFailed(
            "crash", f"run {index}{label} ended with {how} before writing its trace ({why})",
            run=index, stderr=_tail(proc.err_path),
        )
    data = json.loads(proc.result_path.read_text())
    status = data.get("status")
    error = data.get("error") or {}
    if status != "ok":
        message = error.get("message", status)
        raise RunFailed(
            status, message, run=index, traceback=error.get("traceback", ""), stderr=_tail(proc.err_path),
            exc_type=error.get("type", "") if status == "script-error" else "",
        )
    return data


def _children(run_dir: Path) -> list[dict[str, Any]]:
    from repro_lint.probe.processes import procs_dir, read_json

    traces = []
    for path in sorted(procs_dir(run_dir).glob("*.json")):
        try:
            traces.append(read_json(path))
        except (OSError, ValueError):
            continue
    return traces


def _agent_store(port: int) -> Any:
    """A TCP store served by this process for the ranks (None if torch cannot start one:
    rank 0 then serves it, as without an agent)."""
    try:
        from datetime import timedelta

        from torch.distributed import TCPStore

        return TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=300))
    except Exception:  # noqa: BLE001 - any failure leaves the job to rank 0's store
        return None


def _rank_environment(rank: int, world: int, port: int, agent_store: bool = False) -> dict[str, str]:
    """What torchrun gives each rank of a single-node job."""
    env = {
        "RANK": str(rank), "LOCAL_RANK": str(rank), "GROUP_RANK": "0", "ROLE_RANK": str(rank),
        "ROLE_NAME": "default", "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(world),
        "GROUP_WORLD_SIZE": "1", "ROLE_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port), "TORCHELASTIC_RUN_ID": "repro-lint-probe", "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_USE_AGENT_STORE": str(agent_store),
    }
    if "OMP_NUM_THREADS" not in os.environ and world > 1:
        env["OMP_NUM_THREADS"] = "1"  # as torchrun does
    return env


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-_TAIL_LINES:])
