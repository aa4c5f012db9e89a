"""The releases of a package a project targets, with upper bounds: what RPL304 and RPL406-RPL408
key their facts on (albumentations, flash-attn, xformers, torch)."""

import pytest

from repro_lint.analysis.package_target import admits_older, has_everywhere
from repro_lint.discover.requirements import package_target, upper_bound


@pytest.mark.parametrize(
    "specifiers, expected",
    [
        ("==1.3.1", ((1, 3, 1), True)),
        ("<1.4.21", ((1, 4, 21), False)),
        ("<=1.4.20", ((1, 4, 20), True)),
        (">=1.3,<2", ((2, 0, 0), False)),
        ("~=1.3.0", ((1, 4, 0), False)),
        ("~=2.1", ((3, 0, 0), False)),
        ("==1.4.*", ((1, 5, 0), False)),
        ("<2,<=1.9", ((1, 9, 0), True)),
        (">=1.4", None),
        ("!=1.4.0", None),
    ],
)
def test_upper_bound(specifiers, expected):
    assert upper_bound(specifiers) == expected


def test_a_pinned_old_release_admits_nothing_newer(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy\nalbumentations==1.3.1  # pinned\n")
    target = package_target("albumentations", tmp_path)
    assert target.where == "albumentations==1.3.1 in requirements.txt"
    assert not target.admits_from("1.4.21")
    assert not has_everywhere(target, "1.4.21")


def test_the_widest_declaration_of_a_folder_counts(tmp_path):
    (tmp_path / "requirements.txt").write_text("albumentations<1.4\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0"\ndependencies = ["albumentations>=1.4.21"]\n')
    target = package_target("albumentations", tmp_path)
    assert target.admits_from("1.4.21") and target.admits_before("1.4.21")


@pytest.mark.parametrize(
    "declared, everywhere",
    [(None, True), ("flash-attn", False), ("flash-attn>=2.4.1", True), ("flash-attn>=2.3,<3", False), ("flash-attn<3", False)],
)
def test_a_fix_uses_what_every_declared_release_has(tmp_path, declared, everywhere):
    if declared:
        (tmp_path / "requirements.txt").write_text(declared + "\n")
    assert has_everywhere(package_target("flash-attn", tmp_path), "2.4.1") is everywhere


def test_the_nearest_folder_that_declares_the_package(tmp_path):
    (tmp_path / "requirements.txt").write_text("flash-attn==2.3.6\n")
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "requirements.txt").write_text("flash_attn>=2.5\ntorch\n")
    assert has_everywhere(package_target("flash-attn", tmp_path, tmp_path / "new"), "2.4.1")
    assert not has_everywhere(package_target("flash-attn", tmp_path, tmp_path), "2.4.1")


@pytest.mark.parametrize(
    "declared, older",
    [
        (None, False),  # undeclared: current releases
        ("xformers", False),  # unpinned: pip installs the newest
        ("xformers<0.0.22", True),  # no lower bound, but the newest admitted is old
        ("xformers>=0.0.20", True),
        ("xformers>=0.0.25", False),
    ],
)
def test_what_a_requirement_without_a_lower_bound_installs(tmp_path, declared, older):
    if declared:
        (tmp_path / "requirements.txt").write_text(declared + "\n")
    assert admits_older(package_target("xformers", tmp_path), "0.0.23") is older


def test_a_setting_names_a_series_or_a_range():
    assert not package_target("torch", None, setting="2.5").admits_from("2.6")
    assert package_target("torch", None, setting="2.5").admits_from("2.5.1")
    assert not package_target("torch", None, setting=">=2.1,<2.10").admits_from("2.10")
