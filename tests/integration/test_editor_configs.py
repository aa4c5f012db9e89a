"""The Helix configuration of the README, read as Helix reads `languages.toml` and run as
Helix runs it: no Helix build installs from the package registries the tests reach (Debian
has none, nor does PyPI), so the test takes the block's TOML, checks what Helix requires of
it, and starts the server with its `command` and `args`, sending `config` as the
initialization options, as Helix does."""

import os
import re
import sys
try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

import pytest

from conftest import REPO, SRC

sys.path.insert(0, str(REPO / "bench"))
from lsp_client import LspClient  # noqa: E402

pytest.importorskip("pygls")

UNSEEDED = 'import numpy as np\n\n\ndef main():\n    print(np.random.rand(3))\n\n\nif __name__ == "__main__":\n    main()\n'


def _helix_block() -> dict:
    readme = (REPO / "README.md").read_text()
    section = re.search(r"### Helix\n(.*?)\n## ", readme, re.S).group(1)
    return tomllib.loads(re.search(r"```toml\n(.*?)```", section, re.S).group(1))


def test_helix_languages_toml_is_what_helix_reads():
    config = _helix_block()
    server = config["language-server"]["repro-lint"]
    # Helix's language-server table: `command` a string, `args` a list of strings, `config` a table
    assert isinstance(server["command"], str) and all(isinstance(a, str) for a in server["args"])
    assert isinstance(server.get("config", {}), dict)
    [python] = [lang for lang in config["language"] if lang["name"] == "python"]
    # a language lists servers by name; each must be defined here or be one Helix ships
    assert "repro-lint" in python["language-servers"]
    assert set(python["language-servers"]) - set(config["language-server"]) <= {"ruff", "pylsp", "pyright", "jedi"}


def test_helix_config_starts_the_server_and_gets_diagnostics(tmp_path):
    config = _helix_block()
    server = config["language-server"]["repro-lint"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / server["command"]  # the command on PATH, as an installed one is
    exe.write_text(f'#!/bin/sh\nPYTHONPATH="{SRC}" exec "{sys.executable}" -m repro_lint "$@"\n')
    exe.chmod(0o755)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    (project / "solo.py").write_text(UNSEEDED)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    with LspClient([str(exe), *server["args"]], cwd=project, env=env) as client:
        client.initialize(project, options=server.get("config"))
        uri = client.open(project / "solo.py", UNSEEDED)
        diags = client.diagnostics(uri, version=1)
    assert [d["code"] for d in diags] == ["RPL101"] and diags[0]["range"]["start"] == {"line": 4, "character": 10}
