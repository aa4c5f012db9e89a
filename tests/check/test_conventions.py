"""The command line as someone coming from ruff tries it: option names, stdin, statistics,
colour, `--config KEY=VALUE`, `clean`, `rule --all`, `--add-noqa`, help lines, SARIF for code
scanning, and `--whole-program` (what the default pre-commit hook runs)."""

import json
import os
from pathlib import Path

from sarif_schema import validate_sarif

BAD = "import numpy as np\n\n\ndef main():\n    print(np.random.rand(3))\n\n\nif __name__ == '__main__':\n    main()\n"


def test_stdin_check_and_fix(cli, project):
    project("utils.py", "import numpy as np\n\n\ndef set_seed(s):\n    np.random.seed(s)\n")
    buffer = "import numpy as np\nfrom utils import set_seed\n\nprint(np.random.rand(2))\n"  # unsaved: not on disk
    r = cli("check", "--no-cache", "--output-format", "concise", "--stdin-filename", "scratch.py", "-", cwd=project.root, input=buffer)
    assert r.returncode == 1
    assert r.stdout.splitlines()[0] == "scratch.py:4:7: RPL101 [*] numpy's global RNG is drawn from but never seeded in this program"
    # the buffer is checked against the project on disk: calling the project's seeder fixes it
    r = cli("check", "--no-cache", "--stdin-filename", "scratch.py", cwd=project.root, input=buffer.replace("\nprint", "\nset_seed(0)\nprint"))
    assert r.returncode == 0, r.stdout + r.stderr
    # --fix prints the fixed source on stdout (the report goes to stderr) and writes nothing
    r = cli("check", "--no-cache", "--fix", "--stdin-filename", "scratch.py", "-", cwd=project.root, input=buffer)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("import numpy as np\nfrom utils import set_seed\n") and "np.random.seed(SEED)\n" in r.stdout
    assert "Fixed 1 finding, none remain." in r.stderr
    assert not (project.root / "scratch.py").exists()


def test_output_format_option_alias_and_environment(cli, project):
    project("train.py", BAD)
    concise = cli("--output-format", "concise", "-q", cwd=project.root).stdout
    assert concise == cli("--format", "concise", "-q", cwd=project.root).stdout
    assert concise == cli("-q", cwd=project.root, env={"REPRO_LINT_OUTPUT_FORMAT": "concise"}).stdout
    assert cli(cwd=project.root, env={"REPRO_LINT_OUTPUT_FORMAT": "json"}).stdout.startswith("{")
    # the option wins over the environment; a wrong value is a usage error
    assert cli("--output-format", "concise", cwd=project.root, env={"REPRO_LINT_OUTPUT_FORMAT": "json"}).stdout == concise + "Found 1 finding (RPL101: 1). 1 fixable with --fix.\n"
    r = cli(cwd=project.root, env={"REPRO_LINT_OUTPUT_FORMAT": "xml"})
    assert r.returncode == 2 and "REPRO_LINT_OUTPUT_FORMAT='xml' is not an output format" in r.stderr


def test_show_fixes_lists_what_was_fixed(cli, project):
    project("train.py", BAD)
    r = cli("--no-cache", "--fix", "--show-fixes", cwd=project.root)
    assert r.returncode == 0, r.stderr
    assert "Fixed 1 finding:\n-- train.py:\n    1 × RPL101 (unseeded-global-rng)\n" in r.stdout


def test_config_key_value_overrides_the_file(cli, project):
    project("train.py", BAD)
    project("pyproject.toml", '[project]\nname = "x"\nversion = "0"\n\n[tool.repro-lint]\nignore = ["RPL101"]\n')
    assert cli("--no-cache", cwd=project.root).returncode == 0
    assert cli("--no-cache", "--config", "ignore = []", cwd=project.root).returncode == 1
    r = cli("--no-cache", "--config", "ignore = []", "--config", "seed = 7", "--diff", cwd=project.root)
    assert "+SEED = 7\n" in r.stdout
    r = cli("--no-cache", "--config", "sed = 7", cwd=project.root)
    assert r.returncode == 2 and "--config 'sed = 7': unknown configuration key `sed`" in r.stderr
    r = cli("--no-cache", "--config", "seed = seven", cwd=project.root)
    assert r.returncode == 2 and "not a file and not a TOML `KEY = VALUE` setting" in r.stderr


def test_color_choice_and_no_color_convention(cli, project):
    project("train.py", BAD)
    assert "\x1b[" in cli("--color", "always", cwd=project.root).stdout
    assert "\x1b[" not in cli(cwd=project.root).stdout  # auto, not a terminal
    assert "\x1b[" not in cli("--color", "never", cwd=project.root).stdout
    assert "\x1b[" not in cli("--no-color", cwd=project.root).stdout


def test_no_color_is_honoured_only_when_not_empty(project):
    import io

    from repro_lint.output.text import color_wanted

    class TTY(io.StringIO):
        def isatty(self):
            return True

    saved = os.environ.pop("NO_COLOR", None)
    try:
        assert color_wanted(TTY())
        os.environ["NO_COLOR"] = ""
        assert color_wanted(TTY())  # empty: the convention says it does not count
        os.environ["NO_COLOR"] = "1"
        assert not color_wanted(TTY()) and color_wanted(TTY(), "always")
    finally:
        os.environ.pop("NO_COLOR", None)
        if saved is not None:
            os.environ["NO_COLOR"] = saved


def test_no_python_files_found(cli, project):
    (project.root / "empty").mkdir()
    readme = project("README.md", "# notes\n")
    for target in ("empty", readme):
        r = cli("check", target, cwd=project.root)
        assert r.returncode == 0
        assert "warning: No Python files found under the given path(s)" in r.stderr
        assert "All checks passed." not in r.stdout


def test_rules_and_rule_all_and_probe_codes(cli):
    r = cli("rules")  # piped: whole lines, not a table cut to 80 columns
    line = next(l for l in r.stdout.splitlines() if l.startswith("RPL102"))
    assert line.endswith("An explicit generator object is created without a seed and draws from OS entropy.")
    assert any(l.startswith("RPP104") for l in r.stdout.splitlines())
    r = cli("rule", "--all")
    heads = [l for l in r.stdout.splitlines() if l.startswith("# RP")]
    assert heads[0] == "# RPL001 syntax-error" and "# RPP101 runs-diverge" in heads and len(heads) >= 18
    r = cli("rule", "rpp102")
    assert r.returncode == 0 and r.stdout.startswith("# RPP102 unseeded-global-draw") and "## What to do" in r.stdout
    r = cli("rule", "--all", "--output-format", "json")
    assert {d["code"] for d in json.loads(r.stdout)} >= {"RPL101", "RPP103"}
    assert cli("rule").returncode == 2


def test_clean_removes_only_the_cache(cli, project):
    project("train.py", BAD)
    cli(cwd=project.root)
    cache = project.root / ".repro_lint_cache"
    assert cache.is_dir()
    decoy = project.root / "sub" / ".repro_lint_cache"
    decoy.mkdir(parents=True)
    (decoy / "keep.txt").write_text("not ours")
    r = cli("clean", cwd=project.root)
    assert r.returncode == 2 and not cache.exists() and (decoy / "keep.txt").exists()
    assert f"Removed cache at: {cache}" in r.stdout and "does not look like a repro-lint cache" in r.stderr


def test_help_line_in_every_output(cli, project):
    project("train.py", BAD + "import os\nos.environ['PYTHONHASHSEED'] = '0'\n")
    r = cli("--no-cache", "--select", "RPL104", cwd=project.root)
    assert "RPL104 setting PYTHONHASHSEED at run time has no effect on this process\n" in r.stdout
    assert "= help: hash randomisation is fixed when the interpreter starts" in r.stdout
    doc = json.loads(cli("--no-cache", "--output-format", "json", cwd=project.root).stdout)
    helps = {f["code"]: f["help"] for f in doc["findings"]}
    assert helps["RPL104"].startswith("hash randomisation") and helps["RPL101"].startswith("Seed it once")
    log = json.loads(cli("--no-cache", "--output-format", "sarif", cwd=project.root).stdout)
    result = next(r for r in log["runs"][0]["results"] if r["ruleId"] == "RPL104")
    assert result["message"]["text"] == "setting PYTHONHASHSEED at run time has no effect on this process"
    assert result["properties"]["help"].startswith("hash randomisation")
    assert "%0Ahelp: hash randomisation" in cli("--no-cache", "--output-format", "github", "--select", "RPL104", cwd=project.root).stdout


def test_add_noqa_is_idempotent_and_keeps_existing_codes(cli, project):
    src = (
        "import numpy as np\nimport random\nimport torch\n\n"
        "print(np.random.rand(1))  # noqa: E501\n"
        "print(random.random())  # a comment\n"
        "print(torch.rand(1), '''a\nb''')\n"
    )
    path = project("train.py", src)
    r = cli("--no-cache", "--add-noqa", cwd=project.root)
    assert r.returncode == 0 and "Added 2 noqa directives." in r.stderr, r.stderr
    # the torch draw's line ends inside a string: reported, left alone
    assert "train.py:7: no noqa added for RPL101" in r.stderr
    lines = path.read_text().splitlines()
    assert lines[4] == "print(np.random.rand(1))  # noqa: E501, RPL101"
    assert lines[5] == "print(random.random())  # a comment  # noqa: RPL101"
    again = path.read_text()
    r = cli("--no-cache", "--add-noqa", cwd=project.root)
    assert r.returncode == 0 and "Added 0 noqa directives." in r.stderr and path.read_text() == again


def test_whole_program_reports_where_the_change_has_an_effect(cli, project):
    project("utils.py", "import torch\n\n\ndef set_seed(s):\n    torch.manual_seed(s)\n")
    project("train.py", "import numpy as np\nfrom utils import set_seed\n\nset_seed(0)\nprint(np.random.rand(1))\n")
    project("other.py", "import random\nprint(random.random())\n")  # reaches nothing that changed
    r = cli("--no-cache", "--output-format", "concise", "-q", "utils.py", cwd=project.root)
    assert r.returncode == 0 and r.stdout == ""  # per file: utils.py has no finding of its own
    r = cli("--no-cache", "--output-format", "concise", "-q", "--whole-program", "utils.py", cwd=project.root)
    assert [l.split(":")[0] for l in r.stdout.splitlines()] == ["train.py"]
    r = cli("--no-cache", "--output-format", "concise", "-q", "--whole-program", "pyproject.toml", cwd=project.root)
    assert sorted(l.split(":")[0] for l in r.stdout.splitlines()) == ["other.py", "train.py"]  # configuration: all
    # what the fix hook runs: the finding the change caused is fixed where it is reported
    r = cli("--no-cache", "--fix", "--whole-program", "utils.py", cwd=project.root)
    assert r.returncode == 0 and "np.random.seed(" in (project.root / "train.py").read_text()
    assert "random.seed" not in (project.root / "other.py").read_text()


def test_sarif_for_code_scanning_from_a_subfolder(cli, project):
    project("src/lab/__init__.py", "")
    project("src/lab/train.py", BAD)
    sub = project.root / "src" / "lab"
    r = cli("--no-cache", "--output-format", "sarif", ".", cwd=sub)
    log = json.loads(r.stdout)
    validate_sarif(log)
    run = log["runs"][0]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": project.root.resolve().as_uri() + "/"}}
    (res,) = run["results"]
    assert res["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "src/lab/train.py", "uriBaseId": "%SRCROOT%"}
    assert res["level"] == "warning"
    fp = res["partialFingerprints"]
    assert fp["primaryLocationLineHash"].endswith(":1") and fp["reproLintFinding/v1"]
    rule = run["tool"]["driver"]["rules"][res["ruleIndex"]]
    assert rule["defaultConfiguration"] == {"level": "warning"}
    # no public location is known for a checkout's install: no link that would lead nowhere
    assert "helpUri" not in rule and "informationUri" not in run["tool"]["driver"]
    assert "##" not in rule["help"]["text"] and "```" not in rule["help"]["text"]  # plain text
    assert rule["help"]["markdown"].startswith("# RPL101 unseeded-global-rng")
    # the fingerprint survives lines moving above the finding
    path = sub / "train.py"
    path.write_text("# a new first line\n" + path.read_text())
    moved = json.loads(cli("--no-cache", "--output-format", "sarif", ".", cwd=sub).stdout)["runs"][0]["results"][0]
    assert moved["partialFingerprints"] == fp and moved["locations"][0]["physicalLocation"]["region"]["startLine"] == 6


def test_schema_validation_catches_invalid_sarif():
    import pytest

    with pytest.raises(AssertionError, match="runs/0/results/0/level"):
        validate_sarif({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"message": {"text": "m"}, "level": "fatal"}]}]})
    assert Path(__file__).parents[1].joinpath("sarif_schema.py").is_file()
