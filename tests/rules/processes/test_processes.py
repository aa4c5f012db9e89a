"""RPL201 and RPL202: the findings, the edits RPL201 carries, and the facts behind them."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from repro_lint.discover.config import Config
from repro_lint.check.run import run_check
from repro_lint.check.select import select
from repro_lint.core.edits import MoveStatements
from conftest import full

REPO = Path(__file__).resolve().parents[3]


def findings(project, files: dict, code: str | None = None):
    for rel, text in files.items():
        project(rel, textwrap.dedent(text))
    report = run_check([project.root], Config(), root=project.root, jobs=1, use_cache=False)
    assert not report.errors, report.errors
    out = select(report, Config())
    return [f for f in out if code is None or f.code == code]


ISSUE_APP = '''\
    import hydra
    import numpy as np
    import torch

    SEED = 1234
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


    @hydra.main(version_base=None, config_path=None, config_name=None)
    def main(cfg):
        """Doc."""
        print(np.random.rand(), torch.rand(1))


    if __name__ == "__main__":
        main()
'''


# -- RPL201: detection and the move it carries -----------------------------------------------
def test_one_finding_per_statement_and_one_move(project):
    found = findings(project, {"app.py": ISSUE_APP})
    assert [(f.code, f.location.line) for f in found] == [("RPL201", n) for n in (6, 7, 8, 9)]
    fixes = {f.fix for f in found}
    assert len(fixes) == 1  # the fix moves them together
    (fix,) = fixes
    assert fix.safety == "safe"
    (move,) = fix.edits
    assert isinstance(move, MoveStatements)
    assert move.function == "main"
    assert [span[0] for span in move.stmts] == [6, 7, 8, 9]  # in order; `SEED = 1234` (line 5) stays
    assert move.prelude == "import torch"
    assert "joblib" in full(found[0]) and "`main`" in full(found[0])
    assert "seeds numpy" in full(found[0])
    assert "`torch.backends.cudnn.deterministic` is set" in full(found[2])


def test_no_prelude_without_torch(project):
    (f,) = findings(project, {"app.py": '''\
        import hydra
        import numpy as np

        np.random.seed(0)


        @hydra.main(version_base=None)
        def main(cfg):
            print(np.random.rand())
    '''})
    assert f.fix.edits[0].prelude == ""


@pytest.mark.parametrize(
    "imports, stmt, prelude",
    [
        ("import torch as th", "th.backends.cudnn.benchmark = False", "import torch as th"),
        ("from torch.backends import cudnn", "cudnn.benchmark = False", "from torch.backends import cudnn"),
        ("import torch.backends.cudnn as cd", "cd.benchmark = False", "from torch.backends import cudnn as cd"),
        ("import torch\ncudnn = torch.backends.cudnn", "cudnn.benchmark = False", "from torch.backends import cudnn"),
    ],
)
def test_prelude_rebinds_the_names_the_moved_code_uses(project, imports, stmt, prelude):
    (f,) = findings(project, {"app.py": f"import hydra\n{imports}\n\n{stmt}\n\n\n@hydra.main\ndef main(cfg):\n    pass\n"}, "RPL201")
    assert f.fix.edits[0].prelude == prelude


def test_prelude_is_needed_for_pickling(tmp_path):
    """The reason for the prelude: cloudpickle (joblib/loky) cannot ship the moved function
    when it refers to the module-level `torch.backends.cudnn`."""
    cloudpickle = pytest.importorskip("cloudpickle")
    pytest.importorskip("hydra")
    fixed = (REPO / "fixtures/RPL201/fix/issue_app.fixed.py").read_text()
    assert "    import torch\n" in fixed
    results = {}
    for name, text in (("with", fixed), ("without", fixed.replace("    import torch\n", "", 1))):
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        main = runpy.run_path(str(path), run_name=f"app_{name}")["main"]
        try:
            cloudpickle.dumps(getattr(main, "__wrapped__", main))
            results[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - the error is the point
            results[name] = str(exc)
    assert results["with"] == "ok"
    assert "CudnnModule" in results["without"]


def test_seed_already_made_inside_main_is_not_reported(project):
    found = findings(project, {"app.py": '''\
        import hydra
        import lightning
        import numpy as np
        import torch

        torch.manual_seed(0)
        np.random.seed(0)
        torch.backends.cudnn.deterministic = True


        @hydra.main(version_base=None)
        def main(cfg):
            torch.manual_seed(cfg.seed)
            print(np.random.rand(), torch.rand(1))
    '''}, "RPL201")
    # torch is seeded inside `main`, numpy is not; the flag is set only at module level
    assert [f.location.line for f in found] == [7, 8]


def test_call_of_the_hydra_main_is_not_a_seeder(project):
    found = findings(project, {"app.py": '''\
        import hydra
        import torch


        @hydra.main(version_base=None)
        def main(cfg):
            torch.manual_seed(cfg.seed)
            print(torch.rand(1))


        def cli():
            main()


        if __name__ == "__main__":
            cli()
    '''}, "RPL201")
    assert found == []


def test_callback_reference_is_not_a_seeding_call(project):
    found = findings(project, {"app.py": '''\
        import atexit

        import hydra
        import numpy as np


        def reseed():
            np.random.seed(0)


        atexit.register(reseed)


        @hydra.main(version_base=None)
        def main(cfg):
            print(cfg)
    '''}, "RPL201")
    assert found == []


@pytest.mark.parametrize(
    "module_code, reason",
    [
        ("gen = torch.manual_seed(0)\nSTART = gen.initial_seed()\n", "`gen` is used on line"),
        ("torch.backends.cudnn.benchmark = False\nprint(torch.backends.cudnn.benchmark)\n", "reads `torch.backends.cudnn.benchmark` back"),
        ("torch.use_deterministic_algorithms(True, warn_only=True)\nassert torch.are_deterministic_algorithms_enabled()\n", "reads the deterministic-algorithms setting back"),
        ("torch.manual_seed(0)\nW = torch.rand(3)\n", "draws from torch after it"),
        ("torch.manual_seed(SEED)\n", "`main` has its own local `SEED`"),
    ],
)
def test_dependencies_are_reported_without_fix(project, module_code, reason):
    app = (
        "import hydra\nimport torch\n\nSEED = 0\n" + module_code
        + "\n\n@hydra.main(version_base=None)\ndef main(cfg):\n    SEED = cfg.seed\n    print(SEED, torch.rand(1))\n"
    )
    found = findings(project, {"app.py": app}, "RPL201")
    assert found
    assert found[0].fix is None
    assert reason in full(found[0])


def test_binding_used_by_another_function_blocks_the_move(project):
    (f,) = findings(project, {"app.py": '''\
        import hydra
        import torch

        g = torch.manual_seed(0)


        def helper():
            return g.initial_seed()


        @hydra.main(version_base=None)
        def main(cfg):
            print(helper())
    '''}, "RPL201")
    assert f.fix is None and "`g` is used on line 7" in full(f)


def test_binding_used_only_by_main_moves(project):
    (f,) = findings(project, {"app.py": '''\
        import hydra
        import torch

        g = torch.manual_seed(0)


        @hydra.main(version_base=None)
        def main(cfg):
            print(g.initial_seed())
    '''}, "RPL201")
    assert f.fix is not None


def test_blocked_statement_leaves_the_others_movable(project):
    found = findings(project, {"app.py": '''\
        import hydra
        import numpy as np
        import torch

        torch.manual_seed(0)
        NOISE = torch.rand(3)
        np.random.seed(0)


        @hydra.main(version_base=None)
        def main(cfg):
            print(NOISE, np.random.rand())
    '''}, "RPL201")
    assert [(f.location.line, f.fix is not None) for f in found] == [(5, False), (7, True)]
    assert [s[0] for s in found[1].fix.edits[0].stmts] == [7]


def test_no_fix_with_two_hydra_mains(project):
    found = findings(project, {"app.py": '''\
        import hydra
        import torch

        torch.manual_seed(0)


        @hydra.main(version_base=None)
        def train(cfg):
            print(torch.rand(1))


        @hydra.main(version_base=None)
        def evaluate(cfg):
            print(torch.rand(1))
    '''}, "RPL201")
    assert len(found) == 1 and found[0].fix is None
    assert "more than one Hydra main" in full(found[0])


def test_test_files_and_non_hydra_modules_are_not_reported(project):
    found = findings(project, {
        "tests/test_app.py": "import hydra\nimport torch\n\ntorch.manual_seed(0)\n\n\n@hydra.main\ndef main(cfg):\n    pass\n",
        "script.py": "import hydra\nimport torch\n\ntorch.manual_seed(0)\nprint(torch.rand(1))\n",
    }, "RPL201")
    assert found == []


def test_cli_reports_and_fixes(project, cli):
    project("app.py", textwrap.dedent(ISSUE_APP))
    r = cli("--no-cache", "app.py", cwd=project.root)
    assert r.returncode == 1 and r.stdout.count("RPL201") >= 4, r.stdout + r.stderr
    r = cli("--fix", "--no-cache", "app.py", cwd=project.root)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    text = (project.root / "app.py").read_text()
    assert '    """Doc."""\n    import torch\n\n    np.random.seed(SEED)\n    torch.manual_seed(SEED)\n' in text
    assert "SEED = 1234\n" in text
    assert "RPL201" not in cli("--no-cache", "app.py", cwd=project.root).stdout


# -- RPL202 -----------------------------------------------------------------------------------
def test_handoff_message_names_fork_and_spawn(project):
    (f,) = findings(project, {"work.py": '''\
        import multiprocessing

        import numpy as np
        import torch


        def work(i):
            return np.random.rand() + torch.rand(1).item()


        def run(xs):
            with multiprocessing.Pool(2) as pool:
                return pool.map(work, xs)
    '''}, "RPL202")
    assert (f.location.line, f.location.col) == (13, 16)  # the hand-off call
    assert "`work` draws from numpy's global and torch's global RNGs" in full(f)
    assert "`Pool.map`" in full(f)
    assert "Under fork every worker repeats the parent's numpy and torch streams" in full(f)
    assert "under spawn every worker starts unseeded" in full(f)
    assert f.fix is None
    assert f.related and f.related[0].location.line == 7


def test_python_random_is_reseeded_after_fork_in_the_message(project):
    (f,) = findings(project, {"work.py": '''\
        import random
        from concurrent.futures import ProcessPoolExecutor


        def work(i):
            return random.random()


        def run(xs):
            with ProcessPoolExecutor() as ex:
                return list(ex.map(work, xs))
    '''}, "RPL202")
    assert "Under fork Python `random` is reseeded from OS entropy" in full(f)
    assert "repeats the parent's" not in full(f)


def test_handoff_across_modules(project):
    found = findings(project, {
        "noise.py": "import torch\n\n\ndef sample(n):\n    return torch.randn(n)\n",
        "jobs.py": "from noise import sample\n\n\ndef job(n):\n    return sample(n).sum()\n",
        "run.py": "from joblib import Parallel, delayed\n\nfrom jobs import job\n\n\ndef go():\n    return Parallel(2)(delayed(job)(n) for n in range(4))\n",
    }, "RPL202")
    assert [(Path(f.location.path).name, f.location.line) for f in found] == [("run.py", 7)]


def test_pool_bound_at_module_level_and_used_in_function(project):
    found = findings(project, {"work.py": '''\
        from multiprocessing import Pool

        import numpy as np

        POOL = Pool(2)


        def work(i):
            return np.random.rand()


        def run(xs):
            return POOL.map(work, xs)
    '''}, "RPL202")
    assert [f.location.line for f in found] == [13]


RNG_FACTS = '''\
import multiprocessing as mp
import random
import sys

import numpy as np
import torch


def values():
    return (random.random(), float(np.random.rand()), float(torch.rand(1)))


def draw(queue):
    queue.put(values())


if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1])
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    queue = ctx.Queue()
    # one draw per worker process
    procs = [ctx.Process(target=draw, args=(queue,)) for _ in range(2)]
    for p in procs:
        p.start()
    workers = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join()
    parent = values()  # the parent's next numbers: what each forked worker started from
    print(repr((parent, workers)))
'''


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_the_facts_the_message_states(tmp_path):
    """Under fork numpy and torch repeat the parent's stream in every worker while Python's
    `random` is reseeded; under spawn every worker starts unseeded (differs run to run)."""
    script = tmp_path / "facts.py"
    script.write_text(RNG_FACTS)

    def run(method):
        out = subprocess.run([sys.executable, str(script), method], capture_output=True, text=True, timeout=120, check=True)
        return eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 - our own script's repr

    parent, workers = run("fork")
    for w in workers:
        assert w[1:] == parent[1:]  # numpy, torch: the parent's next numbers (seeded before fork)
    assert workers[0][0] != workers[1][0]  # python: reseeded in each child
    first = run("spawn")[1]
    second = run("spawn")[1]
    for a, b in zip(first, second):
        assert a[1] != b[1] and a[2] != b[2]  # unseeded: differ from run to run
