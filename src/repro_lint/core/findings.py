"""What a check produces: findings, their locations, and the fixes they carry."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Optional

# Findings and their locations without a `__dict__` each where the language allows
# (Python 3.10+): a large project has tens of thousands, and the two dicts took about
# 600 of the 1,500 bytes of each.
_SLOTS = {"slots": True} if sys.version_info >= (3, 10) else {}


@dataclass(frozen=True, **_SLOTS)
class Location:
    """A source range. Lines are 1-based, columns 1-based in characters (not bytes)."""

    path: str
    line: int
    col: int
    end_line: int
    end_col: int

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.col)


@dataclass(frozen=True, **_SLOTS)
class Related:
    location: Location
    message: str


@dataclass(frozen=True, **_SLOTS)
class FollowOn:
    """A fix that `--fix` also makes once another fix is applied: a seeding call gives the
    program determinism intent, and its determinism flags are then fixed too; a switch a fix
    turns on asks for the cuBLAS workspace; a program seeded lets a shared module's loader
    follow its seed. `path` and `line` are where the follow-on's finding is reported."""

    code: str
    name: str
    safety: str
    description: str
    path: str
    line: int


@dataclass(frozen=True, **_SLOTS)
class Fix:
    """A fix described as data: edit operations (see `repro_lint.core.edits`) and its safety."""

    description: str
    safety: str  # "safe" or "unsafe"
    edits: tuple = ()
    # the RNG sources the fix seeds: a program it seeds shows determinism intent afterwards
    seeds: tuple = ()
    # what --fix also fixes in the program once this fix is applied (`FollowOn`)
    follow_ons: tuple = ()
    # the determinism switches the fix turns on: (path, line, col, kind) of the event of each
    # call it changes (`set_seed(seed)` given `deterministic=True`, a literal False made True);
    # the program has deterministic algorithms on there afterwards (`check.cascade`)
    switches_on: tuple = ()


@dataclass(**_SLOTS)
class Finding:
    code: str
    name: str
    message: str
    location: Location
    related: list[Related] = field(default_factory=list)
    fix: Optional[Fix] = None
    # "warning" (every output says the same: JSON, SARIF levels, GitHub and Azure
    # annotations, editors); "error" only for a file Python cannot parse (RPL001)
    severity: str = "warning"
    # What to do about it, shown as a `help:` line after the (short) message; rules give it
    # per finding or take their document's default `help` (see `rules.Context.finding`).
    help: Optional[str] = None

    @property
    def fixable(self) -> bool:
        return self.fix is not None and bool(self.fix.edits)

    def sort_key(self) -> tuple:
        return (*self.location.sort_key(), self.code)

    def to_dict(self) -> dict:
        """The documented JSON form (see README, "JSON output")."""
        loc = self.location
        return {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "help": self.help,
            "severity": self.severity,
            "path": loc.path,
            "start": {"line": loc.line, "column": loc.col},
            "end": {"line": loc.end_line, "column": loc.end_col},
            "fix": None
            if self.fix is None
            else {
                "available": self.fixable,
                "safety": self.fix.safety,
                "description": self.fix.description,
                "follow_ons": [
                    {"code": o.code, "safety": o.safety, "description": o.description, "path": o.path, "line": o.line}
                    for o in self.fix.follow_ons
                ],
            },
            "related": [
                {
                    "path": r.location.path,
                    "start": {"line": r.location.line, "column": r.location.col},
                    "end": {"line": r.location.end_line, "column": r.location.end_col},
                    "message": r.message,
                }
                for r in self.related
            ],
        }
