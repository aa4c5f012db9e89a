"""The review harness (`bench/review_fixes.py`) counts what it says it counts: checked on a
small repository whose "fixed" copy has each defect once, without running the fixer."""

from __future__ import annotations

import ast
import importlib.util
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("review_fixes", REPO / "bench" / "review_fixes.py")
review_fixes = importlib.util.module_from_spec(spec)
sys.modules["review_fixes"] = review_fixes  # its dataclasses look their module up there
spec.loader.exec_module(review_fixes)


def parse(text: str) -> ast.Module:
    return ast.parse(textwrap.dedent(text))


def test_statements_that_run_on_import_are_told_from_harmless_ones():
    tree = parse("""\
        import os
        SEED = 0
        os.environ.setdefault("A", "1")
        try:
            import numpy as np
        except ImportError:
            np = None
        if True:
            x = f()


        def g():
            pass


        if __name__ == "__main__":
            g()
    """)
    stmts = review_fixes.module_level(tree)
    effects = [ast.unparse(s) for s in stmts if review_fixes.has_effect(s)]
    assert effects == ["os.environ.setdefault('A', '1')", "x = f()"]
    assert [review_fixes.is_seed_constant(s) for s in stmts].count(True) == 1


def test_the_users_seed_is_recognised_in_its_usual_forms():
    assert review_fixes.user_seed(parse("torch.manual_seed(args.seed)\n"))
    assert review_fixes.user_seed(parse("p.add_argument('--seed', type=int)\n"))
    assert review_fixes.user_seed(parse("def f(seed):\n    pass\n"))
    assert review_fixes.user_seed(parse("x = cfg.seed\n"))
    assert not review_fixes.user_seed(parse("torch.manual_seed(0)\nenv.seed(3)\n"))


def test_imports_resolve_from_the_root_and_beside_the_script(tmp_path):
    names = review_fixes.module_names("src/pkg/mod.py", ["", "src"])
    assert names == {"src.pkg.mod", "pkg.mod"}
    assert review_fixes.module_names("examples/utils.py", ["examples"]) == {"utils"}
    tree = parse("from . import data\nfrom .models import net\nimport torch.nn\n")
    assert {"pkg.data", "pkg.models.net", "torch.nn", "torch"} <= review_fixes.imported_names(tree, "pkg/train.py")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "model.yaml").write_text("net:\n  _target_: src.models.Net\n")
    assert review_fixes.hydra_targets(tmp_path) == {"configs/model.yaml": {"src", "src.models", "src.models.Net"}}


def test_a_package_module_without_a_main_block_is_a_library():
    files = {"timm/__init__.py": b"", "timm/registry.py": b"", "train.py": b""}
    assert review_fixes.package_module("timm/registry.py", parse("import warnings\n"), files)
    assert not review_fixes.package_module("timm/registry.py", parse("if __name__ == '__main__':\n    pass\n"), files)
    assert not review_fixes.package_module("train.py", parse("x = 1\n"), files)


def test_new_ruff_findings_are_counted_per_file(tmp_path):
    for name in ("before", "after"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    (tmp_path / "before" / "a.py").write_text("import os\nimport sys\n\nprint(os, sys)\n")
    (tmp_path / "after" / "a.py").write_text("import sys\nimport os\n\nprint(os, sys, '" + "x" * 90 + "')\n")
    before, _, _ = review_fixes.ruff_counts(tmp_path / "before", ["a.py"], tmp_path / "before")
    after, lines, unformatted = review_fixes.ruff_counts(tmp_path / "after", ["a.py"], tmp_path / "after")
    assert not before
    assert after == {("a.py", "I001"): 1, ("a.py", "E501"): 1} and lines[("a.py", "E501")] == [4]
    assert unformatted == {"a.py"}
