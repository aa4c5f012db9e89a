"""The packed body fields of a large project's cold check kept in a temporary file (`spill`)."""

import errno
import os

from repro_lint.facts import spill
from repro_lint.facts.spill import SPILL_MIN_BYTES, Spill


def test_what_is_put_is_read_back_before_and_after_it_is_written(monkeypatch):
    monkeypatch.setattr(spill, "WRITE_BYTES", 1000)
    store = Spill.open()
    assert store is not None
    items = [bytes([i % 251]) * (SPILL_MIN_BYTES + 37 * i) for i in range(60)]
    where = []
    for item in items:
        where.append(store.put(item))
        assert store.get(where[-1]) == item  # still gathered, or already in the file
    assert all(type(w) is int for w in where)
    written, pending = store.held()
    assert written > 0 and written + pending == sum(map(len, items))
    assert [store.get(w) for w in reversed(where)] == items[::-1]
    small = b"x" * (SPILL_MIN_BYTES - 1)
    assert store.put(small) is small  # small fields stay in memory


def test_a_file_that_cannot_be_written_keeps_the_fields_in_memory(monkeypatch):
    monkeypatch.setattr(spill, "WRITE_BYTES", 500)
    store = Spill.open()
    first = store.put(b"a" * 300)
    assert type(first) is int

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    second = b"b" * 300
    assert store.put(second) == second  # the write failed: kept by the caller
    assert store.get(first) == b"a" * 300  # what was put before is still read back
    third = b"c" * 300
    assert store.put(third) is third


def test_no_temporary_file_means_fields_stay_in_memory(tmp_path, monkeypatch):
    """Where no temporary file can be made, a packed check keeps every field in memory and
    finds the same."""
    import tempfile

    from repro_lint.check.run import run_check
    from repro_lint.facts import batch
    from repro_lint.facts.model import packed_body
    from repro_lint.discover.config import Config

    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    helper = "import random\n\ndef jitter(x):\n    " + "\n    ".join(f"x = scale(x) + random.random() * {i}" for i in range(40)) + "\n    return x\n\ndef scale(x):\n    return x * 2\n"
    (project / "helpers.py").write_text(helper)
    (project / "train.py").write_text("import helpers\n\nif __name__ == '__main__':\n    print(helpers.jitter(1.0))\n")
    expected = [f.to_dict() for f in run_check([project], Config(), root=project, use_cache=False).findings]
    assert any(f["code"] == "RPL101" for f in expected)

    def no_file(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(batch, "PACK_SOURCE_BYTES", 0)
    for broken in (False, True):
        if broken:
            monkeypatch.setattr(tempfile, "TemporaryFile", no_file)
        report = run_check([project], Config(), root=project, use_cache=False)
        assert [f.to_dict() for f in report.findings] == expected
        packed = packed_body(report.facts[str((project / "helpers.py").resolve())])
        assert (type(packed[1]) is bytes) == broken, broken
