"""The command line as users run it: a real subprocess, real files."""

import json


BAD = """import numpy as np


def main():
    print(np.random.rand(3))


if __name__ == "__main__":
    main()
"""
GOOD = BAD.replace("def main():\n", "def main():\n    np.random.seed(0)\n")


def test_exit_codes_and_text_output(cli, project):
    project("train.py", BAD)
    r = cli("check", ".", "--no-cache", cwd=project.root, env={"NO_COLOR": "1"})
    assert r.returncode == 1, r.stderr
    assert "train.py:5:11: RPL101" in r.stdout
    assert "^^^^" in r.stdout  # marker under the span
    assert "Found 1 finding (RPL101: 1). 1 fixable with --fix." in r.stdout
    assert "\x1b[" not in r.stdout  # no colour when not a terminal
    project("train.py", GOOD)
    r = cli(cwd=project.root)  # `check` and `.` are the defaults
    assert r.returncode == 0, r.stdout + r.stderr
    assert "All checks passed." in r.stdout


def test_exit_zero_and_quiet(cli, project):
    project("train.py", BAD)
    r = cli("--exit-zero", "-q", "--format", "concise", cwd=project.root)
    assert r.returncode == 0
    assert r.stdout.strip().splitlines() == ["train.py:5:11: RPL101 [*] numpy's global RNG is drawn from but never seeded in this program"]


def test_select_ignore_prefixes(cli, project):
    project("train.py", BAD + "\nimport os\nos.environ['PYTHONHASHSEED'] = '0'\n")
    r = cli("--format", "concise", "-q", cwd=project.root)
    assert {l.split()[1] for l in r.stdout.splitlines()} == {"RPL101", "RPL104"}
    r = cli("--format", "concise", "-q", "--select", "RPL104", cwd=project.root)
    assert {l.split()[1] for l in r.stdout.splitlines()} == {"RPL104"}
    r = cli("--format", "concise", "-q", "--ignore", "RPL1", cwd=project.root)
    assert r.returncode == 0 and r.stdout == ""
    r = cli("--format", "concise", "-q", "--ignore", "RPL1", "--extend-select", "RPL104", cwd=project.root)
    # the more specific selector wins, as in ruff
    assert {l.split()[1] for l in r.stdout.splitlines()} == {"RPL104"}
    r = cli("--select", "RPL999", cwd=project.root)
    assert r.returncode == 2 and "unknown rule code `RPL999`" in r.stderr


def test_output_file_and_statistics(cli, project):
    project("train.py", BAD)
    out = project.root / "report.json"
    r = cli("--format", "json", "--output-file", out, cwd=project.root)
    assert r.returncode == 1
    doc = json.loads(out.read_text())
    assert doc["summary"]["by_code"] == {"RPL101": 1}
    # --statistics prints the counts only, on stdout, in every format (as ruff does)
    r = cli("--format", "json", "--statistics", cwd=project.root)
    assert r.returncode == 1 and json.loads(r.stdout) == [
        {"code": "RPL101", "name": "unseeded-global-rng", "count": 1, "fixable": 1, "fixable_safe": 1, "fixable_unsafe": 0}
    ]
    for fmt in ("text", "concise", "sarif", "github"):
        r = cli("--output-format", fmt, "--statistics", cwd=project.root)
        assert r.returncode == 1 and r.stdout.split() == ["1", "RPL101", "unseeded-global-rng", "1", "fixable"], (fmt, r.stdout)

    # the concise report, written line by line, is the same on stdout and in a file
    r = cli("--format", "concise", cwd=project.root)
    assert r.returncode == 1 and r.stdout.count("RPL101 [*]") == 1 and r.stdout.endswith("1 fixable with --fix.\n"), r.stdout
    r2 = cli("--format", "concise", "--output-file", "report.txt", cwd=project.root)
    assert r2.returncode == 1 and r2.stdout == "" and (project.root / "report.txt").read_text() == r.stdout


def test_rule_and_rules_commands(cli):
    r = cli("rule", "RPL101")
    assert r.returncode == 0
    assert r.stdout.startswith("# RPL101 unseeded-global-rng")
    assert "## Why it matters" in r.stdout and "Fix (safe)" in r.stdout
    r = cli("rule", "RPL999")
    assert r.returncode == 2 and "unknown rule code" in r.stderr
    r = cli("rules", "--format", "json")
    codes = [x["code"] for x in json.loads(r.stdout)]
    assert {"RPL101", "RPL102", "RPL103", "RPL104"} <= set(codes)
    r = cli("rules")
    assert r.returncode == 0 and "unseeded-global-rng" in r.stdout


def test_version_and_module_entry(cli):
    from repro_lint import __version__

    r = cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"repro-lint {__version__}"


def test_nonexistent_path_is_a_clear_error(cli, project):
    r = cli("check", "nope.py", cwd=project.root)
    assert r.returncode == 2
    assert r.stderr.strip() == "repro-lint: nope.py: no such file or directory"
    assert "Traceback" not in r.stderr


def test_bad_option_is_one_line(cli):
    r = cli("check", "--format", "xml")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_reports_only_files_asked_for_but_knows_the_project(cli, project):
    # pre-commit passes only changed files: train.py must still know what utils.set_seed seeds
    project("utils.py", "import numpy as np\nimport torch\n\ndef set_seed(s):\n    np.random.seed(s)\n    torch.manual_seed(s)\n")
    project("train.py", "import numpy as np\nimport torch\nfrom utils import set_seed\n\nset_seed(0)\nprint(np.random.rand(1), torch.rand(1))\n")
    project("other.py", BAD)
    r = cli("check", "train.py", "--no-cache", cwd=project.root)
    assert r.returncode == 0, r.stdout
    r = cli("check", "other.py", "train.py", "--no-cache", "--format", "concise", "-q", cwd=project.root)
    assert r.returncode == 1 and r.stdout.startswith("other.py:5:11: RPL101")


def test_jobs_give_same_result(cli, project):
    for i in range(30):
        project(f"pkg/m{i}.py", BAD if i % 3 == 0 else GOOD)
    a = cli("--no-cache", "--jobs", "1", "--format", "json", cwd=project.root)
    b = cli("--no-cache", "--jobs", "2", "--format", "json", cwd=project.root)
    assert a.returncode == b.returncode == 1
    assert json.loads(a.stdout)["findings"] == json.loads(b.stdout)["findings"]
    assert len(json.loads(a.stdout)["findings"]) == 10


def test_discovery_honours_gitignore_excludes_and_venvs(cli, project):
    project("train.py", GOOD)
    project("ignored/bad.py", BAD)
    project(".gitignore", "ignored/\n")
    project("excluded/bad.py", BAD)
    project("venv/lib/bad.py", BAD)
    project("venv/pyvenv.cfg", "home = /usr\n")
    project("myenv/lib/bad.py", BAD)
    project("myenv/pyvenv.cfg", "home = /usr\n")
    project("pyproject.toml", '[tool.repro-lint]\nextend-exclude = ["excluded"]\n')
    r = cli("--no-cache", cwd=project.root)
    assert r.returncode == 0, r.stdout


def test_symlink_loop_does_not_hang(cli, project):
    project("pkg/a.py", GOOD)
    (project.root / "pkg" / "loop").symlink_to(project.root / "pkg", target_is_directory=True)
    r = cli("--no-cache", cwd=project.root, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_cache_is_used_and_never_trusted_over_files(cli, project):
    project("train.py", GOOD)
    r = cli(cwd=project.root)
    assert r.returncode == 0
    cache = project.root / ".repro_lint_cache"
    assert any(cache.glob("results-*.bin")) and any(cache.glob("facts-*.bin"))
    project("train.py", BAD)  # changed content must be re-analysed
    r = cli(cwd=project.root)
    assert r.returncode == 1
    for f in cache.glob("*.bin"):  # a corrupt cache is rebuilt
        f.write_bytes(b"garbage")
    r = cli(cwd=project.root)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    r = cli("--no-cache", cwd=project.root)
    assert r.returncode == 1


def test_a_missing_output_folder_is_one_line(cli, project):
    project("train.py", BAD)
    r = cli("--no-cache", "--format", "json", "--output-file", "missing/report.json", cwd=project.root)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == "repro-lint: cannot write --output-file missing/report.json: folder missing does not exist"
    r = cli("--no-cache", "--output-file", ".", cwd=project.root)  # a folder, not a file
    assert r.returncode == 2 and r.stderr.strip().startswith("repro-lint: error: cannot write .:"), r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


def test_jobs_are_capped_at_the_cores(project, monkeypatch):
    from repro_lint.cli import main as cli_module
    from repro_lint.check import run

    project("train.py", BAD)
    seen = []
    real = run.run_check
    monkeypatch.setattr(run, "run_check", lambda *a, **k: seen.append(k["jobs"]) or real(*a, **k))
    monkeypatch.chdir(project.root)
    assert cli_module.main(["check", "--no-cache", "--jobs", "1000", "-q"]) == 1
    assert seen == [cli_module.usable_cores()] and seen[0] < 1000
