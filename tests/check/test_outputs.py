"""Every output format, checked against its contract."""

import json
import re

import attr
import pytest
import sarif_om
from sarif_schema import validate_sarif

BAD = """import numpy as np
import random

import torch
from lib import pick

torch.backends.cudnn.benchmark = False
rng = np.random.default_rng()


def main():
    print(np.random.rand(3), random.random(), pick())


if __name__ == "__main__":
    main()
"""


@pytest.fixture
def bad_project(project):
    project("train.py", BAD)
    project("lib.py", "import random\n\ndef pick():\n    return random.random()\n")
    return project


def test_json_schema_is_stable(cli, bad_project):
    r = cli("--format", "json", "--no-cache", cwd=bad_project.root)
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert set(doc) == {"schema_version", "tool", "files_checked", "findings", "errors", "summary"}
    assert doc["schema_version"] == 1 and doc["files_checked"] == 2
    codes = sorted(f["code"] for f in doc["findings"])
    assert codes == ["RPL101", "RPL101", "RPL102"]
    for f in doc["findings"]:
        assert set(f) == {"code", "name", "message", "help", "severity", "path", "cell", "start", "end", "fix", "related"}
        assert f["cell"] is None
        assert f["help"] and f["help"].endswith(".")  # every finding says what to do on a line of its own
        assert f["path"] == "train.py"
        assert f["start"]["line"] >= 1 and f["start"]["column"] >= 1
        assert f["fix"]["available"] is True and f["fix"]["safety"] == "safe" and f["fix"]["description"]
    py = next(f for f in doc["findings"] if "Python" in f["message"])
    assert py["related"][0]["path"] == "lib.py" and py["related"][0]["start"] == {"line": 4, "column": 12}
    assert doc["summary"] == {
        "total": 3, "by_code": {"RPL101": 2, "RPL102": 1}, "fixable_safe": 3, "fixable_unsafe": 0,
        "follow_ons_safe": 0, "follow_ons_unsafe": 0,
    }


def _check_sarif_object(obj, cls, path="$"):
    """Every key we emit is a property of that SARIF object, and required properties exist."""
    fields = {f.metadata["schema_property_name"]: f for f in attr.fields(cls)}
    nested = {
        ("SarifLog", "runs"): sarif_om.Run,
        ("Run", "tool"): sarif_om.Tool,
        ("Run", "results"): sarif_om.Result,
        ("Tool", "driver"): sarif_om.ToolComponent,
        ("ToolComponent", "rules"): sarif_om.ReportingDescriptor,
        ("ReportingDescriptor", "shortDescription"): sarif_om.MultiformatMessageString,
        ("ReportingDescriptor", "fullDescription"): sarif_om.MultiformatMessageString,
        ("ReportingDescriptor", "help"): sarif_om.MultiformatMessageString,
        ("ReportingDescriptor", "defaultConfiguration"): sarif_om.ReportingConfiguration,
        ("Result", "message"): sarif_om.Message,
        ("Result", "locations"): sarif_om.Location,
        ("Result", "relatedLocations"): sarif_om.Location,
        ("Result", "properties"): sarif_om.PropertyBag,
        ("Location", "physicalLocation"): sarif_om.PhysicalLocation,
        ("Location", "message"): sarif_om.Message,
        ("PhysicalLocation", "artifactLocation"): sarif_om.ArtifactLocation,
        ("PhysicalLocation", "region"): sarif_om.Region,
    }
    for key, value in obj.items():
        if cls is sarif_om.SarifLog and key == "$schema":
            continue
        if cls is sarif_om.PropertyBag:
            continue  # free-form by definition
        assert key in fields, f"{path}: `{key}` is not a property of {cls.__name__}"
        sub = nested.get((cls.__name__, key))
        if sub is not None:
            for i, item in enumerate(value if isinstance(value, list) else [value]):
                _check_sarif_object(item, sub, f"{path}.{key}[{i}]")
    for name, f in fields.items():
        if f.default is attr.NOTHING:
            assert name in obj, f"{path}: required property `{name}` of {cls.__name__} missing"


def test_sarif_is_valid_2_1_0(cli, bad_project):
    r = cli("--format", "sarif", "--no-cache", cwd=bad_project.root)
    assert r.returncode == 1
    log = json.loads(r.stdout)
    validate_sarif(log)
    _check_sarif_object(log, sarif_om.SarifLog)
    run = log["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert "RPL101" in rule_ids and all(r["help"]["markdown"] for r in run["tool"]["driver"]["rules"])
    results = run["results"]
    assert len(results) == 3
    for res in results:
        assert rule_ids[res["ruleIndex"]] == res["ruleId"]
        assert res["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "train.py", "uriBaseId": "%SRCROOT%"}
        assert res["properties"]["fixable"] is True and res["properties"]["fixSafety"] == "safe"


def test_sarif_checker_rejects_wrong_sarif():
    """The structural check can fail: a misspelt property is caught."""
    with pytest.raises(AssertionError):
        _check_sarif_object({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"mesage": {"text": "m"}}]}]}, sarif_om.SarifLog)


def test_github_annotations(cli, bad_project):
    r = cli("--format", "github", "--no-cache", cwd=bad_project.root)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("::warning file=train.py,line=8,col=7,endLine=8,endColumn=30,title=RPL102 unseeded-generator::RPL102 ")
    assert all(l.startswith("::warning file=train.py,line=") for l in lines)


def test_concise_marks_fixable(cli, bad_project):
    r = cli("--format", "concise", "--no-cache", cwd=bad_project.root)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("train.py:8:7: RPL102 [*] `numpy.random.default_rng` is created without a seed")
    assert lines[-1] == "Found 3 findings (RPL101: 2, RPL102: 1). 3 fixable with --fix."


def test_text_shows_related_and_fix(cli, bad_project):
    r = cli("--no-cache", cwd=bad_project.root, env={"NO_COLOR": "1"})
    assert "= related: lib.py:4:12: also draws from python: `random.random`" in r.stdout
    assert "= fix (safe, --fix): seed python with a new constant `SEED = 0` where the program starts" in r.stdout


def test_color_only_on_terminals_without_no_color(cli, bad_project):
    import io
    import os

    from repro_lint.output.text import color_wanted

    class TTY(io.StringIO):
        def isatty(self):
            return True

    os.environ.pop("NO_COLOR", None)
    assert color_wanted(TTY()) and not color_wanted(io.StringIO())
    os.environ["NO_COLOR"] = "1"
    try:
        assert not color_wanted(TTY())
    finally:
        del os.environ["NO_COLOR"]
    coloured = cli("--no-cache", "--color", "always", cwd=bad_project.root).stdout
    plain = cli("--no-cache", cwd=bad_project.root).stdout
    assert "\x1b[1;31mRPL101\x1b[0m" in coloured and "\x1b[" not in plain
    # the same report once the styles are taken out
    assert re.sub("\x1b\\[[0-9;]*m", "", coloured) == plain


def test_text_never_passes_on_control_characters_of_checked_files(cli, project):
    """A checked file's own escape sequences, bells and backspaces are shown as
    visible characters: they could rewrite what the terminal shows."""
    project("train.py", 'import random\n\nif __name__ == "__main__":\n    x = random.random() or "\x1b[2J\x1b]0;owned\x07\x08\x9b1m"\n')
    for extra in ((), ("--color", "always")):
        out = cli("--no-cache", *extra, cwd=project.root).stdout
        assert "RPL101" in out and '    x = random.random() or "?[2J?]0;owned??' in out
        assert not {"\x08", "\x07", "\x9b"} & set(out)
        escapes = out.count("\x1b")
        assert escapes == 2 * out.count("\x1b[0m")  # each style opened and closed; nothing else
        if not extra:
            assert escapes == 0
    # the marker still sits under the call
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "random.random()" in line and "|" in line)
    plain = re.sub("\x1b\\[[0-9;]*m", "", lines[at + 1])
    assert plain.index("^") == re.sub("\x1b\\[[0-9;]*m", "", lines[at]).index("random.random")


def test_help_sentences_end_after_a_parenthesis():
    from repro_lint.analysis.context import sentences

    # RPL405's help: the flag's effect ends in a parenthesis, the alternative follows
    assert sentences("it raises (with warn_only=True it only warns)", "deterministic alternative: x") == (
        "It raises (with warn_only=True it only warns). Deterministic alternative: x."
    )
    assert sentences("see the notes (all of them.)", "then") == "See the notes (all of them.) Then."


def test_every_output_gives_a_finding_the_same_severity(cli, project):
    """A finding is a warning in JSON, SARIF, GitHub, Azure, rdjson and the editor alike; a
    file Python cannot parse (RPL001) is an error in each."""
    project("train.py", BAD)
    project("broken.py", "def f(:\n")

    def by_code(fmt):
        return cli("-n", "--output-format", fmt, cwd=project.root).stdout

    doc = json.loads(by_code("json"))
    severity = {f["code"]: f["severity"] for f in doc["findings"]}
    assert severity == {"RPL101": "warning", "RPL102": "warning", "RPL001": "error"}
    sarif = json.loads(by_code("sarif"))["runs"][0]
    assert {r["ruleId"]: r["level"] for r in sarif["results"]} == severity
    levels = {r["id"]: r["defaultConfiguration"]["level"] for r in sarif["tool"]["driver"]["rules"]}
    assert levels["RPL001"] == "error" and levels["RPL101"] == "warning"
    github = {line.split("title=")[1].split()[0]: line[2:].split()[0] for line in by_code("github").splitlines()}
    assert github == severity
    azure = {line.split("code=")[1].split(";")[0]: line.split("type=")[1].split(";")[0] for line in by_code("azure").splitlines()}
    assert azure == severity
    rd = {d["code"]["value"]: d["severity"].lower() for d in json.loads(by_code("rdjson"))["diagnostics"]}
    assert rd == severity
    gitlab = {i["check_name"]: i["severity"] for i in json.loads(by_code("gitlab"))}
    assert gitlab == {"RPL101": "minor", "RPL102": "minor", "RPL001": "major"}


def test_statistics_call_only_what_fix_applies_fixable(cli, project):
    """An unsafe fix is not "fixable" unless `--unsafe-fixes` is given (ruff's count)."""
    project("train.py", (
        "import torch\nfrom torch import nn\n\ntorch.manual_seed(0)\ntorch.backends.cudnn.deterministic = True\n"
        "torch.backends.cudnn.benchmark = False\n\nmodel = nn.Linear(4, 2)\nmodel(torch.ones(3, 4)).sum().backward()\n"
    ))
    r = cli("-n", "--statistics", "--select", "RPL403", cwd=project.root)
    assert r.stdout.split(None, 3)[3] == "1 fixable with --unsafe-fixes\n", r.stdout
    r = cli("-n", "--statistics", "--select", "RPL403", "--unsafe-fixes", cwd=project.root)
    assert r.stdout.split(None, 3)[3] == "1 fixable\n", r.stdout
    [row] = json.loads(cli("-n", "--statistics", "--select", "RPL403", "--output-format", "json", cwd=project.root).stdout)
    assert row["fixable"] == 0 and row["fixable_unsafe"] == 1 and row["fixable_safe"] == 0


def test_junit_without_findings_is_one_passing_case(cli, project):
    import xml.etree.ElementTree as ET

    project("train.py", "print('no draw')\n")
    r = cli("-n", "--output-format", "junit", cwd=project.root)
    root = ET.fromstring(r.stdout)
    assert r.returncode == 0 and root.get("failures") == "0" and root.find("testsuite/testcase/failure") is None
