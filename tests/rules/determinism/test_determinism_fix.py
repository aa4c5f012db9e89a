"""Fixing RPL101 and RPL401–RPL404 together: `fixtures/combined/<case>.py` becomes
`<case>.fixed.py` under one `--fix` (one tidy block, not interleaved fragments), and a second
`--fix` changes nothing. Cases are run the same way as the golden pairs of every rule
(`<case>.toml` configures the run; `unsafe = true` adds `--unsafe-fixes`)."""

from __future__ import annotations

import pytest

from fixture_harness import FIXTURES, in_process, make_case, pairs_in

COMBINED = pairs_in(FIXTURES / "combined")


@pytest.fixture
def cli(monkeypatch, capsys):
    """The golden runs of this module go through the entry point in this process (the
    family drivers run one through `python -m repro_lint`)."""
    return in_process(monkeypatch, capsys)


def test_combined_cases_are_found():
    assert {p.stem for p in COMBINED} >= {"prototype", "prototype_safe", "numpy_seeded", "hydra_module_level"}


@pytest.mark.parametrize("case", COMBINED, ids=lambda p: p.stem)
def test_combined_fix(case, tmp_path, cli):
    root, target, args = make_case(case, tmp_path)
    expected = case.with_name(case.stem + ".fixed.py").read_bytes()
    r = cli("--fix", "--no-cache", *args, target.name, cwd=root)
    assert r.returncode in (0, 1), r.stderr + r.stdout
    got = target.read_bytes()
    assert got == expected, f"--fix output differs\n--- got ---\n{got.decode()}\n--- stdout ---\n{r.stdout}{r.stderr}"
    again = cli("--fix", "--no-cache", *args, target.name, cwd=root)
    assert again.returncode in (0, 1), again.stderr
    assert target.read_bytes() == expected, "a second --fix changed the file"
    assert "Fixed " not in again.stdout


def test_one_block_in_order(tmp_path, cli):
    """The statements the fixes add come out contiguous: seed, cuDNN flags, algorithms."""
    case = FIXTURES / "combined" / "prototype.py"
    root, target, args = make_case(case, tmp_path)
    r = cli("--fix", "--no-cache", *args, target.name, cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [line.strip() for line in target.read_text().splitlines()]
    start = lines.index("torch.manual_seed(SEED)")
    assert lines[start:start + 4] == [
        "torch.manual_seed(SEED)",
        "torch.backends.cudnn.deterministic = True",
        "torch.backends.cudnn.benchmark = False",
        "torch.use_deterministic_algorithms(True)",
    ]
    assert lines.count('os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")') == 1
    assert lines.index("import os") < lines.index("import torch")
