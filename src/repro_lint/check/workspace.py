"""A project held in memory: every file's facts, unsaved buffers over them, and a project
index kept up to date, so that the files an editor has open can be checked again after
each edit with the whole-program view, in a fraction of a full check's time.

The files' facts are read once (from the on-disk cache where it has them; this module only
reads it); after that a changed file or buffer is extracted alone and put into the live
index (`index.live.LiveIndex`), which forgets only what depends on it. A file added or
removed, a file on disk that stops or starts parsing, or a changed Hydra config rebuilds the
index from the facts in memory.

While a buffer does not parse it reports RPL001 and the index keeps its last facts that
did: other files are checked against what the module was before the edit began, rather
than losing every finding that goes through it while it is being typed.

Which files belong to the project is decided as `repro-lint check .` decides it: a buffer
for a file that discovery does not find (excluded, ignored, outside the root, not saved
yet) gets no findings; a new file joins when it is saved.
"""

from __future__ import annotations

import gc
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from repro_lint.facts import batch
from repro_lint.discover.config import Config
from repro_lint.check.api import check_facts, check_index, extract_source, project_facts
from repro_lint.check.files import collect_files, read_source
from repro_lint.check.parallel import error_findings
from repro_lint.check.report import Report
from repro_lint.check.select import select
from repro_lint.facts.hooks import registry
from repro_lint.core.findings import Finding
from repro_lint.index.live import LiveIndex, RebuildNeeded
from repro_lint.facts.matchers import get_matchers
from repro_lint.facts.model import ModuleInfo
from repro_lint.discover.project import Discovery, FolderResolver


@dataclass
class FileResult:
    """What a check found in one file: selected findings, and error lines (one each)."""

    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class ProjectState:
    """One project (a root and its configuration), held in memory. Not thread-safe: one
    thread uses it."""

    def __init__(self, root: Path, cfg: Config, jobs: int = 1, use_cache: bool = True) -> None:
        self.root = root.resolve()
        self.cfg = cfg
        self.jobs = jobs
        self.use_cache = use_cache
        self.facts: dict[str, ModuleInfo] = {}  # resolved path -> facts (of the buffer where one is open)
        self.buffers: dict[str, bytes] = {}  # resolved path -> content not on disk
        self.index: Optional[LiveIndex] = None
        self.loaded = False
        # the facts the index holds for files whose buffer does not parse now
        self._good: dict[str, ModuleInfo] = {}
        self._files_changed = False  # files were added or removed: discover again
        self._rebuild = True
        self._resolve = FolderResolver()

    def key(self, path: Path) -> str:
        return self._resolve(str(path.absolute()))

    # -- loading -------------------------------------------------------------------------------
    def load(self) -> None:
        """Read every project file's facts (the slow part, done once) and build the index."""
        infos = project_facts([self.root], self.cfg, self.root, jobs=self.jobs, use_cache=self.use_cache)
        for k, data in self.buffers.items():
            if k in infos:
                infos[k] = extract_source(Path(k), data, self.cfg, self.root)
        self.facts = infos
        self.loaded = True
        self._files_changed = False
        self._rebuild = True
        self._ensure_index()

    def _rediscover(self) -> None:
        """Files were added or removed: find the project's files again, keeping the facts of
        those whose content did not change."""
        project, _ = collect_files([], self.cfg, self.root)
        found = {self.key(p): p for p in project}
        for k in [k for k in self.facts if k not in found]:
            del self.facts[k]
        for k, p in found.items():
            data = self.buffers.get(k)
            if data is None:
                try:  # as `check` reads it: not a FIFO, nor a link to a file outside the project
                    data = read_source(p, k, self.root)
                except OSError:
                    self.facts.pop(k, None)
                    continue
            old = self.facts.get(k)
            if old is None or old.digest != _digest(data):
                self.facts[k] = extract_source(p, data, self.cfg, self.root)
        self._extract_light_again()
        self._files_changed = False
        self._rebuild = True

    def _extract_light_again(self) -> bool:
        """Files whose facts were extracted with light hooks (`batch.walked_light`) that
        the project's files now need in full (a DataLoader subclass was just written):
        extracted again, in full; whether any was."""
        redo = batch.walked_light(self.facts)
        for k in redo:
            data = self.buffers.get(k)
            try:
                data = data if data is not None else read_source(Path(k), k, self.root)
            except OSError:
                continue
            self.facts[k] = extract_source(Path(k), data, self.cfg, self.root)
        return bool(redo)

    def _ensure_index(self) -> LiveIndex:
        if not self.loaded:
            self.load()
        if self._files_changed:
            self._rediscover()
        if self._rebuild or self.index is None:
            indexed = {}
            for k, info in self.facts.items():
                keep = self._good.get(k) if info.error is not None and k in self.buffers else None
                indexed[k] = keep or info
            self.index = LiveIndex(indexed.values(), get_matchers(*self.cfg.matcher_key()), self.root)
            self._good = {k: info for k, info in indexed.items() if info.error is None}
            self._rebuild = False
            # what every later check asks for, worked out now rather than after the first edit
            self.index.seeding_names()
            self.index.entries_reaching(())
            # the facts and the index live as long as the project: the cycle collector need not
            # scan them again each time it runs (a full scan took hundreds of ms on 5,000 files)
            gc.collect()
            gc.freeze()
        return self.index

    # -- changes -----------------------------------------------------------------------------------
    def set_buffer(self, path: Path, data: Optional[bytes]) -> None:
        """The content of an open buffer; `None` when it was closed (the file's content on
        disk counts again)."""
        k = self.key(path)
        if data is None:
            self.buffers.pop(k, None)
            if k in self.facts:
                self._read_disk(k)
            return
        self.buffers[k] = data
        if k in self.facts:
            self._update(k, data)

    def file_changed(self, path: Path) -> None:
        """A file changed on disk (an open buffer wins over it)."""
        k = self.key(path)
        if k in self.facts and k not in self.buffers:
            self._read_disk(k)

    def file_created_or_deleted(self, path: Path) -> None:
        """A file was created or deleted: the project's files are found again before the
        next check, if discovery would find this one."""
        k = self.key(path)
        if k in self.facts or Discovery(self.root, list(self.cfg.exclude) + list(self.cfg.extend_exclude)).finds(Path(k)):
            self._files_changed = True

    def index_inputs_changed(self) -> None:
        """A file the index reads besides the sources (a Hydra config) changed."""
        self._rebuild = True

    def _read_disk(self, k: str) -> None:
        try:
            data = read_source(Path(k), k, self.root)
        except OSError:
            self._files_changed = True
            return
        self._update(k, data)

    def _update(self, k: str, data: bytes) -> None:
        if not self.loaded:
            return  # loading reads it
        old = self.facts.get(k)
        if old is not None and old.digest == _digest(data):
            return
        info = extract_source(Path(k), data, self.cfg, self.root)
        self.facts[k] = info
        # what files walked light need can change only with what a gate reads of this file
        # (a loader class made, exported, subclassed): asked again only then
        if any(g.inputs(old) != g.inputs(info) for g in registry().gates) if old is not None else True:
            if self._extract_light_again():
                self._rebuild = True
        if self._rebuild or self._files_changed or self.index is None:
            return
        if info.error is not None:
            if k not in self.buffers:
                self._rebuild = True  # a file on disk that does not parse is left out of the index
            return  # a buffer: the index keeps its last facts that parsed
        previous = self._good.get(k)
        indexed = self.index.modules.get(info.module)
        if indexed is not None and indexed.path != info.path:
            return  # another file of the same module name is the one the index holds
        if previous is None or indexed is not previous:
            self._rebuild = True  # the file was not in the index (it did not parse)
            return
        try:
            self.index.replace(info)
        except RebuildNeeded:
            self._rebuild = True
            return
        self._good[k] = info

    # -- checking ----------------------------------------------------------------------------------
    def check(self, paths: Iterable[Path]) -> dict[str, FileResult]:
        """Check the files `paths` (their buffers where open) against the whole project:
        resolved path -> result. A file that is not the project's gets an empty result."""
        index = self._ensure_index()
        out: dict[str, FileResult] = {}
        good: list[ModuleInfo] = []
        for p in paths:
            k = self.key(p)
            res = out[k] = FileResult()
            info = self.facts.get(k)
            if info is None:
                continue
            if info.error is not None:
                res.findings = error_findings(info, res.errors)
            elif index.modules.get(info.module) is info:
                good.append(info)
        if not good:
            return out
        entries = index.entries_reaching({info.module for info in good})
        found, errors = check_index(index, good, self.cfg, entries)
        selected = select(Report(root=self.root, findings=found, infos={info.path: info for info in good}), self.cfg)
        by_path = {info.path: self.key(Path(info.path)) for info in good}
        for f in selected:
            k = by_path.get(f.location.path)
            if k is not None:
                out[k].findings.append(f)
        for line in errors:
            for path, k in by_path.items():
                if line.startswith(f"{path}: "):
                    out[k].errors.append(line)
        return out

    def programs_reaching(self, path: Path) -> int:
        """How many programs reach the file (what checking it costs, roughly)."""
        info = self.facts.get(self.key(path))
        index = self._ensure_index()
        if info is None or index.modules.get(info.module) is not info:
            return 0
        return len(index.entries_reaching({info.module}))

    def info(self, path: Path) -> Optional[ModuleInfo]:
        return self.facts.get(self.key(path))

    # -- what the fix engine asks ---------------------------------------------------------------
    def report(self) -> Report:
        """The project's facts as a `Report`, as the fix engine reads them."""
        self._ensure_index()
        return Report(root=self.root, facts=dict(self.facts))

    def reaching(self) -> "_Reaching":
        return _Reaching(self._ensure_index())

    def check_edited(self, facts: dict, targets: set, cfg: Config, root: Path, entries: Optional[Iterable[str]] = None):
        """`check.api.check_facts` for the fix engine's re-checks, against the live index: the
        files whose facts differ from the project's are put in for the check and taken out
        again afterwards."""
        index = self._ensure_index()
        swapped: list[tuple[ModuleInfo, ModuleInfo]] = []
        try:
            for k, info in facts.items():
                mine = self.facts.get(k)
                if mine is info:
                    continue
                indexed = index.modules.get(info.module)
                if mine is None or indexed is None or indexed.path != info.path or info.error is not None:
                    return check_facts(facts, targets, cfg, root, entries=entries)  # beyond what the index can take in place
                swapped.append((indexed, info))
            done: list[ModuleInfo] = []
            try:
                for before, after in swapped:
                    index.replace(after)
                    done.append(before)
            except RebuildNeeded:
                swapped = []
                for before in reversed(done):
                    index.replace(before)
                return check_facts(facts, targets, cfg, root, entries=entries)
            return check_index(index, [facts[k] for k in targets if k in facts], cfg, entries)
        finally:
            for before, _ in reversed(swapped):
                index.replace(before)


class _Reaching:
    """`check.api.programs_reaching`'s answer (module -> entry points), asked of the live index."""

    def __init__(self, index: LiveIndex) -> None:
        self.index = index

    def get(self, module: str, default=None) -> set:
        return self.index.entries_reaching({module})


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def inside(root: Path, path: Path) -> bool:
    full = str(path.resolve())
    return full.startswith(str(root).rstrip(os.sep) + os.sep)
