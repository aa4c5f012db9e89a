"""The ecosystem check (`bench/ecosystem.py`) counts what it says it counts: run end to end on
two small repositories, baseline = HEAD, the new version a copy of HEAD whose catalog lacks
one nondeterministic op (so exactly those findings are removed, and each version must read
its own `rules/`). The expected figures come from running the tool directly."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "ecosystem.py"
TEST_PATH = re.compile(r"(^|/)tests/|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$")

FILES = {
    "alpha/train.py": """\
        import random

        import torch
        from torch import nn


        def main():
            torch.manual_seed(0)
            model = nn.Linear(4, 4)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            x = torch.zeros(4, 4).index_add_(0, torch.tensor([0, 0]), torch.ones(2, 4))
            loss = model(x).sum()
            loss.backward()
            opt.step()
            print(random.random())


        if __name__ == "__main__":
            main()
    """,
    # test files are checked only when a project asks for it: alpha does, beta does not
    "alpha/pyproject.toml": """\
        [project]
        name = "alpha"
        version = "0"

        [tool.repro-lint]
        check-tests = true
    """,
    "alpha/tests/test_data.py": """\
        import os

        import torch
        from torch.utils.data import DataLoader, TensorDataset

        os.environ["PYTHONHASHSEED"] = "0"


        def test_loader():
            assert len(DataLoader(TensorDataset(torch.zeros(4)), shuffle=True)) == 4
    """,
    "beta/run.py": """\
        import numpy as np

        if __name__ == "__main__":
            print(np.random.rand())
    """,
    "beta/io_test.py": """\
        import os

        os.environ.setdefault("PYTHONHASHSEED", "1")
    """,
}


def head_tree(dest: Path) -> Path:
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "HEAD", "src", "rules"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def without_op(catalog: Path, op: str) -> None:
    """Remove the `[[op]]` entry with this id from the catalog."""
    text = catalog.read_text(encoding="utf-8")
    at = text.index(f'id = "{op}"\n')
    start = text.rindex("[[op]]", 0, at)
    end = text.index("[[op]]", at)
    catalog.write_text(text[:start] + text[end:], encoding="utf-8")


def findings(src: Path, tree: Path) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=str(src))
    r = subprocess.run([sys.executable, "-m", "repro_lint", "check", ".", "--output-format", "json", "--no-cache", "--exit-zero"],
                       cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["findings"]


def counts(items: list[dict]) -> dict:
    out: dict = {}
    for f in items:
        row = out.setdefault(f["code"], {"n": 0, "tests": 0})
        row["n"] += 1
        row["tests"] += bool(TEST_PATH.search(f["path"]))
    return out


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs this repository's git history")
@pytest.mark.slow  # the harness end to end: git, two versions of the tool
def test_counts_added_removed_and_test_files_match_the_tool(tmp_path):
    repos = tmp_path / "repos"
    for rel, text in FILES.items():
        (repos / rel).parent.mkdir(parents=True, exist_ok=True)
        (repos / rel).write_text(textwrap.dedent(text), encoding="utf-8")
    listing = tmp_path / "list.txt"
    listing.write_text("# name repo commit\nalpha  example/alpha  " + "a" * 40 + "\nbeta  example/beta  " + "b" * 40 + "\n")
    base = head_tree(tmp_path / "base")
    new = tmp_path / "new"
    shutil.copytree(base, new)
    without_op(new / "rules" / "catalog" / "nondeterministic_ops.toml", "index_add")
    out = tmp_path / "out"

    r = subprocess.run([sys.executable, str(SCRIPT), "--repos", str(repos), "--list", str(listing), "--baseline", "HEAD",
                        "--src", str(new / "src"), "--out", str(out), "--sample", "3", "--seed", "7"],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr

    report = json.loads((out / "ecosystem.json").read_text())
    by_name = {x["name"]: x for x in report["results"]}
    assert set(by_name) == {"alpha", "beta"}
    removed_total = 0
    tests_total = 0
    for name in ("alpha", "beta"):
        old = findings(base / "src", repos / name)
        cur = findings(new / "src", repos / name)
        want_old, want_new = counts(old), counts(cur)
        got = by_name[name]["rules"]
        assert set(got) == set(want_old) | set(want_new)
        gone = [f for f in old if f["code"] == "RPL405" and "index_add" in f["message"]]
        removed_total += len(gone)
        tests_total += sum(v["tests"] for v in want_new.values())
        for code, row in got.items():
            assert row["baseline"] == want_old.get(code, {}).get("n", 0), (name, code)
            assert row["new"] == want_new.get(code, {}).get("n", 0), (name, code)
            assert row["tests"] == want_new.get(code, {}).get("tests", 0), (name, code)
            assert row["added"] == 0, (name, code)
            assert row["removed"] == sum(f["code"] == code for f in gone), (name, code)
            # the printed table has the same figures, in its columns
            cells = [row["baseline"], row["new"], row["added"], row["removed"], row["tests"]]
            assert re.search(rf"\| {name} +\| {code} +\| " + r" +\| ".join(f" *{c}" for c in cells) + r" \|", r.stdout), (name, code)
        assert [(f["path"], f["line"]) for f in by_name[name]["removed"]] == [(f["path"], f["start"]["line"]) for f in gone]
        assert by_name[name]["added"] == []
        # the sample draws 3 findings, at least one of every rule that fires, with weights that
        # add up to the findings
        sample = json.loads((out / "sample.json").read_text())["samples"][name]
        assert len(sample) == min(len(cur), max(3, len(want_new)))
        assert {f["code"] for f in sample} == set(want_new)
        assert round(sum(f["weight"] for f in sample)) == len(cur)
        assert (out / "sample" / f"{name}.md").is_file()
    # the synthetic repositories exercise what is checked: a removed finding, test-file findings
    # (alpha's; beta's io_test.py is not checked)
    assert removed_total == 1 and tests_total >= 2
    assert all(not TEST_PATH.search(f["path"]) for f in findings(new / "src", repos / "beta"))
    md = (out / "ecosystem.md").read_text()
    assert "### removed (1)" in md and "index_add" in md


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_extraction_from_a_mirror_keeps_symbolic_links(tmp_path):
    # speechbrain's recipes link to shared `*_prepare.py` files: written as files holding the
    # target path, each would be a syntax error that a checkout does not have
    work = tmp_path / "work"
    (work / "recipes" / "a").mkdir(parents=True)
    (work / "recipes" / "prepare.py").write_text("X = 1\n")
    os.symlink("../prepare.py", work / "recipes" / "a" / "prepare.py")
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    mirrors = tmp_path / "mirrors"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirrors / "o+r" / "repo")], check=True)
    listing = tmp_path / "list.txt"
    listing.write_text(f"r  o/r  {commit}\n")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, str(SCRIPT), "--repos", str(tmp_path / "repos"), "--mirrors", str(mirrors),
                        "--list", str(listing), "--out", str(out)], capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    link = tmp_path / "repos" / "r" / "recipes" / "a" / "prepare.py"
    assert link.is_symlink() and os.readlink(link) == "../prepare.py" and link.read_text() == "X = 1\n"
    rules = json.loads((out / "ecosystem.json").read_text())["results"][0]["rules"]
    assert "RPL001" not in rules
