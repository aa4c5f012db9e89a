"""More of what a checked repository (or an editor's client) can carry, each played as the
attacker would: links named on the command line, hostile ignore patterns, huge files,
names that are CI commands, leftovers of an interrupted run. Through the CLI in a
subprocess, or the language server over stdio."""

import json
import os
import subprocess
import sys
import time

import pytest

BAD = "import numpy as np\n\nprint(np.random.rand(3))\n"
FIXED_LINE = "np.random.seed("
SECRET = "root:x:0:0:hunter2-secret:/root:/bin/bash\n"


def _notebook(code: str) -> str:
    cell = {"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {}, "outputs": [], "source": code.splitlines(True)}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def _contents(folder):
    return {p.name: p.read_bytes() if p.is_file() else "folder" for p in folder.iterdir()}


# -- 1. a link named first on the command line ---------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_link_named_first_does_not_move_the_root(cli, project, tmp_path_factory):
    """The repository links to another project (which has its own pyproject.toml, so that a
    root taken from the link's target would be there) and to a secret file."""
    victim = tmp_path_factory.mktemp("victim")
    (victim / "pyproject.toml").write_text('[project]\nname = "victim"\nversion = "0"\n')
    (victim / "x.py").write_text(BAD)
    (victim / "nb.ipynb").write_text(_notebook(BAD))
    (victim / "passwd").write_text(SECRET)
    before = _contents(victim)
    root = project.root
    (root / "evil.py").symlink_to(victim / "x.py")
    (root / "evil.ipynb").symlink_to(victim / "nb.ipynb")
    (root / "vendor").symlink_to(victim, target_is_directory=True)
    (root / "pw.py").symlink_to(victim / "passwd")
    runs = [
        ["check", "--fix", "evil.py", "train.py"],
        ["check", "--add-noqa", "evil.py", "train.py"],
        ["check", "--fix", "evil.ipynb", "train.py"],
        ["check", "--fix", "vendor", "train.py"],
        ["check", "--add-noqa", "vendor/x.py"],
        ["check", "pw.py"],
        ["check", "--output-format", "json", "pw.py"],
    ]
    for args in runs:
        project("train.py", BAD)
        r = cli(*args, cwd=root)
        assert "Traceback" not in r.stderr, r.stderr
        assert _contents(victim) == before, args  # nothing written there, no cache made
        assert "hunter2" not in r.stdout + r.stderr, args
        assert r.returncode == 2, (args, r.stdout, r.stderr)  # the link is reported, not followed
        if "--fix" in args:  # the project's own file is fixed
            assert FIXED_LINE in (root / "train.py").read_text(), args
    assert (root / ".repro_lint_cache").is_dir()  # the cache is the project's
    r = cli("check", "pw.py", cwd=root)
    assert r.stderr.strip().splitlines() == ["repro-lint: error: pw.py: cannot read file: it is a link to a file outside the project"]


# -- 2. hostile ignore patterns ----------------------------------------------------------------
def test_hostile_ignore_patterns_are_matched_in_linear_time(cli, project):
    """Patterns whose usual translation to a regular expression backtracks for minutes per
    name (each `*` tried at every place) still ignore what they name; a pattern too long to
    match cheaply is skipped with one warning naming its file and line."""
    root = project.root
    a40 = "a" * 40
    project("pyproject.toml", '[project]\nname = "demo"\nversion = "0"\n\n[tool.repro-lint]\nexclude = ["' + "*a" * 12 + '*c.py"]\n')
    long_pattern = "*a" * 600 + "*d.py"
    project(".gitignore", "\n".join(["*a" * 12 + "*b.py", "**/a/" * 12 + "z/", long_pattern, "ignored_too.py"]) + "\n")
    project(f"{a40}.py", BAD)  # checked: no pattern names it
    project(f"{a40}b.py", BAD)  # ignored by the first pattern
    project(f"{a40}c.py", BAD)  # excluded by the configuration
    project(f"{a40}d.py", BAD)  # the skipped pattern would have named it: checked
    project("/".join(["a"] * 12) + "/z/train.py", BAD)  # ignored, twelve folders down
    project("ignored_too.py", BAD)  # the patterns after the skipped one still count
    started = time.monotonic()
    r = cli("check", "--no-cache", "--output-format", "concise", "-q", cwd=root, timeout=60)
    assert time.monotonic() - started < 30
    assert sorted(line.split(":")[0] for line in r.stdout.splitlines()) == [f"{a40}.py", f"{a40}d.py"], r.stdout
    shown = repr(long_pattern[:40] + "...")
    assert r.stderr.splitlines() == [f"repro-lint: warning: .gitignore:3: pattern skipped (longer than 1,000 characters): {shown}"]
    assert r.returncode == 1


# -- 3. memory on large valid files ------------------------------------------------------------
_PEAK = """\
import gc, resource, runpy, sys, threading
what = sys.argv[1]
if what == "parse":  # what the syntax tree alone costs, parsed where it can be this deep
    import ast
    gc.disable()  # (as the check does)
    sys.setrecursionlimit(60_000)
    threading.stack_size(256 * 1024 * 1024)
    trees = []
    worker = threading.Thread(target=lambda: trees.append(ast.parse(open(sys.argv[2], "rb").read())))
    worker.start()
    worker.join()
    assert trees
else:
    sys.argv = ["repro-lint", *sys.argv[2:]]
    try:
        runpy.run_module("repro_lint", run_name="__main__")
    except SystemExit:
        pass
sys.stdout.flush()
print("peak-kb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def _peak_kb(cwd, *args):
    from conftest import SRC

    env = dict(os.environ, PYTHONPATH=str(SRC))
    r = subprocess.run([sys.executable, "-c", _PEAK, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    peak = [line for line in r.stderr.splitlines() if line.startswith("peak-kb ")]
    assert peak, r.stderr
    return int(peak[-1].split()[1]), r


@pytest.mark.skipif(sys.platform != "linux", reason="peak memory read as Linux reports it (kB)")
def test_a_large_file_of_long_sums_costs_about_what_its_syntax_tree_costs(project):
    """6 MB of sums of 2,990 terms, each deeper than the recursion limit lets `ast` go in the
    main thread: the tree is made once, in the deep thread, not first here and then again."""
    line = " + ".join(["1"] * 2990)
    count = 6 * 1024 * 1024 // len(line) + 1
    text = "import numpy as np\n\n" + "".join(f"total{i} = {line}\n" for i in range(count)) + "print(np.random.rand(total0))\n"
    path = project("sums.py", text)
    parse_kb, _ = _peak_kb(project.root, "parse", str(path))
    check_kb, r = _peak_kb(project.root, "check", "--no-cache", "--output-format", "concise", "-q", "sums.py")
    assert "Traceback" not in r.stderr, r.stderr
    assert f"sums.py:{count + 3}:7: RPL101" in r.stdout, r.stdout  # analysed, not RPL001
    # the tree, and the interpreter with the checker's own modules: not a second tree
    assert check_kb < parse_kb * 1.1 + 48 * 1024, (check_kb, parse_kb)


# -- 6. workflow commands in file names --------------------------------------------------------
def _commands(lines):
    """The lines GitHub Actions' runner would run as workflow commands: `::name ...::` at the
    start after white space, or the older `##[name]` anywhere (`ActionCommand.TryParseV2`,
    `TryParse`); it reads a line up to CR or LF."""
    out = []
    for line in lines:
        if line.lstrip().startswith("::") and "::" in line.lstrip()[2:] or "##[" in line:
            out.append(line)
    return out


@pytest.mark.skipif(sys.platform == "win32", reason="names with `:`, newlines and escape characters")
def test_file_names_and_lines_are_no_workflow_commands(cli, project):
    root = project.root
    draws = "import numpy as np\n\nprint(np.random.rand(3))  # ##[set-output name=deploy]yes\n"
    names = ["::add-mask::secret.py", " ::add-mask::spaced.py", "a\n::error::newline.py", "c\r::add-mask::cr.py", "e\x1b]0;x\x07.py"]
    for name in names:
        project(name, draws)
    (root / "m\n::add-mask::missing.py").symlink_to(root / "nowhere")  # an error line names it
    env = {"GITHUB_ACTIONS": "true"}
    for fmt in ("text", "concise"):
        r = cli("check", "--no-cache", "--output-format", fmt, cwd=root, env=env)
        assert r.stdout.count(":3:7: RPL101") == len(names), r.stdout
        lines = (r.stdout + r.stderr).replace("\r", "\n").split("\n")
        assert _commands(lines) == [], fmt
        assert not any(c in r.stdout + r.stderr for c in "\x1b\x07"), fmt
    assert "./::add-mask::secret.py:3:7: RPL101" in r.stdout  # the same file, named so that no log runs it
    r = cli("check", "--no-cache", "--output-format", "github", cwd=root, env=env)
    annotations = r.stdout.splitlines()
    assert len(annotations) == len(names) and all(a.startswith("::warning file=") for a in annotations), r.stdout
    assert not [a for a in annotations if any(ord(c) < 0x20 or ord(c) == 0x7F for c in a)], annotations
    assert "file=e%1B]0;x%07.py," in r.stdout and "file=a%0A%3A%3Aerror%3A%3Anewline.py," in r.stdout
    assert _commands(r.stderr.replace("\r", "\n").split("\n")) == []


# -- 8. leftovers of an interrupted --fix ---------------------------------------------------
@pytest.mark.skipif(sys.platform == "win32", reason="file locks as POSIX has them")
def test_a_later_fix_removes_what_a_killed_fix_left(cli, project, tmp_path_factory):
    """What SIGKILL during a write leaves (documented): `.NAME.XXXXXXXX.repro-lint.tmp` with
    part of the fixed text. The next `--fix` removes it, but not one that a run still writing
    holds, nor anything else."""
    root = project.root
    project("train.py", BAD)
    project("pkg/model.py", BAD)
    an_hour_ago = time.time() - 3600
    stale = [root / ".train.py.k3j4h5g6.repro-lint.tmp", root / "pkg" / ".model.py.a_b8c9d0.repro-lint.tmp"]
    for path in stale:
        path.write_text(BAD[:12])
        os.utime(path, (an_hour_ago, an_hour_ago))
    busy = root / ".utils.py.zz99yy88.repro-lint.tmp"  # a run that is writing it now
    busy.write_text(BAD[:12])
    os.utime(busy, (an_hour_ago, an_hour_ago))
    outside = tmp_path_factory.mktemp("outside") / "keep.txt"
    outside.write_text("keep\n")
    link = root / ".link.py.qqqqqqqq.repro-lint.tmp"
    link.symlink_to(outside)
    others = [project("notes.tmp", "mine\n"), project(".train.py.repro-lint.tmp", "not a name the writer makes\n")]
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\nfd = os.open(sys.argv[1], os.O_RDWR)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(120)\n", str(busy)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        r = cli("check", "--fix", "--output-format", "concise", cwd=root)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
        assert FIXED_LINE in (root / "train.py").read_text()
        assert [p for p in stale if p.exists()] == []
        assert busy.exists() and link.is_symlink() and outside.read_text() == "keep\n"
        assert all(p.exists() for p in others)
    finally:
        holder.kill()
        holder.wait()
    # once its writer is gone, the next run that writes removes it too
    project("train.py", BAD)
    r = cli("check", "--add-noqa", cwd=root)
    assert r.returncode == 0, r.stderr
    assert not busy.exists()


# -- 7. the language server and its workspace -----------------------------------------------
def _lsp_client(root):
    from conftest import REPO, SRC

    sys.path.insert(0, str(REPO / "bench"))
    from lsp_client import LspClient

    env = dict(os.environ, PYTHONPATH=str(SRC))
    return LspClient([sys.executable, "-m", "repro_lint", "server"], cwd=root, env=env)


def _open(c, uri, text):
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})


def _actions(c, uri, diags):
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}}
    return c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": whole, "context": {"diagnostics": diags}})


DRAWS_TOO = "import numpy as np\n\nfrom sampling import draw\n\nprint(draw(), np.random.rand(3))\n"
SAMPLING = "import numpy as np\n\n\ndef draw():\n    return np.random.rand(3)\n"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_the_language_server_keeps_to_its_workspace(project, tmp_path_factory):
    """A document outside the workspace folder is checked alone (its folder, here with the
    module it imports, is not read as a project), and a link in the workspace to a file
    outside gets no action that would edit that file."""
    pytest.importorskip("pygls")
    root = project.root
    project("train.py", BAD)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "sampling.py").write_text(SAMPLING)
    outside = elsewhere / "x.py"
    outside.write_text(DRAWS_TOO)
    (root / "linked.py").symlink_to(outside)
    with _lsp_client(root) as c:
        c.initialize(root)
        # in the workspace: findings and fixes as ever
        inside = (root / "train.py").as_uri()
        _open(c, inside, BAD)
        diags = c.diagnostics(inside, version=1)
        assert [d["code"] for d in diags] == ["RPL101"]
        fixes = [a for a in _actions(c, inside, diags) if a["title"].startswith("RPL101:")]
        assert fixes and {ch["textDocument"]["uri"] for ch in fixes[0]["edit"]["documentChanges"]} == {inside}
        for uri in (outside.as_uri(), (root / "linked.py").as_uri()):
            _open(c, uri, DRAWS_TOO)
            diags = c.diagnostics(uri, version=1)
            # its own draw, checked from its text alone: nothing of sampling.py, which was not read
            assert [d["code"] for d in diags] == ["RPL101"], diags
            assert "sampling.py" not in json.dumps(diags) and "imported module" not in json.dumps(diags), diags
            assert _actions(c, uri, diags) == [], uri
    assert outside.read_text() == DRAWS_TOO


def test_the_language_server_refuses_a_message_too_large_to_take(project):
    pytest.importorskip("pygls")
    with _lsp_client(project.root) as c:
        c.initialize(project.root)
        c.proc.stdin.write(b"Content-Length: 1099511627776\r\n\r\n{}")
        c.proc.stdin.flush()
        assert c.proc.wait(timeout=60) == 2
        time.sleep(0.5)  # (the last of stderr read)
        errors = "".join(c.stderr)
        assert "MemoryError" not in errors and "Traceback" not in errors, errors
        assert errors.strip().splitlines() == [
            "repro-lint server: error: a message of 1,099,511,627,776 bytes (the most taken: 268,435,456) refused; stopping"
        ], errors
