"""A program that serves requests (a gradio demo) gets RPL101 without a fix: a seed set when
the server starts would make no request's result repeatable (`fixtures/projects/request_server`)."""

import json
import shutil
from pathlib import Path

FIXTURE = Path(__file__).parents[2] / "fixtures" / "projects" / "request_server"


def test_a_request_server_is_reported_without_a_start_up_seed(tmp_path, cli):
    root = tmp_path / "demo"
    shutil.copytree(FIXTURE, root)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    r = cli("check", ".", "--no-cache", "--output-format", "json", cwd=root)
    found = {f["path"]: f for f in json.loads(r.stdout)["findings"] if f["code"] == "RPL101"}
    assert set(found) == {"app.py", "synthesize.py", "service.py"}
    assert found["app.py"]["fix"] is None
    assert "request handler" in found["app.py"]["help"]
    assert found["synthesize.py"]["fix"] is not None
    assert found["service.py"]["fix"] is not None  # (it also trains, outside the handlers)

    app_before = (root / "app.py").read_bytes()
    r = cli("check", ".", "--no-cache", "--fix", "--unsafe-fixes", cwd=root)
    assert r.returncode in (0, 1), r.stderr
    assert (root / "app.py").read_bytes() == app_before
    assert "manual_seed" in (root / "synthesize.py").read_text()
