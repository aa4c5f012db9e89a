import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"


def run_cli(*args, cwd=None, env=None, input=None, timeout=300):
    """Run `python -m repro_lint ARGS` in a subprocess, as a user would."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(SRC) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.pop("NO_COLOR", None)
    full_env.pop("FORCE_COLOR", None)  # a CI that sets it would colour every piped report
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "repro_lint", *map(str, args)],
        cwd=cwd, env=full_env, input=input, capture_output=True, text=True, timeout=timeout,
    )


@pytest.fixture(autouse=True, scope="session")
def _user_cache_dir(tmp_path_factory):
    """The cache key (see `repro_lint.check.cache`) of test runs lives in a folder of the session,
    not in the user's own cache folder; the CLI subprocesses inherit the setting."""
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("user-cache"))
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(autouse=True)
def _key_read_again():
    """The key of the user cache is read once per process (`cache.forget_user_key`): a test
    that points XDG_CACHE_HOME elsewhere must not leave that folder's key to the tests after
    it, whose CLI subprocesses sign with the test run's key."""
    yield
    from repro_lint.check import cache

    cache.forget_user_key()


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def project(tmp_path):
    """A temporary project root (with a pyproject.toml) to write files into."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')

    def write(rel, text):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p

    write.root = tmp_path
    return write


def full(finding) -> str:
    """A finding's message and its help line, as a user reads them together."""
    return f"{finding.message} {finding.help or ''}"
