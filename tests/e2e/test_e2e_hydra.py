"""RPL201 end to end: a Hydra multirun sweep under the real joblib launcher.

The app seeds numpy and torch and sets the cuDNN flags at module level, outside its
`@hydra.main` function. The joblib launcher (loky) pickles the task function and runs it in
worker processes, where module-level code never runs: two sweeps with the same parameters
log different numbers. After `repro-lint --fix` the statements run inside the function
(with `import torch` first, without which pickling fails on the `CudnnModule`), and every job
of two sweeps logs the same numbers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
pytest.importorskip("torch")

JOBS = list(range(10))

APP = textwrap.dedent(
    '''\
    """A Hydra app whose seeds and flags are lost in multirun workers."""
    import json
    import os

    import hydra
    import numpy as np
    import torch

    SEED = 1234
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


    @hydra.main(version_base=None, config_path=None)
    def main(cfg):
        """Draw `num_iters` times from each global RNG, then log one more draw of each."""
        for _ in range(cfg.num_iters):
            np.random.rand()
            torch.rand(1)
        record = {"num_iters": cfg.num_iters, "pid": os.getpid(),
                  "numpy": float(np.random.rand()), "torch": float(torch.rand(1))}
        with open(os.path.join(cfg.log_dir, f"job{cfg.num_iters}.json"), "w") as fh:
            json.dump(record, fh)


    if __name__ == "__main__":
        main()
    '''
)


def start_sweep(root: Path, name: str) -> tuple[subprocess.Popen, Path]:
    log_dir = root / "logs" / name
    log_dir.mkdir(parents=True)
    cmd = [
        sys.executable, "app.py", "-m",
        "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
        f"hydra.sweep.dir={root / 'sweeps' / name}", f"hydra.run.dir={root / 'runs' / name}",
        f"+log_dir={log_dir}", "+num_iters=" + ",".join(map(str, JOBS)),
    ]
    env = dict(os.environ, HYDRA_FULL_ERROR="1")
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, log_dir


def run_two_sweeps(root: Path, label: str) -> list[dict]:
    """Run two identical sweeps side by side; return {num_iters: (numpy, torch)} per sweep."""
    started = [start_sweep(root, f"{label}{i}") for i in (1, 2)]
    results = []
    for proc, log_dir in started:
        out, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0, out[-4000:]
        assert "pickle" not in out.lower(), out[-4000:]
        logged = {}
        for n in JOBS:
            rec = json.loads((log_dir / f"job{n}.json").read_text())
            logged[n] = (rec["numpy"], rec["torch"])
        results.append(logged)
        print(f"--- {label} {log_dir.name}: num_iters -> (numpy, torch)")
        for n in JOBS:
            print(f"    {n}: {logged[n][0]:.8f} {logged[n][1]:.8f}")
    return results


@pytest.mark.slow
def test_fix_makes_joblib_sweeps_reproducible(tmp_path, cli):
    root = tmp_path
    (root / "pyproject.toml").write_text('[project]\nname = "hydra-app"\nversion = "0"\n')
    app = root / "app.py"
    app.write_text(APP)

    first, second = run_two_sweeps(root, "before")
    differing = [n for n in JOBS if first[n] != second[n]]
    # loky workers start from OS entropy: practically every job differs between sweeps
    assert len(differing) >= len(JOBS) - 1, (first, second)

    check = cli("--no-cache", "app.py", cwd=root)
    assert check.returncode == 1, check.stdout + check.stderr
    assert check.stdout.count("RPL201") >= 4, check.stdout

    fixed = cli("--fix", "--no-cache", "app.py", cwd=root)
    assert fixed.returncode in (0, 1), fixed.stdout + fixed.stderr
    text = app.read_text()
    print("--- fixed app.py\n" + text)
    body = text.split("def main(cfg):", 1)[1]
    for stmt in ("import torch", "np.random.seed(SEED)", "torch.manual_seed(SEED)",
                 "torch.backends.cudnn.deterministic = True", "torch.backends.cudnn.benchmark = False"):
        assert stmt in body, stmt
    assert "\nSEED = 1234\n" in text  # the constant stays at module level
    assert "RPL201" not in cli("--no-cache", "app.py", cwd=root).stdout

    first, second = run_two_sweeps(root, "after")
    assert first == second
    assert len(set(first.values())) == len(JOBS)  # different parameters, different draws
