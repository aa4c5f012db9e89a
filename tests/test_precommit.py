"""The hooks installed the way users do: `pre-commit try-repo` of this repository."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BAD = "import numpy as np\n\n\ndef main():\n    print(np.random.rand(3))\n\n\nif __name__ == '__main__':\n    main()\n"
GOOD = BAD.replace("def main():\n", "def main():\n    np.random.seed(0)\n")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_pre_commit_hook_fails_then_passes(tmp_path):
    repo = tmp_path / "user-repo"
    repo.mkdir()
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pc-home"), GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x",
               GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "train.py").write_text(BAD)
    subprocess.run(["git", "add", "train.py"], cwd=repo, check=True)

    def hook(name):
        return subprocess.run(
            ["pre-commit", "try-repo", str(REPO), name, "--files", "train.py", "--color", "never"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=600,
        )

    r = hook("repro-lint")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "RPL101" in r.stdout and "Failed" in r.stdout
    (repo / "train.py").write_text(GOOD)
    subprocess.run(["git", "add", "train.py"], cwd=repo, check=True)
    r = hook("repro-lint")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Passed" in r.stdout
