"""A JSON snapshot of everything outside the code that can change a training run's result."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional
from urllib.parse import unquote, urlparse

from repro_lint.probe.redact import redact_environment, redact_tree

SCHEMA = "repro-lint-env/1"
_GIT_TIMEOUT = 10


def take_snapshot(with_diffs: bool = False) -> dict[str, Any]:
    """The snapshot, secrets redacted (by variable name, and by value in every string:
    URLs with credentials, token formats, webhook URLs, secrets in diffs; see `redact`)."""
    return redact_tree({
        "schema": SCHEMA,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "platform": {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "libc": " ".join(platform.libc_ver()).strip(),
            "cpu_count": os.cpu_count(),
        },
        "packages": installed_packages(),
        "editable": editable_installs(with_diffs),
        "environment": redact_environment(os.environ),
        "torch": torch_facts(),
        "determinism": determinism_state(),
    })


def installed_packages() -> dict[str, str]:
    packages: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = _normalise(dist.metadata["Name"] or "")
        if name and name not in packages:  # the first on sys.path is the one imported
            packages[name] = dist.version
    return dict(sorted(packages.items()))


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def editable_installs(with_diffs: bool) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for dist in importlib.metadata.distributions():
        try:
            text = dist.read_text("direct_url.json")
            info = json.loads(text) if text else None
        except (OSError, ValueError):
            continue
        if not info or not info.get("dir_info", {}).get("editable"):
            continue
        name = _normalise(dist.metadata["Name"] or "")
        if name in found:
            continue
        path = unquote(urlparse(info.get("url", "")).path)
        found[name] = {"version": dist.version, "path": path, **_git_state(path, with_diffs)}
    return dict(sorted(found.items()))


def _git_state(path: str, with_diffs: bool) -> dict[str, Any]:
    commit = _git(path, "rev-parse", "HEAD")
    if commit is None:
        return {"git_commit": None, "dirty": None}
    status = _git(path, "status", "--porcelain", "--untracked-files=no")
    state: dict[str, Any] = {"git_commit": commit, "dirty": bool(status)}
    if with_diffs and status:
        state["diff"] = _git(path, "diff", "HEAD") or ""
    return state


def _git(path: str, *args: str) -> Optional[str]:
    if not os.path.isdir(path):
        return None
    try:
        proc = subprocess.run(
            ["git", "-C", path, *args], capture_output=True, text=True, timeout=_GIT_TIMEOUT, errors="replace"
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def torch_facts() -> Optional[dict[str, Any]]:
    """Versions of torch and its GPU stack; None when torch cannot be imported."""
    try:
        import torch
    except Exception:
        return None
    facts: dict[str, Any] = {
        "version": torch.__version__,
        "git_version": getattr(torch.version, "git_version", None),
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "cudnn": _call(torch.backends.cudnn.version),
        "nccl": None,
        "cuda_available": torch.cuda.is_available(),
        "gpus": [],
        "driver": _driver_version(),
        "num_threads": torch.get_num_threads(),
    }
    if torch.cuda.is_available():
        nccl = _call(torch.cuda.nccl.version)
        facts["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else nccl
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            facts["gpus"].append(
                {"index": i, "name": props.name, "capability": f"{props.major}.{props.minor}", "memory_bytes": props.total_memory}
            )
    return facts


def _call(fn) -> Any:
    try:
        return fn()
    except Exception:
        return None


def _driver_version() -> Optional[str]:
    text = _read("/proc/driver/nvidia/version")
    if text:
        match = re.search(r"Kernel Module\s+([\d.]+)", text)
        if match:
            return match.group(1)
    try:
        proc = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = proc.stdout.strip().splitlines() if proc.returncode == 0 else []
    return lines[0].strip() if lines else None


def _read(path: str) -> Optional[str]:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def determinism_state() -> dict[str, Any]:
    """Settings that decide whether kernels repeat bit for bit, as this process sees them."""
    state: dict[str, Any] = {
        "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED"),
        "hash_randomization": bool(sys.flags.hash_randomization),
        "CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "LD_PRELOAD": os.environ.get("LD_PRELOAD"),
    }
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except Exception:
            return state
    state.update(
        {
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
            "cudnn_enabled": torch.backends.cudnn.enabled,
            "cudnn_deterministic": torch.backends.cudnn.deterministic,
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
            "cuda_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
        }
    )
    return state
