"""The code of an edited module from the text of the statements the edits left alone.

libcst writes a tree back token by token: for a fixed file that was as costly as parsing it,
though the edits change a few statements. libcst gives back its text exactly, so a
module-level statement the edits did not replace (the same node) is written as its slice of
the original text; the others, and the module's header and footer, are generated.

A statement's slice starts at its leading lines (blank and comment lines, one line each),
right above its first token, whose line `ast` gives. `TopLevel.of` checks what it relies on
(first tokens at column 0, a decorator's `@` on the decorator's line, only blank or comment
lines above them, the header's line count) and gives up, for libcst's own writing, otherwise.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

_NEWLINE = re.compile(r"\r\n|\r|\n")  # (the line ends Python's tokenizer knows)


def _blank_or_comment(line: str) -> bool:
    stripped = line.strip(" \t\f\r\n")
    return not stripped or stripped.startswith("#")


class TopLevel:
    """The slices of a text that its module-level statements were parsed from."""

    def __init__(self, text: str, module: cst.Module, starts: list) -> None:
        self.text = text
        self.module = module
        self.starts = starts  # text offset where each statement's code starts, then the footer's

    @classmethod
    def of(cls, text: str, module: cst.Module, ast_of: dict) -> Optional["TopLevel"]:
        """The slices, from the `ast` statements of each libcst statement (`ast_of`, by id);
        None where the texts do not agree on them."""
        if not module.has_trailing_newline or not text.endswith(("\n", "\r")) or not module.body:
            return None
        line_starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        lines = len(line_starts) - 1

        def line(n: int) -> str:
            return text[line_starts[n - 1]:line_starts[n]]

        starts: list = []
        for stmt in module.body:
            nodes = ast_of.get(id(stmt))
            if not nodes:
                return None
            first = nodes[0].lineno
            leading = len(stmt.leading_lines)
            decorators = getattr(stmt, "decorators", ())
            if decorators:
                first = min([first, *(d.lineno for d in nodes[0].decorator_list)])
                leading += len(decorators[0].leading_lines)
                if not line(first).startswith("@"):
                    return None
            top = first - leading
            if top < 1 or first > lines or line(first)[:1] in ("", " ", "\t", "\f", "\r", "\n", "#"):
                return None
            if any(not _blank_or_comment(line(n)) for n in range(top, first)):
                return None
            if starts and line_starts[top - 1] <= starts[-1]:
                return None
            starts.append(line_starts[top - 1])
        if len(_NEWLINE.findall(text, 0, starts[0])) != len(module.header):
            return None
        footer = lines - len(module.footer)
        if footer < 1 or line_starts[footer] <= starts[-1]:
            return None
        if any(not _blank_or_comment(line(n)) for n in range(footer + 1, lines + 1)):
            return None
        starts.append(line_starts[footer])
        return cls(text, module, starts)

    def code(self, new: cst.Module) -> str:
        """`new.code`, for a module made from this one by replacing some statements."""
        if not new.has_trailing_newline or not new.body:
            return new.code
        spans = {id(stmt): (self.starts[i], self.starts[i + 1]) for i, stmt in enumerate(self.module.body)}
        out = [new.code_for_node(line) for line in new.header]
        for stmt in new.body:
            span = spans.get(id(stmt))
            out.append(self.text[span[0]:span[1]] if span is not None else new.code_for_node(stmt))
        out.extend(new.code_for_node(line) for line in new.footer)
        return "".join(out)
