"""ruff's habits, row by row: each option, variable, setting and comment form is given to the
real ruff (pinned in the test extra) and to repro-lint on a file with one finding each. ruff
must accept it (it is ruff's convention), and repro-lint must accept it and do what the row
says it does."""

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
UNUSED = "import os\n"  # ruff: F401
BAD = "import numpy as np\n\n\ndef main():\n    print(np.random.rand(3))\n\n\nif __name__ == '__main__':\n    main()\n"


def ruff(work, *args, env=None):
    """ruff in `work` (outside the project repro-lint checks), on a file with one finding."""
    work.mkdir(exist_ok=True)
    (work / "x.py").write_text(UNUSED)
    return subprocess.run([RUFF, "check", "--isolated", *args], cwd=work, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=60)


def _json_lines(r, project):
    [line] = r.stdout.splitlines()
    assert json.loads(line)["code"] == "RPL101"


def _junit(r, project):
    root = ET.fromstring(r.stdout)
    assert root.tag == "testsuites" and root.get("failures") == "1"
    case = root.find("testsuite/testcase")
    assert case.get("name").endswith("RPL101") and case.find("failure") is not None


def _gitlab(r, project):
    [issue] = json.loads(r.stdout)
    assert issue["check_name"] == "RPL101" and issue["location"]["path"] == "train.py"
    assert issue["location"]["positions"]["begin"]["line"] == 5 and len(issue["fingerprint"]) == 32


def _pylint(r, project):
    assert r.stdout.startswith("train.py:5: [RPL101] numpy's global RNG")


def _rdjson(r, project):
    doc = json.loads(r.stdout)
    [d] = doc["diagnostics"]
    assert d["code"]["value"] == "RPL101" and d["location"]["range"]["start"] == {"line": 5, "column": 11}


def _azure(r, project):
    assert r.stdout.startswith("##vso[task.logissue type=warning;sourcepath=train.py;linenumber=5;columnnumber=11;code=RPL101;]")


def _full(r, project):
    assert "train.py:5:11: RPL101" in r.stdout and "^^^" in r.stdout  # the source line and its marker


def _exit_zero(r, project):
    assert r.returncode == 0 and "RPL101" in r.stdout


def _no_cache(r, project):
    assert r.returncode == 1 and not (project.root / ".repro_lint_cache").exists()


def _silent(r, project):
    assert r.returncode == 1 and r.stdout == "" and r.stderr == ""


def _fix_only(r, project):
    assert r.returncode == 0 and r.stdout == "Fixed 1 finding.\n"
    assert "np.random.seed(" in (project.root / "train.py").read_text()


def _ignore_noqa(r, project):
    assert r.returncode == 1 and "RPL101" in r.stdout


def _excluded(r, project):
    assert r.returncode == 0 and "RPL101" not in r.stdout


def _show_settings(r, project):
    assert r.returncode == 0 and "[tool.repro-lint]" in r.stdout and 'select = ["RPL"]' in r.stdout


def _show_files(r, project):
    assert r.returncode == 0 and r.stdout.splitlines() == ["other.py", "train.py"]


def _add_noqa_reason(r, project):
    assert r.returncode == 0
    assert "    print(np.random.rand(3))  # noqa: RPL101 legacy\n" in (project.root / "train.py").read_text()


def _cache_dir(r, project):
    assert r.returncode == 1 and not (project.root / ".repro_lint_cache").exists()
    [folder] = (project.root / "elsewhere").iterdir()
    assert any(folder.glob("facts-*.bin"))


def _force_color(r, project):
    assert "\x1b[" in r.stdout  # a pipe, coloured because FORCE_COLOR asks for it


def _space_separated_noqa(r, project):
    assert r.returncode == 0 and "RPL101" not in r.stdout


# (what ruff is given, what repro-lint is given, environment, what repro-lint must do)
ROWS = {
    "--output-format full": (["--output-format", "full"], ["--output-format", "full"], {}, _full),
    "--output-format json-lines": (["--output-format", "json-lines"], ["--output-format", "json-lines"], {}, _json_lines),
    "--output-format junit": (["--output-format", "junit"], ["--output-format", "junit"], {}, _junit),
    "--output-format gitlab": (["--output-format", "gitlab"], ["--output-format", "gitlab"], {}, _gitlab),
    "--output-format pylint": (["--output-format", "pylint"], ["--output-format", "pylint"], {}, _pylint),
    "--output-format rdjson": (["--output-format", "rdjson"], ["--output-format", "rdjson"], {}, _rdjson),
    "--output-format azure": (["--output-format", "azure"], ["--output-format", "azure"], {}, _azure),
    "-e": (["-e"], ["-e"], {}, _exit_zero),
    "-n": (["-n"], ["-n"], {}, _no_cache),
    "NO_CACHE variable": ([], [], {"RUFF_NO_CACHE": "true", "REPRO_LINT_NO_CACHE": "true"}, _no_cache),
    "-s": (["-s"], ["-s"], {}, _silent),
    "--fix-only": (["--fix-only"], ["--fix-only", "-n", "train.py"], {}, _fix_only),
    "--ignore-noqa": (["--ignore-noqa"], ["--ignore-noqa", "-n"], {}, _ignore_noqa),
    "--exclude": (["--exclude", "y.py"], ["--exclude", "train.py,other.py", "-n"], {}, _excluded),
    "--extend-exclude": (["--extend-exclude", "y.py"], ["--extend-exclude", "train.py", "--extend-exclude", "other.py", "-n"], {}, _excluded),
    "--show-settings": (["--show-settings"], ["--show-settings"], {}, _show_settings),
    "--show-files": (["--show-files"], ["--show-files"], {}, _show_files),
    "--add-noqa=REASON": (["--add-noqa=legacy"], ["--add-noqa=legacy", "-n", "train.py"], {}, _add_noqa_reason),
    "--cache-dir": (["--cache-dir", "elsewhere"], ["--cache-dir", "elsewhere"], {}, _cache_dir),
    "CACHE_DIR variable": ([], [], {"RUFF_CACHE_DIR": "elsewhere", "REPRO_LINT_CACHE_DIR": "elsewhere"}, _cache_dir),
    "FORCE_COLOR": ([], ["-n"], {"FORCE_COLOR": "1"}, _force_color),
    "extend-ignore": (["--config", "lint.extend-ignore = ['F401']"], ["--config", "extend-ignore = ['RPL1']", "-n"], {}, _excluded),
    "extend-per-file-ignores": (
        ["--config", "lint.extend-per-file-ignores = {'x.py' = ['F401']}"],
        ["--config", "extend-per-file-ignores = {'train.py' = ['RPL101']}", "-n", "train.py"], {}, _excluded,
    ),
    "# noqa: E501 F401": ([], ["-n", "train.py"], {}, _space_separated_noqa),
}
# the rows whose file for repro-lint is not BAD as it is
SOURCES = {
    "--ignore-noqa": BAD.replace("rand(3))", "rand(3))  # noqa: RPL101"),
    "# noqa: E501 F401": BAD.replace("rand(3))", "rand(3))  # noqa: E501 RPL101"),
}


@pytest.mark.skipif(RUFF is None, reason="needs ruff (the test extra pins it)")
@pytest.mark.parametrize("row", list(ROWS))
def test_ruff_convention(row, cli, project, tmp_path_factory):
    ruff_args, ours, env, expect = ROWS[row]
    work = tmp_path_factory.mktemp("ruff")
    if row == "# noqa: E501 F401":
        (work / "x.py").write_text("import os  # noqa: E501 F401\n")
        r = subprocess.run([RUFF, "check", "--isolated", "--select", "F401", "x.py"], cwd=work, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout  # ruff reads both codes
    else:
        r = ruff(work, *ruff_args, env=env)
        assert r.returncode in (0, 1), (row, r.stderr)  # ruff accepts it
    project("train.py", SOURCES.get(row, BAD))
    project("other.py", "print('no draw')\n")
    r = cli(*ours, cwd=project.root, env=env)
    assert r.returncode != 2, r.stderr
    expect(r, project)


@pytest.mark.skipif(RUFF is None, reason="needs ruff (the test extra pins it)")
def test_fixable_and_unfixable_settings(cli, project, tmp_path_factory):
    """`unfixable` takes a rule's fixes away (no `[*]`, `--fix` leaves it), `fixable` picks them."""
    r = ruff(tmp_path_factory.mktemp("ruff"), "--config", "lint.unfixable = ['F401']", "--output-format", "concise")
    assert r.returncode == 1 and "[*]" not in r.stdout  # ruff: the finding stays, without its fix
    project("train.py", BAD)
    for setting in ("unfixable = ['RPL101']", "fixable = ['RPL4']"):
        r = cli("-n", "--output-format", "concise", "--config", setting, "--fix", cwd=project.root)
        assert r.returncode == 1 and "RPL101" in r.stdout and "[*]" not in r.stdout, (setting, r.stdout)
        assert "np.random.seed" not in (project.root / "train.py").read_text()
    r = cli("-n", "--output-format", "concise", "--config", "fixable = ['RPL1']", "--config", "unfixable = ['RPL102']", "--fix", cwd=project.root)
    assert r.returncode == 0 and "np.random.seed" in (project.root / "train.py").read_text()


def test_add_noqa_keeps_space_separated_codes(cli, project):
    """`--add-noqa` rewrites a code list as ruff does: all codes, sorted, comma-separated."""
    path = project("train.py", BAD.replace("rand(3))", "rand(3))  # noqa: E501 F401"))
    r = cli("-n", "--add-noqa", cwd=project.root)
    assert r.returncode == 0 and "Added 1 noqa directive." in r.stderr, r.stderr
    assert "    print(np.random.rand(3))  # noqa: E501, F401, RPL101\n" in path.read_text()
    # a word that is not a code is not read as one: the finding is still reported
    project("train.py", BAD.replace("rand(3))", "rand(3))  # noqa: E501 Because of RPL101"))
    r = cli("-n", "--output-format", "concise", cwd=project.root)
    assert r.returncode == 1 and "RPL101" in r.stdout


def test_force_color_loses_to_no_color_and_never(cli, project):
    project("train.py", BAD)
    assert "\x1b[" not in cli("-n", cwd=project.root, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    assert "\x1b[" not in cli("-n", "--color", "never", cwd=project.root, env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[" not in cli("-n", cwd=project.root, env={"FORCE_COLOR": ""}).stdout


def test_fix_only_with_nothing_to_fix_prints_nothing(cli, project):
    project("train.py", BAD.replace("def main():\n", "def main():\n    np.random.seed(0)\n"))
    r = cli("-n", "--fix-only", cwd=project.root)
    assert r.returncode == 0 and r.stdout == "", r.stdout


def test_watch_checks_again_after_a_change(project):
    """`--watch` checks, then checks again when a file changes, until interrupted."""
    import signal
    import time

    from conftest import SRC

    path = project("train.py", BAD)
    env = {**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1"}
    # Ctrl-C as on a terminal: a suite started in the background by a shell runs with SIGINT
    # ignored, which its children inherit (and Python then keeps it ignored)
    proc = subprocess.Popen([sys.executable, "-m", "repro_lint", "check", "-n", "--watch", "--output-format", "concise"],
                            cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    import threading

    guard = threading.Timer(90, proc.kill)  # a watch that never answers fails the test, not the suite
    guard.start()
    try:
        deadline = time.time() + 60
        first = proc.stdout.readline()
        assert "RPL101" in first, first
        assert proc.stdout.readline().startswith("Found 1 finding")
        path.write_text(BAD.replace("def main():\n", "def main():\n    np.random.seed(0)\n"))
        line = proc.stdout.readline()
        assert line == "All checks passed.\n" and time.time() < deadline, line
    finally:
        guard.cancel()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 0
    assert "File change detected" in proc.stderr.read()


def test_watch_refuses_stdin(cli):
    r = cli("check", "--watch", "-", input="")
    assert r.returncode == 2 and r.stderr.strip() == "repro-lint: --watch does not work on stdin"
