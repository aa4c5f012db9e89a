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


def test_values_that_would_write_broken_programs_are_refused(cli, project):
    """A seed numpy cannot take, or a torch version that is no version, is one clear line
    (a fix writing `np.random.seed(-1)` would make the fixed program crash)."""
    project("train.py", BAD)
    cases = {
        "seed = -1\n": "`tool.repro-lint.seed` must be between 0 and 4294967295",
        f"seed = {2**32}\n": "`tool.repro-lint.seed` must be between 0 and 4294967295",
        "target-torch-version = 'banana'\n": "`tool.repro-lint.target-torch-version`: `banana` is not a release",
        "target-torch-version = '>=two'\n": "`tool.repro-lint.target-torch-version`: `>=two` is not a version specifier",
        "target-torch-version = ' '\n": "`tool.repro-lint.target-torch-version`: it is empty",
    }
    for body, message in cases.items():
        _cfg(project, body)
        r = cli("--no-cache", cwd=project.root)
        assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, (body, r.stderr)
    for body in (f"seed = {2**32 - 1}\n", "target-torch-version = '>=2.1,<3'\n", "target-torch-version = '2.5.*'\n"):
        _cfg(project, body)
        r = cli("--no-cache", "--format", "concise", cwd=project.root)
        assert r.returncode == 1 and "RPL101" in r.stdout, (body, r.stderr)
    _cfg(project, f"seed = {2**32 - 1}\n")
    assert cli("--no-cache", "--fix", cwd=project.root).returncode == 0
    assert f"SEED = {2**32 - 1}" in (project.root / "train.py").read_text()
    import subprocess
    import sys

    ran = subprocess.run([sys.executable, "train.py"], cwd=project.root, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr  # the largest seed allowed is one numpy takes


def test_a_pyproject_that_is_not_utf8_or_not_a_file_is_one_line(cli, project):
    project("train.py", BAD)
    (project.root / "pyproject.toml").write_bytes(b'[project]\nname = "\xff"\n\n[tool.repro-lint]\nseed = 1\n')
    r = cli("--no-cache", cwd=project.root)
    assert r.returncode == 2 and "pyproject.toml: invalid TOML" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = cli("--no-cache", "--config", "/dev/zero", cwd=project.root)
    assert r.returncode == 2 and r.stderr.strip() == "repro-lint: error: /dev/zero: cannot read configuration: not a regular file", r.stderr


def test_per_file_ignores_use_the_gitignore_syntax_of_exclude(cli, project):
    """One pattern language for `exclude` and `per-file-ignores`: a pattern without a slash
    (but at its end) matches at any depth, one with a slash from the root, `dir/` everything
    below."""
    for rel in ("train.py", "scripts/a.py", "scripts/deep/b.py", "lab/scripts/c.py", "lab/train.py"):
        project(rel, BAD)
    cases = {
        '"scripts/" = ["RPL101"]': {"train.py", "lab/train.py"},
        '"/scripts/" = ["RPL101"]': {"train.py", "lab/scripts/c.py", "lab/train.py"},
        '"/train.py" = ["RPL101"]': {"scripts/a.py", "scripts/deep/b.py", "lab/scripts/c.py", "lab/train.py"},
        '"train.py" = ["RPL101"]': {"scripts/a.py", "scripts/deep/b.py", "lab/scripts/c.py"},
        '"lab/**/*.py" = ["RPL1"]': {"train.py", "scripts/a.py", "scripts/deep/b.py"},
    }
    for table, reported in cases.items():
        _cfg(project, f"per-file-ignores = {{ {table} }}\n")
        r = cli("-n", "--output-format", "concise", "-q", cwd=project.root)
        assert {line.split(":")[0] for line in r.stdout.splitlines()} == reported, table


def test_extend_per_file_ignores_and_extend_ignore_add_to_the_others(cli, project):
    project("train.py", BAD + "import os\nos.environ['PYTHONHASHSEED'] = '0'\n")
    project("other.py", BAD)
    _cfg(project, 'per-file-ignores = { "other.py" = ["RPL101"] }\nextend-per-file-ignores = { "train.py" = ["RPL104"] }\n'
                  'ignore = ["RPL3"]\nextend-ignore = ["RPL2"]\n')
    r = cli("-n", "--output-format", "concise", "-q", cwd=project.root)
    assert [line.split()[1] for line in r.stdout.splitlines()] == ["RPL101"] and r.stdout.startswith("train.py:")
    r = cli("-n", "--show-settings", cwd=project.root)
    assert 'ignore = ["RPL3", "RPL2"]' in r.stdout and 'extend-per-file-ignores = { "train.py" = ["RPL104"] }' in r.stdout


def test_target_torch_version_reads_every_pep_440_form(cli, project):
    """Versions and specifiers as PEP 440 writes them (read by `packaging`), not a subset."""
    project("train.py", BAD)
    for value in ("2.1.0RC1", ">=2.1.0-rc1", "1!2.0", ">=2.1, !=2.2.*, <3", "2.5.*", "===2.1.0"):
        r = cli("-n", "--config", f"target-torch-version = '{value}'", "--show-settings", cwd=project.root)
        assert r.returncode == 0, (value, r.stderr)
    for value in ("2.x", ">=two", "~=2"):
        r = cli("-n", "--config", f"target-torch-version = '{value}'", cwd=project.root)
        assert r.returncode == 2 and "target-torch-version" in r.stderr, value


def test_test_files_are_checked_only_when_asked(cli, project):
    # a shuffling loader and a run-time PYTHONHASHSEED in test files (spec, large repositories 5)
    loader = (
        "import os\nimport torch\nfrom torch.utils.data import DataLoader\n\n"
        "os.environ['PYTHONHASHSEED'] = '0'\nDataLoader(torch.arange(4), shuffle=True)\n"
    )
    for path in ("tests/test_data.py", "test_io.py", "io_test.py", "tests/conftest.py"):
        project(path, loader)
    project("train.py", "import torch\n\ntorch.manual_seed(0)\nprint(torch.rand(2))\n")

    def paths(*args):
        r = cli("--format", "concise", "-q", "--no-cache", *args, cwd=project.root)
        return sorted({line.split(":")[0] for line in r.stdout.splitlines()})

    assert paths() == []
    assert paths("--check-tests") == ["io_test.py", "test_io.py", "tests/conftest.py", "tests/test_data.py"]
    _cfg(project, "check-tests = true\n")
    assert paths() == ["io_test.py", "test_io.py", "tests/conftest.py", "tests/test_data.py"]
