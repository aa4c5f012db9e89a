"""The on-disk cache: what a second run re-reads and what it re-analyses."""

from repro_lint.check.run import run_check
from repro_lint.facts import batch
from repro_lint.check.cache import Cache
from repro_lint.discover.config import Config

HELPER = "import random\n\n\ndef set_seed(s):\n    random.seed(s)\n"
TRAIN = (
    "import random\n\nfrom utils import set_seed\n\n\ndef main():\n    set_seed(0)\n    print(random.random())\n\n\n"
    "if __name__ == '__main__':\n    main()\n"
)


def run(root, monkeypatch, targets=None):
    """Findings of a cached check (of `targets`, else the whole project), and the files it
    had to extract."""
    extracted = []
    real = batch.safe_extract

    def counting(display, *args):
        extracted.append(display.rsplit("/", 1)[-1])
        return real(display, *args)

    monkeypatch.setattr(batch, "safe_extract", counting)
    monkeypatch.chdir(root)
    report = run_check(targets or [root], Config(), root=root, jobs=1, use_cache=True)
    assert report.errors == []
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


def test_an_altered_facts_file_is_ignored_as_a_whole(project, monkeypatch):
    """Facts are authenticated per file: one changed byte and none of them are used."""
    project("utils.py", HELPER)
    project("train.py", TRAIN)
    run(project.root, monkeypatch)
    cache_file = next((project.root / ".repro_lint_cache").glob("facts-[0-9a-f]*.bin"))
    data = bytearray(cache_file.read_bytes())
    data[-10] ^= 1
    cache_file.write_bytes(bytes(data))
    for results in (project.root / ".repro_lint_cache").glob("results-*.bin"):
        results.unlink()
    assert run(project.root, monkeypatch) == ([], ["train.py", "utils.py"])
    assert run(project.root, monkeypatch) == ([], [])  # rebuilt, and used again


def test_a_truncated_facts_file_is_rebuilt(project, monkeypatch):
    """A facts file cut short (a full disk, a killed process) is ignored as a whole."""
    project("utils.py", HELPER)
    project("train.py", TRAIN)
    first = run(project.root, monkeypatch)
    cache_file = next((project.root / ".repro_lint_cache").glob("facts-[0-9a-f]*.bin"))
    cache_file.write_bytes(cache_file.read_bytes()[:-40])
    for results in (project.root / ".repro_lint_cache").glob("results-*.bin"):
        results.unlink()
    assert run(project.root, monkeypatch) == ([], ["train.py", "utils.py"])
    assert first == ([], ["train.py", "utils.py"])


def test_cached_results_keep_findings_and_their_fixes(project, monkeypatch):
    """The results cache gives back the findings as they were, fixes included (what
    `--fix` applies), without extracting anything."""
    project("train.py", "import random\n\nprint(random.random())\n")
    monkeypatch.chdir(project.root)
    first = run_check([project.root], Config(), root=project.root, jobs=1, use_cache=True)
    assert first.findings and first.findings[0].fixable
    extracted = []
    real = batch.safe_extract
    monkeypatch.setattr(batch, "safe_extract", lambda *a: extracted.append(a) or real(*a))
    second = run_check([project.root], Config(), root=project.root, jobs=1, use_cache=True)
    assert extracted == []
    assert second.findings == first.findings


def test_the_cache_key_is_private_to_the_user(tmp_path, monkeypatch):
    from repro_lint.check import cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    cache.forget_user_key()
    try:
        assert Cache(tmp_path, "k").enabled
        key = tmp_path / "home-cache" / "repro-lint" / "key"
        assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32
        cache.forget_user_key()
        key.chmod(0o644)  # readable by others: they could forge cache files
        assert not Cache(tmp_path, "k").enabled
    finally:
        cache.forget_user_key()


def test_a_few_changed_files_facts_go_to_a_second_file(project, monkeypatch):
    """After a change of a few files of a larger project the main facts file is kept as it
    is and their facts are written to a small second file, which the next run uses (and
    authenticates like the main one)."""
    project("utils.py", HELPER)
    project("train.py", TRAIN)
    for i in range(40):
        project(f"pkg/mod_{i:02d}.py", f"import random\n\n\ndef f{i}():\n    return random.random()\n")
    assert len(run(project.root, monkeypatch)[1]) == 42
    folder = project.root / ".repro_lint_cache"
    main = next(folder.glob("facts-[0-9a-f]*.bin"))
    before = main.read_bytes()
    project("utils.py", "import random\n\n\ndef set_seed(s):\n    pass\n")
    assert run(project.root, monkeypatch) == (["RPL101"], ["utils.py"])
    project("pkg/mod_00.py", "x = 1\n")
    assert run(project.root, monkeypatch) == (["RPL101"], ["mod_00.py"])  # utils.py's facts from the second file
    assert main.read_bytes() == before
    second = next(folder.glob("facts-new-*.bin"))
    data = bytearray(second.read_bytes())
    data[-10] ^= 1
    second.write_bytes(bytes(data))
    for results in folder.glob("results-*.bin"):
        results.unlink()
    assert run(project.root, monkeypatch) == (["RPL101"], ["mod_00.py", "utils.py"])  # the altered file is ignored
    assert run_check([project.root], Config(), root=project.root, jobs=1, use_cache=False).findings == run_check(
        [project.root], Config(), root=project.root, jobs=1, use_cache=True
    ).findings


def test_files_of_other_versions_do_not_pile_up(project, monkeypatch):
    """Each version of the tool writes its own files; only the newest few of a kind stay."""
    import os

    project("utils.py", HELPER)
    project("train.py", TRAIN)
    folder = project.root / ".repro_lint_cache"
    folder.mkdir()
    old = [folder / f"facts-{i:016x}.bin" for i in range(5)]
    for n, path in enumerate(old):
        path.write_bytes(b"stale")
        os.utime(path, (1_000_000 + n, 1_000_000 + n))
    (folder / "notes.txt").write_text("not the cache's")
    run(project.root, monkeypatch)
    left = sorted(p.name for p in folder.glob("facts-[0-9a-f]*.bin"))
    current = [p for p in left if p not in {o.name for o in old}]
    assert len(current) == 1  # this version's own file
    assert left == sorted([*current, old[4].name, old[3].name])  # and the two newest others
    assert (folder / "notes.txt").exists()


def _body_at(root, name: str) -> tuple[int, int]:
    """(offset, size) of the body of `name`'s record in the main facts file: a record is
    its three sizes (header, outline, body), those parts and a digest, the body last."""
    import struct

    [entry] = [e for path, e in Cache(root, Config().fingerprint()).load_facts().items() if path.endswith(name) and e.main]
    with open(next((root / ".repro_lint_cache").glob("facts-[0-9a-f]*.bin")), "rb") as fh:
        fh.seek(entry.offset)
        sizes = struct.Struct("<III")
        head, outline, body = sizes.unpack(fh.read(sizes.size))
    return entry.offset + entry.size - body, body


def test_a_cached_body_that_does_not_match_its_record_is_not_trusted(project, monkeypatch):
    """Bodies are read at their offset when a rule first reads them, after the file was
    authenticated: one changed there (its record's digests still intact) is not used, and
    the facts are rebuilt."""
    project("utils.py", HELPER)
    project("train.py", TRAIN)
    assert run(project.root, monkeypatch) == ([], ["train.py", "utils.py"])
    folder = project.root / ".repro_lint_cache"
    cache_file = next(folder.glob("facts-[0-9a-f]*.bin"))
    data = bytearray(cache_file.read_bytes())
    at, size = _body_at(project.root, "utils.py")
    data[at + size // 2] ^= 0x20
    cache_file.write_bytes(bytes(data))
    for results in folder.glob("results-*.bin"):
        results.unlink()
    project("train.py", TRAIN + "\n")  # named alone after a change: the few-files path
    # (utils.py's body is read for train.py's program: it does not match, and all is rebuilt)
    assert run(project.root, monkeypatch, [project.root / "train.py"]) == ([], ["train.py", "train.py", "utils.py"])
    assert run(project.root, monkeypatch) == ([], [])  # rebuilt, and used again
