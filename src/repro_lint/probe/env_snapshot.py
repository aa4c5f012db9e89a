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

from repro_lint.probe.git_state import checkout_state
from repro_lint.probe.redact import redact_environment, redact_tree

SCHEMA = "repro-lint-env/1"


def take_snapshot(with_diffs: bool = False, project: Optional[str] = None) -> dict[str, Any]:
    """The snapshot, secrets redacted (by variable name, and by value in every string:
    URLs with credentials, token formats, webhook URLs, secrets in diffs; see `redact`).
    `project`: a folder of the project whose checkout is recorded (default: the current one)."""
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
        "cpu": cpu_facts(),
        "threads": thread_facts(),
        "gpu_settings": gpu_settings(),
        "packages": installed_packages(),
        "conda": conda_packages(),
        "project": project_state(project or os.getcwd(), with_diffs),
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
    """An editable install's commit and whether tracked files changed (see `git_state`)."""
    state = checkout_state(path, with_diff=with_diffs, untracked=False)
    return {key: state[key] for key in ("git_commit", "dirty", "diff") if key in state}


def project_state(path: str, with_diffs: bool = False) -> Optional[dict[str, Any]]:
    """The checkout the project lives in: root, commit, and uncommitted changes (untracked
    files included); None outside a git checkout."""
    state = checkout_state(path, with_diff=with_diffs)
    return state if state.get("git_commit") else None


# CPU features that decide which vectorised kernels run (and so the order of float operations).
_SIMD_FLAGS = re.compile(r"^(?:sse4_[12]|avx|avx2|avx512\w*|avx_vnni|fma|f16c|amx\w*|asimd\w*|sve\w*|neon)$")


def cpu_facts() -> dict[str, Any]:
    """CPU model, its vector instruction sets, and the kernels torch picks for it."""
    info = _read("/proc/cpuinfo") or ""
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith(("model name", "Hardware"))), None)
    flags_line = next((line.split(":", 1)[1] for line in info.splitlines() if line.startswith(("flags", "Features"))), "")
    facts: dict[str, Any] = {
        "model": model or platform.processor() or None,
        "flags": " ".join(sorted(f for f in flags_line.split() if _SIMD_FLAGS.match(f))),
        "torch_cpu_capability": None,
    }
    torch = _torch()
    if torch is not None:
        facts["torch_cpu_capability"] = _call(lambda: torch.backends.cpu.get_cpu_capability())
    return facts


def _torch() -> Any:
    try:
        import torch
    except Exception:
        return None
    return torch


# Variables that set thread counts or the numerics of BLAS and OpenMP libraries.
_THREAD_VARIABLES = (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
    "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "MKL_DYNAMIC", "OMP_DYNAMIC", "KMP_AFFINITY", "GOMP_CPU_AFFINITY",
    "ATEN_CPU_CAPABILITY",
)


def thread_facts() -> dict[str, Any]:
    """BLAS/LAPACK and OpenMP backends and their thread counts, for torch and numpy (thread
    counts change the order of reductions, and so float results)."""
    facts: dict[str, Any] = {"variables": {k: os.environ.get(k) for k in _THREAD_VARIABLES}}
    torch = _torch()
    if torch is not None:
        config = _call(torch.__config__.show) or ""
        parallel = _call(torch.__config__.parallel_info) or ""
        settings = dict(re.findall(r"(\w+)=([^,\s]*)", config))
        facts["torch"] = {
            "blas": settings.get("BLAS_INFO"),
            "lapack": settings.get("LAPACK_INFO"),
            "openmp": _first(r"(OpenMP \d+)", config),
            "mkl": _first(r"Math Kernel Library Version ([^\s]+)", config),
            "mkldnn": _first(r"MKL-DNN (v[\d.]+)", config),
            "parallel_backend": _first(r"ATen parallel backend: (.+)", parallel),
            "num_threads": _call(torch.get_num_threads),
            "num_interop_threads": _call(torch.get_num_interop_threads),
            "omp_max_threads": _int(_first(r"omp_get_max_threads\(\) : (\d+)", parallel)),
            "mkl_max_threads": _int(_first(r"mkl_get_max_threads\(\) : (\d+)", parallel)),
        }
    facts["numpy"] = _numpy_backends()
    facts["threadpools"] = _threadpools()
    return facts


def _numpy_backends() -> Optional[dict[str, Any]]:
    try:
        import numpy
    except Exception:
        return None
    found: dict[str, Any] = {"version": numpy.__version__}
    config = _call(lambda: numpy.show_config(mode="dicts")) or {}
    deps = config.get("Build Dependencies", {}) if isinstance(config, dict) else {}
    for kind in ("blas", "lapack"):
        entry = deps.get(kind) or {}
        found[kind] = " ".join(str(entry.get(k)) for k in ("name", "version") if entry.get(k)) or None
    return found


def _threadpools() -> Optional[list[dict[str, Any]]]:
    """The BLAS and OpenMP libraries loaded in this process with their thread counts, where
    threadpoolctl is installed."""
    try:
        from threadpoolctl import threadpool_info
    except Exception:
        return None
    pools = _call(threadpool_info) or []
    keys = ("user_api", "internal_api", "version", "num_threads", "threading_layer", "architecture")
    return [{k: p.get(k) for k in keys if k in p} for p in pools]


def _first(pattern: str, text: str) -> Optional[str]:
    match = re.search(pattern, text)
    return match.group(1).strip() if match else None


def _int(text: Optional[str]) -> Optional[int]:
    return int(text) if text and text.isdigit() else None


# Variables that change what GPUs compute or how ranks communicate.
_GPU_VARIABLES = re.compile(r"^(?:NCCL_|TORCH_NCCL_|CUDA_|CUBLAS_|CUBLASLT_|CUDNN_|NVIDIA_TF32_OVERRIDE$|TORCH_ALLOW_TF32|PYTORCH_CUDA_)")


def gpu_settings() -> dict[str, str]:
    """NCCL_*, CUDA_*, cuBLAS and cuDNN variables, and NVIDIA_TF32_OVERRIDE (redacted by name
    like every variable)."""
    return redact_environment({k: v for k, v in os.environ.items() if _GPU_VARIABLES.match(k)})


def conda_packages() -> Optional[dict[str, str]]:
    """Packages of the active conda environment (`conda-meta`, read as files: no conda runs);
    None where Python does not run in one."""
    prefixes = [os.environ.get("CONDA_PREFIX"), sys.prefix]
    for prefix in prefixes:
        meta = Path(prefix) / "conda-meta" if prefix else None
        if meta is None or not meta.is_dir():
            continue
        packages: dict[str, str] = {}
        for record in sorted(meta.glob("*.json"))[:5000]:
            try:
                data = json.loads(record.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("name"):
                channel = str(data.get("channel") or "").rstrip("/").rsplit("/", 1)[-1]
                packages[str(data["name"])] = " ".join(str(x) for x in (data.get("version"), data.get("build"), channel) if x)
        return dict(sorted(packages.items()))
    return None


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
                {
                    "index": i, "name": props.name, "capability": f"{props.major}.{props.minor}",
                    "memory_bytes": props.total_memory, "sm_count": getattr(props, "multi_processor_count", None),
                    "uuid": str(getattr(props, "uuid", "") or "") or None,
                }
            )
        facts["mig"] = _mig_devices()
    return facts


def _mig_devices() -> Optional[list[str]]:
    """MIG slices visible to this process (`CUDA_VISIBLE_DEVICES=MIG-...`, else as `nvidia-smi -L`
    lists them); None when the GPUs are whole."""
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip().startswith("MIG-")]
    if visible:
        return visible
    try:
        proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    slices = [line.strip() for line in proc.stdout.splitlines() if line.strip().startswith("MIG")] if proc.returncode == 0 else []
    return slices or None


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
