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


def parse_noqa(info: ModuleInfo, text: str) -> None:
    if "noqa" not in text.lower():
        return
    for lineno, line in enumerate(split_lines(text), 1):
        if "#" not in line:
            continue
        lower = line.lower()
        if "noqa" not in lower:
            continue
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
            continue
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
