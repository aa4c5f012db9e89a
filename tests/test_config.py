"""Configuration in pyproject.toml: options work, mistakes are one clear line (exit 2)."""

BAD = "import numpy as np\n\nprint(np.random.rand(3))\n"


def _cfg(project, body):
    project("pyproject.toml", '[project]\nname = "x"\nversion = "0"\n\n[tool.repro-lint]\n' + body)


def test_unknown_key(cli, project):
    project("train.py", BAD)
    _cfg(project, "selct = ['RPL1']\n")
    r = cli(cwd=project.root)
    assert r.returncode == 2
    assert "pyproject.toml: unknown configuration key `tool.repro-lint.selct`" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_wrong_type(cli, project):
    project("train.py", BAD)
    _cfg(project, "seed = 'zero'\n")
    r = cli(cwd=project.root)
    assert r.returncode == 2 and "`tool.repro-lint.seed` must be an integer, got a string" in r.stderr


def test_unknown_code(cli, project):
    project("train.py", BAD)
    _cfg(project, "ignore = ['RPL777']\n")
    r = cli(cwd=project.root)
    assert r.returncode == 2 and "`tool.repro-lint.ignore`: unknown rule code `RPL777`" in r.stderr


def test_invalid_toml_names_line(cli, project):
    project("train.py", BAD)
    project("pyproject.toml", '[project]\nname = "x"\n\n[tool.repro-lint]\nselect = [\n')
    r = cli(cwd=project.root)
    assert r.returncode == 2 and "invalid TOML" in r.stderr and "line" in r.stderr
    assert "Traceback" not in r.stderr


def test_select_ignore_per_file_ignores(cli, project):
    project("train.py", BAD)
    project("scripts/run.py", BAD)
    _cfg(project, "per-file-ignores = { 'scripts/*' = ['RPL101'] }\n")
    r = cli("--format", "concise", "-q", "--no-cache", cwd=project.root)
    assert r.stdout.splitlines() == ["train.py:3:7: RPL101 [*] numpy's global RNG is drawn from but never seeded in this program"]
    _cfg(project, "ignore = ['RPL1']\n")
    assert cli("--no-cache", cwd=project.root).returncode == 0
    _cfg(project, "select = ['RPL104']\n")
    assert cli("--no-cache", cwd=project.root).returncode == 0


def test_extra_seeders_and_consumers(cli, project):
    project("train.py", "import numpy as np\nfrom labkit import init_rng, sample\n\ninit_rng(3)\nprint(sample(), np.random.rand(1))\n")
    def found():
        r = cli("--format", "concise", "-q", "--no-cache", cwd=project.root)
        return [l.split(" RPL101 [*] ")[1].split("'")[0].split()[0] for l in r.stdout.splitlines()]

    # `init_rng` does not match the seed-name heuristic and `sample` is unknown
    assert found() == ["numpy"]
    _cfg(project, "rng-consumers = { 'labkit.sample' = 'python' }\n")
    assert found() == ["Python", "numpy"]
    _cfg(project, "seeders = { 'labkit.init_rng' = ['python', 'numpy'] }\nrng-consumers = { 'labkit.sample' = 'python' }\n")
    assert found() == []
    _cfg(project, "seeders = { 'labkit.init_rng' = ['jax'] }\n")
    r = cli(cwd=project.root)
    assert r.returncode == 2 and "unknown source `jax`" in r.stderr


def test_config_option_overrides(cli, project, tmp_path):
    project("train.py", BAD)
    other = tmp_path / "alt.toml"
    other.write_text("[tool.repro-lint]\nignore = ['RPL101']\n")
    assert cli("--no-cache", "--config", other, cwd=project.root).returncode == 0
    r = cli("--config", tmp_path / "missing.toml", cwd=project.root)
    assert r.returncode == 2 and "configuration file not found" in r.stderr
