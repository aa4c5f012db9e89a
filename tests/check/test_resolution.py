"""Name resolution and the project index, on real parsed code."""

import textwrap

from repro_lint.facts.walker.extractor import extract
from repro_lint.index.project_index import ProjectIndex
from repro_lint.facts.matchers import get_matchers
from repro_lint.facts.model import MODULE_SCOPE


def facts(src, module="m", is_package=False):
    return extract(f"{module}.py", module, is_package, textwrap.dedent(src).encode(), get_matchers())


def kinds(info, scope, kind):
    return [e.data for e in info.events.get(scope, []) if e.kind == kind]


def test_aliases_resolve_to_qualified_names():
    info = facts(
        """
        import numpy as np
        from numpy import random as npr
        import torch.nn.functional as F
        from torch.utils.data import DataLoader as DL
        np.random.rand(1)
        npr.randint(0, 3)
        F.dropout(x)
        """
    )
    apis = [d["api"] for d in kinds(info, MODULE_SCOPE, "draw")]
    assert apis == ["numpy.random.rand", "numpy.random.randint", "torch.nn.functional.dropout"]


def test_local_imports_and_shadowing():
    info = facts(
        """
        def f():
            import random as r
            r.random()

        def g(random):
            random.random()  # a parameter, not the module

        def h():
            import numpy
            rng = numpy.random
            rng.rand(2)
        """
    )
    assert [d["api"] for d in kinds(info, "f", "draw")] == ["random.random"]
    assert kinds(info, "g", "draw") == []
    assert [d["api"] for d in kinds(info, "h", "draw")] == ["numpy.random.rand"]


def test_relative_imports_and_reexports_across_files():
    pkg_init = facts("from .utils import set_seed\n", module="pkg", is_package=True)
    utils = facts(
        """
        import torch, numpy as np
        def set_seed(s):
            torch.manual_seed(s)
            _np(s)
        def _np(s):
            np.random.seed(s)
        """,
        module="pkg.utils",
    )
    train = facts(
        """
        from pkg import set_seed
        import torch
        if __name__ == "__main__":
            set_seed(0)
            torch.rand(1)
        """,
        module="train",
    )
    index = ProjectIndex([pkg_init, utils, train], get_matchers())
    assert index.resolve("pkg.set_seed", train) == ("pkg.utils.set_seed",)
    eff = index.effects("pkg.utils.set_seed")
    assert eff.seeds == {"torch", "numpy"}
    [entry] = index.entry_points()
    assert entry.module == "train"
    program = index.program(entry)
    assert set(program.seeds()) == {"torch", "numpy"}
    assert ("pkg.utils", "_np") in program.scope_set


def test_entry_points_and_libraries_with_self_tests():
    lib = facts("import torch\ndef f():\n    return torch.rand(1)\nif __name__ == '__main__':\n    print(f())\n", module="lib")
    trainer = facts(
        "import torch\nfrom lib import f\ndef main():\n    opt = torch.optim.SGD([], lr=1)\n    opt.step()\nif __name__ == '__main__':\n    main()\n",
        module="trainer",
    )
    imports_trainer = facts("import trainer\n", module="user")
    work = facts("print('hi')\n", module="script")
    config_only = facts("import logging\nlogging.basicConfig()\nX = 1\n", module="cfg")
    test_file = facts("import lib\nlib.f()\n", module="tests.test_lib")
    test_file.is_test = True
    index = ProjectIndex([lib, trainer, imports_trainer, work, config_only, test_file], get_matchers())
    names = sorted(e.module for e in index.entry_points())
    # lib: imported and its __main__ block does not train -> a library with a self-test;
    # trainer: imported but trains -> still an entry point
    assert names == ["script", "trainer"]


def test_unresolved_method_calls_reach_project_methods_of_that_name_but_library_names():
    # an object of unknown type (a parameter): a method name that library objects do not
    # commonly have reaches the project methods of that name; `sample` (a distribution's, a
    # sampler's) reaches none by its name alone
    info = facts(
        """
        import numpy as np
        import torch
        class A:
            def jitter(self):
                return np.random.rand(1)
            def sample(self):
                return torch.rand(1)
        def main(obj):
            obj.jitter()
            obj.sample()
        if __name__ == "__main__":
            main(None)
        """
    )
    index = ProjectIndex([info], get_matchers())
    program = index.program(index.entry_points()[0])
    assert ("m", "A.jitter") in program.scope_set
    assert ("m", "A.sample") not in program.scope_set
    assert set(program.draws()) == {"numpy"}


def test_methods_of_objects_a_call_made_are_looked_up_in_what_made_them():
    # `x.to()` of a tensor reaches no project `to`; of a project object, its class's
    info = facts(
        """
        import torch
        class EMA:
            def to(self, device):
                torch.manual_seed(0)
                return self
        class Buffer:
            def get(self, n):
                return torch.rand(n)
        def make():
            return EMA()
        def main(cfg):
            torch.zeros(2).to("cpu")
            cfg.get("lr")
            {"a": 1}.get("a")
            b = Buffer()
            b.get(3)
        def other():
            e = make()
            e.to("cpu")
        if __name__ == "__main__":
            main({})
            other()
        """
    )
    index = ProjectIndex([info], get_matchers())
    main = {keys for _, keys in index.callees(info, "main")}
    assert main == {("m.Buffer.get",)}
    assert ("m.EMA.to",) in {keys for _, keys in index.callees(info, "other")}
    program = index.program(index.entry_points()[0])
    assert program.draws() and "torch" in program.seeds()


def test_hydra_target_lines_are_reached(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "config.yaml").write_text("model:\n  _target_: models.build\n")
    models_src = "import torch\ndef build():\n    return torch.nn.Linear(2, 2)\ndef unused():\n    return torch.rand(1)\n"
    app_src = "import hydra\n@hydra.main(config_path='conf', config_name='config', version_base=None)\ndef main(cfg):\n    pass\nif __name__ == '__main__':\n    main()\n"
    (tmp_path / "models.py").write_text(models_src)
    (tmp_path / "app.py").write_text(app_src)
    models = extract(str(tmp_path / "models.py"), "models", False, models_src.encode(), get_matchers())
    app = extract(str(tmp_path / "app.py"), "app", False, app_src.encode(), get_matchers())
    index = ProjectIndex([models, app], get_matchers(), root=tmp_path)
    program = index.program(app)
    assert ("models", "build") in program.scope_set
    assert ("models", "unused") not in program.scope_set


def test_resolved_calls_memoised_compactly_read_the_same_every_time():
    # a scope's resolved calls are kept as one flat row (call, keys, call, keys, ...), name
    # resolution per asking module, equal effects as one object: what is asked again is
    # what was worked out the first time
    utils = facts(
        """
        import random
        def draw():
            return random.random()
        def seed():
            random.seed(0)
        def nothing():
            return 1
        def also_nothing():
            return 2
        """,
        module="utils",
    )
    train = facts(
        """
        import utils
        from utils import draw
        class Model:
            def update_weights(self):
                return self.helper()
            def helper(self):
                return draw()
        def main(model):
            utils.seed()
            draw()
            model.update_weights()
            utils.nothing()
            print("no project function")
        if __name__ == "__main__":
            main(Model())
        """,
        module="train",
    )
    index = ProjectIndex([utils, train], get_matchers())
    first = list(index.callees(train, "main"))
    assert [keys for _, keys in first] == [("utils.seed",), ("utils.draw",), ("train.Model.update_weights",), ("utils.nothing",)]
    assert [call[2] for call, _ in first] == [10, 11, 12, 13]
    assert list(index.callees(train, "main")) == first  # asked again: from the memo
    assert index.callee_row(train, "main") == tuple(x for pair in first for x in pair)
    assert list(index.callees(train, "Model.update_weights")) == [(index.callee_row(train, "Model.update_weights")[0], ("train.Model.helper",))]
    assert list(index.callees(train, MODULE_SCOPE)) == []
    assert index.resolve("utils.draw", train) == ("utils.draw",)
    assert index.resolve("utils.draw", train) is index.resolve("utils.draw", train)
    assert index.resolve("utils.missing", train) == ()
    assert index.resolve("utils.seed", train) == ("utils.seed",)
    assert index.method_targets("update_weights", train) == ("train.Model.update_weights",)
    assert index.method_targets("update_weights", train) == ("train.Model.update_weights",)
    assert index.method_targets("step", train) == ()  # an optimizer's: never by its name alone
    assert index.effects("utils.draw").draws == {"python"}
    assert index.effects("train.Model.helper") is index.effects("utils.draw")
    assert index.effects("utils.nothing") is index.effects("utils.also_nothing")
    assert not index.effects("utils.nothing").draws and not index.effects("utils.nothing").seeds
