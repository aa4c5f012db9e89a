"""Large projects: what the benchmark in bench/ found, kept as behaviour (no timings here)."""

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import make_corpus  # noqa: E402


def test_generated_corpus_is_deterministic(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    make_corpus.write_labs(a, 2, seed=0)
    make_corpus.write_labs(b, 2, seed=0)
    files_a = sorted(p.relative_to(a) for p in a.rglob("*.py"))
    assert files_a == sorted(p.relative_to(b) for p in b.rglob("*.py"))
    assert len(files_a) == 1 + 2 * 83
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
        compile((a / rel).read_text(), str(rel), "exec")  # every generated file is valid Python
    make_corpus.write_labs(tmp_path / "c", 2, seed=1)
    assert (tmp_path / "c" / "lab_00" / "train_00.py").read_text() != (a / "lab_00" / "train_00.py").read_text()


def test_call_chain_deeper_than_the_recursion_limit(project, cli):
    """A seeding helper at the end of a long call chain still seeds (no RecursionError)."""
    depth = sys.getrecursionlimit() + 500
    lines = ["import random", "", "", "def f0():", "    random.seed(0)", ""]
    for i in range(1, depth):
        lines += [f"def f{i}():", f"    f{i - 1}()", ""]
    project("pkg/__init__.py", "")
    project("pkg/chain.py", "\n".join(lines) + "\n")
    project(
        "train.py",
        f"import random\n\nfrom pkg.chain import f{depth - 1}\n\n\ndef main():\n    f{depth - 1}()\n"
        "    print(random.random())\n    random.seed(1)\n\n\nif __name__ == '__main__':\n    main()\n",
    )
    r = cli("check", project.root, "--no-cache", "--format", "json", cwd=project.root)
    assert "internal error" not in r.stderr, r.stderr
    out = json.loads(r.stdout)
    assert out["errors"] == []
    # the helper seeds python's RNG, so nothing is unseeded; the draw comes before the reseed
    codes = [f["code"] for f in out["findings"]]
    assert "RPL101" not in codes


@pytest.mark.slow
def test_parallel_rules_report_exactly_what_one_process_reports(tmp_path, cli):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "pyproject.toml").write_text('[project]\nname = "c"\nversion = "0"\n')
    make_corpus.write_labs(corpus / "labs", 3, seed=0)
    outs = []
    for jobs in ("1", "2"):
        r = cli("check", corpus, "--no-cache", "--jobs", jobs, "--format", "json", "--exit-zero", cwd=corpus)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1]
    assert json.loads(outs[0])["findings"]  # the generated scripts do have findings
