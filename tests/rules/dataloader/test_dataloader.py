"""RPL301/RPL302: messages, the edits their fixes carry, and the catalog against real torch."""

import inspect
import textwrap
from pathlib import Path

import pytest
import torch.utils.data as tud

from repro_lint.core import catalog
from repro_lint.discover.config import Config
from repro_lint.check.run import run_check
from repro_lint.check.select import select
from repro_lint.core.edits import AddKeyword, EnsureFunction, SeedSpec
from conftest import full


# A project for torch 1.8, whose loader workers do not reseed numpy's global RNG: there every
# loader with workers needs a worker_init_fn (spec, large repositories 8).
OLD_TORCH = {"requirements.txt": "torch>=1.8,<1.9\n"}


def check(project, files: dict, codes=("RPL301", "RPL302"), config=None):
    config = config or Config()
    for rel, text in files.items():
        project(rel, textwrap.dedent(text).lstrip())
    report = run_check([project.root], config, root=project.root, jobs=1, use_cache=False)
    assert not report.errors, report.errors
    return [f for f in select(report, config) if f.code in codes]


def one(findings, code, line=None):
    hits = [f for f in findings if f.code == code and (line is None or f.location.line == line)]
    assert len(hits) == 1, findings
    return hits[0]


# -- catalog: positions must match the torch that is installed ----------------------------
def _positional(fn):
    params = list(inspect.signature(fn).parameters.values())
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"]


def test_loader_parameters_match_installed_torch():
    data = catalog.load("dataloading")
    assert _positional(tud.DataLoader.__init__) == data["loader-parameters"]
    assert data["loader-parameters"].index("shuffle") == 2


@pytest.mark.parametrize("item", catalog.load("dataloading")["random-calls"], ids=lambda i: i["names"][0].rsplit(".", 1)[-1])
def test_random_call_parameters_match_installed_torch(item):
    import importlib

    for name in item["names"]:
        mod, _, attr = name.rpartition(".")
        obj = getattr(importlib.import_module(mod), attr)
        assert _positional(obj.__init__ if isinstance(obj, type) else obj) == item["parameters"], name


def test_catalog_names_exist_in_torch():
    import importlib

    data = catalog.load("dataloading")
    for name in [*data["loaders"], *data["torch-generators"], *data["initial-seed"]]:
        mod, _, attr = name.rpartition(".")
        assert hasattr(importlib.import_module(mod), attr), name


# -- messages -------------------------------------------------------------------------
def test_rpl301_names_the_missing_generator(project):
    f = check(project, {"lib.py": """
        from torch.utils.data import DataLoader, random_split
        def build(ds):
            parts = random_split(ds, [5, 5])
            return DataLoader(ds, shuffle=True), parts
    """})
    assert "`DataLoader` shuffles without `generator=`" in full(one(f, "RPL301", 4))
    assert "global generator" in full(one(f, "RPL301", 4))
    assert "`random_split` without `generator=`" in full(one(f, "RPL301", 3))


def test_rpl302_message_states_what_workers_reseed(project):
    f = check(project, {**OLD_TORCH, "lib.py": """
        from torch.utils.data import DataLoader
        def build(ds):
            return DataLoader(ds, num_workers=3)
    """})
    msg = full(one(f, "RPL302"))
    assert "num_workers=3" in msg
    assert "this project targets PyTorch releases before 1.9" in msg
    assert "Before 1.9 workers do not reseed numpy's global RNG" in msg


def test_rpl302_says_plainly_when_the_dataset_holds_a_generator(project):
    f = check(project, {
        "data.py": """
            import numpy as np
            import torch
            from torch.utils.data import Dataset
            class Crops(Dataset):
                def __init__(self):
                    self.rng = np.random.default_rng(0)
            class Flips(Dataset):
                def __init__(self):
                    self.gen = torch.Generator().manual_seed(1)
        """,
        "lib.py": """
            from torch.utils.data import DataLoader
            from data import Crops, Flips
            def build():
                crops = Crops()
                return DataLoader(crops, num_workers=2), DataLoader(dataset=Flips(), num_workers=2)
        """,
    })
    first, second = sorted((x for x in f if x.code == "RPL302"), key=lambda x: x.location.col)
    assert "dataset `Crops` holds its own generator (`self.rng = numpy.random.default_rng(...)`" in full(first)
    assert "every worker gets an identical copy" in full(first)
    assert "dataset `Flips` holds its own generator (`self.gen = torch.Generator(...)`" in full(second)


def test_the_fix_reseeds_the_generator_the_dataset_holds(project):
    # seed_worker would silence the finding and leave every worker with the same copy: the
    # fix gives each worker's copy of the dataset a generator seeded from the worker's seed
    f = check(project, {"lib.py": """
        import random
        from torch.utils.data import DataLoader, Dataset
        class Words(Dataset):
            rng = random.Random(0)
        def build():
            return DataLoader(Words(), num_workers=2)
    """})
    finding = one(f, "RPL302")
    assert "`self.rng = random.Random(...)`" in full(finding)
    add, ensure = finding.fix.edits
    assert add == AddKeyword((6, 11, 6, 45), "worker_init_fn", "reseed_worker")
    assert isinstance(ensure, EnsureFunction) and ensure.name == "reseed_worker"
    assert ensure.code.splitlines()[1:] == [
        "    dataset = {mod:torch}.utils.data.get_worker_info().dataset",
        "    worker_seed = {mod:torch}.initial_seed() % 2**32",
        "    dataset.rng = {mod:random}.Random(worker_seed)",
    ]
    assert finding.fix.safety == "safe"


def test_old_release_fix_for_a_held_generator_also_seeds_the_global_rngs(project):
    f = check(project, {**OLD_TORCH, "lib.py": """
        import random
        import numpy as np
        from torch.utils.data import DataLoader, Dataset
        class Words(Dataset):
            def __init__(self):
                self.rng = random.Random(0)
            def __len__(self):
                return 8
            def __getitem__(self, i):
                return i + self.rng.random() + np.random.rand()
        def build():
            return DataLoader(Words(), num_workers=2)
    """})
    fix = one(f, "RPL302").fix
    functions = [e for e in fix.edits if isinstance(e, EnsureFunction)] if fix else []
    # no fix, or a worker function that seeds numpy's global RNG as well as the held object
    assert fix is None or any("{mod:numpy}.random.seed(" in e.code for e in functions), fix


@pytest.mark.xfail(
    strict=True,
    reason="RPL302 looks for held generators only in the dataset class's own attributes; spec "
    "(large repositories 8) names those of its transforms and of module-level names too",
)
@pytest.mark.parametrize("where", ["transform", "module"])
def test_generators_held_by_transforms_or_module_names_are_reported(project, where):
    dataset = {
        "transform": """
            class Jitter:
                def __init__(self):
                    self.rng = np.random.default_rng(0)
                def __call__(self, x):
                    return x + self.rng.normal()
            class Points(Dataset):
                def __init__(self, transform):
                    self.transform = transform
                def __len__(self):
                    return 8
                def __getitem__(self, i):
                    return self.transform(float(i))
            def build():
                return DataLoader(Points(Jitter()), num_workers=2)
        """,
        "module": """
            RNG = np.random.default_rng(0)
            class Points(Dataset):
                def __len__(self):
                    return 8
                def __getitem__(self, i):
                    return i + RNG.normal()
            def build():
                return DataLoader(Points(), num_workers=2)
        """,
    }[where]
    head = "import numpy as np\nfrom torch.utils.data import DataLoader, Dataset\n"
    f = check(project, {"lib.py": head + textwrap.dedent(dataset)})
    one(f, "RPL302")


@pytest.mark.parametrize(
    "files, reported",
    [
        ({}, False),  # no torch requirement: current releases
        ({"requirements.txt": "torch>=1.9\n"}, False),
        ({"requirements.txt": "torch>=1.8,<1.9\n"}, True),
        ({"requirements.txt": "torch>=1.8\n"}, True),  # a range that admits 1.8
        ({"setting": "1.8"}, True),
        ({"setting": "2.4", "requirements.txt": "torch>=1.8\n"}, False),  # the setting decides
    ],
    ids=["undeclared", "from-1.9", "1.8-only", "from-1.8", "setting-1.8", "setting-over-requirement"],
)
def test_rpl302_on_global_rngs_follows_the_targeted_release(project, files, reported):
    """A dataset that draws only from the global RNGs needs a worker_init_fn only where the
    workers do not reseed them: torch releases before 1.9."""
    files = dict(files)
    setting = files.pop("setting", None)
    f = check(project, {**files, "lib.py": """
        import numpy as np
        from torch.utils.data import DataLoader, Dataset
        class Noise(Dataset):
            def __len__(self):
                return 8
            def __getitem__(self, i):
                return i + np.random.rand()
        def build():
            return DataLoader(Noise(), num_workers=2)
    """}, config=Config(target_torch_version=setting))
    assert [x.location.line for x in f if x.code == "RPL302"] == ([9] if reported else [])


def test_unknown_worker_count_is_not_provably_zero(project):
    f = check(project, {**OLD_TORCH, "lib.py": """
        from torch.utils.data import DataLoader
        def build(ds, n):
            return DataLoader(ds, num_workers=n)
    """})
    assert "may be non-zero" in full(one(f, "RPL302"))


# -- RPL301 fixes ---------------------------------------------------------------------
def test_rpl301_in_a_library_without_a_seed_gets_no_fix_and_says_why(project):
    # a SEED constant in a library would replace the seed of every program importing it
    f = check(project, {"lib.py": """
        from torch.utils.data import DataLoader
        def build(ds):
            return DataLoader(ds, shuffle=True)
    """})
    finding = one(f, "RPL301")
    assert finding.fix is None
    assert "Not fixed automatically: no seed is in scope here" in full(finding)


def test_rpl301_fix_in_an_entry_script_without_a_seed_adds_the_constant(project):
    f = check(project, {"train.py": """
        from torch.utils.data import DataLoader
        def build(ds):
            return DataLoader(ds, shuffle=True)
        if __name__ == "__main__":
            print(list(build(list(range(4)))))
    """})
    fix = one(f, "RPL301").fix
    assert fix.safety == "safe"
    add, spec = fix.edits
    assert add == AddKeyword((3, 11, 3, 39), "generator", "{mod:torch}.Generator().manual_seed({seed})")
    assert spec == SeedSpec(None, "0")


def test_rpl301_fix_reuses_the_programs_seed_expression(project):
    f = check(project, {"train.py": """
        import argparse
        import torch
        from torch.utils.data import DataLoader
        def main(args):
            torch.manual_seed(args.seed)
            for batch in DataLoader(list(range(8)), shuffle=True):
                print(batch)
        if __name__ == "__main__":
            main(argparse.Namespace(seed=3))
    """})
    assert one(f, "RPL301").fix.edits[1] == SeedSpec("args.seed")


@pytest.mark.parametrize("setup", [
    "g = torch.Generator()\n    g.manual_seed(0)",
    "g = torch.Generator().manual_seed(0)",
])
def test_rpl301_fix_passes_a_seeded_generator_of_the_same_scope(project, setup):
    f = check(project, {"lib.py": f"""
import torch
from torch.utils.data import DataLoader
def build(ds):
    {setup}
    return DataLoader(ds, shuffle=True)
"""})
    (add,) = one(f, "RPL301").fix.edits
    assert (add.name, add.value) == ("generator", "g")


def test_rpl301_fix_does_not_pass_an_unseeded_generator(project):
    f = check(project, {"lib.py": """
        import torch
        from torch.utils.data import DataLoader
        def build(ds, seed):
            g = torch.Generator()
            return DataLoader(ds, shuffle=True)
    """})
    add, spec = one(f, "RPL301").fix.edits
    assert add.value.startswith("{mod:torch}.Generator()") and spec == SeedSpec("seed")


def test_no_fix_when_a_kwargs_dict_may_already_hold_the_keyword(project):
    # adding generator= next to a **dict that sometimes has it would raise a TypeError
    f = check(project, {"lib.py": """
        import torch
        from torch.utils.data import DataLoader
        def build(ds, fast):
            kw = {"generator": torch.Generator()} if fast else {}
            return DataLoader(ds, shuffle=True, **kw)
    """})
    assert one(f, "RPL301").fix is None


def test_no_fix_when_the_subclass_init_does_not_accept_the_keyword(project):
    f = check(project, {"lib.py": """
        from torch.utils.data import DataLoader
        class Fixed(DataLoader):
            def __init__(self, dataset, shuffle):
                super().__init__(dataset, shuffle=shuffle)
        def build(ds):
            return Fixed(ds, shuffle=True)
    """})
    assert one(f, "RPL301").fix is None


# -- RPL302 fixes ---------------------------------------------------------------------
def test_rpl302_fix_adds_seed_worker(project):
    f = check(project, {**OLD_TORCH, "lib.py": """
        from torch.utils.data import DataLoader
        def build(ds):
            return DataLoader(ds, num_workers=2)
    """})
    add, ensure = one(f, "RPL302").fix.edits
    assert add == AddKeyword((3, 11, 3, 40), "worker_init_fn", "seed_worker")
    assert isinstance(ensure, EnsureFunction) and ensure.name == "seed_worker"
    assert "{mod:torch}.initial_seed() % 2**32" in ensure.code
    assert "{mod:numpy}.random.seed(worker_seed)" in ensure.code and "{mod:random}.seed(worker_seed)" in ensure.code


def test_rpl302_fix_reuses_a_worker_seeder_of_the_same_module(project):
    f = check(project, {**OLD_TORCH, "lib.py": """
        import random
        import numpy as np
        import torch
        from torch.utils.data import DataLoader
        def _init(worker_id):
            s = torch.initial_seed() % 2**32
            np.random.seed(s)
            random.seed(s)
        def build(ds):
            return DataLoader(ds, num_workers=2)
    """})
    assert one(f, "RPL302").fix.edits == (AddKeyword((10, 11, 10, 40), "worker_init_fn", "_init"),)


def test_rpl302_fix_uses_the_imported_name_of_a_project_worker_seeder(project):
    root = Path(__file__).resolve().parents[3] / "fixtures" / "projects" / "dataloader_worker_fn"
    files = {p.name: p.read_text() for p in root.iterdir() if p.is_file()}  # requirements.txt too
    f = check(project, files)
    assert one(f, "RPL302").fix.edits[0].value == "init_worker"


def test_rpl302_fix_imports_a_worker_seeder_from_another_module(project):
    f = check(project, {
        **OLD_TORCH,
        "helpers/seeding.py": """
            import random
            import numpy as np
            import torch
            def worker_init(worker_id):
                seed = torch.initial_seed() % 2**32
                np.random.seed(seed)
                random.seed(seed)
        """,
        "helpers/__init__.py": "",
        "lib.py": """
            from torch.utils.data import DataLoader
            def build(ds):
                return DataLoader(ds, num_workers=2)
        """,
    })
    assert one(f, "RPL302").fix.edits[0].value == "{mod:helpers.seeding}.worker_init"


def test_a_function_that_seeds_only_numpy_is_not_reused(project):
    f = check(project, {**OLD_TORCH, "lib.py": """
        import numpy as np
        import torch
        from torch.utils.data import DataLoader
        def _init(worker_id):
            np.random.seed(torch.initial_seed() % 2**32)
        def build(ds):
            return DataLoader(ds, num_workers=2)
    """})
    assert one(f, "RPL302").fix.edits[0].value == "seed_worker"


# -- frameworks -----------------------------------------------------------------------
@pytest.mark.parametrize("call", ["L.seed_everything(0, workers=True)", "L.seed_everything(0, True)"])
def test_lightning_worker_seeding_makes_rpl302_moot(project, call):
    f = check(project, {"train.py": f"""
import lightning as L
from torch.utils.data import DataLoader

def main():
    {call}
    for batch in DataLoader(list(range(8)), num_workers=2):
        print(batch)
if __name__ == "__main__":
    main()
"""})
    assert f == []


def test_lightning_seeding_without_workers_does_not(project):
    f = check(project, {**OLD_TORCH, "train.py": """
        import lightning as L
        from torch.utils.data import DataLoader
        def main():
            L.seed_everything(0)
            for batch in DataLoader(list(range(8)), num_workers=2):
                print(batch)
        if __name__ == "__main__":
            main()
    """})
    one(f, "RPL302")


def test_lightning_seeding_without_workers_is_moot_on_current_releases(project):
    # the workers reseed the global RNGs themselves: workers=True adds nothing for this loader
    f = check(project, {"train.py": """
        import lightning as L
        from torch.utils.data import DataLoader
        def main():
            L.seed_everything(0)
            for batch in DataLoader(list(range(8)), num_workers=2):
                print(batch)
        if __name__ == "__main__":
            main()
    """})
    assert f == []


def test_lightning_program_still_reports_a_generator_the_dataset_holds(project):
    f = check(project, {"train.py": """
        import lightning as L
        import numpy as np
        from torch.utils.data import DataLoader, Dataset
        class Jitter(Dataset):
            def __init__(self):
                self.rng = np.random.default_rng(0)
            def __len__(self):
                return 8
            def __getitem__(self, i):
                return i + self.rng.normal()
        def main():
            L.seed_everything(42)
            for batch in DataLoader(Jitter(), num_workers=2):
                print(batch)
        if __name__ == "__main__":
            main()
    """})
    assert "holds its own generator" in full(one(f, "RPL302"))


# -- interplay with RPL101 --------------------------------------------------------------
def test_shuffling_loader_still_counts_as_a_torch_draw(project):
    f = check(project, {"train.py": """
        from torch.utils.data import DataLoader
        def main():
            for batch in DataLoader(list(range(8)), shuffle=True):
                print(batch)
        if __name__ == "__main__":
            main()
    """}, codes=("RPL101", "RPL301"))
    assert {x.code for x in f} == {"RPL101", "RPL301"}
    assert "torch" in one(f, "RPL101").message
