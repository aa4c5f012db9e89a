"""Where the cache goes: the project root, a `cache-dir` (option, variable or setting), and
nowhere for a script outside any project."""

BAD = "import numpy as np\n\nprint(np.random.rand(3))\n"


def test_a_script_outside_any_project_leaves_no_cache_beside_it(cli, tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "train.py").write_text(BAD)
    r = cli("check", "train.py", cwd=loose)
    assert r.returncode == 1 and "RPL101" in r.stdout
    assert sorted(p.name for p in loose.iterdir()) == ["train.py"]
    # unless asked where
    r = cli("check", "train.py", "--cache-dir", tmp_path / "cache", cwd=loose)
    assert r.returncode == 1 and any((tmp_path / "cache").glob("*/results-*.bin"))


def test_cache_dir_keeps_each_project_apart_and_is_used_again(cli, project, tmp_path):
    project("train.py", BAD)
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text('[project]\nname = "o"\nversion = "0"\n')
    (other / "train.py").write_text(BAD)
    shared = tmp_path / "shared-cache"
    for root in (project.root, other):
        r = cli(cwd=root, env={"REPRO_LINT_CACHE_DIR": str(shared)})
        assert r.returncode == 1 and not (root / ".repro_lint_cache").exists()
    folders = sorted(p for p in shared.iterdir())
    assert len(folders) == 2 and all(any(f.glob("facts-*.bin")) for f in folders)
    # the option wins over the variable; the setting is read relative to its file
    project("pyproject.toml", '[project]\nname = "x"\nversion = "0"\n\n[tool.repro-lint]\ncache-dir = "build/lint-cache"\n')
    r = cli("--show-settings", cwd=project.root)
    assert f"# Cache folder: {project.root / 'build' / 'lint-cache'}/" in r.stdout
    r = cli("--show-settings", "--cache-dir", tmp_path / "opt", cwd=project.root, env={"REPRO_LINT_CACHE_DIR": str(shared)})
    assert f"# Cache folder: {tmp_path / 'opt'}/" in r.stdout
