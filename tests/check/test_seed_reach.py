"""RPL103 leaves a body unresolved unless one of its calls can reach a seeding function
(`seed_reach`): seeding reached only through a call, by every way a call reaches project
code, must still be found."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from repro_lint.discover.config import Config
from repro_lint.check.run import run_check
from repro_lint.index.project_index import ProjectIndex
from repro_lint.facts.matchers import get_matchers
from repro_lint.facts.model import MAIN_SCOPE, MODULE_SCOPE, REF_WORKER
from repro_lint.index.seed_reach import seed_callers

from conftest import run_cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"

# Each body marked `# RPL103` draws before a call that seeds (only through that call);
# the bodies marked `# clean` seed first.
PROJECT = {
    # a seeding helper re-exported under other names, twice
    "rl/utils/seeding.py": """
        import numpy as np
        import torch

        def fix_seeds(seed):
            np.random.seed(seed)
            torch.manual_seed(seed)
    """,
    "rl/utils/__init__.py": """
        from .seeding import fix_seeds as seed_everything
    """,
    "rl/__init__.py": """
        from .utils import seed_everything as init_rng
    """,
    # an override that seeds, reached through `self.reset()` in the base class
    "rl/agents/base.py": """
        import random

        class Agent:
            def reset(self):
                self.steps = 0

            def rollout(self):
                action = random.random()  # RPL103
                self.reset()
                return action
    """,
    "rl/agents/seeded.py": """
        import random

        from rl.agents.base import Agent

        class SeededAgent(Agent):
            def reset(self):
                random.seed(0)
    """,
    # a class whose base seeds in `__init__`, and a callable class seeding when called
    "rl/envs/base.py": """
        import torch

        class SeededEnv:
            def __init__(self, seed=0):
                torch.manual_seed(seed)
    """,
    "rl/envs/grid.py": """
        from rl.envs.base import SeededEnv

        class GridEnv(SeededEnv):
            size = 4
    """,
    "rl/reseed.py": """
        import numpy as np

        class Reseed:
            def __call__(self, seed):
                np.random.seed(seed)
    """,
    # a function handed over makes the function handing it over seed
    "rl/hooks.py": """
        CALLBACKS = []

        def on_start(callback):
            CALLBACKS.append(callback)
    """,
    "experiments/runs.py": """
        import random

        import numpy as np
        import torch

        import rl
        from rl.envs.grid import GridEnv
        from rl.hooks import on_start
        from rl.reseed import Reseed
        from rl.utils.seeding import fix_seeds

        def configure():
            on_start(fix_seeds)

        def sweep():
            noise = np.random.rand(4)  # RPL103
            rl.init_rng(0)
            return noise

        def sweep_seeded_first():  # clean
            rl.init_rng(0)
            return np.random.rand(4)

        def build():
            weights = torch.randn(2)  # RPL103
            env = GridEnv()
            return weights, env

        def tick():
            jitter = np.random.normal()  # RPL103
            Reseed()(0)
            return jitter

        def go():
            pick = np.random.choice(3)  # RPL103
            configure()
            return pick
    """,
}


def _write(root: Path, files: dict) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _marked(files: dict, mark: str) -> set[tuple[str, int]]:
    return {
        (rel, n) for rel, text in files.items() for n, line in enumerate(textwrap.dedent(text).splitlines(), 1) if line.endswith(mark)
    }


def test_rpl103_finds_seeding_reached_only_through_calls(tmp_path):
    _write(tmp_path, PROJECT)
    r = run_cli("check", ".", "--no-cache", "--jobs", "1", "--output-format", "json", "--exit-zero", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    found = {(f["path"], f["start"]["line"]) for f in json.loads(r.stdout)["findings"] if f["code"] == "RPL103"}
    assert found == _marked(PROJECT, "# RPL103")


def _brute_force(index: ProjectIndex) -> set[tuple[str, str]]:
    """Every scope with a call resolved to a function whose effects seed, asked scope by scope."""
    out = set()
    for mod, info in index.modules.items():
        for scope in (MODULE_SCOPE, MAIN_SCOPE, *info.functions):
            # (a loader's worker_init_fn runs in its workers: not a seeding call here)
            if any(index.effects(k).seeds for call, keys in index.callees(info, scope) if call[1] != REF_WORKER for k in keys):
                out.add((mod, scope))
    return out


def _reach(root: Path) -> tuple[frozenset, set]:
    """(the scopes the walk back from the seeding functions finds, those that resolving every
    scope's calls finds) in the project at `root`."""
    cfg = Config()
    report = run_check([root], cfg, root=root, jobs=1, use_cache=False)
    matchers = get_matchers(*cfg.matcher_key())
    expected = _brute_force(ProjectIndex(report.facts.values(), matchers, root))
    return seed_callers(ProjectIndex(report.facts.values(), matchers, root)), expected


def _project_root(name: str, tmp_path: Path) -> Path:
    if name == "rl_project":
        _write(tmp_path / name, PROJECT)
    else:
        shutil.copytree(FIXTURES / name, tmp_path / name)
    return tmp_path / name


ROOTS = ["rl_project", *sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())]

# Projects where the walk back misses scopes that resolution finds: expected to fail until
# the walk is corrected (strict: a pass is reported).
KNOWN_MISSES = {
    "hyperpyyaml_seed": "seeds that a configuration loader applies (HyperPyYAML `!apply:`) are not among "
    "the seeding functions the walk starts from: a scope that calls a project function loading such a "
    "config is not found (RPL103 then misses a draw before that call: tests/rules/test_frameworks.py)",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[n])) if n in KNOWN_MISSES else n for n in ROOTS],
)
def test_seed_callers_are_the_scopes_resolution_finds(name, tmp_path):
    """On this project and the golden projects, the walk back from the seeding functions
    finds the same scopes as resolving every scope's calls."""
    walked, expected = _reach(_project_root(name, tmp_path))
    assert walked == expected


@pytest.mark.slow
def test_the_comparison_of_seed_callers_says_something(tmp_path):
    nonempty = sum(bool(_reach(_project_root(name, tmp_path))[1]) for name in ROOTS)
    assert nonempty >= 5


def test_rpl101_counts_the_draws_behind_an_import_once(cli, project):
    # the message names the first draw of the imported module; the count is of the others
    project("lib.py", "import numpy as np\n\n\ndef noise():\n    return np.random.normal()\n")
    project("train.py", "from lib import noise\n\nprint(noise())\n")
    one = cli("--no-cache", "--format", "concise", "--select", "RPL101", cwd=project.root)
    assert "(`numpy.random.normal` in an imported module) but never seeded in this program\n" in one.stdout, one.stdout
    project("lib.py", "import numpy as np\n\n\ndef noise():\n    return np.random.normal() + np.random.rand()\n")
    two = cli("--no-cache", "--format", "concise", "--select", "RPL101", cwd=project.root)
    assert "never seeded in this program; 1 other draw in this program" in two.stdout, two.stdout
