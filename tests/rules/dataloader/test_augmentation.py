"""RPL304: what the annotated fixtures cannot show: the albumentations and imgaug releases a
project declares, fixes that would not run everywhere, and (where albumentations is installed)
that the fixed program repeats its augmentations and still follows its seed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

ALBUMENTATIONS = """\
import argparse

import albumentations as A
import numpy as np
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()
torch.manual_seed(args.seed)
np.random.seed(args.seed)
transform = A.Compose([A.RandomCrop(16, 16), A.HorizontalFlip(p=0.5), A.RandomBrightnessContrast(p=1.0)])
image = np.arange(32 * 32 * 3, dtype=np.uint8).reshape(32, 32, 3)
print(int(transform(image=image)["image"].astype(np.int64).sum()))
"""

IMGAUG = """\
import imgaug.augmenters as iaa
import numpy as np
import torch


def main():
    torch.manual_seed(0)
    seq = iaa.Sequential([iaa.Fliplr(0.5)])
    print(seq(images=np.zeros((2, 8, 8, 3), dtype=np.uint8)).shape)


if __name__ == "__main__":
    main()
"""


def check(cli, root):
    r = cli("check", "--no-cache", "--output-format", "json", "--select", "RPL304", ".", cwd=root)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)["findings"]


def fixable(finding) -> bool:
    return bool(finding["fix"] and finding["fix"]["available"])


@pytest.mark.parametrize(
    "requirement, reported, fixed",
    [
        ("albumentations==1.3.1", False, False),  # draws from python's global RNG: seeding reaches it
        ("albumentations<1.4.21", False, False),
        ("albumentations>=1.3", True, False),  # `seed=` would be a TypeError on the older releases
        ("albumentations>=1.4.21", True, True),
        ("albumentations", True, False),  # unpinned: it declares every release, the old ones too
        (None, True, True),
    ],
)
def test_albumentations_follows_the_declared_releases(project, cli, requirement, reported, fixed):
    project("train.py", ALBUMENTATIONS)
    if requirement:
        project("requirements.txt", requirement + "\n")
    found = check(cli, project.root)
    assert [(f["code"], f["start"]["line"]) for f in found] == ([("RPL304", 12)] if reported else [])
    if reported:
        assert fixable(found[0]) is fixed
        if not fixed:
            assert "1.4.21" in found[0]["help"] and requirement in found[0]["help"]


@pytest.mark.parametrize("requirement, reported", [("imgaug==0.2.9", False), ("imgaug>=0.2.9", True), (None, True)])
def test_imgaug_follows_the_declared_releases(project, cli, requirement, reported):
    project("train.py", IMGAUG)
    if requirement:
        project("requirements.txt", requirement + "\n")
    found = check(cli, project.root)
    assert [f["start"]["line"] for f in found] == ([8] if reported else [])


def test_imgaug_built_on_import_is_not_fixed_in_the_main_body(project, cli):
    project("augment.py", "import imgaug.augmenters as iaa\n\nSEQ = iaa.Sequential([iaa.Fliplr(0.5)])\n")
    project("train.py", IMGAUG.replace("import numpy as np\n", "import numpy as np\nfrom augment import SEQ\n").replace(
        "seq = iaa.Sequential([iaa.Fliplr(0.5)])", "seq = SEQ"
    ))
    found = check(cli, project.root)
    assert len(found) == 1 and not fixable(found[0])
    assert "imported" in found[0]["help"]


def test_imgaug_fix_seeds_next_to_the_programs_seed(project, cli):
    path = project("train.py", IMGAUG)
    cli("--fix", "--no-cache", "train.py", cwd=project.root)
    text = path.read_text()
    assert "    torch.manual_seed(0)\n    imgaug.seed(0)\n" in text and "import imgaug\n" in text
    assert check(cli, project.root) == []


def _run(root, *args) -> str:
    r = subprocess.run([sys.executable, "train.py", *args], cwd=root, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip()


@pytest.mark.slow
def test_fixed_pipeline_repeats_and_follows_the_seed(project, cli):
    pytest.importorskip("albumentations")
    project("train.py", ALBUMENTATIONS)
    before = {_run(project.root) for _ in range(3)}
    assert len(before) > 1, "the unseeded pipeline gave the same augmentation three times"
    cli("--fix", "--no-cache", "train.py", cwd=project.root)
    assert "seed=args.seed" in (project.root / "train.py").read_text()
    after = [_run(project.root) for _ in range(3)]
    assert len(set(after)) == 1
    assert len({after[0], *(_run(project.root, "--seed", str(s)) for s in (1, 2))}) > 1, "the program's seed no longer matters"
