"""The shared edit operations, applied by `fix.apply.Planner` to text (no rules involved)."""

from __future__ import annotations

import textwrap

import pytest

from repro_lint.core.findings import Fix
from repro_lint.fix.apply import FixError, Planner
from repro_lint.core.edits import AddKeyword, EnsureFunction, InsertStatements, MoveStatements, ReplaceExpression, SeedSpec

ALIASES = {"numpy": "np"}


def apply(text: str, *fixes, code: str = "RPL999", seed: str = "0", project=frozenset()) -> str:
    planner = Planner(textwrap.dedent(text), seed, project, ALIASES)
    for edits in fixes:
        planner.add(Fix("test", "safe", tuple(edits)), code)
    return planner.build()


def d(text: str) -> str:
    return textwrap.dedent(text)


# -- add a keyword argument --------------------------------------------------------------
def test_add_keyword_single_line():
    out = apply("import numpy as np\nr = np.random.default_rng()\nq = f(a, b=1)\n",
                [AddKeyword((2, 4, 2, 27), "seed", "3")], [AddKeyword((3, 4, 3, 13), "c", "{mod:numpy}.pi")])
    assert out == "import numpy as np\nr = np.random.default_rng(seed=3)\nq = f(a, b=1, c=np.pi)\n"


def test_add_keyword_keeps_multiline_style_and_comments():
    src = d("""\
        loader = DataLoader(
            ds,  # the data
            batch_size=4,
        )
        other = f(a,
                  b  # note
        )
    """)
    out = apply(src, [AddKeyword((1, 9, 4, 1), "generator", "g")], [AddKeyword((5, 8, 7, 1), "k", "1")])
    assert out == d("""\
        loader = DataLoader(
            ds,  # the data
            batch_size=4,
            generator=g,
        )
        other = f(a,
                  b,
                  k=1  # note
        )
    """)


def test_add_keyword_that_is_already_there_is_a_no_op():
    src = "r = f(seed=1)\n"
    assert apply(src, [AddKeyword((1, 4, 1, 13), "seed", "2")]) == src


def test_add_keyword_to_a_call_that_is_not_there_fails_with_the_code():
    with pytest.raises(FixError) as exc:
        apply("x = 1\n", [AddKeyword((1, 4, 1, 5), "seed", "2")], code="RPL102")
    assert exc.value.code == "RPL102"


# -- replace an expression -----------------------------------------------------------------
def test_replace_expression_keeps_parentheses_and_adds_needed_ones():
    src = "flag = True\nx = (a).b\ny = z.w\n"
    out = apply(src, [ReplaceExpression((1, 7, 1, 11), "False")], [ReplaceExpression((2, 5, 2, 6), "c + d")],
                [ReplaceExpression((3, 4, 3, 5), "p or q")])
    assert out == "flag = False\nx = (c + d).b\ny = (p or q).w\n"


# -- insert statements ---------------------------------------------------------------------
def test_insert_after_an_expression_goes_after_its_statement_in_the_same_block():
    src = d("""\
        def main(args):
            if args.seed is not None:
                torch.manual_seed(args.seed)  # optional
            run()
    """)
    out = apply(src, [InsertStatements("after", "{mod:random}.seed({seed})", anchor=(3, 8, 3, 36)), SeedSpec("args.seed")])
    assert out == d("""\
        import random


        def main(args):
            if args.seed is not None:
                torch.manual_seed(args.seed)  # optional
                random.seed(args.seed)
            run()
    """)


def test_insert_before_takes_the_blank_lines_and_leaves_the_comment_with_its_statement():
    src = "x = 1\n\n# train\ntrain()\n"
    out = apply(src, [InsertStatements("before", "prepare()", anchor=(4, 0, 4, 7))])
    assert out == "x = 1\n\nprepare()\n# train\ntrain()\n"


def test_body_start_goes_after_the_docstring_and_the_functions_own_imports():
    src = d('''\
        class Trainer:
            def fit(self):
                """Fit."""
                import numpy as np
                # go
                return np.random.rand()
    ''')
    out = apply(src, [InsertStatements("body-start", "{mod:numpy}.random.seed({seed})", function="Trainer.fit"), SeedSpec("7")])
    assert out == d('''\
        class Trainer:
            def fit(self):
                """Fit."""
                import numpy as np

                np.random.seed(7)
                # go
                return np.random.rand()
    ''')


def test_body_start_of_a_one_line_function_becomes_a_block():
    out = apply("def f(): return g()  # hm\n", [InsertStatements("body-start", "setup()", function="f")])
    assert out == "def f():  # hm\n    setup()\n    return g()\n"


def test_main_start_and_missing_main_block():
    src = 'if __name__ == "__main__":\n    main()\n'
    assert apply(src, [InsertStatements("main-start", "setup()")]) == 'if __name__ == "__main__":\n    setup()\n    main()\n'
    with pytest.raises(FixError):
        apply("main()\n", [InsertStatements("main-start", "setup()")])


def test_after_imports_after_docstring_and_future_imports():
    src = '"""Doc."""\nfrom __future__ import annotations\nx = 1\n'
    out = apply(src, [InsertStatements("after-imports", "y = {seed}"), SeedSpec(None, "5")])
    assert out == '"""Doc."""\nfrom __future__ import annotations\n\nSEED = 5\n\ny = SEED\nx = 1\n'


def test_after_imports_code_using_a_constant_defined_later_goes_after_it():
    src = "import random\n\nprint(1)\nSEED = 3\nrandom.random()\n"
    out = apply(src, [InsertStatements("after-imports", "random.seed({seed})"), SeedSpec("SEED")])
    assert out == "import random\n\nprint(1)\nSEED = 3\n\nrandom.seed(SEED)\nrandom.random()\n"


def test_seed_needed_before_its_definition_is_refused():
    with pytest.raises(FixError, match="defined only after"):
        apply("import numpy as np\nr = np.random.default_rng()\nSEED = 1\n", [AddKeyword((2, 4, 2, 27), "seed", "{seed}"), SeedSpec("SEED")])


def test_same_key_is_inserted_once_and_blocks_come_out_in_order():
    src = "def main():\n    run()\n"
    torch = InsertStatements("body-start", "{mod:torch}.manual_seed({seed})", function="main", key="seed:torch", order=2)
    python = InsertStatements("body-start", "{mod:random}.seed({seed})", function="main", key="seed:python", order=0)
    numpy = InsertStatements("body-start", "{mod:numpy}.random.seed({seed})", function="main", key="seed:numpy", order=1)
    spec = SeedSpec(None, "0")
    one = apply(src, [torch, spec], [numpy, spec], [python, spec], [torch, spec], [numpy, spec])
    other = apply(src, [python, spec], [torch, spec], [numpy, spec])
    assert one == other == d("""\
        import random

        import numpy as np
        import torch

        SEED = 0


        def main():
            random.seed(SEED)
            np.random.seed(SEED)
            torch.manual_seed(SEED)
            run()
    """)


def test_same_code_without_key_is_inserted_once_per_point():
    src = "def main():\n    run()\n"
    edit = InsertStatements("body-start", "setup()", function="main")
    other = InsertStatements("body-start", "setup()", function="main", order=1)
    assert apply(src, [edit], [other]) == "def main():\n    setup()\n    run()\n"


# -- imports ---------------------------------------------------------------------------------
def test_existing_aliases_are_reused():
    src = "import numpy as np\nfrom torch import nn\nimport torch as T\nimport os.path\n\nx = 1\n"
    out = apply(src, [InsertStatements("after-imports", "{mod:numpy}.random.seed(0)\n{mod:torch}.manual_seed(0)\n{mod:os.path}.sep")])
    assert out == "import numpy as np\nfrom torch import nn\nimport torch as T\nimport os.path\n\nnp.random.seed(0)\nT.manual_seed(0)\nos.path.sep\n\nx = 1\n"


def test_new_import_goes_to_its_section_in_sorted_order():
    src = d("""\
        import os
        import sys

        import numpy as np
        import torch

        from . import helpers
        x = 1
    """)
    out = apply(src, [InsertStatements("after-imports", "{mod:random}.seed(0)\n{mod:pandas}.x\n{mod:matplotlib}.y")])
    assert out == d("""\
        import os
        import random
        import sys

        import matplotlib
        import numpy as np
        import pandas
        import torch

        from . import helpers

        random.seed(0)
        pandas.x
        matplotlib.y
        x = 1
    """)


def test_new_section_between_others_and_unsorted_section():
    src = "from __future__ import annotations\nimport torch\nimport numpy as np\n\ndef f():\n    pass\n"
    out = apply(src, [InsertStatements("body-start", "{mod:random}.seed(0)\n{mod:scipy}.z", function="f")])
    assert out == (
        "from __future__ import annotations\n\nimport random\n\nimport torch\nimport numpy as np\nimport scipy\n\n"
        "def f():\n    random.seed(0)\n    scipy.z\n    pass\n"
    )


def test_project_modules_are_their_own_section():
    src = "import torch\n\nimport mypkg.b\n\nx = 1\n"
    out = apply(src, [InsertStatements("after-imports", "{mod:mypkg.a}.run()")], project=frozenset({"mypkg"}))
    assert out == "import torch\n\nimport mypkg.a\nimport mypkg.b\n\nmypkg.a.run()\n\nx = 1\n"


def test_a_name_taken_by_something_else_gets_another_alias():
    src = "random = 4\n\ndef f():\n    np = 1\n    return np\n"
    out = apply(src, [InsertStatements("body-start", "{mod:random}.seed(0)\n{mod:numpy}.random.seed(0)", function="f")])
    assert out == (
        "import random as _random\n\nimport numpy\n\nrandom = 4\n\ndef f():\n    _random.seed(0)\n    numpy.random.seed(0)\n"
        "    np = 1\n    return np\n"
    )


def test_a_later_local_import_is_imported_first_where_code_is_inserted():
    src = "def f():\n    g()\n    import random\n    return random.random()\n"
    out = apply(src, [InsertStatements("body-start", "{mod:random}.seed(0)", function="f")])
    assert out == "def f():\n    import random\n\n    random.seed(0)\n    g()\n    import random\n    return random.random()\n"


def test_import_after_the_point_is_not_reused_at_module_level():
    src = "import os\nsetup()\nimport random\n"
    out = apply(src, [InsertStatements("after-imports", "{mod:random}.seed(0)")])
    assert out == "import os\nimport random\n\nrandom.seed(0)\nsetup()\nimport random\n"


def test_seed_constant_is_added_once_and_reused():
    src = "import numpy as np\nSEED = 9\nr = np.random.default_rng()\n"
    assert apply(src, [AddKeyword((3, 4, 3, 27), "seed", "{seed}"), SeedSpec(None, "0")]) == (
        "import numpy as np\nSEED = 9\nr = np.random.default_rng(seed=SEED)\n"
    )
    src = "import numpy as np\na = np.random.default_rng()\nb = np.random.default_rng()\n"
    spec = SeedSpec(None, "0")
    assert apply(src, [AddKeyword((2, 4, 2, 27), "seed", "{seed}"), spec], [AddKeyword((3, 4, 3, 27), "seed", "{seed}"), spec]) == (
        "import numpy as np\n\nSEED = 0\na = np.random.default_rng(seed=SEED)\nb = np.random.default_rng(seed=SEED)\n"
    )


# -- move statements, ensure a function ------------------------------------------------------
def test_move_statements_with_comments_and_edits_inside():
    src = d('''\
        import torch

        # fixed seed
        torch.manual_seed(0)
        torch.backends.cudnn.benchmark = True

        @hydra.main(config_path=None)
        def main(cfg):
            """Run."""
            train(cfg)


        if __name__ == "__main__":
            main()
    ''')
    move = MoveStatements(((4, 0, 4, 20), (5, 0, 5, 37)), "main", "import torch")
    out = apply(src, [move, ReplaceExpression((5, 33, 5, 37), "False")], [move])
    assert out == d('''\
        import torch

        @hydra.main(config_path=None)
        def main(cfg):
            """Run."""
            import torch

            # fixed seed
            torch.manual_seed(0)
            torch.backends.cudnn.benchmark = False
            train(cfg)


        if __name__ == "__main__":
            main()
    ''')


def test_moving_the_last_statement_of_a_block_leaves_pass():
    src = 'def main():\n    run()\n\nif __name__ == "__main__":\n    seed(1)\n'
    out = apply(src, [MoveStatements(((5, 4, 5, 11),), "main")])
    assert out == 'def main():\n    seed(1)\n    run()\n\nif __name__ == "__main__":\n    pass\n'


def test_ensure_function_after_imports_with_two_blank_lines_and_only_once():
    src = "import torch\nloader = make()\n"
    fn = EnsureFunction("seed_worker", "def seed_worker(worker_id):\n    {mod:numpy}.random.seed({mod:torch}.initial_seed() % 2**32)\n")
    out = apply(src, [fn], [fn])
    assert out == (
        "import numpy as np\nimport torch\n\n\ndef seed_worker(worker_id):\n"
        "    np.random.seed(torch.initial_seed() % 2**32)\n\n\nloader = make()\n"
    )
    assert apply("def seed_worker(i):\n    pass\n", [fn]) == "def seed_worker(i):\n    pass\n"


# -- file styles -------------------------------------------------------------------------------
def test_crlf_and_tabs_are_kept_in_inserted_code():
    src = "import random\r\n\r\ndef f():\r\n\tif x:\r\n\t\treturn 1\r\n"
    out = apply(src, [InsertStatements("body-start", "{mod:random}.seed(0)\nif y:\n    pass", function="f")])
    assert out == "import random\r\n\r\ndef f():\r\n\trandom.seed(0)\r\n\tif y:\r\n\t\tpass\r\n\tif x:\r\n\t\treturn 1\r\n"


def test_non_ascii_columns_are_characters():
    src = "é = 1; r = np.random.default_rng()\n"
    assert apply(src, [AddKeyword((1, 11, 1, 34), "seed", "1")]) == "é = 1; r = np.random.default_rng(seed=1)\n"


def test_bad_template_is_reported_with_the_code():
    with pytest.raises(FixError) as exc:
        apply("x = 1\n", [InsertStatements("after-imports", "def (")], code="RPL777")
    assert exc.value.code == "RPL777" and "does not parse" in exc.value.message


def test_statements_already_in_the_block_are_not_inserted_again():
    src = "import os\n\nos.environ.setdefault('A', '1')\nx = 1\n"
    edit = InsertStatements("after-imports", "{mod:os}.environ.setdefault('A', '1')", key="env")
    assert apply(src, [edit]) == src
