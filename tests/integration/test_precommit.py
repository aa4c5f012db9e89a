"""The hooks installed the way users do: `pre-commit try-repo` of this repository."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
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


UTILS = "import numpy as np\nimport torch\n\n\ndef set_seed(seed):\n    torch.manual_seed(seed)\n    np.random.seed(seed)\n"
TRAIN = (
    "import numpy as np\nimport torch\n\nfrom utils import set_seed\n\n\ndef main():\n    set_seed(0)\n"
    "    print(np.random.rand(3), torch.rand(2))\n\n\nif __name__ == '__main__':\n    main()\n"
)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_pre_commit_blocks_a_regression_made_in_an_imported_module(tmp_path):
    """Removing `np.random.seed` from `utils.set_seed` makes RPL101 appear in train.py: the
    default hook, run on the staged utils.py alone, blocks the commit; the per-file hook
    reports on utils.py only, as it always did."""
    repo = tmp_path / "user-repo"
    repo.mkdir()
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pc-home"), GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x",
               GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x")
    git = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    (repo / "pyproject.toml").write_text('[project]\nname = "lab"\nversion = "0"\n')
    (repo / "utils.py").write_text(UTILS)
    (repo / "train.py").write_text(TRAIN)
    git("add", ".")
    git("commit", "-q", "-m", "start")
    (repo / "utils.py").write_text(UTILS.replace("    np.random.seed(seed)\n", ""))
    git("add", "utils.py")  # the commit being made changes utils.py only

    def hook(name):  # what `git commit` runs: the hook on the staged files
        return subprocess.run(
            ["pre-commit", "try-repo", str(REPO), name, "--color", "never"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=600,
        )

    r = hook("repro-lint")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Failed" in r.stdout and "train.py:9:11: RPL101" in r.stdout, r.stdout
    r = hook("repro-lint-files")
    assert r.returncode == 0 and "Passed" in r.stdout, r.stdout + r.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_hook_pinned_to_a_commit_sha_as_the_readme_says(tmp_path):
    """No release tag is needed: `.pre-commit-config.yaml` names the repository and a full
    commit sha (`rev:`), as the README's "pre-commit" section shows, and `pre-commit run`
    installs the hook from that commit, blocks a finding and passes its fix."""
    import re

    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pc-home"), GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x",
               GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x")
    # this checkout's files (what a push of it publishes) as a repository of their own
    source = tmp_path / "repro-lint"
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, files):
        if (REPO / rel).is_file():
            (source / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, source / rel)
    git = lambda where, *a: subprocess.run(["git", *a], cwd=where, env=env, check=True, capture_output=True, text=True)  # noqa: E731
    git(source, "init", "-q")
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "release candidate")
    sha = git(source, "rev-parse", "HEAD").stdout.strip()

    readme = (REPO / "README.md").read_text()
    example = re.search(r"## pre-commit\n.*?```yaml\n(.*?)```", readme, re.S).group(1)
    assert "rev: " in example and "v0.1.0" not in example
    config = re.sub(r"repo: \S+", f"repo: {source.as_uri()}", example)
    config = re.sub(r"rev: \S+", f"rev: {sha}", config)

    repo = tmp_path / "user-repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".pre-commit-config.yaml").write_text(config)
    (repo / "train.py").write_text(BAD)
    git(repo, "add", ".")
    run = lambda: subprocess.run([sys.executable, "-m", "pre_commit", "run", "--files", "train.py", "--color", "never"],  # noqa: E731
                                 cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    r = run()
    assert r.returncode == 1 and "RPL101" in r.stdout and "Failed" in r.stdout, r.stdout + r.stderr
    (repo / "train.py").write_text(GOOD)
    git(repo, "add", ".")
    r = run()
    assert r.returncode == 0 and "Passed" in r.stdout, r.stdout + r.stderr
