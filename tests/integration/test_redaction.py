"""Secrets never reach `env snapshot`, `env diff` or probe reports: redacted by variable name
and by value. The values below have the shapes of real credentials and are made up."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import SRC, run_cli
from repro_lint.core import catalog
from repro_lint.probe.redact import REDACTED, redact_text, secret_name

# Built from parts, so that no file of the repository holds a whole token-shaped string.
GITHUB = "ghp_" + "Xq7Lm2Rt9Vb4Nc8Kd1Fg5Hj3Pw6Sz0Ya" + "Ee12"
GITHUB_FINE = "github_pat_" + "11ABCDEFG0" + "_xYzAbCdEfGhIjKlMnOpQrStUv"
HUGGINGFACE = "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNm" + "12345678"
OPENAI = "sk-proj-" + "Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz" + "7Bc0Ef"
SLACK_TOKEN = "xoxb-" + "123456789012-" + "AbCdEfGhIjKlMnOp"
SLACK_HOOK = "https://hooks.slack.com/services/" + "T01ABCDEF/B02GHIJKL/" + "mNoPqRsTuVwXyZ0123456789"
AWS_ID = "AKIA" + "Z7Q3M5N8P2R4T6V1"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzEXAMPLEKEY"
DB_PASSWORD = "pg-" + "pw-5LmN8qRs"
INDEX_TOKEN = "idx" + "tok" + "9Hq4Wz7Kp2"
DIFF_KEY = "sk-" + "DiffDiffDiffDiff" + "0123456789ab"
CUSTOM = "ACME" + "-7F3K9Q2X8M4P"

SECRET_ENV = {
    "GITHUB_PAT": GITHUB_FINE,  # a name the old name list missed
    "DATABASE_URL": f"postgres://train:{DB_PASSWORD}@db.internal:5432/runs",
    "PIP_INDEX_URL": f"https://ci-user:{INDEX_TOKEN}@pypi.internal/simple",
    "SLACK_WEBHOOK_URL": SLACK_HOOK,
    "FOO": GITHUB,  # a token under an innocent name
    "BAR": HUGGINGFACE,
    "SOME_SETTING": OPENAI,
    "BOT": SLACK_TOKEN,
    "AWS_ACCESS_KEY_ID": AWS_ID,
    "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
    "NOTIFY": f"curl -X POST {SLACK_HOOK}",
    "LAB_ID": CUSTOM,  # a format only the user knows: REPRO_LINT_REDACT
}
SECRETS = [GITHUB, GITHUB_FINE, HUGGINGFACE, OPENAI, SLACK_TOKEN, SLACK_HOOK, AWS_ID, AWS_SECRET, DB_PASSWORD, INDEX_TOKEN, DIFF_KEY, CUSTOM,
           "mNoPqRsTuVwXyZ0123456789"]


def _leaks(text):
    return [s for s in SECRETS if s in text]


def test_every_catalog_pattern_redacts_its_example():
    for entry in catalog.load("secrets")["value"]:
        example = entry["example"]
        out = redact_text(example)
        assert REDACTED in out and out != example, entry["name"]


def test_what_is_not_a_secret_is_kept():
    for name in ("PATH", "PWD", "HOME", "PYTHONHASHSEED", "CUBLAS_WORKSPACE_CONFIG", "PASSES", "OMP_NUM_THREADS"):
        assert not secret_name(name), name
    for name in ("GITHUB_PAT", "DB_PASS", "HF_TOKEN", "OPENAI_API_KEY", "SLACK_WEBHOOK_URL", "SENTRY_DSN"):
        assert secret_name(name), name
    for text in (":4096:8", "https://pypi.org/simple", "git@github.com:org/repo.git", "ssh://git@github.com/org/repo",
                 "tokenizer = AutoTokenizer.from_pretrained(name)", "max_tokens = 512", "/usr/local/bin:/usr/bin",
                 "torch==2.13.0", "https://download.pytorch.org/whl/cpu"):
        assert redact_text(text) == text, text
    assert redact_text(f"postgres://train:{DB_PASSWORD}@db.internal:5432/runs") == f"postgres://{REDACTED}@db.internal:5432/runs"


def _editable_package(tmp_path):
    """A fake distribution installed editable from a git checkout with an uncommitted secret."""
    repo = tmp_path / "mylab"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "config.py").write_text("api_key = None\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    (repo / "config.py").write_text(f'api_key = "{DIFF_KEY}"\n')
    site = tmp_path / "site"
    info = site / "mylab-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mylab\nVersion: 0.1\n")
    (info / "direct_url.json").write_text(json.dumps({"url": repo.as_uri(), "dir_info": {"editable": True}}))
    return site


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_snapshot_and_diff_hold_no_secret(tmp_path):
    site = _editable_package(tmp_path)
    env = dict(SECRET_ENV, PYTHONPATH=f"{SRC}{os.pathsep}{site}", REPRO_LINT_REDACT=r"ACME-[0-9A-Z]{12}")
    snap = tmp_path / "env.json"
    r = run_cli("env", "snapshot", "--with-diffs", "-o", snap, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = snap.read_text()
    assert _leaks(text + r.stdout + r.stderr) == []
    data = json.loads(text)
    assert data["editable"]["mylab"]["dirty"] is True and "api_key = " in data["editable"]["mylab"]["diff"]
    environment = data["environment"]
    assert environment["GITHUB_PAT"] == environment["AWS_SECRET_ACCESS_KEY"] == REDACTED
    assert environment["DATABASE_URL"] == f"postgres://{REDACTED}@db.internal:5432/runs"  # where it points stays
    assert environment["PIP_INDEX_URL"] == f"https://{REDACTED}@pypi.internal/simple"

    # snapshots written elsewhere (or by an older release) may hold secrets: diff shows none
    raw_a = {"schema": "repro-lint-env/1", "packages": {"torch": "2.13.0"}, "environment": dict(SECRET_ENV)}
    raw_b = {"schema": "repro-lint-env/1", "packages": {"torch": "2.12.0"}, "environment": {k: v + "x" for k, v in SECRET_ENV.items()}}
    raw_b["editable"] = {"mylab": {"diff": f'api_key = "{DIFF_KEY}"'}}
    (tmp_path / "a.json").write_text(json.dumps(raw_a))
    (tmp_path / "b.json").write_text(json.dumps(raw_b))
    env = {"REPRO_LINT_REDACT": r"ACME-[0-9A-Z]{12}", "COLUMNS": "400"}
    for fmt in ("text", "json"):
        r = run_cli("env", "diff", "a.json", "b.json", "--format", fmt, env=env, cwd=tmp_path)
        assert r.returncode == 1, r.stderr
        assert _leaks(r.stdout + r.stderr) == [], fmt
        assert "GITHUB_PAT" in r.stdout and "torch" in r.stdout  # the differences are still listed


@pytest.mark.slow
def test_probe_report_holds_no_secret(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text("import sys\nimport torch\n\ntorch.manual_seed(0)\nprint(torch.rand(2).sum().item(), len(sys.argv))\n")
    report = tmp_path / "report.json"
    env = dict(os.environ, PYTHONPATH=str(SRC), REPRO_LINT_REDACT=r"ACME-[0-9A-Z]{12}", **SECRET_ENV)
    env.pop("PYTHONHASHSEED", None)
    r = subprocess.run(
        [sys.executable, "-m", "repro_lint", "probe", "--format", "json", "--output-file", str(report), "--no-deterministic-run",
         str(script), "--", "--hf-token", HUGGINGFACE, f"--password={DB_PASSWORD}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr
    text = report.read_text()
    assert _leaks(text) == [], _leaks(text)
    data = json.loads(text)
    assert data["target"]["args"][0] == "--hf-token" and data["environment"]["environment"]["FOO"] == REDACTED
