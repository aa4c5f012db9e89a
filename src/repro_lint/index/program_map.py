"""Which programs reach which modules, kept between runs (`.repro_lint_cache/programs-*`).

A check of a few named files (what pre-commit runs after an edit) reports only findings
located in them, and those come from the module rules on them and from the programs that
reach them. Building every program of a large project to find those few costs as much as
checking it all, so the last run's answer is kept: each entry point with the modules its
program reaches, for the files' contents it was worked out on.

It stays right for new contents as long as no file was added or removed and every changed
file keeps its *outline* (below): then how names resolve in other modules is unchanged, and
a program that reached no changed module walks exactly the same scopes as before (the walk
reaches a changed scope first, if at all, by the same unchanged path). So the programs to
build are those that reached a target or a changed module, and the entry points whose
status can change: the changed modules themselves and modules whose status took a walk
that went through a changed module. Anything else (a file added, removed or renamed, an
outline edit, a Hydra config changed) builds every program, as a check without the map.
"""

from __future__ import annotations

import hashlib
from typing import Iterable, Optional

from repro_lint.facts.families.frameworks import FACTORY
from repro_lint.index.project_index import ProjectIndex
from repro_lint.index.program import Program
from repro_lint.facts.model import MAIN_SCOPE, REGISTRIES, RETURNS, STAR_IMPORTS, ModuleInfo


def outline_digest(info: ModuleInfo) -> str:
    """A digest of what other modules' analysis and the module's own entry-point status
    read of it, besides its scopes' calls and events: names it defines, re-exports and
    imports, and how it runs."""
    fns = info.functions
    outline = (
        info.module,
        info.is_package,
        info.is_test,
        info.never_entry,
        info.error is None,
        info.main_block is not None,
        bool(info.module_work),
        tuple(info.hydra_mains),
        tuple((q, fn.name, fn.hydra_config_path) for q, fn in fns.items()),
        tuple((q, c.name, tuple(c.bases), tuple(c.methods)) for q, c in info.classes.items()),
        tuple(sorted(info.exports.items())),
        tuple(sorted({imp[0] for imp in info.imports})),
        tuple(info.summary(STAR_IMPORTS)),
        tuple(sorted(info.summary(REGISTRIES).items())),
        tuple(sorted((k, tuple(v)) for k, v in info.summary(RETURNS).items())),
        bool(info.summary(FACTORY)),
    )
    return hashlib.blake2b(repr(outline).encode(), digest_size=12).hexdigest()


def _walked_for_status(index: ProjectIndex, info: ModuleInfo) -> bool:
    """Whether `is_entry_point` walks the module's main block to decide (an imported module
    with a main block is an entry point only when its main trains)."""
    return (
        info.main_block is not None
        and not info.is_test
        and not info.never_entry
        and not info.hydra_mains
        and bool(index.importers.get(info.module) or info.module in index._config_loaded())
    )


class ProgramMap:
    """The stored answer: per file (resolved path) its content and outline digests; the
    entry points in project order with the modules each program reaches; the modules each
    walked entry-point decision went through; and the digest of the non-Python inputs."""

    def __init__(self, files: dict[str, tuple[str, str]], entries: dict[str, frozenset], reads: dict[str, frozenset], side: str) -> None:
        self.files = files
        self.entries = entries
        self.reads = reads
        self.side = side

    # -- plain data for the cache (module names numbered once) ------------------------------
    def to_plain(self) -> tuple:
        names: dict[str, int] = {}

        def num(mods: Iterable[str]) -> tuple[int, ...]:
            return tuple(names.setdefault(m, len(names)) for m in mods)

        entries = [(names.setdefault(e, len(names)), num(sorted(mods))) for e, mods in self.entries.items()]
        reads = [(names.setdefault(m, len(names)), num(sorted(mods))) for m, mods in self.reads.items()]
        return (self.files, tuple(names), entries, reads, self.side)

    @classmethod
    def from_plain(cls, value: object) -> Optional["ProgramMap"]:
        try:
            files, names, entries, reads, side = value  # type: ignore[misc]
            if type(files) is not dict or type(side) is not str:
                return None
            for k, v in files.items():
                if type(k) is not str or type(v) is not tuple or len(v) != 2 or not all(type(x) is str for x in v):
                    return None
            names = list(names)

            def mods(nums: tuple) -> frozenset:
                return frozenset(names[i] for i in nums)

            return cls(
                files,
                {names[e]: mods(ms) for e, ms in entries},
                {names[m]: mods(ms) for m, ms in reads},
                side,
            )
        except (TypeError, ValueError, IndexError):
            return None


def side_digest(side_inputs: list) -> str:
    return hashlib.blake2b(repr(side_inputs).encode(), digest_size=12).hexdigest()


def build_map(index: ProjectIndex, programs: list[Program], infos: dict[str, ModuleInfo], side: str) -> ProgramMap:
    """The map of a run that built every program (`programs`, in project order)."""
    entries = {p.entry.module: frozenset(m for m, _ in p.scopes) for p in programs}
    reads = {}
    for info in index.modules.values():
        if _walked_for_status(index, info):
            reads[info.module] = frozenset(m for m, _ in index.reach([(info.module, MAIN_SCOPE)], include_imports=False))
    files = {k: (info.digest, outline_digest(info)) for k, info in infos.items()}
    return ProgramMap(files, entries, reads, side)


def changed_modules(old: ProgramMap, infos: dict[str, ModuleInfo], side: str) -> Optional[set[str]]:
    """The modules whose files changed since the map was made, or None when the map cannot
    answer for these files (a file added or removed, an outline changed, other inputs
    changed)."""
    if old.side != side or len(old.files) != len(infos):
        return None
    changed: set[str] = set()
    for k, info in infos.items():
        before = old.files.get(k)
        if before is None:
            return None
        if before[0] != info.digest:
            if before[1] != outline_digest(info):
                return None
            changed.add(info.module)
    return changed


def programs_for(index: ProjectIndex, old: ProgramMap, changed: set[str], targets: set[str], infos: dict[str, ModuleInfo]) -> tuple[list[Program], ProgramMap]:
    """The programs whose findings can fall in the modules `targets` (and those reaching a
    changed module, so that the map stays right), in project order, and the map updated
    for the current files."""
    recheck = set(changed)
    for mod, walked in old.reads.items():
        if not walked.isdisjoint(changed):
            recheck.add(mod)
    wanted = changed | targets
    entries: list[str] = []
    build: set[str] = set()
    for name, info in index.modules.items():
        if name in recheck:
            if not index.is_entry_point(info):
                continue
            build.add(name)
        elif name not in old.entries:
            continue
        elif not old.entries[name].isdisjoint(wanted):
            build.add(name)
        entries.append(name)
    programs = [index.program(index.modules[e]) for e in entries if e in build]
    new_entries = {e: old.entries[e] for e in entries if e not in build}
    for p in programs:
        new_entries[p.entry.module] = frozenset(m for m, _ in p.scopes)
    new_entries = {e: new_entries[e] for e in entries}  # project order
    reads = {m: r for m, r in old.reads.items() if m not in recheck}
    for mod in recheck:
        info = index.modules.get(mod)
        if info is not None and _walked_for_status(index, info):
            reads[mod] = frozenset(m for m, _ in index.reach([(mod, MAIN_SCOPE)], include_imports=False))
    files = dict(old.files)
    for k, info in infos.items():
        if info.module in changed and files[k][0] != info.digest:
            files[k] = (info.digest, files[k][1])
    return programs, ProgramMap(files, new_entries, reads, old.side)
