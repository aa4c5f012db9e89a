"""Report lines a CI log cannot take as a command.

GitHub Actions runs a line of a job's output as a workflow command when, after white space,
it starts with `::` (`::add-mask::VALUE`, `::stop-commands::TOKEN`, `::warning ...`), and in
the older form wherever `##[` appears in the line (`##[set-output name=x]y`; Azure
Pipelines: `##vso[`). Reports show what a checked repository chose: its file names
(`::add-mask::secret.py`) and its source lines. So a line for people starts with a path made
to start otherwise (`./::add-mask::secret.py`), control characters (a newline or a carriage
return would start a line of the repository's choosing; an escape sequence would redraw the
terminal) are shown as `?`, and `##[` gets an invisible space between its `#`s.
"""

from __future__ import annotations

import re

# control characters that would move the cursor, erase, start an escape sequence or a new
# line: each becomes one visible column (a tab stays: it is only white space)
CONTROLS = {c: "?" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c != 0x09}
CONTROLS.update({0x0B: " ", 0x0C: " "})
_OLD_FORM = re.compile(r"##(?=\[|vso\[)", re.IGNORECASE)


def neutral(text: str) -> str:
    """`text` as part of one line of a log: no control character, no `##[` command."""
    if not text.isprintable():
        text = text.translate(CONTROLS)
    return _OLD_FORM.sub("#\u200b#", text) if "##" in text else text


def line_start(label: str) -> str:
    """A path (or a location `path:line:col`) that begins a line, made to begin with no
    command: `./` before one that starts with `::` after white space."""
    return "./" + label if label.lstrip().startswith("::") else label


def escape_github(text: str, prop: bool = False) -> str:
    """`text` in a workflow command's message (`prop`: in a property such as `file=`): `%`,
    CR and LF as the runner reads them back, the other control characters as `%XX` (raw
    they would reach the log's viewer)."""
    out = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        out = out.replace(":", "%3A").replace(",", "%2C")
    if not out.isprintable():
        out = "".join(f"%{ord(c):02X}" if ord(c) in CONTROLS else c for c in out)
    return out
