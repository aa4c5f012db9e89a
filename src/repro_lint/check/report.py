"""What a check gives back: the findings, the error lines, the files' lines and facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from repro_lint.core.findings import Finding
from repro_lint.facts.model import ModuleInfo


@dataclass
class Report:
    root: Path
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # one line each; they make the exit code 2
    warnings: list[str] = field(default_factory=list)  # one line each (an ignore pattern skipped)
    leftovers: list[str] = field(default_factory=list)  # temporary files of an interrupted --fix seen
    files_checked: int = 0
    sources: dict[str, list[str]] = field(default_factory=dict)  # path -> lines, for display
    infos: dict[str, ModuleInfo] = field(default_factory=dict, repr=False)
    # every project file's facts by resolved path (not kept when the result came from the cache)
    facts: dict[str, ModuleInfo] = field(default_factory=dict, repr=False)
    redone: set = field(default_factory=set, repr=False)  # keys of `facts` extracted again in full
