"""RPL401–RPL405: targeted torch releases, settings, fixes as data, catalog keys of RPL405.

The annotated fixtures (`fixtures/RPL40*/`, `fixtures/projects/determinism_*`) cover what is
reported where; these tests cover what fixtures cannot: configuration, the torch requirement
files, messages, fix safety, and the catalog against the installed torch.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from repro_lint.core import catalog
from repro_lint.discover.config import Config
from repro_lint.check.run import run_check
from repro_lint.check.select import select
from repro_lint.core.edits import AddKeyword, InsertStatements, ReplaceExpression
from repro_lint.discover.requirements import declared, lower_bound, parse_requirement, release, torch_target
from conftest import full

SEEDED_DETERMINISTIC = """\
import torch
from torch import nn

torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
torch.use_deterministic_algorithms(True)
nn.Linear(4, 2)
"""

PROTOTYPE = """\
import torch
from torch import nn


def main():
    torch.manual_seed(0)
    nn.Conv2d(3, 8, 3)(torch.ones(1, 3, 8, 8)).sum().backward()


if __name__ == "__main__":
    main()
"""


def findings(root: Path, cfg: Config | None = None):
    cfg = cfg or Config()
    report = run_check([root], cfg, root=root, jobs=1, use_cache=False)
    assert not report.errors, report.errors
    return select(report, cfg)


def by_code(found, code):
    return [f for f in found if f.code == code]


# -- the release that dropped the cuBLAS check -----------------------------------------------
def test_catalog_records_first_release_without_the_cublas_check():
    cublas = catalog.load("flags")["cublas"]
    assert cublas["removed-in"] == "2.10.0"
    assert set(cublas["values"]) == {":4096:8", ":16:8"}
    assert cublas["default"] in cublas["values"]


def test_installed_torch_agrees_with_the_recorded_release():
    """The installed release documents the variable exactly when it is older than `removed-in`."""
    torch = pytest.importorskip("torch")
    documented = "CUBLAS_WORKSPACE_CONFIG" in (torch.use_deterministic_algorithms.__doc__ or "")
    older = release(torch.__version__) < release(catalog.load("flags")["cublas"]["removed-in"])
    assert documented == older


# -- requirement parsing ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "line, spec",
    [
        ("torch>=2.1,<3", ">=2.1,<3"),
        ("torch", ""),
        ("Torch [cuda] (>=2.0)", ">=2.0"),
        ("torch==2.9.1+cu121; sys_platform == 'linux'", "==2.9.1+cu121"),
        ("torch @ https://download.example/torch-2.3.0.whl", ""),
        ("torchvision>=0.20", None),
        ("pytorch-lightning>=2", None),
    ],
)
def test_parse_requirement(line, spec):
    assert parse_requirement(line) == spec


@pytest.mark.parametrize(
    "spec, lowest",
    [
        (">=2.1,<3", (2, 1, 0)),
        ("==2.10.*", (2, 10, 0)),
        ("~=2.9.1", (2, 9, 1)),
        (">2.9.1", (2, 9, 1)),
        ("<2.10", None),
        ("!=2.5.0", None),
        (">=2.10.0rc1", (2, 10, 0)),
        ("", None),
    ],
)
def test_lower_bound(spec, lowest):
    assert lower_bound(spec) == lowest


@pytest.mark.parametrize(
    "setting, old",
    [("2.9", True), ("2.9.1", True), ("2.10", False), ("2.11.0", False), (">=2.10", False), ("<3", True), ("2.10.*", False)],
)
def test_setting_decides(setting, old):
    assert torch_target(setting, None).admits_before("2.10.0") is old


def test_declarations_at_the_root(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "0"\ndependencies = ["numpy", "torch>=2.10"]\n'
        '[project.optional-dependencies]\ngpu = ["torch==2.11.*"]\n'
        '[dependency-groups]\ndev = ["torch>=2.12", {include-group = "x"}]\n'
        '[tool.poetry.dependencies]\ntorch = { version = "^2.10" }\n'
    )
    (tmp_path / "requirements.txt").write_text("-r base.txt\n# torch==1.0\nnumpy\n")
    found = declared(tmp_path)
    assert [w for w, _ in found] == [
        "torch>=2.10 in pyproject.toml",
        "torch==2.11.* in pyproject.toml",
        "torch>=2.12 in pyproject.toml",
        'torch = "^2.10" in pyproject.toml',
    ]
    assert not torch_target(None, tmp_path).admits_before("2.10.0")
    # one declaration that admits an older release is enough
    (tmp_path / "requirements-cpu.txt").write_text("torch>=2.1 \\\n    --index-url https://example\n")
    target = torch_target(None, tmp_path)
    assert target.admits_before("2.10.0")
    assert target.where == "torch>=2.1 in requirements-cpu.txt"


@pytest.mark.parametrize(
    "files, where, lowest",
    [
        (
            {"setup.py": 'from setuptools import setup\nREQUIRED = ["numpy", "torch==1.13.*"]\n'
                         'setup(name="x", keywords=["torch"], install_requires=REQUIRED)\n'},
            "torch==1.13.* in setup.py", (1, 13, 0),
        ),
        (
            {"setup.py": 'import setuptools\nsetuptools.setup(name="x", extras_require={"gpu": ["torch~=1.12"]})\n'},
            "torch~=1.12 in setup.py", (1, 12, 0),
        ),
        (
            {"setup.cfg": "[metadata]\nname = x\n[options]\ninstall_requires =\n    numpy\n    torch>=1.11,<2\n"},
            "torch>=1.11,<2 in setup.cfg", (1, 11, 0),
        ),
        (
            {"environment.yml": "name: x\ndependencies:\n  - python=3.9\n  - pytorch::pytorch=1.13.1=py3.9_cuda11.7_0\n  - pytorch-cuda=11.7\n"},
            "pytorch::pytorch=1.13.1=py3.9_cuda11.7_0 in environment.yml", (1, 13, 1),
        ),
        (
            {"environment.yaml": "dependencies:\n  - pip\n  - pip:\n    - torch==2.0.1  # pinned\n"},
            "torch==2.0.1 in environment.yaml", (2, 0, 1),
        ),
        (
            {"requirements/base.txt": "numpy\n", "requirements/train.txt": "-r base.txt\n-c constraints.txt\n",
             "requirements/constraints.txt": "torch<=1.13.1,>=1.10\n"},
            "torch<=1.13.1,>=1.10 in requirements/constraints.txt", (1, 10, 0),
        ),
    ],
    ids=["setup.py-name", "setup.py-extras", "setup.cfg", "conda", "conda-pip", "requirements-folder"],
)
def test_declarations_beyond_pyproject(tmp_path, files, where, lowest):
    """The torch pins projects make outside pyproject.toml and root requirements files."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    target = torch_target(None, tmp_path)
    assert (target.source, target.where, target.lower) == ("declared", where, lowest)
    assert target.admits_before("2.10.0")


def test_nearest_declaration_decides(tmp_path):
    """In a folder of examples each program's own requirements decide, else the root's."""
    (tmp_path / "requirements.txt").write_text("torch>=2.10\n")
    (tmp_path / "imagenet").mkdir()
    (tmp_path / "imagenet" / "requirements.txt").write_text("torch>=2.6\ntorchvision\n")
    (tmp_path / "mnist").mkdir()
    assert torch_target(None, tmp_path, tmp_path / "imagenet").where == "torch>=2.6 in requirements.txt (imagenet)"
    assert not torch_target(None, tmp_path, tmp_path / "mnist").admits_before("2.10.0")
    assert not torch_target(None, tmp_path, tmp_path / "elsewhere" / "..").admits_before("2.10.0")


def test_undeclared_targets_every_release(tmp_path):
    target = torch_target(None, tmp_path)
    assert target.source == "undeclared" and target.admits_before("2.10.0")


# -- RPL404 keyed on the target ---------------------------------------------------------------
def test_rpl404_follows_the_declared_requirement(project):
    project("train.py", SEEDED_DETERMINISTIC)
    root = project.root
    found = by_code(findings(root), "RPL404")
    assert len(found) == 1
    assert "no torch requirement is declared" in full(found[0])
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\ndependencies = ["torch>=2.10"]\n')
    assert by_code(findings(root), "RPL404") == []
    (root / "requirements.txt").write_text("torch==2.9.1\n")
    found = by_code(findings(root), "RPL404")
    assert len(found) == 1 and "torch==2.9.1 in requirements.txt" in full(found[0])


@pytest.mark.parametrize("version, reported", [("2.9", True), ("2.10", False)])
def test_rpl404_target_torch_version_setting(project, cli, version, reported):
    (project.root / "pyproject.toml").write_text(
        f'[project]\nname = "demo"\nversion = "0"\ndependencies = ["torch>=2.1"]\n'
        f'[tool.repro-lint]\ntarget-torch-version = "{version}"\n'
    )
    project("train.py", SEEDED_DETERMINISTIC)
    r = cli("--format", "json", "--no-cache", "train.py", cwd=project.root)
    codes = [f["code"] for f in json.loads(r.stdout)["findings"]]
    assert ("RPL404" in codes) is reported


def test_cached_results_follow_the_requirement_files(project, cli):
    """Changing only the requirement files must not serve stale cached results."""
    project("train.py", SEEDED_DETERMINISTIC)
    first = cli("--format", "json", "train.py", cwd=project.root)
    assert "RPL404" in [f["code"] for f in json.loads(first.stdout)["findings"]]
    (project.root / "requirements.txt").write_text("torch>=2.10\n")
    second = cli("--format", "json", "train.py", cwd=project.root)
    assert "RPL404" not in [f["code"] for f in json.loads(second.stdout)["findings"]]


# -- fixes as data ------------------------------------------------------------------------------
def test_rpl401_rpl403_fixes_insert_one_ordered_block_after_the_seed(project):
    project("train.py", PROTOTYPE)
    found = findings(project.root)
    assert {f.code for f in found} == {"RPL401", "RPL403"}
    f401, f403 = by_code(found, "RPL401")[0], by_code(found, "RPL403")[0]
    assert f401.location.line == f403.location.line == 6  # the torch seeding call
    ins401 = f401.fix.edits[0]
    assert isinstance(ins401, InsertStatements) and ins401.where == "after" and ins401.anchor[0] == 6
    assert ins401.code.splitlines() == [
        "{attr:torch.backends.cudnn}.deterministic = True",
        "{attr:torch.backends.cudnn}.benchmark = False",
    ]
    ins403, cublas = f403.fix.edits
    assert ins403.anchor == ins401.anchor and ins401.order < ins403.order
    assert ins403.code.strip() == "{mod:torch}.use_deterministic_algorithms(True)"
    assert cublas.where == "after-imports" and "CUBLAS_WORKSPACE_CONFIG" in cublas.code
    assert f401.fix.safety == "safe" and f403.fix.safety == "unsafe"


def test_warn_only_setting_makes_rpl403_fix_safe(project):
    project("train.py", PROTOTYPE)
    found = findings(project.root, Config(warn_only=True))
    fix = by_code(found, "RPL403")[0].fix
    assert fix.safety == "safe"
    assert fix.edits[0].code.strip() == "{mod:torch}.use_deterministic_algorithms(True, warn_only=True)"


def test_rpl403_fix_leaves_out_cublas_for_new_targets(project):
    project("train.py", PROTOTYPE)
    found = findings(project.root, Config(target_torch_version="2.11"))
    edits = by_code(found, "RPL403")[0].fix.edits
    assert len(edits) == 1 and "use_deterministic_algorithms" in edits[0].code


def test_wrong_literals_are_replaced(project):
    project(
        "train.py",
        "import os\nimport torch\nfrom torch import nn\n\n"
        'os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":2:2"\n'
        "torch.manual_seed(0)\n"
        "torch.backends.cudnn.deterministic = False\n"
        "torch.backends.cudnn.benchmark = True\n"
        "torch.use_deterministic_algorithms(True)\n"
        "nn.Conv2d(3, 8, 3)\n",
    )
    found = {f.code: f for f in findings(project.root)}
    assert set(found) == {"RPL401", "RPL402", "RPL404"}
    assert found["RPL401"].fix.edits == (ReplaceExpression((7, 37, 7, 42), "True"),)
    assert found["RPL402"].fix.edits == (ReplaceExpression((8, 33, 8, 37), "False"),)
    assert found["RPL404"].fix.edits == (ReplaceExpression((5, 40, 5, 46), '":4096:8"'),)
    assert found["RPL404"].location.line == 9  # at the use_deterministic_algorithms call
    assert found["RPL404"].related[0].location.line == 5
    assert "':2:2'" in full(found["RPL404"])


def test_lightning_trainer_gets_the_keyword(project):
    project(
        "train.py",
        "import lightning as L\nfrom torch import nn\n\n\n"
        "class M(L.LightningModule):\n    def __init__(self):\n        super().__init__()\n        self.l = nn.Linear(2, 2)\n\n\n"
        "L.seed_everything(0)\nL.Trainer(max_epochs=1).fit(M())\n",
    )
    fix = by_code(findings(project.root), "RPL403")[0].fix
    assert fix.edits == (AddKeyword((12, 0, 12, 23), "deterministic", "True"),)
    fix = by_code(findings(project.root, Config(warn_only=True)), "RPL403")[0].fix
    assert fix.edits[0].value == '"warn"' and fix.safety == "safe"


def test_hydra_app_inserts_into_the_main_function(project):
    project(
        "app.py",
        "import hydra\nimport torch\nfrom torch import nn\n\ntorch.manual_seed(0)\n\n\n"
        "@hydra.main(config_path=None, version_base=None)\ndef main(cfg):\n    nn.Conv2d(3, 8, 3).cuda()\n\n\n"
        'if __name__ == "__main__":\n    main()\n',
    )
    found = findings(project.root)
    edit = by_code(found, "RPL401")[0].fix.edits[0]
    assert (edit.where, edit.function) == ("body-start", "main")


# -- messages -------------------------------------------------------------------------------------
def test_rpl401_message_names_what_cudnn_runs(project):
    project("train.py", PROTOTYPE)
    (hit,) = by_code(findings(project.root), "RPL401")
    assert hit.message == (
        "this program runs convolutions or recurrent layers but never sets "
        "`torch.backends.cudnn.deterministic = True`"
    )


def test_cudnn_flags_are_not_asked_of_a_program_cudnn_does_not_run(project):
    # the same program with a Linear model: deterministic algorithms still matter, cuDNN's flags not
    project("train.py", PROTOTYPE.replace("nn.Conv2d(3, 8, 3)(torch.ones(1, 3, 8, 8))", "nn.Linear(4, 2)(torch.ones(1, 4))"))
    assert {f.code for f in findings(project.root)} == {"RPL403"}


def test_rpl405_messages_say_what_the_flag_does(project):
    project(
        "train.py",
        "import torch\nimport torch.nn.functional as F\n\ntorch.manual_seed(0)\n"
        "x = torch.ones(1, 1, 4, 4, requires_grad=True)\n"
        "torch.zeros(2).index_add_(0, torch.tensor([0, 0]), torch.ones(2))\n"
        "torch.histc(x, bins=3)\n",
    )
    found = sorted(by_code(findings(project.root), "RPL405"), key=lambda f: f.location.line)
    assert [f.location.line for f in found] == [6, 7]
    assert "switches it to a deterministic implementation" in full(found[0])
    assert "makes it raise RuntimeError" in full(found[1])
    assert "Deterministic alternative: torch.bincount" in full(found[1])
    assert all(f.fix is None for f in found)


def test_unseeded_prototype_gets_rpl101_only(project):
    project(
        "train.py",
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"
        "torch.backends.cudnn.benchmark = True\n"
        "x = F.interpolate(torch.rand(1, 1, 4, 4), scale_factor=2, mode='bicubic')\n"
        "nn.Linear(2, 2)(x.flatten(1)[:, :2]).sum().backward()\n",
    )
    assert {f.code for f in findings(project.root)} == {"RPL101"}


# -- the catalog keys RPL405 reads, against the installed torch -----------------------------------
OPS = catalog.load("nondeterministic_ops")["op"]


def _resolve(name):
    import importlib

    mod, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(mod), attr)


def _params(name):
    obj = _resolve(name)
    target = obj.__init__ if inspect.isclass(obj) else obj
    return list(inspect.signature(target).parameters)


@pytest.mark.parametrize("op", [op for op in OPS if "always-affected" in op], ids=lambda op: op["id"])
def test_always_affected_names_lack_the_argument(op):
    pytest.importorskip("torch")
    listed = set(op["always-affected"])
    assert listed <= set(op["functions"]) | set(op["modules"])
    for name in [*op["functions"], *op["modules"]]:
        lacks = op["argument"]["name"] not in _params(name)
        assert lacks == (name in listed), name


@pytest.mark.parametrize(
    "op, key", [(op, k) for op in OPS for k in ("requires-argument", "exempt-argument") if k in op], ids=lambda v: v if isinstance(v, str) else v["id"]
)
def test_argument_positions_match_signatures(op, key):
    pytest.importorskip("torch")
    spec = op[key]
    for name in op["functions"]:
        try:
            params = _params(name)
        except (TypeError, ValueError):
            continue  # builtins without a Python signature
        assert params.index(spec["name"]) == spec["position"], name
    for name in op["modules"]:
        params = [p for p in _params(name) if p != "self"]
        assert params.index(spec["name"]) == spec["module-position"], name


def test_static_methods_are_a_subset_of_methods():
    for op in OPS:
        assert set(op.get("static-methods", ())) <= set(op["methods"]), op["id"]
        assert op.get("static", False) is False, f"{op['id']}: `static` is only ever written as false"


def test_every_static_entry_is_matchable():
    from repro_lint.rules.nondeterministic_ops import table

    t = table()
    static = [op for op in OPS if op.get("static", True)]
    assert set(t.by_id) == {op["id"] for op in static}
    skipped = sorted(op["id"] for op in OPS if not op.get("static", True))
    assert skipped == [
        "bmm_sparse", "conv_transpose", "convolution", "index_backward_cpu", "nll_loss2d",
        "repeat_interleave_backward", "resize_quantized",
    ]


def test_flags_without_effect_say_where_they_are_and_why(tmp_path):
    """Flags that do not govern the training are reported by the rule that needs them, with
    the place they are set and the reason (spec: "Flags count where they take effect")."""
    import shutil

    root = tmp_path / "case"
    shutil.copytree(Path(__file__).resolve().parents[3] / "fixtures" / "projects" / "flags_where_they_count", root)
    (root / "pyproject.toml").write_text('[project]\nname = "case"\nversion = "0"\n')
    report = run_check([root], Config(), root=root, jobs=1, use_cache=False)
    by = {(Path(f.location.path).name, f.code): f for f in select(report, Config())}
    late = by[("late.py", "RPL401")]
    assert "set on line 18, after training starts (line 17)" in full(late)
    assert [r.location.line for r in late.related] == [18]
    assert "set on line 19, after training starts (line 17)" in full(by[("late.py", "RPL403")])
    worker = by[("worker_only.py", "RPL401")]
    assert "set only in `seed_worker`, which runs in DataLoader worker processes" in full(worker)
    assert ("before_training.py", "RPL401") not in by and ("spawned.py", "RPL401") not in by
    fix = late.fix.edits[0]
    assert isinstance(fix, InsertStatements) and fix.where == "after" and fix.anchor[0] == 16  # after the seed, before training
