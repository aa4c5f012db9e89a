"""What a file's text says besides its syntax tree: its encoding, its lines as the parser
numbers them, and its `noqa` comments."""

from __future__ import annotations

import io
import re
import tokenize

from repro_lint.facts.model import ModuleInfo

_LINE_END = re.compile(r"\r\n|\r|\n")
# Codes are separated by commas or, as ruff accepts them, by spaces (`# noqa: E501 F401`);
# a word after the codes that is not a code (`# noqa: E501 long URL`) is a reason, not a code
_FIRST = r"[A-Za-z]+[0-9]*(?![A-Za-z0-9])"
_MORE = r"(?:\s*,\s*[A-Za-z]+[0-9]*(?![A-Za-z0-9])|\s+[A-Z]+[0-9]+(?![A-Za-z0-9]))"
_CODES = rf"(?P<codes>{_FIRST}{_MORE}*)"
NOQA = re.compile(rf"#\s*(?i:noqa)(?::\s*{_CODES})?")
FILE_NOQA = re.compile(rf"^\s*#\s*(?i:repro-lint):\s*(?i:noqa)(?::\s*{_CODES})?\s*$")


def noqa_codes(codes: str) -> list[str]:
    """The codes of a `# noqa:` comment's code list, upper-cased, in their order."""
    return [c.upper() for c in re.split(r"[\s,]+", codes.strip()) if c]


def split_lines(text: str) -> list[str]:
    """Source lines numbered as the parser numbers them."""
    return _LINE_END.split(text)


def lines_with(text: str, word: str) -> set[int]:
    """The numbers of the lines (as the parser numbers them) on which `word` occurs."""
    if "\r" in text:
        return {n for n, line in enumerate(split_lines(text), 1) if word in line}
    found = set()
    line, seen = 1, 0
    at = text.find(word)
    while at >= 0:
        line += text.count("\n", seen, at)
        seen = at
        found.add(line)
        at = text.find(word, at + len(word))
    return found


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def non_ascii_lines(text: str) -> dict[int, str]:
    """The lines of `text` that are not all ASCII, by their index (the first line's is 0)."""
    if "\r" in text:
        return {i: line for i, line in enumerate(split_lines(text)) if not line.isascii()}
    # (splitting every line of a large file to find its few non-ASCII ones cost more)
    found = {}
    index, seen = 0, 0
    hit = _NON_ASCII.search(text)
    while hit is not None:
        start = text.rfind("\n", 0, hit.start()) + 1
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        index += text.count("\n", seen, start)
        seen = start
        found[index] = text[start:end]
        hit = _NON_ASCII.search(text, end)
    return found


def parse_noqa(info: ModuleInfo, text: str) -> None:
    lower = text.lower()
    at = lower.find("noqa")
    if at < 0:
        return
    if "\r" in text or not text.isascii():  # (lower-casing may change a non-ASCII text's length)
        for lineno, line in enumerate(split_lines(text), 1):
            if "noqa" in line.lower():
                _noqa_line(info, lineno, line)
        return
    # only the lines that hold the word, found in the text (not every line of the file split)
    lineno, seen = 1, 0
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        if end < 0:
            end = len(text)
        lineno += text.count("\n", seen, start)
        seen = start
        _noqa_line(info, lineno, text[start:end])
        at = lower.find("noqa", end)


def _noqa_line(info: ModuleInfo, lineno: int, line: str) -> None:
    """The `noqa` comment of a line that holds the word, if it has one."""
    if "#" not in line:
        return
    fm = FILE_NOQA.match(line)
    if fm:
        codes = fm.group("codes")
        new = frozenset(noqa_codes(codes)) if codes else frozenset()
        if not info.file_noqa_set:
            info.file_noqa = new
        elif info.file_noqa and new:
            info.file_noqa = info.file_noqa | new
        else:
            info.file_noqa = frozenset()
        info.file_noqa_set = True
        return
    hit = NOQA.search(line)
    if hit:
        codes = hit.group("codes")
        info.noqa[lineno] = frozenset(noqa_codes(codes)) if codes else None


def decode_source(data: bytes) -> str:
    """Decode Python source the way the interpreter does (BOM, coding cookie, else UTF-8)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text
