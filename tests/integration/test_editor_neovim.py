"""The server from a real editor: Neovim with nvim-lspconfig, configured exactly as the
README's "Neovim" section says. Skipped unless `nvim` is on PATH and REPRO_LINT_NVIM_LSPCONFIG
names an nvim-lspconfig checkout (a version that supports the installed Neovim)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SRC

LSPCONFIG = os.environ.get("REPRO_LINT_NVIM_LSPCONFIG")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("nvim") is None or not LSPCONFIG, reason="needs nvim and REPRO_LINT_NVIM_LSPCONFIG"),
]

UNSEEDED = 'import numpy as np\n\n\ndef main():\n    print(np.random.rand(3))\n\n\nif __name__ == "__main__":\n    main()\n'


def test_neovim_readme_config_diagnostics_and_fix(tmp_path):
    pack = tmp_path / "pack" / "plugins" / "start"
    pack.mkdir(parents=True)
    (pack / "nvim-lspconfig").symlink_to(Path(LSPCONFIG).resolve())
    readme = (REPO / "README.md").read_text()
    config = re.search(r"### Neovim\n\n.*?```lua\n(.*?)```", readme, re.S).group(1)
    init = tmp_path / "init.lua"
    init.write_text(f'vim.opt.packpath:prepend("{tmp_path}")\nvim.cmd("packloadall")\n' + config)
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
