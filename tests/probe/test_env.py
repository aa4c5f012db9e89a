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
