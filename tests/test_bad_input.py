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


def test_unreadable_inputs(cli, project):
    project("train.py", BAD)
    (project.root / "nul.py").write_bytes(b"x = 1\x00\n")
    (project.root / "latin.py").write_bytes(b"x = '\xff\xfe'\n")
    r = cli("--no-cache", "--format", "concise", "-q", cwd=project.root)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    errs = r.stderr.strip().splitlines()
    assert any(e.startswith("repro-lint: error: nul.py: file contains a NUL byte") for e in errs), errs
    assert any(e.startswith("repro-lint: error: latin.py: cannot decode file") for e in errs), errs
    assert "train.py:3:7: RPL101" in r.stdout  # the rest was still checked


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
    from repro_lint.config import Config
    from repro_lint import engine

    p = project("gone.py", BAD)
    project("train.py", BAD)
    real = engine.collect_files

    def collect_then_delete(*a, **k):
        out = real(*a, **k)
        p.unlink()
        return out

    engine.collect_files = collect_then_delete
    try:
        report = engine.run_check([project.root], Config(), root=project.root, use_cache=False)
    finally:
        engine.collect_files = real
    assert any("gone.py: cannot read file" in e for e in report.errors), report.errors
    assert [f.code for f in report.findings] == ["RPL101"]


def test_exception_in_a_rule_names_rule_and_file(project, monkeypatch):
    from repro_lint import engine
    from repro_lint.config import Config
    from repro_lint.rules import RULES, RuleSpec, load_rules

    load_rules()
    project("train.py", BAD)

    def boom(ctx, info):
        raise ValueError("kaput")
        yield

    monkeypatch.setitem(RULES, "RPL104", RuleSpec("RPL104", "module", boom))
    report = engine.run_check([project.root], Config(), root=project.root, use_cache=False)
    assert len(report.errors) == 1
    assert report.errors[0].endswith("train.py: internal error in rule RPL104: ValueError: kaput")
    assert [f.code for f in report.findings] == ["RPL101"]  # the other rules still ran
