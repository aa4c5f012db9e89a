"""The built wheel carries the rule catalog, and an installed (non-editable) package finds it."""

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _fresh_venv_with(wheel: Path, env_dir: Path) -> Path:
    """A new virtual environment holding the wheel; its dependencies come from the folders
    this interpreter takes them from (no package index needed), behind the wheel."""
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(env_dir)
    site_dir = next((env_dir / "lib").glob("python*/site-packages"))
    deps = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]
    (site_dir / "zz_test_dependencies.pth").write_text("".join(f"{p}\n" for p in deps))
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(site_dir), str(wheel)], check=True)
    return site_dir


@pytest.mark.slow
def test_sdist_and_wheel_build_pass_twine_check_and_the_wheel_runs(tmp_path):
    """What publishing needs, checked without publishing: `python -m build` makes an sdist
    and, from it, a wheel; `twine check` accepts both; the wheel installed in a fresh virtual
    environment runs `repro-lint check` from its console script, rule catalog included."""
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(REPO)],
        check=True, capture_output=True, text=True,
    )
    [wheel] = dist.glob("repro_lint-*.whl")
    [sdist] = dist.glob("repro_lint-*.tar.gz")
    r = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.count("PASSED") == 2, r.stdout + r.stderr
    import tarfile
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "repro_lint/_rules/RPL101.toml" in names
    assert "repro_lint/_rules/catalog/rng.toml" in names
    # the probe's report schema, and the start-up file its recorded child processes need
    assert "repro_lint/probe/report.schema.json" in names
    assert "repro_lint/probe/site/sitecustomize.py" in names
    with tarfile.open(sdist) as tar:
        members = tar.getnames()
    assert any(m.endswith("/rules/RPL101.toml") for m in members) and any(m.endswith("/README.md") for m in members)

    env_dir = tmp_path / "venv"
    site_dir = _fresh_venv_with(wheel, env_dir)
    py = env_dir / "bin" / "python"
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
    script = site_dir / "bin" / "repro-lint"  # pip --target puts console scripts here
    r = subprocess.run([str(py), str(script), "check", "train.py", "--output-format", "sarif"], cwd=work,
                       capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"})
    assert r.returncode == 1, r.stderr
    driver = json.loads(r.stdout)["runs"][0]["tool"]["driver"]
    # installed from a file: no public location is known, so no link is made up
    assert "informationUri" not in driver and all("helpUri" not in rule for rule in driver["rules"])
    assert sorted(p.name for p in work.iterdir()) == ["train.py"]  # no cache beside a lone script

    # installed from a git URL, pip records the repository and commit (PEP 610): links go there
    [info] = site_dir.glob("repro_lint-*.dist-info")
    commit = "0123456789abcdef0123456789abcdef01234567"
    (info / "direct_url.json").write_text(json.dumps(
        {"url": "https://user:token@github.com/example/repro-lint.git", "vcs_info": {"vcs": "git", "commit_id": commit}}
    ))
    r = subprocess.run([str(py), str(script), "check", "train.py", "--output-format", "sarif"], cwd=work,
                       capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    driver = json.loads(r.stdout)["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://github.com/example/repro-lint"  # never the credentials
    rule = next(rule for rule in driver["rules"] if rule["id"] == "RPL101")
    assert rule["helpUri"] == f"https://github.com/example/repro-lint/blob/{commit}/rules/RPL101.toml"


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
