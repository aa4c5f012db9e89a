"""Starts probe runs as fresh Python processes and reads back what they recorded."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import repro_lint

# Extra time a run gets past --timeout to import torch, stop and write its trace.
_GRACE_SECONDS = 60
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


@dataclass
class RunOutcome:
    plan: RunPlan
    data: dict[str, Any]
    hash_seed: str = ""  # the run's PYTHONHASHSEED ("" when neither set nor inherited)


class RunFailed(Exception):
    """A run that produced no usable trace: the program raised, or the process died."""

    def __init__(self, kind: str, message: str, *, run: int, traceback: str = "", stderr: str = ""):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.run = run
        self.traceback = traceback
        self.stderr = stderr


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


def launch(plan: RunPlan, base: dict[str, Any], workdir: Path, device: str, timeout: Optional[float]) -> RunOutcome:
    config = dict(
        base,
        result_path=str(workdir / f"run{plan.index}.json"),
        torch_seed=plan.torch_seed,
        deterministic=plan.deterministic,
        fingerprints=not plan.deterministic,  # that run is audited, not compared
        snapshot=plan.snapshot,
        device=device,
        timeout=timeout,
    )
    config_path = workdir / f"run{plan.index}.config.json"
    config_path.write_text(json.dumps(config))
    env = dict(os.environ)
    if plan.hash_seed is not None:
        env["PYTHONHASHSEED"] = plan.hash_seed
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # the program must not find a GPU it could pick itself
    root = str(Path(repro_lint.__file__).resolve().parents[1])
    command = [sys.executable, "-c", _BOOTSTRAP.format(root=root), str(config_path)]
    out_path, err_path = workdir / f"run{plan.index}.stdout", workdir / f"run{plan.index}.stderr"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            proc = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                timeout=None if timeout is None else timeout + _GRACE_SECONDS,
            )
        except subprocess.TimeoutExpired:
            message = f"run {plan.index} did not stop within {timeout} s"
            raise RunFailed("timeout", message, run=plan.index, stderr=_tail(err_path)) from None
    result_path = Path(config["result_path"])
    if not result_path.exists():
        how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"status {proc.returncode}"
        raise RunFailed(
            "crash",
            f"run {plan.index} ended with {how} before writing its trace (the program may have called os._exit or crashed)",
            run=plan.index,
            stderr=_tail(err_path),
        )
    data = json.loads(result_path.read_text())
    status = data.get("status")
    error = data.get("error") or {}
    if status != "ok":
        message = error.get("message", status)
        raise RunFailed(status, message, run=plan.index, traceback=error.get("traceback", ""), stderr=_tail(err_path))
    hash_seed = plan.hash_seed or os.environ.get("PYTHONHASHSEED", "")
    return RunOutcome(plan, data, hash_seed=hash_seed)


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-_TAIL_LINES:])
