"""RPL406-RPL408: what the annotated fixtures cannot show: the releases a project declares (torch,
flash-attn, xformers), messages and fix safety, and the catalog against the installed torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from repro_lint.core import catalog
from repro_lint.discover.requirements import release

DETERMINISTIC_HEAD = """\
import os

import torch
from torch import nn

os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
"""


def check(cli, root, *args):
    r = cli("check", "--no-cache", "--output-format", "json", "--select", "RPL4", *args, ".", cwd=root)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)["findings"]


def codes(found):
    return sorted((f["code"], f["start"]["line"]) for f in found)


# -- RPL406 ------------------------------------------------------------------------------------
TF32 = DETERMINISTIC_HEAD + "torch.backends.cuda.matmul.allow_tf32 = True\nnn.Linear(4, 2)(torch.ones(1, 4)).sum().backward()\n"


@pytest.mark.parametrize(
    "requirement, reported",
    [
        ("torch==1.11.0", False),  # TF32 matmuls were on by default: the line changes nothing
        ("torch>=1.8,<1.12", False),
        ("torch>=1.8", True),
        ("torch==2.1.*", True),
        (None, True),
    ],
)
def test_rpl406_follows_the_default_of_the_targeted_releases(project, cli, requirement, reported):
    project("train.py", TF32)
    if requirement:
        project("requirements.txt", requirement + "\n")
    found = check(cli, project.root)
    assert codes(found) == ([("RPL406", 9)] if reported else [])


def test_rpl406_target_setting_decides_over_requirements(project, cli):
    project("train.py", TF32)
    project("requirements.txt", "torch>=2.0\n")
    assert codes(check(cli, project.root, "--config", 'target-torch-version = "1.10"')) == []


def test_rpl406_offers_no_fix_unless_fixable_names_it(project, cli):
    path = project("train.py", TF32.replace("allow_tf32 = True", 'fp32_precision = "tf32"').replace("cuda.matmul.", ""))
    original = path.read_text()
    # by default (fixable = ALL) the finding has no fix: TF32 is most often a speed choice
    r = cli("--fix", "--unsafe-fixes", "--no-cache", "train.py", cwd=project.root)
    assert "RPL406" in r.stdout and "fixable" not in r.stdout
    assert path.read_text() == original
    # named in `fixable`, the fix is offered as unsafe and restores full precision
    r = cli("--fix", "--no-cache", "--config", 'fixable = ["RPL406"]', "train.py", cwd=project.root)
    assert "torch.backends.fp32_precision" in r.stdout and "--unsafe-fixes" in r.stdout
    assert path.read_text() == original
    cli("--fix", "--unsafe-fixes", "--no-cache", "--config", 'fixable = ["RPL406"]', "train.py", cwd=project.root)
    assert 'torch.backends.fp32_precision = "ieee"' in path.read_text()


def test_rpl406_machine_checks_are_not_the_users_switch(project, cli):
    project("train.py", DETERMINISTIC_HEAD + (
        "import argparse\n"
        "args = argparse.ArgumentParser().parse_args()\n"
        "USE_TF32 = True\n"
        "if hasattr(torch.backends, 'fp32_precision') and torch.cuda.is_available():\n"
        "    torch.backends.fp32_precision = 'tf32'\n"
        "if USE_TF32:\n"
        "    torch.set_float32_matmul_precision('high')\n"
        "if not args.deterministic:\n"
        "    pass\n"
        "else:\n"
        "    torch.set_float32_matmul_precision('medium')\n"
        "nn.Linear(4, 2)(torch.ones(1, 4)).sum().backward()\n"
    ))
    found = check(cli, project.root)
    assert codes(found) == [("RPL406", 13)]
    assert "TF32" in found[0]["message"] or "reduced" in found[0]["message"]


# -- RPL407 ------------------------------------------------------------------------------------
AUTOTUNE = DETERMINISTIC_HEAD + 'model = torch.compile(nn.Linear(4, 2), mode="max-autotune")\nmodel(torch.ones(1, 4)).sum().backward()\n'


@pytest.mark.parametrize(
    "requirement, fixable",
    [("torch>=2.10", True), ("torch>=2.4", False), ("torch==2.9.1", False), ("torch", True), (None, True)],
)
def test_rpl407_fix_needs_the_deterministic_mode_in_every_targeted_release(project, cli, requirement, fixable):
    project("train.py", AUTOTUNE)
    if requirement:
        project("requirements.txt", requirement + "\n")
    found = check(cli, project.root)
    assert codes(found) == [("RPL407", 9)]
    assert (found[0]["fix"] is not None and found[0]["fix"]["available"]) is fixable
    if not fixable:
        assert "2.10" in found[0]["help"] and requirement in found[0]["help"]


@pytest.mark.slow
def test_rpl407_fixed_program_runs_on_the_installed_torch(project, cli):
    """The inserted setting exists in the torch the tests run with, and the fixed script runs
    (compiled on CPU) and reports nothing more."""
    pytest.importorskip("torch")
    path = project("train.py", AUTOTUNE.replace("nn.Linear(4, 2)", "nn.Linear(4, 2).double()").replace("torch.ones(1, 4)", "torch.ones(1, 4, dtype=torch.float64)"))
    cli("--fix", "--unsafe-fixes", "--no-cache", "train.py", cwd=project.root)
    assert "torch._inductor.config.deterministic = True\n" in path.read_text()
    assert codes(check(cli, project.root)) == []
    code = "import runpy, torch; runpy.run_path('train.py'); print(torch._inductor.config.deterministic)"
    run = subprocess.run([sys.executable, "-c", code], cwd=project.root, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().endswith("True")


# -- RPL408 ------------------------------------------------------------------------------------
FLASH = DETERMINISTIC_HEAD.replace("import torch\n", "import torch\nfrom flash_attn import flash_attn_func\n") + (
    "q = torch.randn(2, 16, 4, 16, requires_grad=True)\n"
    "flash_attn_func(q, q, q, causal=True).sum().backward()\n"
)
XFORMERS = DETERMINISTIC_HEAD.replace("import torch\n", "import torch\nimport xformers.ops as xops\n") + (
    "q = torch.randn(2, 16, 4, 16, requires_grad=True)\n"
    "xops.memory_efficient_attention(q, q, q).sum().backward()\n"
)


@pytest.mark.parametrize(
    "requirement, fixable",
    [("flash-attn>=2.5", True), ("flash-attn==2.4.1", True), ("flash-attn>=2.3", False), ("flash_attn==2.3.6", False), (None, True)],
)
def test_rpl408_flash_fix_needs_the_keyword_in_every_targeted_release(project, cli, requirement, fixable):
    project("train.py", FLASH)
    if requirement:
        project("requirements.txt", requirement + "\n")
    found = check(cli, project.root)
    assert codes(found) == [("RPL408", 11)]
    assert (found[0]["fix"] is not None and found[0]["fix"]["available"]) is fixable
    if not fixable:
        assert "2.4.1" in found[0]["help"]


@pytest.mark.parametrize(
    "requirement, warn_only, reported",
    [
        ("xformers==0.0.20", False, True),  # the switch does not reach its backward yet
        ("xformers>=0.0.22", False, True),
        ("xformers>=0.0.23", False, False),
        ("xformers>=0.0.23", True, True),  # warn_only leaves it nondeterministic (0.0.26 and later)
        ("xformers>=0.0.23,<0.0.26", True, False),
        (None, False, False),
    ],
)
def test_rpl408_xformers_follows_the_targeted_releases(project, cli, requirement, warn_only, reported):
    source = XFORMERS.replace("(True)", "(True, warn_only=True)") if warn_only else XFORMERS
    project("train.py", source)
    if requirement:
        project("requirements.txt", requirement + "\n")
    found = check(cli, project.root)
    assert codes(found) == ([("RPL408", 11)] if reported else [])
    if reported:
        assert found[0]["fix"] is None or not found[0]["fix"]["available"]


def test_rpl408_needs_training(project, cli):
    project("infer.py", FLASH.replace(".sum().backward()", ".sum()"))
    assert codes(check(cli, project.root)) == []


# -- the catalog against the installed torch -------------------------------------------------
def test_precision_settings_exist_with_the_recorded_defaults():
    torch = pytest.importorskip("torch")
    data = catalog.load("flags")["reduced-precision"]
    for setting in data["settings"]:
        owner, _, name = setting["name"].rpartition(".")
        obj = torch
        for part in owner.split(".")[1:]:
            obj = getattr(obj, part)
        value = getattr(obj, name)
        assert value not in setting["reduced"], f"{setting['name']} reduces precision by default"
    # what the rule leaves out restates the defaults
    assert torch.backends.cudnn.allow_tf32 is True
    assert torch.backends.cuda.matmul.allow_tf32 is False
    assert torch.get_float32_matmul_precision() == "highest"


def test_autotune_modes_and_the_deterministic_setting_match_the_installed_torch():
    torch = pytest.importorskip("torch")
    import torch._inductor as inductor
    from torch._inductor import config

    data = catalog.load("flags")["compile-autotune"]
    for mode in data["modes"]:
        options = inductor.list_mode_options(mode)
        assert options.get("max_autotune") is True
    assert not inductor.list_mode_options("reduce-overhead").get("max_autotune")
    for option in data["options"]:
        assert hasattr(config, option)
    assert hasattr(config, data["deterministic-setting"].rpartition(".")[2])
    assert release(torch.__version__) >= release(data["deterministic-since"])
