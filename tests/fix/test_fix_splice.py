"""Writing an edited module from the text of its untouched statements (`fix.splice`), and the
layout's own walk (`Layout._walk`), against what libcst gives."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from repro_lint.fix.layout import Layout
from repro_lint.fix.positions import SourcePositions
from repro_lint.fix.splice import TopLevel

TEXTS = [
    """\
    #!/usr/bin/env python
    # header comment

    \"\"\"Doc.\"\"\"
    import os; import sys  # two on a line

    # a comment above
    @decorator
    # between
    @other(
        1,
    )
    def f(a, b=1):
        x = (
            a
        )
        # last in the block

    # after the block
    class C(Base):
        y: int = 2
        def m(self):
            for i in range(3):
                with open(i) as fh, open(b) as (g, h):
                    pass
            else:
                try:
                    import json
                except ValueError as exc:
                    global z
                finally:
                    pass
    if __name__ == "__main__":
        f(1); f(2)
        while True: break
    # trailing
    """,
    "x = 1\r\n\r\n# c\r\ny = 2\r\n",
    "if a:\n    b = 1\nelif c:\n    d, (e, f) = 1, (2, 3)\nelse:\n    g += 1\n\n\n# end\n",
]


@pytest.mark.parametrize("text", [textwrap.dedent(t) for t in TEXTS])
def test_splice_writes_what_libcst_writes(text):
    module = cst.parse_module(text)
    source = SourcePositions.of(text, module)
    top = TopLevel.of(text, module, source.ast_of)
    assert top is not None
    body = list(module.body)
    variants = [
        module,
        module.with_changes(body=[s.with_changes() if i % 2 else s for i, s in enumerate(body)]),
        module.with_changes(body=body[1:]),
        module.with_changes(body=[*body[:1], cst.parse_statement("z = 3\n"), *body[1:]]),
        module.with_changes(body=body[:-1], footer=()),
    ]
    for new in variants:
        assert top.code(new) == new.code


@pytest.mark.parametrize("text", ["x = 1", "", "# only a comment\n"])
def test_splice_gives_up_where_it_cannot_tell(text):
    module = cst.parse_module(text)
    source = SourcePositions.of(text, module)
    assert TopLevel.of(text, module, source.ast_of) is None


@pytest.mark.parametrize("text", [textwrap.dedent(t) for t in TEXTS])
def test_layout_walk_is_libcst_visit(text):
    module = cst.parse_module(text)
    source = SourcePositions.of(text, module)

    def layout(walk: bool) -> tuple:
        found = Layout(module)
        found.source = source
        found._into_expressions = False
        found._walk(module) if walk else module.visit(found)
        statements = [(id(s.node), id(s.block), s.index, s.start, s.end, s.function, s.top) for s in found.statements]
        functions = [(q, f.parents, {k: [vars(b) for b in v] for k, v in f.bindings.items()}, f.globals) for q, f in found.functions.items()]
        bindings = [(k, [vars(b) for b in v]) for k, v in found.module_bindings.items()]
        return statements, functions, bindings, id(found.main_guard), found.main_index

    assert layout(True) == layout(False)
