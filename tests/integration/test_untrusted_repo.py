"""A repository checked by strangers' CI or in pre-commit right after cloning is untrusted
input: nothing it ships may run code, crash the run, make the run write outside it, hang
it, or exhaust its memory. Each test plays the repository's part, through the CLI."""

import json
import marshal
import os
import pickle
import resource
import subprocess
import sys

import pytest

from conftest import SRC

BAD = "import numpy as np\n\nprint(np.random.rand(3))\n"
FIXED_LINE = "np.random.seed("


def _concise(r):
    return sorted(line.split(" ", 2)[0] + " " + line.split(" ", 2)[1] for line in r.stdout.splitlines() if ": RPL" in line)


# -- 1. a cache the repository ships ---------------------------------------------------------
class _Payload:
    """Unpickling this creates the marker file: proof that code from the repository ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_committed_malicious_cache_runs_no_code(cli, project, tmp_path_factory):
    project("train.py", BAD)
    root = project.root
    clean = cli("--no-cache", "--format", "concise", "-q", cwd=root)
    assert clean.returncode == 1
    assert cli(cwd=root).returncode == 1  # fills the cache: the names a real run uses
    cache = root / ".repro_lint_cache"
    names = [p.name for p in cache.iterdir() if p.name != ".gitignore"]
    assert names
    marker = tmp_path_factory.mktemp("attacker") / "pwned"
    evil = pickle.dumps(_Payload(marker))
    for name in names:  # the real names, and the names of earlier releases
        (cache / name).write_bytes(evil)
        (cache / (name.rsplit(".", 1)[0] + ".pickle")).write_bytes(evil)
    # a file in the cache's own format, with marshal data no interpreter should be fed
    # (a code object of garbage), under a digest made without the user's key
    crafted = b"repro-lint cache 2\n" + os.urandom(32) + len(b"\xe3" + os.urandom(64)).to_bytes(4, "little") + b"\xe3" + os.urandom(64)
    (cache / "other.bin").write_bytes(crafted)
    for args in (["--format", "concise", "-q"], ["--fix", "--format", "concise", "-q"]):
        r = cli(*args, cwd=root)
        assert not marker.exists()
        assert "Traceback" not in r.stderr and r.returncode in (0, 1), r.stderr
    assert FIXED_LINE in (root / "train.py").read_text()  # --fix worked, from rebuilt facts


def _results_record(root):
    from repro_lint.check.cache import Cache
    from repro_lint.discover.config import Config

    cache = Cache(root, Config().fingerprint())
    [frame] = cache.read_frames("results")
    return cache, list(marshal.loads(frame))


def test_results_signed_without_the_users_key_are_not_believed(cli, project):
    """The attacker can compute the file's name and format (both public); only the key is
    secret. A forged finding appears when signed with the user's key (so the forgery is
    well-formed), and never when signed with any other."""
    project("train.py", BAD)
    root = project.root
    assert cli(cwd=root).returncode == 1
    cache, record = _results_record(root)
    finding = list(record[2][0])  # (marker, class name, code, name, message, ...)
    assert finding[2] == "RPL101"
    finding[4] = "FORGED"
    record[2] = [tuple(finding)]
    frame = marshal.dumps(tuple(record))

    cache.secret = os.urandom(32)  # the attacker's guess
    cache.write_frames("results", [frame])
    r = cli("--format", "concise", cwd=root)
    assert "FORGED" not in r.stdout and "RPL101" in r.stdout, r.stdout

    cache, _ = _results_record(root)  # the run rebuilt the file under the user's key
    cache.write_frames("results", [frame])
    assert "FORGED" in cli("--format", "concise", cwd=root).stdout


# -- 2. writes outside the project -----------------------------------------------------------
def test_a_symlinked_cache_folder_is_not_used(cli, project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    project("train.py", BAD)
    (project.root / ".repro_lint_cache").symlink_to(outside, target_is_directory=True)
    for _ in range(2):
        r = cli("--format", "concise", "-q", cwd=project.root)
        assert r.returncode == 1 and "train.py:3:7: RPL101" in r.stdout, r.stdout + r.stderr
    assert list(outside.iterdir()) == []


def test_a_dangling_gitignore_link_in_the_cache_creates_nothing_outside(cli, project, tmp_path_factory):
    target = tmp_path_factory.mktemp("outside") / "created-by-link"
    project("train.py", BAD)
    cache = project.root / ".repro_lint_cache"
    cache.mkdir()
    (cache / ".gitignore").symlink_to(target)
    r = cli("--format", "concise", "-q", cwd=project.root)
    assert r.returncode == 1, r.stderr
    assert not target.exists()
    gitignore = cache / ".gitignore"
    assert not gitignore.is_symlink() and gitignore.read_text().splitlines()[-1] == "*"


def test_an_emptied_cache_gitignore_is_written_again(cli, project):
    project("train.py", BAD)
    assert cli(cwd=project.root).returncode == 1
    gitignore = project.root / ".repro_lint_cache" / ".gitignore"
    gitignore.write_text("")  # what a full disk left
    project("train.py", BAD + "\n")  # a change, so that the cache is written again
    assert cli(cwd=project.root).returncode == 1
    assert gitignore.read_text().splitlines()[-1] == "*"


def test_fix_never_writes_through_a_link_leading_out_of_the_project(cli, project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    victim = outside / "victim.py"
    victim.write_text(BAD)
    project("train.py", BAD)
    (project.root / "lib.py").symlink_to(victim)
    (project.root / "ext").symlink_to(outside, target_is_directory=True)
    r = cli("--fix", "--format", "concise", "-q", cwd=project.root)
    assert victim.read_text() == BAD
    assert FIXED_LINE in (project.root / "train.py").read_text()  # the project's own file is fixed
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["repro-lint: error: lib.py: cannot read file: it is a link to a file outside the project"]
    # named through a linked folder, the file is checked, but not written
    project("train.py", BAD)
    r = cli("--fix", "--format", "concise", "-q", "train.py", "ext/victim.py", cwd=project.root)
    assert victim.read_text() == BAD and FIXED_LINE in (project.root / "train.py").read_text()
    [error] = r.stderr.strip().splitlines()
    assert error.startswith("repro-lint: error: ") and error.endswith(": fix not written: it is outside the project"), error
    assert r.returncode == 2


def test_files_linked_from_outside_are_not_read_nor_shown(cli, project, tmp_path_factory):
    """A link named like a Python file can point at any file the user can read: its lines
    would be shown in the report (a syntax error shows the line), so it is not read, and a
    linked folder outside the project is not walked."""
    outside = tmp_path_factory.mktemp("outside")
    (outside / "credentials").write_text("password = hunter2-secret ((\n")
    (outside / "pkg").mkdir()
    (outside / "pkg" / "other.py").write_text(BAD)
    project("train.py", BAD)
    (project.root / "settings.py").symlink_to(outside / "credentials")
    (project.root / "vendor").symlink_to(outside / "pkg", target_is_directory=True)
    r = cli("--no-cache", cwd=project.root)
    assert "hunter2" not in r.stdout + r.stderr
    assert "other.py" not in r.stdout + r.stderr
    assert "train.py:3:7" in r.stdout
    assert r.stderr.strip().splitlines() == ["repro-lint: error: settings.py: cannot read file: it is a link to a file outside the project"]


def test_fix_leaves_a_read_only_file_alone(cli, project):
    path = project("train.py", BAD)
    path.chmod(0o444)
    r = cli("--fix", "--format", "concise", "-q", cwd=project.root)
    assert path.read_text() == BAD and (path.stat().st_mode & 0o777) == 0o444
    assert r.returncode == 2
    assert "repro-lint: error: train.py: fix not written: the file is read-only" in r.stderr, r.stderr


# -- 3. bounded reads --------------------------------------------------------------------------
def _limited(cwd, *args, memory=1 << 30, timeout=120):
    """The CLI with its address space limited to `memory` bytes."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run(
        [sys.executable, "-m", "repro_lint", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout, preexec_fn=limit,
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs FIFOs and /dev/zero")
def test_fifos_devices_and_huge_files_are_not_read(project):
    root = project.root
    project("train.py", BAD)
    os.mkfifo(root / "x.py")
    (root / "z.py").symlink_to("/dev/zero")
    os.mkfifo(root / "requirements.txt")
    (root / "requirements-dev.txt").symlink_to("/dev/zero")
    (root / "big.py").write_bytes(b"x = 1\n" + b"#" * (10 * 1024 * 1024) + b"\n")
    r = _limited(root, "--no-cache", "--format", "concise", "-q")
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr, r.stderr
    assert "train.py:3:7: RPL101" in r.stdout  # the rest is checked
    errors = sorted(r.stderr.strip().splitlines())
    assert errors == [
        "repro-lint: error: big.py: cannot read file: larger than 10 MB",
        "repro-lint: error: x.py: cannot read file: not a regular file",
        "repro-lint: error: z.py: cannot read file: it is a link to a file outside the project",
    ], errors
    assert r.returncode == 2


HYDRA_MAIN = (
    "import hydra\nimport torch\n\n\n@hydra.main(config_path={path!r}, config_name='config', version_base=None)\n"
    "def main(cfg):\n    torch.manual_seed(0)\n    print(cfg)\n\n\n"
    'if __name__ == "__main__":\n    main()\n'
)
DRAWS = "import numpy as np\n\n\ndef draw():\n    return np.random.rand(2)\n"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_hydra_config_folders_outside_the_project_are_not_read(project, tmp_path_factory):
    """`_target_:` lines are read under the project only, from regular files of bounded size.
    (A config's `_target_` is reached from the Hydra main itself: the programs call no factory,
    which would reach what any program's configs name.)"""
    root = project.root
    project("helpers.py", DRAWS)
    outside = tmp_path_factory.mktemp("elsewhere")
    (outside / "config.yaml").write_text("step:\n  _target_: helpers.draw\n")
    project("conf/config.yaml", "step:\n  _target_: helpers.draw\n")
    (root / "conf" / "zero.yaml").symlink_to("/dev/zero")
    (root / "conf" / "out.yaml").symlink_to(outside / "config.yaml")
    project("inside.py", HYDRA_MAIN.format(path="conf"))
    project("absolute.py", HYDRA_MAIN.format(path=str(outside)))
    project("up.py", HYDRA_MAIN.format(path="../" * 30))
    project("slash.py", HYDRA_MAIN.format(path="/"))
    r = _limited(root, "--no-cache", "--format", "json", timeout=60)
    assert "Traceback" not in r.stderr, r.stderr
    numpy_findings = {f["path"] for f in json.loads(r.stdout)["findings"] if f["code"] == "RPL101"}
    # the config inside the project is read (its target draws, unseeded); the others are not
    assert numpy_findings == {"inside.py"}, r.stdout
