"""The on-disk cache: what a second run re-reads and what it re-analyses."""

import pickle

from repro_lint import engine
from repro_lint.config import Config

HELPER = "import random\n\n\ndef set_seed(s):\n    random.seed(s)\n"
TRAIN = (
    "import random\n\nfrom utils import set_seed\n\n\ndef main():\n    set_seed(0)\n    print(random.random())\n\n\n"
    "if __name__ == '__main__':\n    main()\n"
)


def run(root, monkeypatch):
    """Findings of a cached check, and the files it had to extract."""
    extracted = []
    real = engine._safe_extract

    def counting(display, *args):
        extracted.append(display.rsplit("/", 1)[-1])
        return real(display, *args)

    monkeypatch.setattr(engine, "_safe_extract", counting)
    monkeypatch.chdir(root)
    report = engine.run_check([root], Config(), root=root, jobs=1, use_cache=True)
    return sorted(f.code for f in report.findings), sorted(extracted)


def test_only_changed_files_are_extracted_again(project, monkeypatch):
    project("utils.py", HELPER)
    project("train.py", TRAIN)
    project("other.py", "x = 1\n")
    assert run(project.root, monkeypatch) == ([], ["other.py", "train.py", "utils.py"])
    assert run(project.root, monkeypatch) == ([], [])  # the results cache answers
    # the seeding helper changes: only it is read again, and train.py's verdict follows it
    project("utils.py", "import random\n\n\ndef set_seed(s):\n    pass\n")
    assert run(project.root, monkeypatch) == (["RPL101"], ["utils.py"])


def test_a_damaged_facts_entry_is_extracted_again(project, monkeypatch):
    project("utils.py", HELPER)
    project("train.py", TRAIN)
    run(project.root, monkeypatch)
    cache_file = next((project.root / ".repro_lint_cache").glob("facts-*.pickle"))
    payload = pickle.loads(cache_file.read_bytes())
    key = next(k for k in payload["data"] if k.endswith("utils.py"))
    digest, module, _ = payload["data"][key]
    payload["data"][key] = (digest, module, b"not a pickle")
    cache_file.write_bytes(pickle.dumps(payload))
    for results in (project.root / ".repro_lint_cache").glob("results-*.pickle"):
        results.unlink()
    assert run(project.root, monkeypatch) == ([], ["utils.py"])
