"""Secrets kept out of environment snapshots, their diffs and probe reports.

Two kinds of redaction, both read from `rules/catalog/secrets.toml`:
- by name: an environment variable whose name says it holds a secret (`GITHUB_TOKEN`,
  `DB_PASSWORD`, `GITHUB_PAT`) has its whole value replaced;
- by value: text shaped like a credential is replaced wherever it appears, under any name
  and inside any string (credentials in URLs, well-known token formats, webhook URLs,
  `api_key = "..."` lines of a diff).
`REPRO_LINT_REDACT` may hold one more regular expression (alternatives joined with `|`)
whose matches are redacted too.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Callable

from repro_lint.core import catalog

REDACTED = "<redacted>"
EXTRA_PATTERN_VARIABLE = "REPRO_LINT_REDACT"


@functools.lru_cache(maxsize=1)
def _name_pattern() -> "re.Pattern[str]":
    data = catalog.load("secrets")
    parts = [re.escape(n) for n in data["names"]]
    parts += [rf"(?:^|(?<=[^A-Za-z0-9])){re.escape(w)}(?=$|[^A-Za-z0-9])" for w in data["name-words"]]
    return re.compile("|".join(parts), re.IGNORECASE)


@functools.lru_cache(maxsize=4)
def _value_patterns(extra: str) -> tuple[tuple["re.Pattern[str]", bool], ...]:
    """(pattern, whether it has a `keep` group) for every catalog pattern, and `extra`."""
    out = []
    for entry in catalog.load("secrets")["value"]:
        pattern = re.compile(entry["pattern"])
        out.append((pattern, "keep" in pattern.groupindex))
    if extra:
        try:
            out.append((re.compile(extra), False))
        except re.error:  # not a regular expression: its text is what is redacted
            out.append((re.compile(re.escape(extra)), False))
    return tuple(out)


def _replace_keeping(match: "re.Match[str]") -> str:
    return (match.group("keep") or "") + REDACTED


def secret_name(name: str) -> bool:
    """Whether a variable of this name holds a secret."""
    return bool(_name_pattern().search(name))


def redact_text(text: str) -> str:
    """`text` with every credential-shaped part replaced by `REDACTED`."""
    for pattern, keep in _value_patterns(os.environ.get(EXTRA_PATTERN_VARIABLE, "")):
        text = pattern.sub(_replace_keeping if keep else REDACTED, text)
    return text


def redact_environment(environ: "dict[str, str] | os._Environ[str]") -> dict[str, str]:
    """Environment variables by name, secrets redacted by name and by value."""
    return {k: REDACTED if secret_name(k) else redact_text(v) for k, v in sorted(environ.items())}


@functools.lru_cache(maxsize=1)
def _option_pattern() -> "re.Pattern[str]":
    return re.compile(catalog.load("secrets")["secret-option"])


def secret_option(word: str) -> bool:
    """Whether a command-line option of this name takes a secret (`--password`, `--hf-token`)."""
    return bool(_option_pattern().match(word))


def redact_tree(value: Any, text: Callable[[str], str] = redact_text) -> Any:
    """A copy of JSON-like data with every string value redacted (keys are kept); in a list of
    strings (a program's arguments) the value after a secret option is redacted too."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {k: redact_tree(v, text) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [redact_tree(v, text) for v in value]
        for i in range(1, len(items)):
            if isinstance(value[i - 1], str) and isinstance(items[i], str) and secret_option(value[i - 1]):
                if not value[i].startswith("-"):
                    items[i] = REDACTED
        return items
    return value
