"""The live index (`index.live.LiveIndex`) answers as a freshly built index does after
each edit: findings of the whole project and which programs reach which module, compared
after a series of edits of bodies and of outlines (functions, imports, classes)."""

import sys

from conftest import REPO

from repro_lint.discover.config import Config
from repro_lint.check.api import check_facts, check_index, extract_source, programs_reaching, project_facts
from repro_lint.index.live import LiveIndex, outline
from repro_lint.facts.matchers import get_matchers

sys.path.insert(0, str(REPO / "bench"))
import make_corpus  # noqa: E402

FILES = {
    # a package that re-exports its seeding helper
    "kit/__init__.py": "from .seeding import set_seed\n",
    "kit/seeding.py": "import random\n\nimport numpy as np\n\n\ndef set_seed(seed):\n    random.seed(seed)\n    np.random.seed(seed)\n",
    # a module reached through its package's name only (`import kit2` then `kit2.ops.noise()`)
    "kit2/__init__.py": "",
    "kit2/ops.py": "def noise():\n    return 0.0\n",
    # a base class whose method calls an override of its subclasses
    "models/base.py": "class Base:\n    def run(self):\n        return self.sample()\n\n    def sample(self):\n        return 0\n",
    "models/child.py": "from models.base import Base\n\n\nclass Child(Base):\n    def other(self):\n        return 1\n",
    # a library with a self-test that trains: an entry point only while its main trains
    "lib/loop.py": (
        "import torch\n\n\ndef fit(model, x):\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    model(x).sum().backward()\n    opt.step()\n"
    ),
    # an imported module whose self-test trains through another module's function
    "lib/selftest.py": "import torch\n\nfrom lib.loop import fit\n\nif __name__ == '__main__':\n    fit(torch.nn.Linear(2, 2), torch.ones(4, 2))\n",
    "run_a.py": (
        "import numpy as np\n\nimport kit\nimport kit2\nimport lib.selftest\nfrom models.child import Child\nfrom lib.loop import fit\n\n\n"
        "def main():\n    kit.set_seed(0)\n    Child().run()\n    kit2.ops.noise()\n    print(np.random.rand(2))\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    ),
    "run_b.py": (
        "import random\n\nfrom kit.seeding import set_seed\n\n\ndef main(trainer):\n    set_seed(1)\n    trainer.step()\n    print(random.random())\n\n\n"
        "if __name__ == '__main__':\n    main(None)\n"
    ),
}

EDITS = [
    # (file, old, new): each applied to the file's current text
    ("kit/seeding.py", "    np.random.seed(seed)\n", ""),  # a body: run_a's numpy draw is unseeded now
    ("kit/seeding.py", "    random.seed(seed)\n", "    random.seed(seed)\n    np.random.seed(seed)\n"),
    ("models/child.py", "    def other(self):\n        return 1\n", "    def sample(self):\n        import random\n        return random.random()\n"),  # an override
    ("kit2/ops.py", "    return 0.0\n", "    import torch\n    return torch.randn(1)\n"),  # a body reached by package name
    ("kit2/ops.py", "def noise():", "def noise2():"),  # the outline: the call no longer resolves
    ("kit/seeding.py", "def set_seed(seed):", "def seed_all(seed):"),  # the re-export breaks
    ("kit/seeding.py", "def seed_all(seed):", "def set_seed(seed):"),
    ("lib/loop.py", "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    model(x).sum().backward()\n    opt.step()\n", "    return model(x)\n"),  # no longer trains: neither it nor lib.selftest is an entry point
    ("models/child.py", "class Child(Base):", "class Other(Base):\n    def sample(self):\n        import torch\n        return torch.rand(1)\n\n\nclass Child(Base):"),  # a new subclass
    ("run_b.py", "import random\n", "import random\n\nfrom lib.loop import fit\n"),  # an import
    ("lib/loop.py", "    return model(x)\n", "    return model(x)\n\n\ndef step():\n    import numpy as np\n    return np.random.rand()\n"),  # `trainer.step()` finds it
    # the subclass is built now: `self.sample()` in `Base.run` reaches its override (a program
    # reaches the overrides of the classes it builds only)
    ("run_a.py", "from models.child import Child\n", "from models.child import Child, Other\n"),
    ("run_a.py", "    Child().run()\n", "    Child().run()\n    Other().run()\n"),
    ("labs/lab_00/seeding.py", "    torch.manual_seed(seed)\n", ""),
    ("labs/lab_00/train_03.py", "import io\n", "import io\nfrom kit import set_seed as kit_seed\n"),
]


def _key(f):
    return (f.code, f.location, f.message, tuple(r.location for r in f.related), f.fix and (f.fix.safety, f.fix.edits))


def _write(root, files):
    (root / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0"\n')
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _live(root, cfg):
    infos = project_facts([root], cfg, root, use_cache=False)
    live = LiveIndex(infos.values(), get_matchers(*cfg.matcher_key()), root)
    live.seeding_names()
    live.entries_reaching(())
    return infos, live


def _compare_after_edits(root, edits):
    """Apply `edits` one at a time to the live index and compare it with a fresh index after
    each: the findings of the whole project, and which programs reach which module. The
    edited files are written too. Returns the kinds of edit made (whether each kept the
    outline) and the fresh findings after each edit."""
    cfg = Config()
    infos, live = _live(root, cfg)
    texts = {rel: (root / rel).read_text() for rel, *_ in edits}
    kinds = set()
    seen = []
    for rel, old, new in edits:
        assert old in texts[rel], (rel, old)
        texts[rel] = texts[rel].replace(old, new, 1)
        (root / rel).write_text(texts[rel])
        k = str((root / rel).resolve())
        info = extract_source(root / rel, texts[rel].encode(), cfg, root)
        assert info.error is None
        kinds.add(outline(info) == outline(infos[k]))
        live.replace(info)
        infos[k] = info
        found, _ = check_index(live, list(live.modules.values()), cfg)
        fresh, _ = check_facts(infos, set(infos), cfg, root)
        assert sorted(map(_key, found), key=repr) == sorted(map(_key, fresh), key=repr), (rel, new)
        reaching = programs_reaching(infos, cfg, root)
        assert {m: live.entries_reaching({m}) for m in live.modules} == {m: reaching.get(m, set()) for m in live.modules}, (rel, new)
        seen.append(fresh)
    return kinds, seen


def test_live_index_answers_as_a_fresh_one(tmp_path):
    make_corpus.write_labs(tmp_path / "labs", 1, seed=0)
    _write(tmp_path, FILES)
    kinds, seen = _compare_after_edits(tmp_path, EDITS)
    assert kinds == {True, False}  # both kinds of edit were made
    # the edits changed what is found (the comparison compared something)
    assert {f.code for f in seen[-1]} >= {"RPL101"}


# A Lightning program: `trainer.fit` makes the program reach the hooks of the project's
# LightningModule and callbacks (framework runners), and starts its training.
LIGHTNING = {
    "lit/__init__.py": "",
    "lit/model.py": (
        "import lightning as L\nimport torch\n\n\nclass Model(L.LightningModule):\n"
        "    def training_step(self, batch, i):\n        return batch.sum()\n\n"
        "    def configure_optimizers(self):\n        return torch.optim.SGD(self.parameters(), lr=0.1)\n"
    ),
    "lit/callbacks.py": "import lightning as L\n\n\nclass Log(L.Callback):\n    def on_train_start(self, trainer, module):\n        return 0\n",
    "fit.py": (
        "import lightning as L\n\nfrom lit.callbacks import Log\nfrom lit.model import Model\n\n\n"
        "def main():\n    trainer = L.Trainer(max_epochs=1, callbacks=[Log()])\n    trainer.fit(Model())\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    ),
}

LIGHTNING_EDITS = [
    ("lit/model.py", "        return batch.sum()\n", "        return batch.sum() + torch.randn(1)\n"),  # a draw in a hook
    ("lit/callbacks.py", "        return 0\n", "        import random\n        return random.random()\n"),  # in a callback's hook
    ("fit.py", "    trainer.fit(Model())\n", "    trainer.validate(Model())\n"),  # validate runs other hooks
    # a hook that validate runs, added (an outline edit)
    ("lit/model.py", "    def configure_optimizers", "    def validation_step(self, batch, i):\n        import numpy as np\n        return np.random.rand()\n\n    def configure_optimizers"),
    ("fit.py", "    trainer.validate(Model())\n", "    L.seed_everything(0)\n    trainer.fit(Model())\n"),  # seeded, and training again
    ("lit/model.py", "class Model(L.LightningModule):", "class Model(object):"),  # no longer a LightningModule
    ("fit.py", "    trainer = L.Trainer(max_epochs=1, ", "    trainer = L.Trainer(deterministic=True, max_epochs=1, "),
]


def test_framework_hooks_follow_edits(tmp_path):
    _write(tmp_path, LIGHTNING)
    kinds, seen = _compare_after_edits(tmp_path, LIGHTNING_EDITS)
    assert kinds == {True, False}
    # the unseeded draws found after each edit: a hook's draw counts while a runner runs it
    draws = [sorted(f.message.split("`")[1] for f in found if f.code == "RPL101") for found in seen]
    assert draws == [["torch.randn"], ["random", "torch.randn"], ["random"], ["numpy.random.rand", "random"], [], [], []]


HYDRA = {
    "conf/config.yaml": "model:\n  _target_: models.net.Net\n",
    "models/__init__.py": "",
    "models/net.py": "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
    "app.py": (
        "import hydra\nimport torch\nfrom hydra.utils import instantiate\n\n\n"
        "@hydra.main(config_path='conf', config_name='config', version_base=None)\n"
        "def main(cfg):\n    model = instantiate(cfg.model)\n    print(model(torch.ones(2)))\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    ),
}


HYDRA_EDITS = [
    ("models/net.py", "        return x\n", "        return x + torch.randn(2)\n"),  # a draw in the configured model
    ("app.py", "    model = instantiate(cfg.model)\n", "    torch.manual_seed(cfg.get('seed', 0))\n    model = instantiate(cfg.model)\n"),
    ("models/net.py", "        return x + torch.randn(2)\n", "        return x * torch.rand(2)\n"),
]


def test_hydra_projects_rebuild_on_outline_edits(tmp_path):
    """What Hydra configs make an app load is worked out for the whole project at once: an
    edit inside a function is taken in place, an outline edit asks for a new index."""
    from repro_lint.index.live import RebuildNeeded

    _write(tmp_path, HYDRA)
    kinds, _ = _compare_after_edits(tmp_path, HYDRA_EDITS[:1])
    assert kinds == {True}
    cfg = Config()
    infos, live = _live(tmp_path, cfg)
    fresh, _ = check_facts(infos, set(infos), cfg, tmp_path)
    assert any(f.code == "RPL101" and "torch" in f.message for f in fresh)  # the draw in the configured model counts
    net = tmp_path / "models" / "net.py"
    body = live.modules["models.net"]
    with_method = net.read_text() + "\n    def extra(self):\n        return 1\n"
    try:
        live.replace(extract_source(net, with_method.encode(), cfg, tmp_path))
    except RebuildNeeded:
        pass
    else:
        raise AssertionError("an outline edit in a Hydra project must ask for a new index")
    assert live.modules[body.module] is body  # and nothing was changed


def test_hydra_body_edits_in_place(tmp_path):
    _write(tmp_path, HYDRA)
    kinds, seen = _compare_after_edits(tmp_path, HYDRA_EDITS)
    assert kinds == {True}
    assert [any(f.code == "RPL101" for f in found) for found in seen] == [True, False, False]  # seeded before the model draws


# An inference script: loading a checkpoint makes the layers' initial values not count
# (RPL101); a star import brings a model's names in. Edits add and remove both.
CHECKPOINT = {
    "nets.py": "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = torch.nn.Linear(2, 2)\n",
    "predict.py": (
        "import torch\n\nfrom nets import *\n\n\ndef load(path):\n    net = Net()\n    return net\n\n\n"
        "if __name__ == '__main__':\n    print(load('best.pt'))\n"
    ),
}

CHECKPOINT_EDITS = [
    ("predict.py", "    return net\n", "    net.load_state_dict(torch.load(path))\n    return net\n"),  # a body edit
    ("predict.py", "    net.load_state_dict(torch.load(path))\n", "    net.eval()\n"),
    ("predict.py", "from nets import *\n", "from nets import Net\n"),  # an outline edit
]


def test_checkpoint_loading_and_star_imports_follow_edits(tmp_path):
    _write(tmp_path, CHECKPOINT)
    kinds, seen = _compare_after_edits(tmp_path, CHECKPOINT_EDITS)
    assert kinds == {True, False}
    assert [sorted(f.code for f in found) for found in seen] == [[], ["RPL101"], ["RPL101"]]


# A model picked by name from a dict of callables in another module: the dict's values are
# reached through its name, so editing the dict changes what the sampling program reaches.
REGISTRY = {
    "nets.py": (
        "import numpy as np\nimport torch.nn as nn\n\n\nclass A(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 8, 3)  # cuDNN runs it: RPL401 is asked for while A is reached\n\n\n"
        "class B(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.w = np.random.rand(3)\n\n\n"
        "MODELS = {'a': A}\n"
    ),
    "sample.py": (
        "import sys\n\nimport torch\n\nfrom nets import MODELS\n\n\n"
        "def main(name):\n    torch.manual_seed(0)\n    model = MODELS[name]().cuda()\n    print(model)\n\n\n"
        "if __name__ == '__main__':\n    main(sys.argv[1])\n"
    ),
}

REGISTRY_EDITS = [
    ("nets.py", "MODELS = {'a': A}\n", "MODELS = {'a': A, 'b': B}\n"),  # B draws from numpy when built
    ("nets.py", "MODELS = {'a': A, 'b': B}\n", "MODELS = {'a': A, 'b': A}\n"),
    ("nets.py", "MODELS = {'a': A, 'b': A}\n", "MODELS = {'a': 'A'}\n"),  # names no callable: nothing is reached
]


def test_registries_follow_edits(tmp_path):
    _write(tmp_path, REGISTRY)
    kinds, seen = _compare_after_edits(tmp_path, REGISTRY_EDITS)
    assert kinds == {False}
    assert [sorted(f.code for f in found) for found in seen] == [["RPL101", "RPL401", "RPL403"], ["RPL401", "RPL403"], []]


# A function picked by what another returns (`get_fn(kind)(...)`): editing what it returns
# changes what the program reaches.
RETURNED = {
    "data.py": (
        "import random\n\n\ndef plain(n):\n    return list(range(n))\n\n\n"
        "def shuffled(n):\n    out = list(range(n))\n    random.shuffle(out)\n    return out\n\n\n"
        "def get_fn(kind):\n    if kind == 'plain':\n        return plain\n    return list\n"
    ),
    "main.py": "import sys\n\nfrom data import get_fn\n\nif __name__ == '__main__':\n    print(get_fn(sys.argv[1])(8))\n",
}

RETURNED_EDITS = [
    ("data.py", "    return list\n", "    return shuffled\n"),  # the other branch now hands back a drawing function
    ("data.py", "        return plain\n", "        return sorted\n"),  # a builtin: nothing of the project
    ("data.py", "    return shuffled\n", "    return None\n"),
]


def test_returned_functions_follow_edits(tmp_path):
    _write(tmp_path, RETURNED)
    kinds, seen = _compare_after_edits(tmp_path, RETURNED_EDITS)
    assert kinds == {False}
    assert [sorted(f.code for f in found) for found in seen] == [["RPL101"], ["RPL101"], []]


# Modules inside a package see what its `__init__.py` imports: `nets/helpers.py` imports
# nothing, yet its `module.reset_parameters()` reaches the models `nets/__init__.py` imports.
PACKAGE_INIT = {
    "nets/__init__.py": "from nets.models import Net\n",
    "nets/models.py": (
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.empty(2, 2))\n\n    def reset_parameters(self):\n        nn.init.normal_(self.w)\n"
    ),
    "nets/helpers.py": "def init_weights(model):\n    for m in model.modules():\n        m.reset_parameters()\n",
    "train.py": (
        "import torch\n\nfrom nets import Net\nfrom nets.helpers import init_weights\n\n\n"
        "def main():\n    net = Net()\n    init_weights(net)\n    torch.manual_seed(0)\n    print(net(torch.ones(1, 2)))\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    ),
}

PACKAGE_INIT_EDITS = [
    ("nets/models.py", "    def reset_parameters(self):", "    def reset(self):"),  # the method the helper calls is gone
    ("nets/models.py", "    def reset(self):", "    def reset_parameters(self):"),
    ("nets/__init__.py", "from nets.models import Net\n", "VERSION = 1\n"),  # the package no longer imports the models
    ("nets/__init__.py", "VERSION = 1\n", "from nets.models import Net\n"),
]


def test_package_init_imports_follow_edits(tmp_path):
    _write(tmp_path, PACKAGE_INIT)
    kinds, seen = _compare_after_edits(tmp_path, PACKAGE_INIT_EDITS)
    assert kinds == {False}
    # the models' draw before the seed is seen from the helper only while the package imports them
    assert [sorted({f.code for f in found} & {"RPL103"}) for found in seen] == [[], ["RPL103"], [], ["RPL103"]]
