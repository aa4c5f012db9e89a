"""The server from a real editor: Neovim, configured exactly as the README's "Neovim" section
says: the first block (Neovim 0.11's `vim.lsp.config`, no plugin) when `nvim` on PATH is 0.11
or later, the second (nvim-lspconfig) when REPRO_LINT_NVIM_LSPCONFIG names an nvim-lspconfig
checkout that supports the installed Neovim. Skipped otherwise."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SRC

LSPCONFIG = os.environ.get("REPRO_LINT_NVIM_LSPCONFIG")


def _nvim_version() -> tuple:
    if shutil.which("nvim") is None:
        return ()
    out = subprocess.run(["nvim", "--version"], capture_output=True, text=True).stdout
    m = re.match(r"NVIM v(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else ()


pytestmark = [pytest.mark.slow, pytest.mark.skipif(not _nvim_version(), reason="needs nvim")]

UNSEEDED = 'import numpy as np\n\n\ndef main():\n    print(np.random.rand(3))\n\n\nif __name__ == "__main__":\n    main()\n'


def _readme_blocks() -> list:
    readme = (REPO / "README.md").read_text()
    section = re.search(r"### Neovim\n(.*?)\n### ", readme, re.S).group(1)
    return re.findall(r"```lua\n(.*?)```", section, re.S)


@pytest.mark.skipif(_nvim_version() < (0, 11), reason="needs Neovim 0.11 or later")
def test_neovim_011_readme_config_diagnostics_and_fix(tmp_path):
    _check_with(tmp_path, _readme_blocks()[0], plugin=None)


@pytest.mark.skipif(not LSPCONFIG, reason="needs REPRO_LINT_NVIM_LSPCONFIG")
def test_neovim_lspconfig_readme_config_diagnostics_and_fix(tmp_path):
    _check_with(tmp_path, _readme_blocks()[1], plugin=Path(LSPCONFIG))


def _check_with(tmp_path, config: str, plugin) -> None:
    prelude = ""
    if plugin is not None:
        pack = tmp_path / "pack" / "plugins" / "start"
        pack.mkdir(parents=True)
        (pack / "nvim-lspconfig").symlink_to(plugin.resolve())
        prelude = f'vim.opt.packpath:prepend("{tmp_path}")\nvim.cmd("packloadall")\n'
    init = tmp_path / "init.lua"
    init.write_text(prelude + config)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "repro-lint"  # `repro-lint` on PATH, as an installed one is
    exe.write_text(f'#!/bin/sh\nPYTHONPATH="{SRC}" exec "{sys.executable}" -m repro_lint "$@"\n')
    exe.chmod(0o755)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    (project / "solo.py").write_text(UNSEEDED)
    script = (REPO / "tests" / "integration" / "editors" / "neovim_fix.lua").read_text().replace("/tmp/nvimtest/result.txt", str(tmp_path / "result.txt"))
    (tmp_path / "check.lua").write_text(script)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", HOME=str(tmp_path))
    subprocess.run(["nvim", "--headless", "-u", str(init), "solo.py", "-c", f"luafile {tmp_path / 'check.lua'}"],
                   cwd=project, env=env, timeout=180, capture_output=True)
    result = (tmp_path / "result.txt").read_text()
    assert "diagnostics arrived: true" in result
    assert "RPL101 4:10" in result
    assert "diagnostics cleared after the fix: true" in result
    assert "np.random.seed(SEED)" in result
    assert (project / "solo.py").read_text() == UNSEEDED  # the edit is the buffer's, not written
