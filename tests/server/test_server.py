"""`repro-lint server` driven over stdio by a real LSP client (bench/lsp_client.py), as an
editor drives it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SRC

sys.path.insert(0, str(REPO / "bench"))
from lsp_client import LspClient, LspError, apply_edits, uri_of  # noqa: E402

pytest.importorskip("pygls")

UTILS = """\
import random

import numpy as np
import torch


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
"""

TRAIN = """\
import numpy as np
import torch

from utils import set_seed


def main():
    set_seed(0)
    x = np.random.rand(3)
    y = torch.randn(3)
    print(x, y)


if __name__ == "__main__":
    main()
"""

UNSEEDED = """\
import numpy as np


def main():
    print(np.random.rand(3))


if __name__ == "__main__":
    main()
"""


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _server(root: Path, cmd=None) -> LspClient:
    return LspClient(cmd or [sys.executable, "-m", "repro_lint", "server"], cwd=root, env=_env())


@pytest.fixture
def proj(project):
    project("utils.py", UTILS)
    project("train.py", TRAIN)
    project("solo.py", UNSEEDED)
    return project.root


def _codes(diags):
    return sorted(d["code"] for d in diags)


def _edits_for(action, uri):
    out = []
    for change in action["edit"]["documentChanges"]:
        if change["textDocument"]["uri"] == uri:
            out.extend(change["edits"])
    return out


def test_diagnostics_fix_and_unsaved_seeder(proj):
    solo, train, utils = proj / "solo.py", proj / "train.py", proj / "utils.py"
    with _server(proj) as c:
        c.initialize(proj)
        uri = c.open(solo, UNSEEDED)
        diags = c.diagnostics(uri, version=1)
        assert _codes(diags) == ["RPL101"]
        d = diags[0]
        # a warning, as in every output (an error only for a file that does not parse)
        assert d["source"] == "repro-lint" and d["severity"] == 2
        # not installed from a git URL: the document the installed package carries
        href = d["codeDescription"]["href"]
        assert href.startswith("file://") and href.endswith("/RPL101.toml")
        assert Path(href[len("file://"):]).read_text().find('code = "RPL101"') >= 0
        assert d["range"]["start"] == {"line": 4, "character": 10}  # `np.random.rand(3)`
        assert "\nhelp: " in d["message"]

        # the quick fix, applied as an editor applies it: the finding is gone
        actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": d["range"], "context": {"diagnostics": [d]}})
        titles = [a["title"] for a in actions]
        fix = next(a for a in actions if a["kind"] == "quickfix" and a["title"].startswith("RPL101:"))
        assert fix["isPreferred"] is True
        assert any(t.startswith("Ignore RPL101") for t in titles)
        assert fix["edit"]["documentChanges"][0]["textDocument"] == {"uri": uri, "version": 1}
        fixed = apply_edits(UNSEEDED, _edits_for(fix, uri))
        assert "np.random.seed(" in fixed
        version = c.change(solo, fixed)
        assert _codes(c.diagnostics(uri, version=version)) == []

        # the program's seeding helper edited in another open document, unsaved
        t = c.open(train, TRAIN)
        assert _codes(c.diagnostics(t, version=1)) == []
        u = c.open(utils, UTILS)
        assert _codes(c.diagnostics(u, version=1)) == []
        mark = len(c.notifications)
        c.change(utils, UTILS.replace("    np.random.seed(seed)\n", ""))
        after = c.diagnostics(t, after=mark)
        assert _codes(after) == ["RPL101"] and "numpy" in after[0]["message"]
        assert utils.read_text() == UTILS  # nothing was written
        mark = len(c.notifications)
        c.change(utils, UTILS)
        assert _codes(c.diagnostics(t, after=mark)) == []


def test_file_changed_on_disk_updates_open_entry(proj):
    train, utils = proj / "train.py", proj / "utils.py"
    with _server(proj) as c:
        c.initialize(proj)
        t = c.open(train, TRAIN)
        assert _codes(c.diagnostics(t, version=1)) == []
        utils.write_text(UTILS.replace("    torch.manual_seed(seed)\n", ""))
        mark = len(c.notifications)
        c.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri_of(utils), "type": 2}]})
        after = c.diagnostics(t, after=mark)
        assert _codes(after) == ["RPL101"] and "torch" in after[0]["message"]


def test_syntax_error_and_noqa_and_fix_all(proj):
    solo = proj / "solo.py"
    broken = "import numpy as np\n\ndef main(:\n    pass\n"
    with _server(proj) as c:
        c.initialize(proj)
        uri = c.open(solo, broken)
        diags = c.diagnostics(uri, version=1)
        assert _codes(diags) == ["RPL001"] and diags[0]["range"]["start"]["line"] == 2
        # the server keeps going: the same document, fixed, is checked again
        version = c.change(solo, UNSEEDED)
        diags = c.diagnostics(uri, version=version)
        assert _codes(diags) == ["RPL101"]
        # "fix all" only, as editors ask for it on save
        actions = c.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": [], "only": ["source.fixAll"]},
        })
        assert [a["kind"] for a in actions] == ["source.fixAll.repro-lint"]
        assert "np.random.seed(" in apply_edits(UNSEEDED, _edits_for(actions[0], uri))
        # ignore the rule on the line: `# noqa: RPL101`, and the finding is suppressed
        actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": diags[0]["range"], "context": {"diagnostics": diags}})
        noqa = next(a for a in actions if a["title"].startswith("Ignore RPL101"))
        text = apply_edits(UNSEEDED, _edits_for(noqa, uri))
        assert "print(np.random.rand(3))  # noqa: RPL101\n" in text
        version = c.change(solo, text)
        assert _codes(c.diagnostics(uri, version=version)) == []


def test_resolve_gives_the_edit_later(proj):
    solo = proj / "solo.py"
    caps = {
        "textDocument": {"codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix"]}}, "resolveSupport": {"properties": ["edit"]}}},
        "workspace": {"workspaceEdit": {"documentChanges": False}},
    }
    with _server(proj) as c:
        c.initialize(proj, capabilities=caps)
        uri = c.open(solo, UNSEEDED)
        d = c.diagnostics(uri, version=1)[0]
        actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": d["range"], "context": {"diagnostics": [d]}})
        assert actions and all("edit" not in a for a in actions)
        fix = next(a for a in actions if a["title"].startswith("RPL101:"))
        done = c.request("codeAction/resolve", fix)
        assert "np.random.seed(" in apply_edits(UNSEEDED, done["edit"]["changes"][uri])
        # an action offered for a version the document no longer has is refused
        c.change(solo, UNSEEDED + "\n")
        with pytest.raises(LspError):
            c.request("codeAction/resolve", fix)


NOTEBOOK_CELLS = ["import numpy as np", "# Samples", "x = np.random.rand(3)\nprint(x)"]


def test_notebook_document_cells(proj):
    nb = proj / "explore.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    cells = [f"vscode-notebook-cell:{nb.as_posix()}#c{i}" for i in range(3)]
    with _server(proj) as c:
        c.initialize(proj)
        c.notify("notebookDocument/didOpen", {
            "notebookDocument": {
                "uri": uri_of(nb), "notebookType": "jupyter-notebook", "version": 1,
                "cells": [{"kind": 2, "document": cells[0]}, {"kind": 1, "document": cells[1]}, {"kind": 2, "document": cells[2]}],
            },
            "cellTextDocuments": [
                {"uri": u, "languageId": "python" if i != 1 else "markdown", "version": 1, "text": t}
                for i, (u, t) in enumerate(zip(cells, NOTEBOOK_CELLS))
            ],
        })
        diags = c.diagnostics(cells[2])
        assert _codes(diags) == ["RPL101"]
        assert diags[0]["range"]["start"] == {"line": 0, "character": 4}  # line 1 of cell 3
        assert c.diagnostics(cells[0]) == []
        # the fix goes into the cell that needs it, against the cell's version
        actions = c.request("textDocument/codeAction", {"textDocument": {"uri": cells[2]}, "range": diags[0]["range"], "context": {"diagnostics": diags}})
        fix = next(a for a in actions if a["title"].startswith("RPL101:"))
        changed = {ch["textDocument"]["uri"]: ch for ch in fix["edit"]["documentChanges"]}
        assert all(ch["textDocument"]["version"] == 1 for ch in changed.values())
        new_text = {u: apply_edits(t, changed[u]["edits"]) if u in changed else t for u, t in zip(cells, NOTEBOOK_CELLS)}
        assert "np.random.seed(" in new_text[cells[0]] + new_text[cells[2]]
        assert nb.read_text().startswith('{"cells": []')  # nothing written


def test_notebook_file_as_text(proj):
    nb = proj / "explore.ipynb"
    text = json.dumps({
        "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["import numpy as np\n", "x = np.random.rand(3)\n"]}],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5,
    }, indent=1)
    nb.write_text(text)
    with _server(proj) as c:
        c.initialize(proj)
        uri = c.open(nb, text, language="json")
        diags = c.diagnostics(uri, version=1)
        assert _codes(diags) == ["RPL101"]
        line = diags[0]["range"]["start"]["line"]
        assert "np.random.rand(3)" in text.splitlines()[line]


FAULTY = """
import sys
import repro_lint.check.workspace as ws

real = ws.ProjectState.check
def check(self, paths):
    paths = list(paths)
    if any(p.name == "boom.py" for p in paths) and open(paths[0]).read():
        raise RuntimeError("injected failure in a check")
    return real(self, paths)
ws.ProjectState.check = check
def code_actions(*args, **kwargs):
    raise RuntimeError("injected failure in a request")
import repro_lint.server.lsp as lsp
lsp.code_actions = code_actions
from repro_lint.server import main
sys.exit(main([]))
"""


def test_a_failure_does_not_stop_the_server(proj):
    solo = proj / "solo.py"
    (proj / "boom.py").write_text("x = 1\n")
    with _server(proj, [sys.executable, "-c", FAULTY]) as c:
        c.initialize(proj)
        uri = c.open(solo, UNSEEDED)
        d = c.diagnostics(uri, version=1)
        assert _codes(d) == ["RPL101"]
        with pytest.raises(LspError, match="injected failure in a request"):
            c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": d[0]["range"], "context": {"diagnostics": d}})
        # a check that fails is logged; the documents keep their diagnostics, and later work goes on
        mark = len(c.notifications)
        c.open(proj / "boom.py", "x = 1\n")
        _, _, msg = c.wait_for(lambda m: m.get("method") == "window/logMessage" and "injected failure in a check" in m["params"]["message"], after=mark)
        assert msg["params"]["type"] == 1
        boom = uri_of(proj / "boom.py")
        assert not any(m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == boom for _, m in c.notifications[mark:])
        c.notify("textDocument/didClose", {"textDocument": {"uri": boom}})
        version = c.change(solo, UNSEEDED.replace("rand(3)", "rand(4)"))
        assert _codes(c.diagnostics(uri, version=version)) == ["RPL101"]
        assert c.proc.poll() is None


def test_without_the_extra_a_clear_error(tmp_path):
    code = "import sys; sys.modules['pygls'] = None; from repro_lint.cli.main import main; sys.exit(main(['server']))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "repro-lint: error: `repro-lint server` needs pygls 2: pip install 'pygls>=2,<3', or install repro-lint with its `server` extra"


def test_settings_from_pyproject_and_their_change(project):
    project("solo.py", UNSEEDED)
    pyproject = project.root / "pyproject.toml"
    pyproject.write_text('[project]\nname = "demo"\nversion = "0"\n\n[tool.repro-lint]\nignore = ["RPL101"]\n')
    with _server(project.root) as c:
        c.initialize(project.root)
        uri = c.open(project.root / "solo.py", UNSEEDED)
        assert c.diagnostics(uri, version=1) == []
        pyproject.write_text('[project]\nname = "demo"\nversion = "0"\n\n[tool.repro-lint]\nseed = 7\n')
        mark = len(c.notifications)
        c.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri_of(pyproject), "type": 2}]})
        diags = c.diagnostics(uri, after=mark)
        assert _codes(diags) == ["RPL101"]
        actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": diags[0]["range"], "context": {"diagnostics": diags}})
        fix = next(a for a in actions if a["title"].startswith("RPL101:"))
        assert "SEED = 7" in apply_edits(UNSEEDED, _edits_for(fix, uri))  # the fix uses the new setting
        # an invalid configuration is reported, and the defaults are used
        pyproject.write_text('[project]\nname = "demo"\nversion = "0"\n\n[tool.repro-lint]\nbogus = 1\n')
        mark = len(c.notifications)
        c.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri_of(pyproject), "type": 2}]})
        _, _, msg = c.wait_for(lambda m: m.get("method") == "window/showMessage", after=mark)
        assert "unknown configuration key `tool.repro-lint.bogus`" in msg["params"]["message"]
        assert _codes(c.diagnostics(uri, after=mark)) == ["RPL101"]


NOISY = "import numpy as np\n\n\ndef noise():\n    return np.random.rand()\n"
USES_LEAK = "from leak import noise\n\n\ndef main():\n    print(noise())\n\n\nif __name__ == '__main__':\n    main()\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_files_appearing_on_disk_are_read_as_check_reads_them(tmp_path):
    """Files the project gains while the server runs are read as `repro-lint check` reads
    them: a FIFO named like a module does not hang the server, and a link to a file outside
    the project is not read (its code would show in the findings)."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    (root / "run.py").write_text(USES_LEAK)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "leak.py").write_text(NOISY)
    with _server(root) as c:
        c.initialize(root)
        uri = c.open(root / "run.py", USES_LEAK)
        assert _codes(c.diagnostics(uri, version=1)) == []
        os.mkfifo(root / "pipe.py")
        (root / "leak.py").symlink_to(tmp_path / "elsewhere" / "leak.py")
        mark = len(c.notifications)
        c.notify("workspace/didChangeWatchedFiles", {"changes": [
            {"uri": uri_of(root / "pipe.py"), "type": 1}, {"uri": (root / "leak.py").absolute().as_uri(), "type": 1},
        ]})
        version = c.change(root / "run.py", USES_LEAK.replace("print(noise())", "print(noise(), 1)"))
        assert _codes(c.diagnostics(uri, version=version, after=mark, timeout=30)) == []
        # a file of the project that becomes a FIFO, changed on disk
        (root / "run2.py").write_text("x = 1\n")
        mark = len(c.notifications)
        c.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri_of(root / "run2.py"), "type": 1}]})
        version = c.change(root / "run.py", USES_LEAK)
        c.diagnostics(uri, version=version, after=mark, timeout=30)
        (root / "run2.py").unlink()
        os.mkfifo(root / "run2.py")
        mark = len(c.notifications)
        c.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri_of(root / "run2.py"), "type": 2}]})
        version = c.change(root / "run.py", USES_LEAK.replace("print(noise())", "print(noise(), 2)"))
        assert _codes(c.diagnostics(uri, version=version, after=mark, timeout=30)) == []
        assert c.proc.poll() is None
    # the command line agrees: the link's target is not read
    proc = subprocess.run([sys.executable, "-m", "repro_lint", "check", "run.py", "--no-cache"], cwd=root, env=_env(), capture_output=True, text=True, timeout=120)
    assert "RPL101" not in proc.stdout, proc.stdout
