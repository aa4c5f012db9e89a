"""Access to the data in `rules/`: one TOML document per rule and the API catalogs.

Knowledge of PyTorch, numpy, Hydra and friends lives in those files; rule code asks
this module instead of hard-coding API names.
"""

from __future__ import annotations

import functools
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
    packaged = Path(__file__).with_name("_rules")
    if packaged.is_dir():
        return packaged
    source = Path(__file__).resolve().parents[2] / "rules"
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
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def family(self) -> str:
        return self.code[:4]

    def markdown(self) -> str:
        refs = "\n".join(f"- {r}" for r in self.references)
        fix = "No automatic fix." if self.fix == "none" else f"Fix ({self.fix}): {self.fix_description}"
        parts = [
            f"# {self.code} {self.name}",
            self.summary,
            "## Why it matters",
            self.why.strip(),
            "## Example",
            "```python\n" + self.bad.strip() + "\n```",
            "Use instead:",
            "```python\n" + self.good.strip() + "\n```",
            "## Fix",
            fix,
        ]
        if refs:
            parts += ["## References", refs]
        return "\n\n".join(parts) + "\n"


@functools.lru_cache(maxsize=None)
def rule_docs() -> dict[str, RuleDoc]:
    """All rule documents, keyed by code, in code order."""
    docs: dict[str, RuleDoc] = {}
    for path in sorted(rules_dir().glob("RPL*.toml")):
        data = _read(path)
        try:
            doc = RuleDoc(
                code=data["code"],
                name=data["name"],
                summary=data["summary"],
                why=data["why"],
                bad=data["example"]["bad"],
                good=data["example"]["good"],
                fix=data["fix"]["safety"],
                fix_description=data["fix"].get("description", ""),
                references=tuple(data.get("references", ())),
                extra={k: v for k, v in data.items() if k not in {"code", "name", "summary", "why", "example", "fix", "references"}},
            )
        except KeyError as exc:
            raise CatalogError(f"{path}: missing key {exc}") from exc
        if path.stem != doc.code:
            raise CatalogError(f"{path}: file name does not match code {doc.code}")
        docs[doc.code] = doc
    return dict(sorted(docs.items()))
