"""What recording costs: a small CPU training loop timed plain and under the probe's recorder.

    python bench/probe_overhead.py [--steps N] [--multi-steps M] [--repeat R] [--threads T] [--write bench/PROBE.md]

Three in-process timings of the same loop (after one warm-up step each): plain, recorded
with locations only (as in the deterministic-algorithms run), and recorded with
fingerprints (as in the compared runs). Then the whole command, `repro-lint probe` on the
same loop as a script (two compared runs plus the deterministic-algorithms run), against
`python script.py`: that includes starting Python and importing torch in every run.
Then the same for work in several processes: the loop fed by a DataLoader with two
worker processes, and two DistributedDataParallel ranks on gloo (`torchrun
--nproc-per-node 2` against `repro-lint probe --nproc-per-node 2`), where every process
is recorded.

    python bench/probe_overhead.py --scenarios [--write bench/PROBE.md]

runs the probe on the scenario scripts of the test suite (plain loops, numpy, DataLoader
workers, Lightning, the Hugging Face Trainer, accelerate, DDP, Hydra, ...), each once with
`repro-lint probe` as a user runs it and twice plain, and prints the verdict, whether the
first divergence is the expected one, and the CPU time of the probe against two plain runs.
Scenarios whose framework is not installed are left out.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402

from repro_lint.core import catalog  # noqa: E402
from repro_lint.probe.frames import UserCode  # noqa: E402
from repro_lint.probe.recorder import Recorder  # noqa: E402
from repro_lint.probe.predict import prediction_table  # noqa: E402
from repro_lint.probe.rng_audit import RngAudit  # noqa: E402

SCRIPT = '''
import torch
import torch.nn.functional as F

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(32 * 7 * 7, 10),
)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(32, 1, 28, 28)
y = torch.randint(0, 10, (32,))


def step():
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


if __name__ == "__main__":
    for _ in range(STEPS):
        step()
'''


LOADER_SCRIPT = '''
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(32 * 7 * 7, 10),
)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)


class Images(torch.utils.data.Dataset):
    def __len__(self):
        return 32 * STEPS

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(1, 28, 28, generator=g), i % 10


if __name__ == "__main__":
    loader = DataLoader(Images(), batch_size=32, num_workers=2, generator=torch.Generator().manual_seed(0))
    for x, y in loader:
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
'''

DDP_SCRIPT = '''
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Sequential(
    torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(32 * 7 * 7, 10),
))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(dist.get_rank())
for _ in range(STEPS):
    x, y = torch.randn(16, 1, 28, 28, generator=g), torch.randint(0, 10, (16,), generator=g)
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
dist.destroy_process_group()
'''


def _workload(steps: int):
    namespace: dict = {"__name__": "bench_workload"}
    exec(compile(SCRIPT.replace("STEPS", str(steps)), str(ROOT / "bench" / "workload.py"), "exec"), namespace)
    return namespace["step"]


def _time_loop(step, steps: int, recorder=None) -> tuple[float, int]:
    step()  # warm-up: first-call costs are not what is measured
    if recorder is not None:
        recorder.ops.clear()
        with recorder:
            step()
        recorder.ops.clear()
        start = time.perf_counter()
        with recorder:
            for _ in range(steps):
                step()
        return time.perf_counter() - start, len(recorder.ops)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - start, 0


def _recorder(fingerprints: bool) -> Recorder:
    user = UserCode([str(ROOT / "bench" / "workload.py")])
    audit = RngAudit(user, lambda: 0)
    predict = prediction_table(catalog.load("nondeterministic_ops"))
    return Recorder(user, audit, max_ops=10**9, fingerprints=fingerprints, predict=predict)


def _best(fn, repeat: int) -> tuple[float, int]:
    results = [fn() for _ in range(repeat)]
    return min(r[0] for r in results), results[0][1]


def _wall(command: list[str], repeat: int, threads: int) -> float:
    return _timed(command, repeat, threads)[0]


def _timed(command: list[str], repeat: int, threads: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system of the command and every
    process it waited for): on a loaded machine the CPU time is the steadier figure."""
    import resource

    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS=str(threads))
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


SCRIPTS = ROOT / "tests" / "probe" / "scripts"
HYDRA = ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "+scale=1,2"]
TORCHRUN = ["-m", "torch.distributed.run", "--nproc-per-node", "2"]

# name, script (under tests/probe/scripts), program arguments, probe options, plain launcher,
# module it needs, expected status, expected first divergence (process prefix, marker) or None.
# "{tmp}" is a fresh folder per scenario.
SCENARIOS = [
    ("plain loop, seeded", "unseeded_rand.py", ["--seed"], [], [], None, "identical", None),
    ("plain loop, unseeded", "unseeded_rand.py", [], [], [], None, "diverged", ("main", "DATA LINE")),
    ("numpy in the main process", "numpy_draw.py", [], [], [], None, "diverged", ("main", "NUMPY LINE", 1)),
    ("numpy in workers, torch seeded", "worker_numpy.py", [], [], [], None, "identical", None),
    ("workers reseeded from entropy", "loader_workers.py", [], [], [], None, "diverged", ("main/worker", "GETITEM LINE")),
    ("IterableDataset, persistent workers", "realistic/iterable_persistent.py", [], [], [], None, "identical", None),
    ("torch.compile + bf16 autocast", "realistic/compiled_autocast.py", [], [], [], None, "identical", None),
    ("AdaptiveAvgPool2d((2, 2)) step", "adaptive_pool.py", [], [], [], None, "identical", None),
    ("DataLoader workers, float batches", "float_batches.py", [], [], [], None, "identical", None),
    ("Lightning, seed_everything", "realistic/lightning_train.py", ["--seed"], [], [], "lightning", "identical", None),
    ("Lightning, unseeded", "realistic/lightning_train.py", [], [], [], "lightning", "diverged", ("main", None)),
    ("HF Trainer, model built first", "realistic/hf_trainer.py", [], [], [], "transformers", "diverged", ("main", None)),
    ("HF Trainer, model_init", "realistic/hf_trainer.py", ["--model-init"], [], [], "transformers", "identical", None),
    ("accelerate, set_seed", "realistic/accelerate_train.py", ["--seed"], [], [], "accelerate", "identical", None),
    ("accelerate, unseeded", "realistic/accelerate_train.py", [], [], [], "accelerate", "diverged", ("main", None)),
    ("DDP 2 ranks gloo, seeded", "ddp_train.py", ["--seed"], ["--nproc-per-node", "2"], TORCHRUN, None, "identical", None),
    ("DDP 2 ranks gloo, unseeded", "ddp_train.py", [], ["--nproc-per-node", "2"], TORCHRUN, None, "diverged", ("rank 0", "MODEL LINE")),
    ("DDP 2 ranks, time seeds, --max-ops 255", "ddp_time_seeds.py", [], ["--nproc-per-node", "2", "--max-ops", "255"], TORCHRUN,
     None, "diverged", ("rank", None)),
    ("Hydra joblib sweep, seeded in the task", "hydra_app.py", [*HYDRA, "+seed=0", "hydra.sweep.dir={tmp}/s"], [], [],
     "hydra_plugins.hydra_joblib_launcher", "identical", None),
    ("Hydra joblib sweep, seed in the launcher only", "hydra_module_seed.py", [*HYDRA, "hydra.sweep.dir={tmp}/s"], [], [],
     "hydra_plugins.hydra_joblib_launcher", "diverged", ("main/job", "MODEL LINE")),
    ("set order (hash seed)", "hash_order.py", [], [], [], None, "diverged", ("main", "TENSOR LINE")),
    ("time seed", "realistic/time_seed.py", [], [], [], None, "diverged", ("main", None)),
    ("numpy default_rng() unseeded", "entropy_rng.py", [], [], [], None, "diverged", ("main", "RNG LINE", 1)),
    ("file written by run 1, read by run 2", "file_cache.py", ["{tmp}"], [], [], None, "diverged", ("main", None)),
    ("--vary-seed, loader with a fixed generator", "seed_option.py", ["--fixed-loader"],
     ["--vary-seed", "--seed-arg", "--seed {seed}"], [], None, "seed-ignored", None),
    ("--vary-seed, seed followed", "seed_option.py", [], ["--vary-seed", "--seed-arg", "--seed {seed}"], [], None,
     "seed-followed", None),
    ("--resume-check, no RNG state", "checkpoints.py", ["--out", "{tmp}"],
     ["--resume-check", "--resume-args", "--out {tmp} --resume {tmp}/step2.pt"], [], None, "diverged", ("main", "FORWARD LINE")),
    ("--resume-check, RNG state saved", "checkpoints.py", ["--out", "{tmp}", "--with-rng"],
     ["--resume-check", "--resume-args", "--out {tmp} --resume {tmp}/step2.pt --with-rng"], [], None, "identical", None),
]


def _marker_line(script: str, marker: str) -> int:
    for number, line in enumerate((SCRIPTS / script).read_text().splitlines(), 1):
        if f"# {marker}" in line:
            return number
    raise ValueError(marker)


def run_scenarios(threads: int) -> list[str]:
    import importlib.util
    import json

    rows = []
    for name, script, program, options, launcher, needs, status, expected in SCENARIOS:
        if needs and importlib.util.find_spec(needs.split(".")[0]) is None:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            fill = lambda words: [w.replace("{tmp}", tmp) for w in words]  # noqa: E731
            path = str(SCRIPTS / script)
            plain_cmd = [sys.executable, *launcher, path, *fill(program)]
            _, plain_cpu = _timed(plain_cmd, 1, threads)
            _, plain_cpu2 = _timed(plain_cmd, 1, threads)
            # a plain run may leave files the next one finds (the file-cache scenario)
            for leftover in Path(tmp).glob("*"):
                if leftover.is_file():
                    leftover.unlink()
            report = Path(tmp) / "report.json"
            probe_cmd = [sys.executable, "-m", "repro_lint", "probe", "--format", "json", "-o", str(report),
                         *fill(options), path, "--", *fill(program)]
            probe_wall, probe_cpu = _timed(probe_cmd, 1, threads)
            data = json.loads(report.read_text()) if report.exists() else {"status": "no report"}
        got = data["status"]
        d = data.get("divergence") or {}
        named = "-"
        if expected:
            process, marker, *offset = expected
            line = _marker_line(script, marker) + (offset[0] if offset else 0) if marker else None
            loc = d.get("location") or {}
            ok = str(d.get("process", "")).startswith(process) and (line is None or loc.get("line") == line)
            named = ("yes" if ok else "NO") + f" ({d.get('process')}, {d.get('kind')}, line {loc.get('line')})"
        elif got in ("seed-ignored", "seed-followed"):
            ignored = [s for s in data["seed_sensitivity"]["streams"] if not s["changes"]]
            named = f"{len(ignored)} stream(s) ignore the seed"
        verdict = got if got == status else f"{got} (expected {status})"
        ratio = probe_cpu / (plain_cpu + plain_cpu2) if plain_cpu + plain_cpu2 else 0
        rows.append(f"| {name} | {verdict} | {named} | {plain_cpu + plain_cpu2:.1f} s | {probe_cpu:.1f} s "
                    f"({probe_wall:.0f} s wall) | {ratio:.1f}× |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--multi-steps", type=int, default=200, help="steps of the multi-process workloads")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="torch threads (default: torch's)")
    parser.add_argument("--write", type=Path, help="write the results as a markdown section to this file")
    parser.add_argument("--scenarios", action="store_true", help="the probe on the test suite's scenarios (see above)")
    args = parser.parse_args()
    if args.scenarios:
        rows = run_scenarios(args.threads)
        lines = [
            "## Scenarios",
            "",
            f"Measured {datetime.date.today().isoformat()} with `python bench/probe_overhead.py --scenarios` on "
            f"{_cpu_model()}, {os.cpu_count()} cores, torch {torch.__version__}, load average {os.getloadavg()[0]:.1f} "
            "when it finished. CPU time is user + system of every process; the probe's is the whole command as a user "
            "runs it (two compared runs and the deterministic-algorithms run, or the two runs of --vary-seed and "
            "--resume-check), against two plain runs of the program.",
            "",
            "| Scenario | Verdict | First divergence as expected | CPU, two plain runs | CPU, `repro-lint probe` | Ratio |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
        if args.write:
            text = args.write.read_text() if args.write.exists() else ""
            start = text.find("## Scenarios")
            if start >= 0:
                end = text.find("\n## ", start + 1)
                text = text[:start] + text[end + 1:] if end >= 0 else text[:start]
            args.write.write_text(text.rstrip() + "\n\n" + "\n".join(lines) + "\n")
        else:
            print("\n".join(lines))
        return

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    step = _workload(args.steps)
    plain, _ = _best(lambda: _time_loop(step, args.steps), args.repeat)
    located, ops = _best(lambda: _time_loop(step, args.steps, _recorder(False)), args.repeat)
    fingerprinted, _ = _best(lambda: _time_loop(step, args.steps, _recorder(True)), args.repeat)

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "train.py"
        script.write_text(SCRIPT.replace("STEPS", str(args.steps)))
        python_wall, python_cpu = _timed([sys.executable, str(script)], args.repeat, args.threads)
        probe = [sys.executable, "-m", "repro_lint", "probe", "--format", "json", "-o", str(Path(tmp) / "r.json"), str(script)]
        probe_wall, probe_cpu = _timed(probe, 1, args.threads)
        multi = []
        for name, source, plain_cmd, probe_opts in (
            ("DataLoader, 2 worker processes", LOADER_SCRIPT, [], []),
            ("DDP, 2 ranks on gloo", DDP_SCRIPT, ["-m", "torch.distributed.run", "--nproc-per-node", "2"],
             ["--nproc-per-node", "2"]),
        ):
            path = Path(tmp) / ("multi_" + str(len(multi)) + ".py")
            path.write_text(source.replace("STEPS", str(args.multi_steps)))
            plain_wall, plain_cpu = _timed([sys.executable, *plain_cmd, str(path)], args.repeat, args.threads)
            report = Path(tmp) / "m.json"
            recorded, recorded_cpu = _timed([*probe[:-3], *probe_opts, "-o", str(report), str(path)], 1, args.threads)
            import json

            data = json.loads(report.read_text())
            compared = [r for r in data["runs"] if r["role"] == "compared"]
            multi.append((name, plain_wall, recorded, plain_cpu, recorded_cpu, compared[0]["processes"],
                          compared[0]["ops"], data["status"]))

    rows = [
        ("plain loop", plain, 1.0),
        ("recorded, locations only", located, located / plain),
        ("recorded, with fingerprints", fingerprinted, fingerprinted / plain),
    ]
    lines = [
        "## Probe overhead",
        "",
        f"Measured {datetime.date.today().isoformat()} with "
        f"`python bench/probe_overhead.py --steps {args.steps} --multi-steps {args.multi_steps} --repeat {args.repeat} "
        f"--threads {args.threads}`",
        f"on {_cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, torch {torch.__version__},",
        f"{args.threads} torch thread(s), load average {os.getloadavg()[0]:.1f} when it finished (a shared machine:",
        "absolute times vary with the load; the relative cost of recording is what to read).",
        f"Workload: a two-layer conv net, batch 32 of 28×28, Adam, {args.steps} steps, "
        f"{ops // args.steps} aten ops per step (forward, backward, optimizer).",
        "",
        "| Loop | Time for all steps | Per op | Relative |",
        "|---|---|---|---|",
    ]
    for name, seconds, factor in rows:
        lines.append(f"| {name} | {seconds:.3f} s | {seconds / ops * 1e6:.0f} µs | {factor:.1f}× |")
    lines += [
        "",
        f"Whole commands: `python train.py` {python_wall:.1f} s wall, {python_cpu:.1f} s CPU (median of {args.repeat}); "
        f"`repro-lint probe train.py` {probe_wall:.1f} s wall, {probe_cpu:.1f} s CPU (three runs: two compared, one "
        "with deterministic algorithms; each starts Python and imports torch).",
        "",
        "### Work in several processes",
        "",
        f"The same net for {args.multi_steps} steps (enough that training, not starting Python and importing torch, "
        "dominates), as a whole command: plain (`python script.py`, or `python -m "
        "torch.distributed.run --nproc-per-node 2 script.py`; median of "
        f"{args.repeat}) and `repro-lint probe` (three runs, every process recorded). Wall times on a shared "
        "machine follow its load; CPU time (user + system of every process) is the steadier measure. Per run is "
        "the probe's CPU time divided by its three runs, against one plain run.",
        "",
        "| Workload | Plain: wall, CPU | `repro-lint probe`: wall, CPU | CPU per run vs plain | Processes recorded per run | Ops per run | Verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, plain_wall, recorded, plain_cpu, recorded_cpu, processes, ops_run, status in multi:
        lines.append(
            f"| {name} | {plain_wall:.1f} s, {plain_cpu:.1f} s | {recorded:.1f} s, {recorded_cpu:.1f} s | "
            f"{recorded_cpu / 3 / plain_cpu:.1f}× | {processes} | {ops_run} | {status} |"
        )
    lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.write:
        args.write.write_text("# Probe benchmarks\n\n" + text)


if __name__ == "__main__":
    main()
