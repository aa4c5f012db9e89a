"""End-to-end: the probe follows the work into the processes a program starts (DataLoader
workers, torch.multiprocessing children, Hydra joblib jobs, ranks), and says so when it
cannot. Each scenario is small: these start many Python processes that import torch."""

from __future__ import annotations

import re

import pytest

from .helpers import marker_line

pytestmark = pytest.mark.slow


def _rows(report):
    return {row["name"]: row for row in report["processes"]}


def test_dataloader_worker_divergence_is_found_in_the_worker(probe):
    result = probe("loader_workers.py", "--no-deterministic-run")
    assert result.code == 1, result.stderr
    d = result.report["divergence"]
    assert d["process"] in ("main/worker 0", "main/worker 1")
    assert d["location"]["line"] == marker_line("loader_workers.py", "GETITEM LINE")
    assert d["location"]["function"] == "Noisy.__getitem__"
    assert [s["function"] for s in d["suspects"]] == ["numpy.random.rand"]
    assert "PYTHONHASHSEED" not in d["explanation"]  # the numpy draw explains it; the hash seed would mislead
    rows = _rows(result.report)
    assert {"main", "main/worker 0", "main/worker 1"} <= set(rows)
    assert all(n > 0 for n in rows["main/worker 1"]["ops"])
    # the text report names the process too
    text = probe("loader_workers.py", "--no-deterministic-run", fmt="text")
    assert "First divergence in main/worker" in text.stdout
    # and the seeding calls it judged: the worker_init_fn's reseed from entropy
    reseed = marker_line("loader_workers.py", "from entropy")
    assert re.search(rf"Seeding of numpy judged: .*loader_workers\.py:{reseed} \(from entropy\)", " ".join(text.stdout.split()))


def test_seeded_dataloader_workers_are_identical(probe):
    result = probe("loader_workers.py", "--no-deterministic-run", "--", "--seed")
    assert result.code == 0, (result.stderr, result.report and result.report["divergence"])
    assert result.report["status"] == "identical"
    rows = _rows(result.report)
    assert rows["main/worker 0"]["ops"][0] > 0 and rows["main/worker 0"]["status"] == "identical"


def test_spawned_children_are_recorded(probe, tmp_path):
    result = probe("spawn_children.py", "--no-deterministic-run", "--", str(tmp_path))
    assert result.code == 1, result.stderr
    d = result.report["divergence"]
    assert d["process"] in ("main/spawn 0", "main/spawn 1")
    assert d["kind"] == "unseeded-draw"
    assert d["location"]["line"] == marker_line("spawn_children.py", "CHILD DRAW")
    assert "pickle or torch.save" in d["reaches"]  # the draw is saved to a file


HYDRA = ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "+scale=1,2"]


@pytest.fixture
def hydra_args(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    return [*HYDRA, f"hydra.sweep.dir={tmp_path / 'sweep'}", f"hydra.run.dir={tmp_path / 'run'}"]


def test_hydra_joblib_jobs_diverge_at_the_users_line(probe, hydra_args):
    result = probe("hydra_app.py", "--no-deterministic-run", "--", *hydra_args)
    assert result.code == 1, result.stderr
    d = result.report["divergence"]
    assert d["process"] in ("main/job 0", "main/job 1")
    assert d["kind"] == "unseeded-draw"
    assert d["location"]["line"] == marker_line("hydra_app.py", "MODEL LINE")
    rows = _rows(result.report)
    assert rows["main/job 0"]["status"] == rows["main/job 1"]["status"] == "diverged"
    assert rows["main"]["ops"] == [0, 0]  # the jobs ran in loky workers, not in the main process


def test_seeded_hydra_joblib_jobs_are_identical(probe, hydra_args):
    result = probe("hydra_app.py", "--no-deterministic-run", "--", *hydra_args, "+seed=0")
    assert result.code == 0, result.stderr
    rows = _rows(result.report)
    assert rows["main/job 0"]["ops"][0] > 0 and rows["main/job 1"]["ops"][0] > 0
    assert result.report["status"] == "identical"


def test_ddp_ranks_unseeded_diverge(probe):
    result = probe("--nproc-per-node", "2", "--no-deterministic-run", "ddp_train.py")
    assert result.code == 1, result.stderr
    d = result.report["divergence"]
    assert d["process"] == "rank 0"  # rank 0's parameters are broadcast to rank 1
    assert d["location"]["line"] == marker_line("ddp_train.py", "MODEL LINE")
    assert set(_rows(result.report)) == {"rank 0", "rank 1"}


def test_ddp_ranks_seeded_are_identical(probe):
    result = probe("--nproc-per-node", "2", "--no-deterministic-run", "ddp_train.py", "--", "--seed")
    assert result.code == 0, result.stderr
    rows = _rows(result.report)
    assert set(rows) == {"rank 0", "rank 1"}
    assert all(row["status"] == "identical" and row["ops"][0] > 0 for row in rows.values())
    assert result.report["settings"]["nproc_per_node"] == 2


def test_child_the_probe_cannot_follow_makes_the_run_inconclusive(probe):
    result = probe("isolated_child.py", "--no-deterministic-run")
    assert result.code == 2, result.stderr
    report = result.report
    assert report["status"] == "inconclusive"
    assert any("-I" in reason and "not recorded" in reason for reason in report["inconclusive_reasons"])
    sarif = probe("isolated_child.py", "--no-deterministic-run", fmt="sarif")  # validated by the fixture
    [notification, *_] = sarif.report["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert "not recorded" in notification["message"]["text"]


def test_pool_tasks_are_compared_task_by_task(probe):
    """Which worker runs which task changes from run to run; each task is compared with
    the same task of the other run, so a seeded pool is identical."""
    result = probe("pool_tasks.py", "--no-deterministic-run", "--", "--seed")
    assert result.code == 0, (result.stderr, result.report and result.report["divergence"])
    rows = _rows(result.report)
    assert {f"main/task 0.{i}" for i in range(6)} <= set(rows)
    assert all(rows[f"main/task 0.{i}"]["ops"][0] > 0 for i in range(6))


WAITING_WORKER = r"""
import os, signal, sys, threading, time
import multiprocessing as mp
from repro_lint.probe.hooks import TaskQueue

queue = mp.SimpleQueue()
queue._rlock.acquire()  # what a terminating Pool does: its workers never get the lock again
signal.signal(signal.SIGTERM, lambda *_: os._exit(3))  # (the recording's handler writes the trace)

def other_thread():
    time.sleep(0.3)
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)  # the kernel's pick: not the main thread

threading.Thread(target=other_thread, daemon=True).start()
TaskQueue(queue).get()
"""


def test_a_pool_worker_waiting_for_a_task_runs_the_terminate_handler():
    """A Pool terminates its workers while one may wait for a task for good; the SIGTERM
    the kernel hands to another thread of the worker (torch starts some) must still reach
    the handler that writes the worker's trace, which runs only in the main thread."""
    import subprocess
    import sys

    if not hasattr(__import__("signal"), "pthread_kill"):
        pytest.skip("no pthread_kill on this platform")
    proc = subprocess.run([sys.executable, "-c", WAITING_WORKER], capture_output=True, text=True, timeout=20)
    assert proc.returncode == 3, proc.stderr
