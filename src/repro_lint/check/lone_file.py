"""One document checked by itself: a `ProjectState` whose only file is an editor's buffer.

The language server checks this way a document outside every workspace folder (or a link in
one to a file outside): its text is what the editor sent, and nothing else is read, neither
the files beside it nor the file on disk (a folder such as `/` or a home folder is no project
to read; a link's target is not the workspace's).
"""

from __future__ import annotations

from pathlib import Path

from repro_lint.check.api import extract_source
from repro_lint.check.workspace import ProjectState
from repro_lint.discover.config import Config


class LoneFile(ProjectState):
    def __init__(self, path: Path, cfg: Config) -> None:
        # its root is the file itself: nothing else is inside it, so the index reads nothing
        # beside it (Hydra configs, torch requirements are looked for inside the root)
        super().__init__(Path(path).absolute(), cfg, jobs=1, use_cache=False)
        self.only = self.key(path)

    def load(self) -> None:
        data = self.buffers.get(self.only)
        self.facts = {self.only: extract_source(Path(self.only), data, self.cfg, self.root)} if data is not None else {}
        self.loaded = True
        self._files_changed = False
        self._rebuild = True
        self._ensure_index()

    def _rediscover(self) -> None:
        self._files_changed = False
        self._rebuild = True

    def set_buffer(self, path: Path, data) -> None:
        if self.key(path) != self.only:
            return
        if data is None:  # closed: the file on disk is not read
            self.buffers.pop(self.only, None)
            self.facts.pop(self.only, None)
            self._rebuild = True
            return
        self.buffers[self.only] = data
        if not self.loaded:
            return
        if self.only not in self.facts:
            self.load()
            return
        self._update(self.only, data)

    def file_changed(self, path: Path) -> None:
        """(the buffer is all there is)"""

    def file_created_or_deleted(self, path: Path) -> None:
        """(no other file joins)"""
