"""Typos get help: the nearest command, option and configuration key or section is named,
and a misspelt section is an error instead of settings that silently do nothing."""

BAD = "import numpy as np\n\nprint(np.random.rand(3))\n"


def test_misspelt_command_is_not_taken_for_a_path(cli, project):
    project("train.py", BAD)
    r = cli("chek", ".", cwd=project.root)
    assert r.returncode == 2
    first, usage = r.stderr.splitlines()
    assert first == "repro-lint: `chek` is neither a command nor a path (did you mean `check`?)"
    assert usage.startswith("usage: repro-lint [check] [PATHS...]")
    # a path of that name is a path: checked, not corrected
    project("chek/train.py", BAD)
    r = cli("chek", "--output-format", "concise", "-q", cwd=project.root)
    assert r.returncode == 1 and r.stdout.startswith("chek/train.py:3:7: RPL101")


def test_misspelt_option_names_the_nearest_and_the_usage(cli, project):
    project("train.py", BAD)
    r = cli("check", "--selct", "RPL1", cwd=project.root)
    assert r.returncode == 2
    first, usage = r.stderr.splitlines()
    assert first == "repro-lint check: unrecognized arguments: --selct (did you mean `--select`?)"
    assert usage == "usage: repro-lint check [options] [PATHS...] (`repro-lint check --help` lists the options)"
    r = cli("rules", "--outpt-format", "json")
    assert r.returncode == 2 and "(did you mean `--output-format`?)" in r.stderr.splitlines()[0]
    # nothing near: no guess
    r = cli("check", "--frobnicate", cwd=project.root)
    assert r.returncode == 2 and "did you mean" not in r.stderr and "Traceback" not in r.stderr


def test_misspelt_key_names_the_nearest(cli, project):
    project("train.py", BAD)
    project("pyproject.toml", '[project]\nname = "x"\nversion = "0"\n\n[tool.repro-lint]\nextend-selct = ["RPL1"]\n')
    r = cli(cwd=project.root)
    assert r.returncode == 2
    assert r.stderr.strip().endswith("unknown configuration key `tool.repro-lint.extend-selct` (did you mean `extend-select`?)")


def test_misspelt_section_is_an_error_naming_the_section(cli, project):
    project("train.py", BAD)
    for section in ("repro_lint", "reprolint", "repro-lnt"):
        project("pyproject.toml", f'[project]\nname = "x"\nversion = "0"\n\n[tool.{section}]\nignore = ["RPL101"]\n')
        r = cli("-n", cwd=project.root)
        assert r.returncode == 2, (section, r.stdout)
        assert r.stderr.strip() == f"repro-lint: error: {project.root / 'pyproject.toml'}: [tool.{section}] is not read: the section is [tool.repro-lint]"
    # other tools' sections are none of its business
    project("pyproject.toml", '[project]\nname = "x"\nversion = "0"\n\n[tool.ruff]\nline-length = 100\n')
    assert cli("-n", cwd=project.root).returncode == 1


def test_repro_lint_toml_files_are_read(cli, project):
    """`repro-lint.toml`, else `.repro-lint.toml`, at the project root: the settings at top level."""
    project("train.py", BAD)
    for name in (".repro-lint.toml", "repro-lint.toml"):
        project(name, 'ignore = ["RPL101"]\n')
        r = cli("-n", "--show-settings", cwd=project.root)
        assert f"# Settings file: {project.root / name}" in r.stdout and 'ignore = ["RPL101"]' in r.stdout
        assert cli("-n", cwd=project.root).returncode == 0
