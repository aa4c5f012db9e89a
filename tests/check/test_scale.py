"""Large projects: what the benchmark in bench/ found, kept as behaviour (no timings here)."""

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import make_corpus  # noqa: E402


def _labs(tmp_path, n):
    """A project of `n` generated training packages (`make_corpus.py`)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "pyproject.toml").write_text('[project]\nname = "c"\nversion = "0"\n')
    make_corpus.write_labs(corpus / "labs", n, seed=0)
    return corpus


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
    corpus = _labs(tmp_path, 3)
    outs = []
    for jobs in ("1", "2"):
        r = cli("check", corpus, "--no-cache", "--jobs", jobs, "--format", "json", "--exit-zero", cwd=corpus)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1]
    assert json.loads(outs[0])["findings"]  # the generated scripts do have findings


def test_rules_fall_back_to_this_process_when_the_forked_copy_fails(tmp_path, monkeypatch):
    """With --jobs 2 a forked copy runs some rules; if it dies, they run here instead."""
    import os

    from repro_lint.check import parallel
    from repro_lint.check.run import run_check
    from repro_lint.discover.config import Config
    from repro_lint.rules.registry import RULES, load_rules

    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    apart = {code for code, spec in load_rules().items() if spec.apart}
    corpus = _labs(tmp_path, 3)
    expected = run_check([corpus], Config(), root=corpus, jobs=1, use_cache=False).findings
    parent = os.getpid()
    real = parallel.rules_here
    here: list[list[str]] = []

    def dies_in_the_copy(ctx, targets, errors, verbose, codes):
        if os.getpid() != parent:
            raise RuntimeError("the copy dies")
        here.append(list(codes))
        return real(ctx, targets, errors, verbose, codes)

    monkeypatch.setattr(parallel, "rules_here", dies_in_the_copy)
    got = run_check([corpus], Config(), root=corpus, jobs=2, use_cache=False)
    # this process ran its own rules, then (the copy having died) the copy's
    assert len(here) == 2 and set(here[1]) == apart and not set(here[0]) & apart
    assert [f.to_dict() for f in got.findings] == [f.to_dict() for f in expected]
    assert {f.code for f in expected} & apart  # the copy's rules did report
    assert set(RULES) > apart
    assert got.errors == []


def test_byte_runs_cover_every_file_once_in_order_with_even_sizes():
    from repro_lint.facts.batch import byte_runs

    sizes = [(i * 7919) % 1000 + 1 for i in range(500)] + [20_000]
    runs = byte_runs(sizes, 48)
    assert [i for r in runs for i in r] == list(range(len(sizes)))  # each once, in order
    assert all(len(r) for r in runs)
    loads = [sum(sizes[i] for i in r) for r in runs]
    # as even as one file allows (the last run holds the large file)
    assert max(loads[:-1]) - min(loads[:-1]) <= 2 * max(sizes[:-1])
    assert 40 <= len(runs) <= 49
    assert byte_runs([5], 3) == [range(0, 1)]
    assert byte_runs([0, 0, 0], 2) == [range(0, 3)]  # empty files: one run


def test_parts_a_dead_worker_took_are_extracted_here(tmp_path, monkeypatch):
    """With --jobs 2 a worker takes parts as it goes; if it dies after taking some, this
    process extracts them, and the findings are those of --jobs 1."""
    import os

    from repro_lint.check.run import run_check
    from repro_lint.facts import batch
    from repro_lint.discover.config import Config

    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    corpus = _labs(tmp_path, 2)
    expected = run_check([corpus], Config(), root=corpus, jobs=1, use_cache=False).findings
    record = tmp_path / "taken"

    def dies_in_its_second_part(jobs, packing=False):  # (only workers call it)
        if record.exists():
            raise RuntimeError("the worker dies")
        record.write_text(jobs[0][0])
        return real(jobs, packing)

    real = batch.extract_part
    monkeypatch.setattr(batch, "extract_part", dies_in_its_second_part)
    got = run_check([corpus], Config(), root=corpus, jobs=2, use_cache=False)
    assert record.read_text().endswith(".py")  # the worker did take parts, then died
    assert [f.to_dict() for f in got.findings] == [f.to_dict() for f in expected]
    assert got.errors == []
    assert expected


def test_a_dead_workers_files_are_read_again_with_the_projects_settings(tmp_path, monkeypatch):
    """With --jobs 2 this process lets go of the bytes of the files the workers will most
    likely take; when a worker dies its files are read again here, and extracted with the
    project's own settings (a seeder named in the configuration)."""
    import os

    from repro_lint.check.run import run_check
    from repro_lint.facts import batch
    from repro_lint.discover.config import Config

    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    corpus = _labs(tmp_path, 2)
    # first in the order of files: in the first part, which a worker takes first
    (corpus / "aaa_train.py").write_text(
        "import random\n\nimport acme\n\n\ndef main():\n    acme.prepare(0)\n    print(random.random())\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    cfg = Config(seeders={"acme.prepare": ["python", "numpy", "torch"]})

    def findings(jobs):
        return [f.to_dict() for f in run_check([corpus], cfg, root=corpus, jobs=jobs, use_cache=False).findings]

    expected = findings(1)
    assert not [f for f in expected if f["path"].endswith("aaa_train.py")]
    assert [f for f in run_check([corpus], Config(), root=corpus, jobs=1, use_cache=False).findings if f.location.path.endswith("aaa_train.py")]

    def dies(jobs, packing=False):  # (only workers call it)
        raise RuntimeError("the worker dies")

    monkeypatch.setattr(batch, "extract_part", dies)
    assert findings(2) == expected


def test_facts_sent_back_by_a_worker_equal_the_facts_it_extracted():
    """Workers send facts in a compact marshal form; what arrives is what was extracted,
    and facts marshal cannot write (any object of another kind) arrive pickled instead."""
    from repro_lint.facts import batch
    from repro_lint.discover.config import Config
    from repro_lint.facts.syntax import NOT_LITERAL

    files = sorted((REPO / "fixtures").glob("RPL*/*.py"))[:60] + [REPO / "src" / "repro_lint" / "facts" / "walker" / "extractor.py"]
    jobs = [(str(p), p.name, "pkg." + p.stem, False, None) for p in files]
    key = Config().matcher_key()
    batch.init_worker(key)
    sent = batch.extract_part(jobs)
    got = batch.received_part(sent)
    want = [batch.extract_job(j) for j in jobs]

    def state(info):
        d = dict(info.__dict__)
        d["events"] = {s: [(e.kind, e.line, e.col, e.end_line, e.end_col, e.stmt, e.data) for e in evs] for s, evs in info.events.items()}
        d["functions"] = {q: [getattr(f, k) for k in f.__slots__] for q, f in info.functions.items()}
        d["classes"] = {q: (c.qual, c.name, c.line, c.bases, c.methods) for q, c in info.classes.items()}
        return d

    assert sum(len(i.events) + len(i.functions) for i in want) > 50  # the files say something
    assert [state(i) for i in got] == [state(i) for i in want]
    odd = batch.extract_job(jobs[0])
    odd.extra["marker"] = NOT_LITERAL  # not a plain value

    real = batch.extract_job
    try:
        batch.extract_job = lambda job: odd
        (back,) = batch.received_part(batch.extract_part(jobs[:1]))
    finally:
        batch.extract_job = real
    assert back.extra["marker"] is NOT_LITERAL and state(back)["events"] == state(odd)["events"]


def test_packed_bodies_give_the_same_findings_and_cache(tmp_path, monkeypatch):
    """A large project's bodies are kept marshalled and let go again once read (`model.pack`,
    `batch.PACK_SOURCE_BYTES`), the larger fields in a temporary file (`spill`): forced on
    a small one, with room for one decoded body, the findings are the same, with --jobs 1 and
    2 (the rules' forked copy reading the file too), and so are the facts stored in the cache."""
    from repro_lint.check import parallel
    from repro_lint.check.run import run_check
    from repro_lint.facts import batch
    from repro_lint.facts import model
    from repro_lint.check.cache import Cache
    from repro_lint.discover.config import Config
    from repro_lint.facts.spill import Spill

    corpus = _labs(tmp_path, 2)

    def findings(report):
        return [f.to_dict() for f in report.findings]

    expected = findings(run_check([corpus], Config(), root=corpus, jobs=1, use_cache=False))
    assert expected
    monkeypatch.setattr(batch, "PACK_SOURCE_BYTES", 0)
    monkeypatch.setattr(model.DECODED, "limit", 1)
    monkeypatch.setattr(parallel, "FORK_RULES_MIN_FILES", 1)
    for jobs in (1, 2):
        report = run_check([corpus], Config(), root=corpus, jobs=jobs, use_cache=False)
        assert findings(report) == expected, jobs
        packed = [i for i in report.facts.values() if model.packed_body(i) is not None]
        assert len(packed) > len(report.facts) // 2  # packed, with their summaries kept
        assert any("calls" not in i.__dict__ for i in packed)  # and let go again once read
        # the calls of most modules lie in the file, one file for the check
        spilled = [model.packed_body(i) for i in packed if type(model.packed_body(i)[1]) is int]
        assert len(spilled) > len(packed) // 2, jobs
        assert len({id(p[-1]) for p in spilled}) == 1 and isinstance(spilled[0][-1], Spill)
    # the cache filled from packed bodies holds what it holds when filled from objects
    import marshal
    import shutil

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    stored = {}
    for packing in (True, False):
        if not packing:
            monkeypatch.setattr(batch, "PACK_SOURCE_BYTES", 1 << 40)
        shutil.rmtree(corpus / ".repro_lint_cache", ignore_errors=True)
        assert findings(run_check([corpus], Config(), root=corpus, jobs=1)) == expected
        stored[packing] = {}
        for k, entry in Cache(corpus, Config().fingerprint()).load_facts().items():
            outline, (reader, *where) = model.to_plain_parts(entry.info)
            stored[packing][k] = (outline, marshal.loads(reader.read(*where)))
    assert len(stored[True]) == 167
    assert stored[True] == stored[False]


def test_equal_outline_values_are_kept_once():
    """A large project's outlines share their equal values (`shared_values.Sharing`), and only
    values equal in type too: `(True,)` stays apart from `(1,)`."""
    from repro_lint.facts.batch import safe_extract
    from repro_lint.facts.model import pack, packed_body, stored_summary
    from repro_lint.rules.registry import load_rules
    from repro_lint.facts.shared_values import Sharing

    load_rules()
    source = b"import numpy as np\nfrom torch import nn\n\ndef step(model, batch=3):\n    return np.random.rand()\n"
    infos = [safe_extract(f"m{i}.py", f"m{i}", False, source, ((), ())) for i in range(2)]
    assert infos[0].imports[0] is not infos[1].imports[0]
    sharing = Sharing()
    for info in infos:
        assert pack(info)
        sharing.share(info)
    a, b = infos
    assert a.imports == b.imports and all(x is y for x, y in zip(a.imports, b.imports))
    assert a.functions["step"].params is b.functions["step"].params
    assert stored_summary(a) is stored_summary(b)
    one, true = sharing.value((1, "x")), sharing.value((True, "x"))
    assert one is not true and type(true[0]) is bool
    assert sharing.value(tuple([1, "x"])) is one
    # the small marshalled body fields are one object too, and read back the same
    loops = packed_body(a)[3]
    assert len(loops) <= 32 and loops is packed_body(b)[3]
    assert a.loops == b.loops == {} and a.constants == b.constants and a.calls == b.calls


def test_per_program_state_let_go_once_its_rules_ran(tmp_path):
    """What rules work out for one program (`analysis.context.program_cache`, a program's seeds and draws)
    is let go once that program's rules have run, while the programs themselves stay."""
    from repro_lint.discover.config import Config
    from repro_lint.index.project_index import ProjectIndex
    from repro_lint.facts.matchers import get_matchers
    from repro_lint.analysis.context import Context, program_caches
    from repro_lint.check.api import project_facts
    from repro_lint.check.parallel import rules_here
    from repro_lint.rules.registry import load_rules

    corpus = tmp_path / "corpus"
    make_corpus.write_labs(corpus, 1, seed=0)
    infos = project_facts([corpus], Config(), corpus, use_cache=False)
    index = ProjectIndex(infos.values(), get_matchers(*Config().matcher_key()), corpus)
    ctx = Context(index=index, settings=Config().settings())
    paths = {info.path for info in infos.values()}
    found = rules_here(ctx, paths, [], False, list(load_rules()))
    assert any(found.values()) and len(ctx.programs) > 10
    assert len(program_caches()) >= 5
    # Only this check's programs count: programs of earlier checks in the same process
    # may still be alive until the collector runs.
    mine = {id(p) for p in ctx.programs}
    kept = [p for table in program_caches() for p in list(table.keys()) if id(p) in mine]
    assert kept == []
    ctx.release()


def test_findings_texts_kept_once():
    """Equal texts of the findings a check keeps are one object (`check.parallel.shared_texts`); the
    findings, their fixes and edits stay equal, with the same hashes."""
    from repro_lint.check.parallel import shared_texts
    from repro_lint.core.findings import Finding, Fix, Location, Related
    from repro_lint.core.edits import InsertStatements

    def make():
        text = "".join(["seed ", "the workers"])  # a new string object each time
        edit = InsertStatements("after-imports", "".join(["SEED = ", "0\n"]), key="".join(["seed", "-const"]))
        loc = Location("a.py", 1, 1, 1, 2)
        return Finding("RPL302", "x", text, loc, [Related(loc, text + ".")], Fix("".join(["add ", "it"]), "safe", (edit,)))

    texts: dict = {}
    a, b = make(), make()
    assert a.message is not b.message and a.fix.edits[0].code is not b.fix.edits[0].code
    hashes = (hash(a.fix), hash(a.related[0]))
    a, b = shared_texts(a, texts), shared_texts(b, texts)
    assert a == b and (hash(a.fix), hash(a.related[0])) == hashes
    assert a.message is b.message and a.related[0].message is b.related[0].message
    assert a.fix.description is b.fix.description
    assert a.fix.edits[0].code is b.fix.edits[0].code and a.fix.edits[0].key is b.fix.edits[0].key


def test_rules_of_a_forked_copy_that_fails_run_here(tmp_path, monkeypatch):
    """With --jobs 2 a forked copy runs the seeding rules and sends its findings back through
    a pipe, read as they are decoded; a copy that dies before or while writing them leaves
    those rules to this process, with the same findings."""
    import os

    from repro_lint.check import parallel
    from repro_lint.check.run import run_check
    from repro_lint.discover.config import Config
    from repro_lint.rules.registry import load_rules

    corpus = _labs(tmp_path, 2)

    def findings(jobs):
        return [f.to_dict() for f in run_check([corpus], Config(), root=corpus, jobs=jobs, use_cache=False).findings]

    expected = findings(1)
    assert any(load_rules()[f["code"]].apart for f in expected)
    monkeypatch.setattr(parallel, "FORK_RULES_MIN_FILES", 1)
    assert findings(2) == expected
    parent = os.getpid()
    real_rules, real_dumps = parallel.rules_here, parallel.pickle.dumps

    def dies(*args, **kwargs):
        if os.getpid() != parent:
            raise RuntimeError("the copy fails")
        return real_rules(*args, **kwargs)

    def cut(obj, *args, **kwargs):  # half of the findings written, then the copy ends
        data = real_dumps(obj, *args, **kwargs)
        return data[: len(data) // 2] if os.getpid() != parent else data

    for broken in ({"rules_here": dies}, {"pickle": type("P", (), {"dumps": staticmethod(cut), "load": parallel.pickle.load, "HIGHEST_PROTOCOL": 5})}):
        with monkeypatch.context() as m:
            for name, value in broken.items():
                m.setattr(parallel, name, value)
            assert findings(2) == expected, broken


def test_calls_let_go_after_the_rules_are_worked_out_again_the_same(tmp_path, monkeypatch):
    """With --jobs 2 this process lets go of the index's calls per scope and resolution
    answers once its rules have run (`ProjectIndex.let_go_of_calls`); asked again they are
    the same, and a check filling the cache stores the same map of programs as --jobs 1."""
    from repro_lint.check import parallel
    from repro_lint.check.run import run_check
    from repro_lint.check.cache import Cache
    from repro_lint.discover.config import Config
    from repro_lint.index.project_index import ProjectIndex
    from repro_lint.facts.matchers import get_matchers

    corpus = _labs(tmp_path, 2)
    report = run_check([corpus], Config(), root=corpus, jobs=1, use_cache=False)
    index = ProjectIndex(report.facts.values(), get_matchers(*Config().matcher_key()), corpus)

    def answers():
        return {(info.module, scope): tuple(index.callees(info, scope)) for info in index.modules.values() for scope in info.calls}

    before = answers()
    held = index.held_answers()
    assert sum(1 for v in before.values() if v) > 100 and held["callees"] and held["resolved"]
    index.let_go_of_calls()
    assert index.held_answers() == {"callees": 0, "methods": 0, "resolved": 0}
    assert answers() == before

    import shutil

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.setattr(parallel, "FORK_RULES_MIN_FILES", 1)
    forks = []
    real = parallel.forked_result
    monkeypatch.setattr(parallel, "forked_result", lambda forked: forks.append(forked) or real(forked))
    maps, found = {}, {}
    for jobs in (1, 2):
        shutil.rmtree(corpus / ".repro_lint_cache", ignore_errors=True)
        found[jobs] = [f.to_dict() for f in run_check([corpus], Config(), root=corpus, jobs=jobs).findings]
        maps[jobs] = Cache(corpus, Config().fingerprint()).load_plain("programs")
    assert len(forks) == 1  # the copy ran, and this process let go of its calls meanwhile
    assert found[1] == found[2] and found[1]
    assert maps[1] == maps[2] and maps[1]
