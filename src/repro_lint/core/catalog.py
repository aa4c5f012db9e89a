"""Access to the data in `rules/`: one TOML document per rule and the API catalogs.

Knowledge of PyTorch, numpy, Hydra and friends lives in those files; rule code asks
this module instead of hard-coding API names.
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib


class CatalogError(Exception):
    """The shipped catalog is missing or malformed (a packaging bug, not user error)."""


def rules_dir() -> Path:
    """Folder holding the rule documents and catalogs.

    An installed wheel carries them as `repro_lint/_rules`; a source checkout (editable
    install, tests) reads the top-level `rules/` folder directly.
    """
    package = Path(__file__).resolve().parents[1]
    packaged = package / "_rules"
    if packaged.is_dir():
        return packaged
    source = package.parents[1] / "rules"
    if source.is_dir():
        return source
    raise CatalogError(f"rule catalog not found (looked in {packaged} and {source})")


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"cannot read catalog file {path}: {exc}") from exc


@functools.lru_cache(maxsize=None)
def load(name: str) -> dict[str, Any]:
    """Return the API catalog `rules/catalog/<name>.toml` as a dict."""
    return _read(rules_dir() / "catalog" / f"{name}.toml")


@dataclass(frozen=True)
class RuleDoc:
    code: str
    name: str
    summary: str
    why: str
    bad: str
    good: str
    fix: str  # "none", "safe", "unsafe" or "sometimes" (safety depends on settings)
    fix_description: str
    references: tuple[str, ...] = ()
    help: str = ""  # the `help:` line of its findings when a finding gives none of its own
    # a fix applied only where the configuration's `fixable` names the rule (not by "ALL")
    fix_opt_in: bool = False
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def family(self) -> str:
        return self.code[:4]

    def _fix_text(self) -> str:
        if self.fix == "none":
            return "No automatic fix."
        text = f"Fix ({self.fix}): {self.fix_description}"
        if self.fix_opt_in:
            text += f"\n\nNot offered by default: only where the configuration's `fixable` names the rule (`fixable = [\"{self.code}\"]`)."
        return text

    def markdown(self) -> str:
        refs = "\n".join(f"- {r}" for r in self.references)
        parts = [f"# {self.code} {self.name}", self.summary, "## Why it matters", self.why.strip()]
        if self.bad.strip():
            parts += ["## Example", "```python\n" + self.bad.strip() + "\n```"]
            if self.good.strip():
                parts += ["Use instead:", "```python\n" + self.good.strip() + "\n```"]
        if self.help:
            parts += ["## What to do", self.help]
        if not self.code.startswith("RPP"):
            parts += ["## Fix", self._fix_text()]
        if refs:
            parts += ["## References", refs]
        return "\n\n".join(parts) + "\n"

    def plain_text(self) -> str:
        """The document as plain text, without markdown (SARIF's `help.text`)."""
        unquote = lambda s: re.sub(r"`([^`]*)`", r"\1", s)  # noqa: E731
        why = " ".join(self.why.split())
        parts = [f"{self.code} {self.name}: {self.summary}", unquote(why)]
        if self.help:
            parts.append(unquote(self.help))
        if not self.code.startswith("RPP"):
            parts.append(unquote(self._fix_text()))
        parts += [f"See {r}" for r in self.references]
        return "\n\n".join(parts) + "\n"


@functools.lru_cache(maxsize=None)
def rule_docs() -> dict[str, RuleDoc]:
    """All rule documents of the check, keyed by code, in code order."""
    return _docs(sorted(rules_dir().glob("RPL*.toml")))


@functools.lru_cache(maxsize=None)
def probe_docs() -> dict[str, RuleDoc]:
    """The documents of the probe's findings (`rules/probe/RPP*.toml`), keyed by code."""
    return _docs(sorted((rules_dir() / "probe").glob("RPP*.toml")))


def all_docs() -> dict[str, RuleDoc]:
    """Every documented code: the check's rules, then the probe's."""
    return {**rule_docs(), **probe_docs()}


def _docs(paths: list) -> dict[str, RuleDoc]:
    docs: dict[str, RuleDoc] = {}
    for path in paths:
        data = _read(path)
        try:
            example = data.get("example", {}) if data["code"].startswith("RPP") else data["example"]
            fix = data.get("fix", {"safety": "none"}) if data["code"].startswith("RPP") else data["fix"]
            doc = RuleDoc(
                code=data["code"],
                name=data["name"],
                summary=data["summary"],
                why=data["why"],
                bad=example.get("bad", "") if data["code"].startswith("RPP") else example["bad"],
                good=example.get("good", "") if data["code"].startswith("RPP") else example["good"],
                fix=fix["safety"],
                fix_description=fix.get("description", ""),
                references=tuple(data.get("references", ())),
                help=data.get("help", ""),
                fix_opt_in=bool(fix.get("opt-in", False)),
                extra={k: v for k, v in data.items() if k not in {"code", "name", "summary", "why", "example", "fix", "references", "help"}},
            )
        except KeyError as exc:
            raise CatalogError(f"{path}: missing key {exc}") from exc
        if path.stem != doc.code:
            raise CatalogError(f"{path}: file name does not match code {doc.code}")
        docs[doc.code] = doc
    return dict(sorted(docs.items()))
