"""Gated extraction hooks (`facts.hooks.HookGate`): a file that names none of a family's
APIs is walked with the family's light hooks, and extracted again in full as soon as the
project shows it needs that (here: the DataLoader family, whose calls of a project subclass
of DataLoader name no loader API). Every way facts are gathered gives the findings a check
with no gate gives: a cold check, a check whose facts come from the cache, a language
server whose open buffer makes the subclass, and the fix engine."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SRC

sys.path.insert(0, str(REPO / "bench"))
import make_corpus  # noqa: E402

TRAIN = """\
import torch

from loaders import ShuffledLoader


def main():
    torch.manual_seed(0)
    data = torch.arange(100)
    loader = ShuffledLoader(data, 32, True)
    for batch in loader:
        print(batch)


if __name__ == "__main__":
    main()
"""

# what `loaders.py` holds first: a class of its own, no loader
PLAIN = """\
class ShuffledLoader:
    def __init__(self, dataset, batch_size, shuffle):
        self.items = list(dataset)

    def __iter__(self):
        return iter(self.items)
"""

# and then: a DataLoader subclass, which makes the call in train.py a loader call
SUBCLASS = """\
from torch.utils.data import DataLoader


class ShuffledLoader(DataLoader):
    pass
"""

# runs `repro_lint` with every gate taken out (each file walked with all hooks)
UNGATED = (
    "import sys; from repro_lint.facts.hooks import registry; registry().gates.clear(); "
    "from repro_lint.cli.main import main; sys.argv[0] = 'repro_lint'; main()"
)


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _check(root: Path, *args: str, ungated: bool = False) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", UNGATED] if ungated else [sys.executable, "-m", "repro_lint"]
    return subprocess.run([*cmd, "check", ".", "--format", "json", "--exit-zero", *args], cwd=root, env=_env(), capture_output=True, text=True, timeout=600)


def _codes(proc: subprocess.CompletedProcess, path: str) -> list[str]:
    assert proc.returncode == 0, proc.stderr
    return sorted(f["code"] for f in json.loads(proc.stdout)["findings"] if f["path"] == path)


def test_the_gate_words_are_the_catalogs_names():
    from repro_lint.facts.hooks import hook_set
    from repro_lint.rules.registry import load_rules
    from repro_lint.facts.families.dataloader import on_call
    from repro_lint.facts.families.dataloader_gate import GATE

    load_rules()
    words = GATE.words()
    assert b"DataLoader" in words and b"random_split" in words and b"worker_init_fn" in words
    assert on_call not in hook_set(b"x = 1\n")[0]  # walked light
    assert on_call in hook_set(b"from torch.utils.data import DataLoader\n")[0]
    assert on_call in hook_set(b"x = 1\n", full=True)[0]


def test_a_loader_subclass_called_where_no_loader_is_named(project):
    project("train.py", TRAIN)
    project("loaders.py", SUBCLASS)
    root = project.root
    assert _codes(_check(root, "--no-cache"), "train.py") == ["RPL301"]


def test_facts_from_the_cache_are_completed_when_a_subclass_appears(project):
    train = project("train.py", TRAIN)
    loaders = project("loaders.py", PLAIN)
    root = project.root
    assert _codes(_check(root), "train.py") == []  # the cache now holds train.py walked light
    loaders.write_text(SUBCLASS)
    assert _codes(_check(root), "train.py") == ["RPL301"]
    assert _codes(_check(root), "train.py") == ["RPL301"]  # (from the facts stored the second time)
    assert train.read_text() == TRAIN
    fixed = subprocess.run([sys.executable, "-m", "repro_lint", "check", ".", "--fix"], cwd=root, env=_env(), capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "ShuffledLoader(data, 32, True, generator=torch.Generator().manual_seed(0))" in train.read_text()


@pytest.mark.slow
def test_gated_checks_equal_checks_with_every_hook(tmp_path):
    """A generated project (training packages that use DataLoaders, subclass none) with a
    settings class in a file naming no loader API that a loader call reads; then the same
    with a DataLoader subclass called from a file naming none (every file walked light is
    then extracted again in full)."""
    root = tmp_path
    # torch 1.8, whose workers need a worker_init_fn whatever the dataset: main.py's loader is
    # reported, with the worker count read from the class of a file walked light
    (root / "pyproject.toml").write_text('[project]\nname = "gates"\nversion = "0"\ndependencies = ["torch>=1.8"]\n')
    make_corpus.write_labs(root / "labs", 2, seed=5)
    (root / "config.py").write_text("class Settings:\n    workers = 2\n    shuffle = True\n\n    def __init__(self):\n        self.drop = True\n")
    (root / "main.py").write_text(
        "from torch.utils.data import DataLoader\n\nfrom config import Settings\n\n\n"
        "def main(ds):\n    return DataLoader(ds, shuffle=Settings.shuffle, num_workers=Settings.workers)\n"
    )
    for extra in ({}, {"train.py": TRAIN, "loaders.py": SUBCLASS, **CALLERS}):
        for name, text in extra.items():
            (root / name).parent.mkdir(exist_ok=True)
            (root / name).write_text(text)
        for args in (["--no-cache"], ["--no-cache", "--jobs", "2"]):
            gated, ungated = _check(root, *args), _check(root, *args, ungated=True)
            assert gated.returncode == ungated.returncode == 0, gated.stderr + ungated.stderr
            assert json.loads(gated.stdout)["findings"] == json.loads(ungated.stdout)["findings"]
        # (the class attributes of a file walked light are read: `num_workers=2` is known)
        main = [f["message"] for f in json.loads(gated.stdout)["findings"] if f["path"] == "main.py"]
        assert any(m.startswith("`DataLoader` with num_workers=2 has no `worker_init_fn=`") for m in main), main
    findings = json.loads(gated.stdout)["findings"]
    for name in ("train.py", "by_export.py", "by_subclass.py", "by_choice.py"):
        assert any(f["code"] == "RPL301" and f["path"] == name for f in findings), name


# files naming no loader API that call the subclass of `SUBCLASS` by other names
CALLERS = {
    "pkg/__init__.py": "from loaders import ShuffledLoader as FastLoader\n",
    "by_export.py": "from pkg import FastLoader\n\n\ndef main(data):\n    return FastLoader(data, 32, True)\n",
    "subloaders.py": "from loaders import ShuffledLoader\n\n\nclass EpochLoader(ShuffledLoader):\n    pass\n",
    "by_subclass.py": "from subloaders import EpochLoader\n\n\ndef main(data):\n    return EpochLoader(data, 32, True)\n",
    "by_choice.py": (
        "from loaders import ShuffledLoader\nfrom subloaders import EpochLoader\n\n\n"
        "def main(data, epochs):\n    cls = EpochLoader if epochs else ShuffledLoader\n    return cls(data, 32, True)\n"
    ),
}


def test_only_files_that_may_call_a_loader_class_are_extracted_again(project, monkeypatch):
    from repro_lint.discover.config import find_config, load_config
    from repro_lint.check.api import project_facts
    from repro_lint.check.select import known_codes
    from repro_lint.facts.matchers import get_matchers
    from repro_lint.facts.model import LIGHT_HOOKS

    project("train.py", TRAIN)
    project("loaders.py", SUBCLASS)
    for name, text in CALLERS.items():
        project(name, text)
    project("metrics.py", "def accuracy(pred, target):\n    return (pred == target).float().mean()\n")
    root = project.root.resolve()
    monkeypatch.chdir(root)
    cfg = load_config(find_config(root), known_codes(), get_matchers().sources)
    infos = project_facts([root], cfg, root, use_cache=False)
    light = sorted(Path(k).name for k, info in infos.items() if info.summary(LIGHT_HOOKS))
    assert light == ["__init__.py", "metrics.py", "subloaders.py"]


def test_a_subclass_made_in_an_open_buffer_reaches_files_walked_light(project):
    pytest.importorskip("pygls")
    from lsp_client import LspClient

    train = project("train.py", TRAIN)
    loaders = project("loaders.py", PLAIN)
    root = project.root
    with LspClient([sys.executable, "-m", "repro_lint", "server"], cwd=root, env=_env()) as c:
        c.initialize(root)
        t = c.open(train, TRAIN)
        assert [d["code"] for d in c.diagnostics(t, version=1)] == []
        u = c.open(loaders, PLAIN)
        assert [d["code"] for d in c.diagnostics(u, version=1)] == []
        mark = len(c.notifications)
        c.change(loaders, SUBCLASS)  # unsaved
        assert [d["code"] for d in c.diagnostics(t, after=mark)] == ["RPL301"]
    assert loaders.read_text() == PLAIN
