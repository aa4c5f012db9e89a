"""`# noqa` comments, as the spec defines them."""

SRC = """import os
import numpy as np

np.random.seed(0)
os.environ["PYTHONHASHSEED"] = "0"{c1}
rng = np.random.default_rng(){c2}
"""


def codes(cli, project, c1="", c2="", head=""):
    project("mod.py", head + SRC.format(c1=c1, c2=c2))
    r = cli("--format", "concise", "-q", "--no-cache", cwd=project.root)
    return sorted(l.split()[1] for l in r.stdout.splitlines())


def test_line_noqa(cli, project):
    assert codes(cli, project) == ["RPL102", "RPL104"]
    assert codes(cli, project, c1="  # noqa: RPL104") == ["RPL102"]
    assert codes(cli, project, c1="  # noqa: RPL102") == ["RPL102", "RPL104"]  # other codes stay
    assert codes(cli, project, c1="  # noqa: RPL101, RPL104", c2="  # noqa") == []


def test_file_noqa(cli, project):
    assert codes(cli, project, head="# repro-lint: noqa\n") == []
    assert codes(cli, project, head="# repro-lint: noqa: RPL104\n") == ["RPL102"]
    assert codes(cli, project, head="# repro-lint: noqa: RPL1\n") == []


def test_syntax_errors_are_not_suppressible(cli, project):
    project("broken.py", "# repro-lint: noqa\ndef f(:\n")
    r = cli("--format", "concise", "-q", "--no-cache", cwd=project.root)
    assert "RPL001" in r.stdout


def test_noqa_lines_counted_as_the_parser_counts_them(cli, project):
    """A form feed (a page break in older sources) is not a line end for the parser: the
    `noqa` on the flagged line must still be found, and the source shown is that line."""
    head = "# section one\n\x0c\n# section two \x0c still line three\n"
    assert codes(cli, project, head=head, c1="  # noqa: RPL104") == ["RPL102"]
    r = cli("--no-cache", cwd=project.root)
    assert "rng = np.random.default_rng()" in r.stdout
