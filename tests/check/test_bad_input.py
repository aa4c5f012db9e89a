"""Bad input: one clear line per problem, the rest of the work goes on, never a traceback."""

BAD = "import numpy as np\n\nprint(np.random.rand(3))\n"


def test_syntax_error_is_a_finding_and_others_are_checked(cli, project):
    project("broken.py", "def f(:\n    pass\n")
    project("train.py", BAD)
    r = cli("--no-cache", "--format", "concise", "-q", cwd=project.root)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert any(l.startswith("broken.py:1:7: RPL001 SyntaxError") for l in lines), lines
    assert any(l.startswith("train.py:3:7: RPL101") for l in lines), lines


def test_files_python_rejects_before_parsing_are_syntax_errors(cli, project):
    """NUL bytes, undecodable bytes and unknown codings are RPL001 findings where they are,
    like any other syntax error (so `--exit-zero` holds); exit 2 stays for I/O failures."""
    project("train.py", BAD)
    (project.root / "nul.py").write_bytes(b"x = 1\ny = 2\x00\n")
    (project.root / "latin.py").write_bytes(b"x = 1\ny = '\xff\xfe'\n")
    (project.root / "klingon.py").write_bytes(b"# -*- coding: klingon -*-\nx = 1\n")
    (project.root / "lost.py").symlink_to(project.root / "nowhere.py")  # a link to nothing: unreadable
    r = cli("--no-cache", "--format", "concise", "-q", cwd=project.root)
    assert "Traceback" not in r.stderr
    lines = r.stdout.splitlines()
    assert "nul.py:2:6: RPL001 SyntaxError: source code cannot contain null bytes" in lines, lines
    assert any(l.startswith("latin.py:2:6: RPL001 SyntaxError: (unicode error) 'utf-8' codec can't decode byte 0xff") for l in lines), lines
    assert "klingon.py:1:1: RPL001 SyntaxError: unknown encoding: klingon" in lines, lines
    assert "train.py:3:7: RPL101" in r.stdout  # the rest was still checked
    assert r.stderr.startswith("repro-lint: error: lost.py: cannot read file: No such file or directory"), r.stderr
    assert r.returncode == 2
    (project.root / "lost.py").unlink()
    r = cli("--no-cache", "--format", "concise", "-q", "--exit-zero", cwd=project.root)
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_syntax_of_a_newer_python_the_project_requires_says_so(cli, project):
    """A file that does not parse where the project requires a newer Python than the one running
    the check (a `type` alias, Python 3.12) is RPL001 saying which Python to run; without such a
    requirement it is a plain syntax error."""
    import sys

    newer = f"{sys.version_info[0]}.{sys.version_info[1] + 1}"
    project("aliases.py", "type Batch = list[int]\nx = [1, 2, 3]\n")
    project("pyproject.toml", f'[project]\nname = "p"\nversion = "0"\nrequires-python = ">={newer}"\n')
    r = cli("--no-cache", "--format", "concise", "-q", cwd=project.root)
    lines = [l for l in r.stdout.splitlines() if "RPL001" in l]
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if sys.version_info >= (3, 12):  # the alias parses: nothing to say
        assert lines == [], lines
        return
    assert len(lines) == 1 and lines[0].startswith("aliases.py:1:6: RPL001 "), lines
    assert f"Python {running} cannot parse this file" in lines[0] and f"run repro-lint with Python {newer}" in lines[0], lines
    project("pyproject.toml", '[project]\nname = "p"\nversion = "0"\nrequires-python = ">=3.8"\n')
    r = cli("--no-cache", "--format", "concise", "-q", cwd=project.root)
    lines = [l for l in r.stdout.splitlines() if "RPL001" in l]
    assert len(lines) == 1 and "cannot parse this file" not in lines[0] and "SyntaxError" in lines[0], lines


def test_valid_deep_code_is_analysed(cli, project):
    """Nesting CPython compiles is not a syntax error: a 500-branch `elif` chain and a sum
    of 2,990 terms are deeper than the default recursion limit; their findings count."""
    branches = "".join(f"    elif x == {i}:\n        return {i}\n" for i in range(1, 500))
    project("chain.py", f"import numpy as np\n\n\ndef f(x):\n    if x == 0:\n        return 0\n{branches}    return np.random.rand()\n\n\nprint(f(3))\n")
    project("total.py", "import numpy as np\n\ntotal = " + " + ".join(["1"] * 2990) + "\nprint(np.random.rand(total))\n")
    r = cli("--no-cache", "--format", "concise", "-q", cwd=project.root)
    lines = r.stdout.splitlines()
    assert not [l for l in lines if "RPL001" in l], lines
    assert any(l.startswith("chain.py:1005:12: RPL101") for l in lines), lines
    assert any(l.startswith("total.py:4:7: RPL101") for l in lines), lines
    assert r.returncode == 1 and r.stderr == "", r.stderr


def test_coding_cookie_and_bom_are_decoded(cli, project):
    (project.root / "cookie.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport numpy as np\nname = '\xe9t\xe9'\nprint(np.random.rand(1))\n")
    (project.root / "bom.py").write_bytes(b"\xef\xbb\xbfimport numpy as np\nprint(np.random.rand(1))\n")
    r = cli("--no-cache", "--format", "concise", "-q", cwd=project.root)
    assert r.returncode == 1, r.stderr
    assert "cookie.py:4:7: RPL101" in r.stdout and "bom.py:2:7: RPL101" in r.stdout


def test_non_ascii_columns_are_characters(cli, project):
    project("train.py", "import numpy as np\nnäme = 'ü'; print(np.random.rand(3))\n")
    r = cli("--no-cache", "--format", "concise", "-q", cwd=project.root)
    assert "train.py:2:19: RPL101" in r.stdout, r.stdout


def test_vanished_file_is_reported_not_a_crash(project):
    from repro_lint.discover.config import Config
    from repro_lint.check import run

    p = project("gone.py", BAD)
    project("train.py", BAD)
    real = run.collect_files

    def collect_then_delete(*a, **k):
        out = real(*a, **k)
        p.unlink()
        return out

    run.collect_files = collect_then_delete
    try:
        report = run.run_check([project.root], Config(), root=project.root, use_cache=False)
    finally:
        run.collect_files = real
    assert any("gone.py: cannot read file" in e for e in report.errors), report.errors
    assert [f.code for f in report.findings] == ["RPL101"]


def test_exception_in_a_rule_names_rule_and_file(project, monkeypatch):
    from repro_lint.check.run import run_check
    from repro_lint.discover.config import Config
    from repro_lint.rules.registry import RULES, RuleSpec, load_rules

    load_rules()
    project("train.py", BAD)

    def boom(ctx, info):
        raise ValueError("kaput")
        yield

    monkeypatch.setitem(RULES, "RPL104", RuleSpec("RPL104", "module", boom))
    report = run_check([project.root], Config(), root=project.root, use_cache=False)
    assert len(report.errors) == 1
    assert report.errors[0].endswith("train.py: internal error in rule RPL104: ValueError: kaput")
    assert [f.code for f in report.findings] == ["RPL101"]  # the other rules still ran


def test_parser_warnings_of_checked_files_stay_out_of_the_run(cli, project):
    """An invalid escape is a warning of the checked file, not of the run: nothing on stderr,
    and not a syntax error even where the environment turns warnings into errors (where
    Python's compiler would reject the file). In one process and in `--jobs` workers."""
    for i in range(40):  # enough files for the workers to take part
        project(f"pkg/m{i}.py", 'import re\n\nPAT = re.compile("\\d+")\n')
    project("train.py", 'import re\n\nimport numpy as np\n\nPAT = re.compile("\\d+")\nprint(np.random.rand(3))\n')
    for jobs in ("1", "2"):
        for env in ({}, {"PYTHONWARNINGS": "error"}):
            r = cli("--no-cache", "--format", "concise", "-q", "--jobs", jobs, cwd=project.root, env=env)
            assert r.stderr == "", (jobs, env, r.stderr)
            assert r.stdout.splitlines() == ["train.py:6:7: RPL101 [*] numpy's global RNG is drawn from but never seeded in this program"], r.stdout
