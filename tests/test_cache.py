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
    with cache_file.open("rb") as fh:  # a header, then one record per file
        header = pickle.load(fh)
        records = [pickle.load(fh) for _ in range(header["entries"])]
    assert sum(r[0].endswith("utils.py") for r in records) == 1
    with cache_file.open("wb") as fh:
        pickle.dump(header, fh)
        for key, digest, module, data in records:
            pickle.dump((key, digest, module, b"not a pickle" if key.endswith("utils.py") else data), fh)
    for results in (project.root / ".repro_lint_cache").glob("results-*.pickle"):
        results.unlink()
    assert run(project.root, monkeypatch) == ([], ["utils.py"])


def test_a_truncated_facts_file_is_rebuilt(project, monkeypatch):
    """A facts file cut short (a full disk, a killed process) is ignored as a whole."""
    project("utils.py", HELPER)
    project("train.py", TRAIN)
    first = run(project.root, monkeypatch)
    cache_file = next((project.root / ".repro_lint_cache").glob("facts-*.pickle"))
    cache_file.write_bytes(cache_file.read_bytes()[:-40])
    for results in (project.root / ".repro_lint_cache").glob("results-*.pickle"):
        results.unlink()
    assert run(project.root, monkeypatch) == ([], ["train.py", "utils.py"])
    assert first == ([], ["train.py", "utils.py"])
