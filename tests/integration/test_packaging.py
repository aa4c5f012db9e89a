"""The built wheel carries the rule catalog, and an installed (non-editable) package finds it."""

import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_installed_wheel_finds_catalog(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(REPO)],
        check=True, capture_output=True, text=True,
    )
    [wheel] = dist.glob("repro_lint-*.whl")
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "repro_lint/_rules/RPL101.toml" in names
    assert "repro_lint/_rules/catalog/rng.toml" in names
    # the probe's report schema, and the start-up file its recorded child processes need
    assert "repro_lint/probe/report.schema.json" in names
    assert "repro_lint/probe/site/sitecustomize.py" in names
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site_dir = next((env_dir / "lib").glob("python*/site-packages"))
    # the dependencies come from the folders this interpreter takes them from (a virtualenv's
    # own, which "system site-packages" of a venv made from it would miss); the wheel itself
    # goes into the new venv, ahead of them
    deps = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]
    (site_dir / "zz_test_dependencies.pth").write_text("".join(f"{p}\n" for p in deps))
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(site_dir), str(wheel)], check=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    out = subprocess.run(
        [str(py), "-c", "import repro_lint.core.catalog as c; print(c.rules_dir()); print(len(c.rule_docs()))"],
        cwd=work, capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"},
    )
    rules_dir, count = out.stdout.split()
    assert rules_dir.startswith(str(env_dir)) and rules_dir.endswith("repro_lint/_rules")
    assert int(count) >= 5
    (work / "train.py").write_text("import numpy as np\nprint(np.random.rand(2))\n")
    r = subprocess.run([str(py), "-m", "repro_lint", "check", "train.py", "--no-cache"], cwd=work,
                       capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"})
    assert r.returncode == 1 and "RPL101" in r.stdout, r.stdout + r.stderr


def test_core_does_not_import_torch_or_numpy(project):
    """The linter runs without torch and numpy installed: it must never import them."""
    project("train.py", "import torch\nimport numpy as np\nprint(torch.rand(1), np.random.rand(1))\n")
    code = (
        "import sys, runpy\n"
        "sys.modules['torch'] = None\nsys.modules['numpy'] = None\n"  # importing them now fails
        "sys.argv = ['repro-lint', 'check', '--no-cache', '.']\n"
        "from repro_lint.cli.main import main\nsys.exit(main())\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=project.root, capture_output=True, text=True,
                       env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"})
    assert r.returncode == 1, r.stderr
    assert "RPL101" in r.stdout
