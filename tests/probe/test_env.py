"""`repro-lint env snapshot` and `env diff`."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from repro_lint.probe import env_cli


def fake_distribution(root, name, version, direct_url=None):
    info = root / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if direct_url:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return info


def snapshot(path, *extra):
    assert env_cli.main(["snapshot", "-o", str(path), *extra]) == 0
    return json.loads(path.read_text())


def test_diff_finds_a_changed_variable_and_package_and_hides_secrets(tmp_path, monkeypatch, capsys):
    site_a, site_b = tmp_path / "a", tmp_path / "b"
    fake_distribution(site_a, "fakepkg", "1.0")
    fake_distribution(site_b, "fakepkg", "2.0")
    monkeypatch.setenv("REPRO_TEST_VAR", "one")
    monkeypatch.syspath_prepend(str(site_a))
    a = snapshot(tmp_path / "a.json")
    monkeypatch.undo()

    monkeypatch.setenv("REPRO_TEST_VAR", "two")
    monkeypatch.setenv("MY_API_TOKEN", "s3cr3t-value")
    monkeypatch.setenv("db_Password", "hunter2")
    monkeypatch.syspath_prepend(str(site_b))
    b = snapshot(tmp_path / "b.json")

    assert (a["packages"]["fakepkg"], b["packages"]["fakepkg"]) == ("1.0", "2.0")
    assert b["environment"]["MY_API_TOKEN"] == b["environment"]["db_Password"] == "<redacted>"
    assert "s3cr3t-value" not in (tmp_path / "b.json").read_text() and "hunter2" not in (tmp_path / "b.json").read_text()
    assert {"torch", "determinism", "python", "platform"} <= set(b)
    assert "cudnn_deterministic" in b["determinism"]

    capsys.readouterr()
    assert env_cli.main(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--format", "json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    found = {(r["section"], r["name"]): (r["a"], r["b"]) for r in rows}
    assert found[("packages", "fakepkg")] == ("1.0", "2.0")
    assert found[("environment", "REPRO_TEST_VAR")] == ("one", "two")
    sections = [r["section"] for r in rows]
    assert sections.index("packages") < sections.index("environment")  # library versions first

    assert env_cli.main(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 1
    table = capsys.readouterr().out
    assert "fakepkg" in table and "REPRO_TEST_VAR" in table and "\x1b[" not in table


def test_identical_snapshots(tmp_path, capsys):
    path = tmp_path / "a.json"
    snapshot(path)
    assert env_cli.main(["diff", str(path), str(path)]) == 0
    assert "same" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_editable_install_records_commit_and_uncommitted_changes(tmp_path, monkeypatch):
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "model.py").write_text("LR = 0.1\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for args in (["init", "-q"], ["add", "model.py"], ["commit", "-q", "-m", "init"]):
        subprocess.run(git + args, check=True)
    (repo / "model.py").write_text("LR = 0.2\n")
    site = tmp_path / "site"
    fake_distribution(site, "proj", "0.1", {"url": repo.as_uri(), "dir_info": {"editable": True}})
    monkeypatch.syspath_prepend(str(site))

    plain = snapshot(tmp_path / "plain.json")["editable"]["proj"]
    assert len(plain["git_commit"]) == 40 and plain["dirty"] is True and "diff" not in plain
    with_diffs = snapshot(tmp_path / "diffs.json", "--with-diffs")["editable"]["proj"]
    assert "+LR = 0.2" in with_diffs["diff"]


def test_unreadable_input_is_an_error(tmp_path, capsys):
    (tmp_path / "bad.json").write_text("{not json")
    assert env_cli.main(["diff", str(tmp_path / "missing.json"), str(tmp_path / "bad.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert env_cli.main(["diff", str(tmp_path / "bad.json"), str(tmp_path / "bad.json")]) == 2
    assert "not JSON" in capsys.readouterr().err


def _cli_snapshot(tmp_path, env_extra, *args, cwd=None):
    import os
    import sys

    from .helpers import SRC

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env_extra.get("PYTHONPATH", "")])
    out = tmp_path / "snap.json"
    proc = subprocess.run(
        [sys.executable, "-m", "repro_lint", "env", "snapshot", "-o", str(out), *args],
        cwd=cwd or tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text()), proc


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_snapshot_runs_none_of_a_checkouts_own_programs(tmp_path):
    """An editable install (and the project itself) may be anyone's checkout: its
    .git/config names an fsmonitor and a clean filter that would leave marker files."""
    repo = tmp_path / "proj"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    (repo / ".gitattributes").write_text("*.py filter=mark\n")
    (repo / "model.py").write_text("LR = 0.1\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "init"]):
        subprocess.run(git + args, check=True)
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path}/FSMONITOR_RAN\n")
    hook.chmod(0o755)
    with open(repo / ".git" / "config", "a") as fh:
        fh.write(f'[core]\n\tfsmonitor = {hook}\n[filter "mark"]\n\tclean = sh -c "touch {tmp_path}/FILTER_RAN; cat"\n')
    (repo / "model.py").write_text("LR = 0.2\n")
    (repo / "notes.txt").write_text("untracked\n")
    site = tmp_path / "site"
    fake_distribution(site, "proj", "0.1", {"url": repo.as_uri(), "dir_info": {"editable": True}})

    data, _ = _cli_snapshot(tmp_path, {"PYTHONPATH": str(site)}, "--with-diffs", cwd=repo)
    assert not (tmp_path / "FSMONITOR_RAN").exists()
    assert not (tmp_path / "FILTER_RAN").exists()
    editable = data["editable"]["proj"]
    assert len(editable["git_commit"]) == 40 and editable["dirty"] is True and "+LR = 0.2" in editable["diff"]
    project = data["project"]  # the checkout the snapshot was taken in, untracked files counted
    assert project["git_commit"] == editable["git_commit"]
    assert (project["dirty"], project["modified"], project["untracked"]) == (True, 1, 1)


def test_snapshot_records_cpu_threads_and_gpu_settings_redacted(tmp_path):
    secret = "nccl" + "-S3cretValue"
    data, proc = _cli_snapshot(
        tmp_path, {"OMP_NUM_THREADS": "3", "NCCL_DEBUG": "INFO", "NCCL_IB_AUTH_TOKEN": secret, "NVIDIA_TF32_OVERRIDE": "0"}
    )
    assert secret not in json.dumps(data) + proc.stdout + proc.stderr
    assert data["gpu_settings"] == {"NCCL_DEBUG": "INFO", "NCCL_IB_AUTH_TOKEN": "<redacted>", "NVIDIA_TF32_OVERRIDE": "0"}
    assert data["cpu"]["model"]
    assert data["threads"]["variables"]["OMP_NUM_THREADS"] == "3"
    torch_threads = data["threads"]["torch"]
    assert torch_threads["num_threads"] >= 1 and torch_threads["parallel_backend"]
    assert data["threads"]["numpy"]["version"]
    assert data["cpu"]["torch_cpu_capability"]
    assert "conda" in data and "project" in data


def test_diff_puts_what_changes_results_first(tmp_path, capsys):
    a = {"schema": "repro-lint-env/1", "environment": {"HOME": "/a"}, "packages": {"rich": "1"},
         "threads": {"torch": {"num_threads": 8}}, "cpu": {"flags": "avx2"}, "gpu_settings": {"NCCL_ALGO": "Ring"},
         "project": {"git_commit": "a" * 40}}
    b = {"schema": "repro-lint-env/1", "environment": {"HOME": "/b"}, "packages": {"rich": "2"},
         "threads": {"torch": {"num_threads": 2}}, "cpu": {"flags": "avx2 avx512f"}, "gpu_settings": {"NCCL_ALGO": "Tree"},
         "project": {"git_commit": "b" * 40}}
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    assert env_cli.main(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--format", "json"]) == 1
    sections = [row["section"] for row in json.loads(capsys.readouterr().out)]
    assert sections == ["gpu_settings", "cpu", "threads", "packages", "project", "environment"]
