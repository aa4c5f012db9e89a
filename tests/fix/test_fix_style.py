"""The project's style in what fixes write: the settings read from its configuration files,
and the edit operations that follow them (imports, call layout, comments on flipped values)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from repro_lint.core.findings import Fix
from repro_lint.fix.apply import Planner
from repro_lint.core.edits import AddKeyword, InsertStatements, MoveStatements, ReplaceExpression
from repro_lint.fix.style import Style, style_for


def write(root: Path, files: dict) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def apply(text: str, *edits, style: Style = Style()) -> str:
    planner = Planner(textwrap.dedent(text), "0", frozenset(), {"numpy": "np"}, style)
    for edit in edits:
        planner.add(Fix("test", "safe", (edit,)), "RPL999")
    return planner.build()


# -- reading the settings ------------------------------------------------------------------------
def test_no_configuration_means_88_and_isort_defaults(tmp_path):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n", "train.py": ""})
    assert style_for(tmp_path / "train.py", tmp_path) == Style(line_length=88)


def test_ruff_settings_win_over_black_and_flake8(tmp_path):
    write(tmp_path, {
        "pyproject.toml": """\
            [tool.black]
            line-length = 100
            [tool.ruff]
            line-length = 119
            [tool.ruff.lint.isort]
            known-first-party = ["mylib"]
            force-sort-within-sections = true
            lines-after-imports = 2
        """,
        "setup.cfg": "[flake8]\nmax-line-length = 79\n",
        "train.py": "",
    })
    style = style_for(tmp_path / "train.py", tmp_path)
    assert style == Style(119, frozenset({"mylib"}), frozenset(), frozenset(), True, 2)


def test_black_then_flake8_then_the_default(tmp_path):
    write(tmp_path, {"a/pyproject.toml": "[tool.black]\nskip-string-normalization = true\n", "a/x.py": ""})
    write(tmp_path, {"b/setup.cfg": "[flake8]\nmax-line-length = 120\n", "b/x.py": ""})
    write(tmp_path, {"c/tox.ini": "[flake8]\nignore = E203\n", "c/x.py": ""})
    assert style_for(tmp_path / "a/x.py", tmp_path / "a").line_length == 88  # black's own default
    assert style_for(tmp_path / "b/x.py", tmp_path / "b").line_length == 120
    assert style_for(tmp_path / "c/x.py", tmp_path / "c").line_length == 88


def test_the_nearest_configuration_applies_and_ruff_toml_counts(tmp_path):
    write(tmp_path, {
        "pyproject.toml": "[tool.ruff]\nline-length = 100\n",
        "examples/ruff.toml": "line-length = 120\n[lint.isort]\nknown-first-party = ['helpers']\n",
        "examples/demo/train.py": "",
        "src/pkg/train.py": "",
    })
    assert style_for(tmp_path / "examples/demo/train.py", tmp_path).line_length == 120
    assert style_for(tmp_path / "examples/demo/train.py", tmp_path).known_first_party == {"helpers"}
    assert style_for(tmp_path / "src/pkg/train.py", tmp_path).line_length == 100


def test_isort_settings_and_profiles(tmp_path):
    write(tmp_path, {"a/.isort.cfg": "[settings]\nprofile = google\nknown_first_party = app, lib\n", "a/x.py": ""})
    write(tmp_path, {"b/pyproject.toml": "[tool.isort]\nprofile = 'black'\nlines_after_imports = 2\n", "b/x.py": ""})
    a = style_for(tmp_path / "a/x.py", tmp_path / "a")
    b = style_for(tmp_path / "b/x.py", tmp_path / "b")
    assert a.force_sort_within_sections and a.known_first_party == {"app", "lib"}
    assert not b.force_sort_within_sections and b.lines_after_imports == 2


def test_broken_configuration_files_are_ignored(tmp_path):
    write(tmp_path, {"pyproject.toml": "[tool.ruff\nline-length = 3", "setup.cfg": "[flake8\nmax", "x.py": ""})
    assert style_for(tmp_path / "x.py", tmp_path) == Style()


# -- imports -----------------------------------------------------------------------------------
def test_an_existing_import_of_a_longer_prefix_is_used_instead_of_a_new_import():
    out = apply(
        """\
        import torch.backends.cudnn as cudnn
        from os import environ

        cudnn.benchmark = False
        """,
        InsertStatements("after-imports", "{mod:torch}.backends.cudnn.deterministic = True"),
        InsertStatements("after-imports", '{mod:os}.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")'),
    )
    assert out == textwrap.dedent("""\
        import torch.backends.cudnn as cudnn
        from os import environ

        cudnn.deterministic = True
        environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

        cudnn.benchmark = False
        """)


def test_a_new_import_block_gets_the_blank_lines_isort_wants():
    before_code = apply('"""Doc."""\nx = 1\n\n\ndef f():\n    return x\n', InsertStatements("body-start", "{mod:random}.seed(0)", function="f"))
    assert before_code == '"""Doc."""\n\nimport random\n\nx = 1\n\n\ndef f():\n    random.seed(0)\n    return x\n'
    before_def = apply('"""Doc."""\ndef f():\n    return 1\n', InsertStatements("body-start", "{mod:random}.seed(0)", function="f"))
    assert before_def == '"""Doc."""\n\nimport random\n\n\ndef f():\n    random.seed(0)\n    return 1\n'


def test_lines_after_imports_is_followed_for_statements_added_below_the_imports():
    out = apply("import os\n\nprint(os.sep)\n", InsertStatements("after-imports", "A = 1"), style=Style(lines_after_imports=2))
    assert out == "import os\n\n\nA = 1\n\nprint(os.sep)\n"


def test_an_unsorted_section_is_not_resorted():
    out = apply(
        "import torch\nimport os\nimport argparse\n\nx = 1\n",
        InsertStatements("after-imports", "{mod:random}.seed(0)\n{mod:numpy}.random.seed(0)"),
    )
    # stdlib lines are `os`, `argparse` (unsorted): `random` follows them; numpy joins torch's section
    assert out.startswith("import numpy as np\nimport torch\nimport os\nimport argparse\nimport random\n\n")


def test_import_lines_before_from_lines_unless_sorted_within_sections():
    src = "from pathlib import Path\n\nprint(Path)\n"
    edit = InsertStatements("after-imports", "{mod:os}.sep")
    assert apply(src, edit).startswith("import os\nfrom pathlib import Path\n")
    src = "from collections import OrderedDict\nfrom pathlib import Path\n\nprint(Path, OrderedDict)\n"
    assert apply(src, edit).startswith("import os\nfrom collections import OrderedDict\n")
    within = apply(src, edit, style=Style(force_sort_within_sections=True))
    assert within.startswith("from collections import OrderedDict\nimport os\nfrom pathlib import Path\n")


def test_known_first_party_puts_a_package_in_its_own_section():
    src = "import torch\n\nimport mylib\n\nx = 1\n"
    edit = InsertStatements("after-imports", "{mod:numpy}.pi")
    assert apply(src, edit, style=Style(known_first_party=frozenset({"mylib"}))).startswith("import numpy as np\nimport torch\n\nimport mylib\n")


# -- calls -------------------------------------------------------------------------------------
def test_keywords_fill_the_last_line_of_a_call_with_several_arguments_a_line():
    src = """\
        loader = DataLoader(ds, batch_size=64, shuffle=True,
                            num_workers=8, pin_memory=True)
        """
    generator = "torch.Generator().manual_seed(args.seed)"
    out = apply(src, AddKeyword((1, 9, 2, 51), "worker_init_fn", "seed_worker"), AddKeyword((1, 9, 2, 51), "generator", generator))
    assert out == textwrap.dedent("""\
        loader = DataLoader(ds, batch_size=64, shuffle=True,
                            num_workers=8, pin_memory=True, worker_init_fn=seed_worker,
                            generator=torch.Generator().manual_seed(args.seed))
        """)


def test_a_call_holding_a_comment_is_not_relaid_out():
    src = "loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=8)  # the training data\n"
    out = apply(src, AddKeyword((1, 9, 1, 67), "worker_init_fn", "seed_worker"))
    assert out == (
        "loader = DataLoader(\n    ds, batch_size=64, shuffle=True, num_workers=8, worker_init_fn=seed_worker\n)  # the training data\n"
    )


def test_a_long_inserted_statement_is_wrapped():
    src = "def train(args):\n    if args.deterministic:\n        run(args)\n"
    code = 'torch.use_deterministic_algorithms(True, warn_only=args.allow_nondeterministic_operations_with_a_warning)'
    out = apply(src, InsertStatements("before", code, anchor=(3, 8, 3, 17)))
    assert out == (
        "def train(args):\n    if args.deterministic:\n        torch.use_deterministic_algorithms(\n"
        "            True, warn_only=args.allow_nondeterministic_operations_with_a_warning\n        )\n        run(args)\n"
    )


# -- flipped values ----------------------------------------------------------------------------
def test_a_comment_about_the_old_value_goes_and_a_directive_stays():
    src = "import torch\ntorch.backends.cudnn.benchmark = True  # faster\ntorch.use_deterministic_algorithms(False)  # type: ignore\n"
    out = apply(src, ReplaceExpression((2, 33, 2, 37), "False"), ReplaceExpression((3, 35, 3, 40), "True"))
    assert out == "import torch\ntorch.backends.cudnn.benchmark = False\ntorch.use_deterministic_algorithms(True)  # type: ignore\n"


def test_a_comment_stays_when_the_replacement_is_not_a_flipped_literal():
    src = "x = f(a)  # keep\n"
    assert apply(src, ReplaceExpression((1, 4, 1, 8), "g(a)")) == "x = g(a)  # keep\n"


def test_an_import_under_type_checking_is_not_reused_but_its_name_is_free():
    src = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import torch\n\n\ndef f():\n    return 1\n"
    out = apply(src, InsertStatements("body-start", "{mod:torch}.manual_seed(0)", function="f"))
    assert out == (
        "from typing import TYPE_CHECKING\n\nimport torch\n\nif TYPE_CHECKING:\n    import torch\n\n\n"
        "def f():\n    torch.manual_seed(0)\n    return 1\n"
    )


def test_new_imports_stay_out_of_try_blocks():
    src = "import os\n\ntry:\n    import numpy as np\nexcept ImportError:\n    np = None\n\nprint(os.sep, np)\n"
    out = apply(src, InsertStatements("after-imports", "{mod:random}.seed(0)\n{mod:numpy}.random.seed(0)"))
    assert out == (
        "import os\nimport random\n\ntry:\n    import numpy as np\nexcept ImportError:\n    np = None\n\n"
        "random.seed(0)\nnp.random.seed(0)\n\nprint(os.sep, np)\n"
    )


def test_a_last_argument_on_a_line_of_its_own_gets_the_new_one_below_it():
    src = """\
        val = DataLoader(
            dataset, sampler=sampler,
            batch_size=64,
            drop_last=False
        )
        """
    out = apply(src, AddKeyword((1, 6, 5, 1), "worker_init_fn", "seed_worker"))
    assert out == textwrap.dedent("""\
        val = DataLoader(
            dataset, sampler=sampler,
            batch_size=64,
            drop_last=False,
            worker_init_fn=seed_worker
        )
        """)


def test_an_added_function_keeps_two_blank_lines_before_the_code_after_it():
    src = "import torch\n\n\nnames = sorted(dir(torch))\n"
    out = apply(src, InsertStatements("after-imports", "def seed_worker(worker_id):\n    pass\n"))
    assert out == "import torch\n\n\ndef seed_worker(worker_id):\n    pass\n\n\nnames = sorted(dir(torch))\n"


def test_statements_under_a_condition_join_an_if_with_that_condition_next_to_them():
    src = textwrap.dedent("""\
        def main_worker(gpu, args):
            if args.seed is not None:
                cudnn.deterministic = True
            args.gpu = gpu
        """)
    out = apply(src, InsertStatements("body-start", "torch.use_deterministic_algorithms(True)", function="main_worker", guard="args.seed is not None"))
    assert out == textwrap.dedent("""\
        def main_worker(gpu, args):
            if args.seed is not None:
                cudnn.deterministic = True
                torch.use_deterministic_algorithms(True)
            args.gpu = gpu
        """)


def test_an_import_added_to_a_function_joins_its_own_imports_in_order():
    src = textwrap.dedent("""\
        import torch

        torch.backends.cudnn.benchmark = True


        def main(cfg):
            from train import Workspace

            Workspace(cfg).train()
        """)
    planner = Planner(src, "0", frozenset({"train"}), {}, Style())
    planner.add(Fix("move", "safe", (MoveStatements(((3, 0, 3, 37),), "main", "import torch"),)), "RPL201")
    assert planner.build() == textwrap.dedent("""\
        import torch


        def main(cfg):
            import torch

            from train import Workspace

            torch.backends.cudnn.benchmark = True

            Workspace(cfg).train()
        """)
