"""What a rule is given (`Context`: the project index, the settings, the programs) and the
words its findings are made of (locations, help sentences, lines as a message names them).

Rules and the analyses their fixes share ask here; the registry that runs rules is
`rules/registry.py`.
"""

from __future__ import annotations

import bisect
import dataclasses
import weakref
from dataclasses import dataclass, field
from typing import Iterable, Optional

from repro_lint.core import catalog
from repro_lint.core.findings import Finding, Fix, Location, Related
from repro_lint.discover.notebook import CELL_STARTS
from repro_lint.discover.notebook import SUFFIX as NOTEBOOK_SUFFIX
from repro_lint.facts.model import Event, ModuleInfo
from repro_lint.index.program import Program
from repro_lint.index.project_index import ProjectIndex

# What rules work out per program, weakly keyed by the program (`program_cache`). Each
# program's rules run one after the other (`check.parallel.rules_here`): once they have run, its
# entries are let go (`let_go_of`), where a large project's 12,000 programs held them all
# to the end of the check (60 MB on a 38,000-file tree).
_PROGRAM_CACHES: "list[weakref.WeakKeyDictionary]" = []


def program_cache() -> "weakref.WeakKeyDictionary":
    """A new table of what rules work out per program, let go of by `let_go_of`."""
    table: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    _PROGRAM_CACHES.append(table)
    return table


def program_caches() -> list:
    """Every table `program_cache` made (what rules keep per program, while they run)."""
    return list(_PROGRAM_CACHES)


def let_go_of(program: Program) -> None:
    """Forget what rules worked out for `program` alone (asked again, it is worked out again)."""
    for table in _PROGRAM_CACHES:
        table.pop(program, None)
    program.let_go()


@dataclass
class Context:
    index: ProjectIndex
    settings: dict  # the effective configuration (seed, warn-only, target-torch-version, ...)
    _programs: Optional[list[Program]] = field(default=None, repr=False)
    # how many modules the rules check (all, or a few named files of a large project):
    # project-wide shortcuts pay only when a good part of the project is checked
    checked: int = field(default=0, repr=False)
    # a context `changed` made: the one it was made from, and its copies of programs by the
    # id of the program each stands for
    original: Optional["Context"] = field(default=None, repr=False)
    copies: dict = field(default_factory=dict, repr=False)

    def changed(self, copies: dict) -> "Context":
        """This context with the programs `copies` maps (by id) in place of its own: what the
        rules see once fixes change those programs (`check.across`). Which programs reach each
        scope is read from this one, through the copies (`placement.programs_reaching`)."""
        programs = [copies.get(id(p), p) for p in self.programs]
        return Context(self.index, self.settings, programs, checked=self.checked, original=self, copies=copies)

    def release(self) -> None:
        """Let go of what rules worked out and keep here (some of it refers back to this
        context: a check runs without the cycle collector, and it would outlive the check)."""
        fields = {f.name for f in dataclasses.fields(self)}
        for key in [k for k in self.__dict__ if k not in fields]:
            del self.__dict__[key]

    @property
    def programs(self) -> list[Program]:
        if self._programs is None:
            self._programs = [self.index.program(e) for e in self.index.entry_points()]
        return self._programs

    def program_of(self, info: ModuleInfo) -> Optional[Program]:
        """The program whose entry point is `info`, if it is one."""
        by_entry = self.__dict__.get("_by_entry")
        if by_entry is None:  # built once: rules ask for every loader call and generator
            by_entry = self.__dict__["_by_entry"] = {}
            for program in self.programs:
                by_entry.setdefault(id(program.entry), program)
        return by_entry.get(id(info))

    def finding(
        self,
        code: str,
        info: ModuleInfo,
        at: Event | tuple,
        message: str,
        related: Iterable[Related] = (),
        fix: Optional[Fix] = None,
        help: Optional[str] = None,
    ) -> Finding:
        """A finding of rule `code`. `message` says what is wrong, in one short line; `help`
        what to do about it (default: the rule document's `help`)."""
        doc = catalog.rule_docs()[code]
        help = help or doc.help or None
        if help is not None:
            # the same text is made again for most findings of a rule: one copy is kept
            helps = self.__dict__.setdefault("_helps", {})
            help = helps.setdefault(help, help)
        return Finding(
            code=code,
            name=doc.name,
            message=message,
            location=location(info, at),
            related=list(related),
            fix=fix,
            help=help,
        )


def unfixed(why: str) -> str:
    """The help sentence of a finding whose fix is not offered, and why."""
    return f"Not fixed automatically: {why}." if why else ""


def sentences(*parts: str) -> str:
    """Help text made of parts (empty ones left out), each a sentence."""
    out = []
    for part in parts:
        part = part.strip()
        if part:
            # a closing parenthesis ends a sentence only after its own full stop (`(see X.)`)
            done = part.endswith((".", "?", "!")) or part.endswith(")") and part[:-1].endswith((".", "?", "!"))
            out.append(part[0].upper() + part[1:] + ("" if done else "."))
    return " ".join(out)


def line_words(info: ModuleInfo, line: int) -> str:
    """A line of the module as a message names it: `line 12`, or in a notebook `cell 3, line 2`
    (the module text of its code cells is not what the user sees)."""
    starts = info.extra.get(CELL_STARTS) if info.path.endswith(NOTEBOOK_SUFFIX) else None
    if starts:
        i = bisect.bisect_right(starts, (line, float("inf"))) - 1
        if i >= 0:
            first, cell = starts[i]
            return f"line {line - first + 1} of cell {cell}"
    return f"line {line}"


def location(info: ModuleInfo, at: Event | tuple) -> Location:
    """Location of an event or of a (line, col, end_line, end_col) span (0-based col)."""
    if isinstance(at, Event):
        return Location(info.path, at.line, at.col + 1, at.end_line, at.end_col + 1)
    line, col, end_line, end_col = at[:4]
    return Location(info.path, line, col + 1, end_line, end_col + 1)
