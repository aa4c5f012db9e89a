"""The lines a file's text is searched by (`sourcetext`): found in the text without splitting
every line, numbered as the parser numbers them whatever ends the lines."""

from __future__ import annotations

import pytest

from repro_lint.facts.model import ModuleInfo
from repro_lint.facts.sourcetext import lines_with, non_ascii_lines, parse_noqa, split_lines

TEXT = (
    "import typing\n"
    "# repro-lint: noqa: RPL101\n"
    "x = 1  # NoQA: RPL102\n"
    "s = 'caf\u00e9'\n"
    "if typing.TYPE_CHECKING:  # noqa\n"
    "    pass\n"
    "t = 'noqa without a comment' + '\u00e9\u00e9'  # TYPE_CHECKING\n"
    "y = 2  # noqa: RPL103, RPL104 because"
)


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_lines_are_numbered_as_the_parser_numbers_them(end):
    text = TEXT.replace("\n", end)
    lines = split_lines(text)
    assert lines_with(text, "TYPE_CHECKING") == {i for i, x in enumerate(lines, 1) if "TYPE_CHECKING" in x} == {5, 7}
    assert non_ascii_lines(text) == {i: x for i, x in enumerate(lines) if not x.isascii()}
    assert sorted(non_ascii_lines(text)) == [3, 6]
    info = ModuleInfo("m.py", "m", False)
    parse_noqa(info, text)
    assert info.file_noqa == frozenset({"RPL101"}) and info.file_noqa_set
    assert info.noqa == {3: frozenset({"RPL102"}), 5: None, 8: frozenset({"RPL103", "RPL104"})}


def test_a_text_without_the_words():
    assert lines_with("x = 1\n", "TYPE_CHECKING") == set()
    assert non_ascii_lines("x = 1\n") == {}
    info = ModuleInfo("m.py", "m", False)
    parse_noqa(info, "x = 1\n")
    assert info.noqa == {} and not info.file_noqa_set


@pytest.mark.parametrize("test", [
    "typing.TYPE_CHECKING",
    "(\n    typing.TYPE_CHECKING\n)",
    "typing.\uff34\uff39\uff30\uff25_\uff23\uff28\uff25\uff23\uff2b\uff29\uff2e\uff27",  # normalised by the parser
])
def test_imports_under_type_checking_are_found_on_any_line_of_the_test(test):
    from repro_lint.facts.matchers import get_matchers
    from repro_lint.facts.walker.extractor import extract

    src = f"import typing\nif {test}:\n    import numpy as np\nx = 1\n"
    info = extract("m.py", "m", False, src.encode("utf-8"), get_matchers())
    assert [(q, scope) for q, *_, scope in info.imports] == [("typing", "<module>"), ("numpy", "<typing>")]
