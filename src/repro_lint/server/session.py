"""What the language server knows and does, apart from the protocol: the open documents,
one `ProjectState` per project root, checks and the diagnostics they give.

Everything here runs on one thread (`worker.Worker`): the protocol's thread hands it the
documents' texts. A failure while checking is logged and the documents keep the diagnostics
they had.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from lsprotocol import types

from repro_lint import __version__
from repro_lint.core.bounded_read import read_regular
from repro_lint.discover.config import Config, ConfigError, find_config, load_config
from repro_lint.core.findings import Finding, Location
from repro_lint.server import places
from repro_lint.server.documents import Doc, Span, Units, decode_python
from repro_lint.check.lone_file import LoneFile
from repro_lint.check.workspace import ProjectState

SOURCE = "repro-lint"
CONFIG_NAMES = ("pyproject.toml", "repro-lint.toml", ".repro-lint.toml")
# files whose change makes the index read its inputs again (Hydra configs)
INDEX_INPUTS = (".yaml", ".yml")


@dataclass
class Options:
    """Settings the client gives in `initializationOptions` (see README, "Editors")."""

    debounce: float = 0.05  # seconds of quiet after an edit before checking
    unsafe_fixes: bool = True  # offer unsafe fixes (marked as such), never in "fix all"
    rule_doc_url: Optional[str] = None  # a template with `{code}`; default: the rule's TOML file
    jobs: int = 1  # processes that read the project's files the first time

    @classmethod
    def from_client(cls, raw: object) -> "Options":
        out = cls()
        if not isinstance(raw, dict):
            return out
        if isinstance(raw.get("debounce"), (int, float)) and not isinstance(raw.get("debounce"), bool):
            out.debounce = max(0.0, float(raw["debounce"]) / 1000.0)
        if isinstance(raw.get("unsafeFixes"), bool):
            out.unsafe_fixes = raw["unsafeFixes"]
        if isinstance(raw.get("ruleDocUrl"), str) and "{code}" in raw["ruleDocUrl"]:
            out.rule_doc_url = raw["ruleDocUrl"]
        if isinstance(raw.get("jobs"), int) and not isinstance(raw.get("jobs"), bool) and raw["jobs"] > 0:
            out.jobs = raw["jobs"]
        return out

    def doc_url(self, code: str) -> Optional[str]:
        """The rule's document: the client's template, else on the web at the installed
        commit when known, else the document the installed package carries (a file URI)."""
        if self.rule_doc_url:
            return self.rule_doc_url.replace("{code}", code)
        from repro_lint.core.doc_links import rule_doc_link

        return rule_doc_link(code)


@dataclass
class Published:
    """The last check of a document: its findings and the version they are for."""

    version: Optional[int]
    findings: list = field(default_factory=list)


class Session:
    def __init__(
        self,
        publish: Callable[[str, Optional[int], list], None],
        log: Callable[[str, types.MessageType], None],
        show: Callable[[str, types.MessageType], None],
        options: Options,
        units: Units,
        workspace: Iterable[Path] = (),
    ) -> None:
        self.folders = places.folders(workspace)  # the workspace folders the client opened
        self.lone: set[Path] = set()  # the keys (paths as opened) of documents checked alone
        self.publish_fn = publish
        self.log = log
        self.show = show
        self.options = options
        self.units = units
        self.docs: dict[str, Doc] = {}
        self.states: dict[Path, ProjectState] = {}
        self.root_of: dict[str, Path] = {}  # document uri -> its project's root
        self.dirty: dict[Path, float] = {}  # project root -> when its open documents are due a check
        self.unsynced: set[str] = set()  # documents whose text the project has not taken yet
        self.published: dict[str, Published] = {}

    # -- documents -------------------------------------------------------------------------------
    def set_workspace(self, paths: Iterable[Path]) -> None:
        """The workspace folders changed (documents open already keep their projects)."""
        self.folders = places.folders(paths)

    def editable(self, doc: Doc) -> bool:
        """Whether code actions may edit the document: it is checked with its project, and
        its file (links followed) is in the workspace."""
        return self.root_of.get(doc.uri) not in self.lone and places.contains(self.folders, doc.path)

    def opened(self, doc: Doc) -> None:
        self.docs[doc.uri] = doc
        root = places.project_root(self.folders, doc.path)
        if root is None:  # outside the workspace: checked alone (`places`)
            root = Path(os.path.normpath(doc.path.absolute()))
            self.lone.add(root)
        self.root_of[doc.uri] = root
        self.unsynced.add(doc.uri)
        self.dirty[root] = 0.0

    def changed(self, doc: Doc) -> None:
        if doc.uri not in self.docs:
            self.opened(doc)
            return
        self.docs[doc.uri] = doc
        self.unsynced.add(doc.uri)
        root = self.root_of[doc.uri]
        self.dirty[root] = time.monotonic() + self.options.debounce

    def saved(self, uri: str) -> None:
        doc = self.docs.get(uri)
        if doc is None:
            return
        state = self.states.get(self.root_of[uri])
        if state is not None and state.info(doc.path) is None:
            state.file_created_or_deleted(doc.path)  # a new file joins when it is saved
        self.dirty[self.root_of[uri]] = 0.0

    def closed(self, uri: str) -> None:
        doc = self.docs.pop(uri, None)
        self.unsynced.discard(uri)
        if doc is None:
            return
        root = self.root_of.pop(uri)
        state = self.states.get(root)
        if state is not None:
            state.set_buffer(doc.path, None)
            self.dirty[root] = 0.0
        for u in doc.uris:
            self.publish_fn(u, None, [])
        self.published.pop(uri, None)
        if root in self.lone and root not in self.root_of.values():
            self.lone.discard(root)
            self.states.pop(root, None)
            self.dirty.pop(root, None)

    def watched(self, changes: list) -> None:
        """`workspace/didChangeWatchedFiles`: (path, created / changed / deleted) pairs."""
        for path, kind in changes:
            for root, state in list(self.states.items()):
                if not _inside(root, path):
                    continue
                if path.name in CONFIG_NAMES and path.parent == root or path.name == ".gitignore":
                    if path.name == ".gitignore":
                        state.files_added_or_removed()
                    else:
                        del self.states[root]  # settings changed: the project is read again
                elif path.name.endswith(INDEX_INPUTS):
                    state.index_inputs_changed()
                elif kind == "changed":
                    state.file_changed(path)
                else:
                    state.file_created_or_deleted(path)
                self.dirty[root] = 0.0

    # -- projects --------------------------------------------------------------------------------
    def state(self, root: Path) -> ProjectState:
        state = self.states.get(root)
        if state is None:
            if root in self.lone:  # (no configuration is read for it either)
                state = self.states[root] = LoneFile(root, Config())
            else:
                state = self.states[root] = ProjectState(root, self._config(root), jobs=self.options.jobs)
            started = time.monotonic()
            for uri, doc in self.docs.items():
                if self.root_of.get(uri) == root:
                    state.buffers[state.key(doc.path)] = doc.data()
                    self.unsynced.discard(uri)
            state.load()
            self.log(f"{SOURCE} {__version__}: {root}: {len(state.facts)} files read in {time.monotonic() - started:.1f} s", types.MessageType.Info)
        return state

    def _config(self, root: Path) -> Config:
        from repro_lint.check.select import known_codes
        from repro_lint.facts.matchers import get_matchers

        try:
            return load_config(find_config(root), known_codes(), get_matchers().sources)
        except ConfigError as exc:
            self.show(f"{SOURCE}: {exc} (checking with the default settings)", types.MessageType.Error)
            return Config()

    def sync(self, uris: Optional[set] = None) -> None:
        """Give the projects the texts of the documents that changed."""
        for uri in list(self.unsynced if uris is None else self.unsynced & uris):
            doc = self.docs.get(uri)
            self.unsynced.discard(uri)
            if doc is None:
                continue
            root = self.root_of[uri]
            if root in self.states:
                self.states[root].set_buffer(doc.path, doc.data())

    # -- checks ---------------------------------------------------------------------------------
    def due(self) -> Optional[float]:
        """When the next check is due (monotonic time), or None."""
        return min(self.dirty.values()) if self.dirty else None

    def check_due(self) -> None:
        now = time.monotonic()
        for root in [r for r, at in self.dirty.items() if at <= now]:
            del self.dirty[root]
            try:
                self.check_project(root)
            except Exception as exc:  # the documents keep their last diagnostics
                self.log(f"{SOURCE}: checking {root} failed: {type(exc).__name__}: {exc}\n{traceback.format_exc()}", types.MessageType.Error)

    def check_project(self, root: Path) -> None:
        docs = [d for u, d in self.docs.items() if self.root_of.get(u) == root]
        if not docs:
            return
        state = self.state(root)
        self.sync({d.uri for d in docs})
        # one document at a time, those that fewer programs reach first: a file that most of
        # the project's programs reach takes seconds to check, and the others need not wait
        for doc in sorted(docs, key=lambda d: state.programs_reaching(d.path)):
            res = state.check([doc.path]).get(state.key(doc.path))
            if res is None:
                continue
            for line in res.errors:
                self.log(f"{SOURCE}: {line}", types.MessageType.Error)
            self.publish(doc, res.findings)

    def publish(self, doc: Doc, findings: list) -> None:
        self.published[doc.uri] = Published(doc.version, list(findings))
        per_uri: dict[str, list] = {u: [] for u in doc.uris}
        nb = doc.read_notebook() if doc.is_notebook else None
        for f in findings:
            span = doc.span(f.location.line, f.location.col, f.location.end_line, f.location.end_col, self.units, nb)
            per_uri.setdefault(span.uri, []).append(self.diagnostic(f, span, doc, nb))
        for uri, diags in per_uri.items():
            self.publish_fn(uri, doc.version, diags)

    def diagnostic(self, f: Finding, span: Span, doc: Doc, nb) -> types.Diagnostic:
        message = f.message if not f.help else f"{f.message}\nhelp: {f.help}"
        related = [
            types.DiagnosticRelatedInformation(location=self.location(r.location, doc, nb), message=r.message)
            for r in f.related
        ]
        return types.Diagnostic(
            range=_range(span),
            message=message,
            severity=types.DiagnosticSeverity.Error if f.severity == "error" else types.DiagnosticSeverity.Warning,
            code=f.code,
            code_description=_code_description(self.options.doc_url(f.code)) if f.code != "RPL001" else None,
            source=SOURCE,
            related_information=related or None,
            data={"fix": f.fix.safety if f.fixable else None},
        )

    def location(self, loc: Location, doc: Doc, nb) -> types.Location:
        """A finding's related location, in an open document where it is one."""
        target = self._doc_for(loc.path, doc)
        if target is not None:
            span = target.span(loc.line, loc.col, loc.end_line, loc.end_col, self.units, nb if target is doc else None)
            return types.Location(uri=span.uri, range=_range(span))
        path = _full(loc.path)
        try:
            raw = read_regular(path)
            text = raw.decode("utf-8", errors="replace") if path.name.endswith(".ipynb") else decode_python(raw)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
            text = ""
        span = Doc(path.as_uri(), path, None, text).span(loc.line, loc.col, loc.end_line, loc.end_col, self.units)
        return types.Location(uri=span.uri, range=_range(span))

    def _doc_for(self, shown: str, hint: Doc) -> Optional[Doc]:
        path = _full(shown)
        if hint.path.resolve() == path:
            return hint
        for doc in self.docs.values():
            if doc.path.resolve() == path:
                return doc
        return None


def _range(span: Span) -> types.Range:
    return types.Range(start=types.Position(line=span.start[0], character=span.start[1]), end=types.Position(line=span.end[0], character=span.end[1]))


def _full(shown: str) -> Path:
    return Path(shown).resolve()


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root)
        return True
    except ValueError:
        return False


def _code_description(href: Optional[str]) -> Optional[types.CodeDescription]:
    return types.CodeDescription(href=href) if href else None
