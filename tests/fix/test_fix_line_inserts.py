"""Edits placed on the text from `ast` (`fix.line_inserts.plan`) give libcst's text
(`fix.apply.Planner`): each case must be placed on the text, and equal both libcst's result
and the text written here."""

from __future__ import annotations

import ast
import textwrap
from typing import Optional

import pytest

from repro_lint.core.edits import AddKeyword, InsertStatements, ReplaceExpression
from repro_lint.core.findings import Fix
from repro_lint.fix import line_inserts
from repro_lint.fix.apply import Planner
from repro_lint.fix.style import Style

ALIASES = {"numpy": "np"}


def d(text: str) -> str:
    return textwrap.dedent(text)


def placed(text: str, *fixes, style: Optional[Style] = None) -> str:
    """The text with `fixes` (lists of edits) applied from `ast`, checked against libcst's."""
    style = style or Style()
    pairs = [(Fix("test", "safe", tuple(edits)), "RPL999") for edits in fixes]
    out = line_inserts.plan(text, "0", frozenset(), ALIASES, style, pairs)
    planner = Planner(text, "0", frozenset(), ALIASES, style)
    for fix, code in pairs:
        planner.add(fix, code)
    assert out is not None, "not placed on the text"
    assert out == planner.build()
    return out


GENERATOR = "torch.Generator().manual_seed(0)"


def call(src: str, name: str) -> tuple:
    """The span of the call of `name` in `src` (the first one)."""
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == name:
            return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
    raise AssertionError(name)


def value(src: str, target: str) -> tuple:
    """The span of the value assigned to `target` in `src`."""
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == target:
            v = node.value
            return (v.lineno, v.col_offset, v.end_lineno, v.end_col_offset)
    raise AssertionError(target)


# -- a keyword that takes a call on one line past the line length ---------------------------
def test_a_call_whose_arguments_fit_on_a_line_of_their_own_gets_them_there():
    src = d("""\
        def main(args):
            checkpoint = torch.load(config.MODEL.RESUME, map_location='cpu')  # load
    """)
    out = placed(src, [AddKeyword(call(src, "torch.load"), "weights_only", "False")], style=Style(line_length=79))
    assert out == d("""\
        def main(args):
            checkpoint = torch.load(
                config.MODEL.RESUME, map_location='cpu', weights_only=False
            )  # load
    """)


def test_a_call_whose_arguments_do_not_fit_on_a_line_gets_one_per_line():
    src = d("""\
        def main(args):
            loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=True, num_workers=0)
            run(loader)
    """)
    out = placed(src, [AddKeyword(call(src, "DataLoader"), "generator", GENERATOR)])
    assert out == d("""\
        def main(args):
            loader = DataLoader(
                train_dataset,
                batch_size=args.batch_size,
                shuffle=True,
                num_workers=0,
                generator=torch.Generator().manual_seed(0),
            )
            run(loader)
    """)


def test_a_call_inside_brackets_on_its_line_gets_one_argument_per_line():
    # (`)` of another bracket follows it: black splits there first, not inside this call)
    src = "loaders = [DataLoader(train_dataset, batch_size=batch_size, shuffle=True, drop_last=True)]\n"
    out = placed(src, [AddKeyword(call(src, "DataLoader"), "generator", GENERATOR)])
    assert out == d("""\
        loaders = [DataLoader(
            train_dataset,
            batch_size=batch_size,
            shuffle=True,
            drop_last=True,
            generator=torch.Generator().manual_seed(0),
        )]
    """)


def test_a_file_indented_by_two_spaces_wraps_by_two():
    src = d("""\
        if True:
          loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=True, num_workers=0)
    """)
    out = placed(src, [AddKeyword(call(src, "DataLoader"), "generator", GENERATOR)])
    assert out == d("""\
        if True:
          loader = DataLoader(
            train_dataset,
            batch_size=args.batch_size,
            shuffle=True,
            num_workers=0,
            generator=torch.Generator().manual_seed(0),
          )
    """)


# -- a call whose arguments share a line of their own ----------------------------------------
def test_arguments_on_a_line_of_their_own_take_the_keyword_while_it_fits():
    src = d("""\
        loader = DataLoader(
            ds, batch_size=4
        )
    """)
    out = placed(src, [AddKeyword(call(src, "DataLoader"), "generator", "g")])
    assert out == d("""\
        loader = DataLoader(
            ds, batch_size=4, generator=g
        )
    """)


def test_arguments_on_a_line_of_their_own_go_one_per_line_past_the_line_length():
    src = d("""\
        def get_loaders(train_batch_size):
            train_loader = DataLoader(
                MNIST(download=True, root=".", transform=data_transform, train=True), batch_size=train_batch_size, shuffle=True
            )
            return train_loader
    """)
    out = placed(src, [AddKeyword(call(src, "DataLoader"), "generator", GENERATOR)])
    assert out == d("""\
        def get_loaders(train_batch_size):
            train_loader = DataLoader(
                MNIST(download=True, root=".", transform=data_transform, train=True),
                batch_size=train_batch_size,
                shuffle=True,
                generator=torch.Generator().manual_seed(0),
            )
            return train_loader
    """)


@pytest.mark.parametrize("src", [
    # arguments that share lines with the brackets, or hold a comment: libcst's layouts
    "x = f(a,\n      b, c)\n",
    "x = f(\n    a, b,  # note\n    c\n)\n",
    "x = f(\n    (a), b\n)\n",
])
def test_other_layouts_of_arguments_are_left_to_libcst(src):
    fix = Fix("test", "safe", (AddKeyword(call(src, "f"), "k", "1"),))
    assert line_inserts.plan(src, "0", frozenset(), ALIASES, Style(), [(fix, "RPL999")]) is None


# -- statements below a compound statement, and at the module's start -----------------------
def test_statements_below_the_imports_follow_a_try_block_that_ends_them():
    src = d("""\
        import torch

        try:
            import visdom
        except ImportError:
            raise ModuleNotFoundError("no visdom")


        def main():
            pass
    """)
    out = placed(src, [InsertStatements("after-imports", '{mod:os}.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n')],
                 [InsertStatements("after-imports", "SEED = 0\n")])
    assert out == d("""\
        import os

        import torch

        try:
            import visdom
        except ImportError:
            raise ModuleNotFoundError("no visdom")

        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        SEED = 0


        def main():
            pass
    """)


def test_a_comment_indented_below_a_block_is_left_to_libcst():
    src = d("""\
        try:
            import visdom
        except ImportError:
            raise ModuleNotFoundError("no visdom")
            # the block's own comment

        x = 1
    """)
    fix = Fix("test", "safe", (InsertStatements("after-imports", "SEED = 0\n"),))
    assert line_inserts.plan(src, "0", frozenset(), ALIASES, Style(), [(fix, "RPL999")]) is None


def test_a_new_import_before_the_first_statement_goes_below_the_header_comments():
    src = d("""\
        # Copyright notice

        from argparse import ArgumentParser

        import torch

        torch.manual_seed(0)
    """)
    out = placed(src, [InsertStatements("after-imports", '{mod:os}.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n')])
    assert out == d("""\
        # Copyright notice

        import os
        from argparse import ArgumentParser

        import torch

        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

        torch.manual_seed(0)
    """)


# -- a value replaced ------------------------------------------------------------------------
def test_a_flipped_value_loses_the_comment_that_described_it():
    src = d("""\
        def setup(seed):
            torch.manual_seed(seed)
            cudnn.benchmark = True  # faster
            cudnn.enabled = True  # noqa: E501
    """)
    out = placed(src, [ReplaceExpression(value(src, "cudnn.benchmark"), "False")], [ReplaceExpression(value(src, "cudnn.enabled"), "False")])
    assert out == d("""\
        def setup(seed):
            torch.manual_seed(seed)
            cudnn.benchmark = False
            cudnn.enabled = False  # noqa: E501
    """)


def test_a_value_in_parentheses_or_before_more_code_is_left_to_libcst():
    for src in ("x = (True)\n", "x = True; y = 1\n"):
        fix = Fix("test", "safe", (ReplaceExpression(value(src, "x"), "False"),))
        assert line_inserts.plan(src, "0", frozenset(), ALIASES, Style(), [(fix, "RPL999")]) is None
