"""The Language Server Protocol side of `repro-lint server` (pygls): it keeps the
documents' texts as the client sends them and hands them to the worker thread, which
checks and answers. No handler here does more than copy what the client sent."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Optional

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from repro_lint import __version__
from repro_lint.server.actions import FIX_ALL, ActionError, code_actions, resolve
from repro_lint.server.documents import Cell, Doc
from repro_lint.server.session import CONFIG_NAMES, SOURCE, Options, Session
from repro_lint.server.stdio import BoundedInput, MessageRefused
from repro_lint.server.worker import Worker

# the files whose changes the server asks the client to report
# (sources, Hydra configs, what discovery and settings read, and the torch requirement RPL404 reads)
WATCHED = (
    "**/*.py", "**/*.pyi", "**/*.ipynb", "**/*.yaml", "**/*.yml", "**/.gitignore", *(f"**/{n}" for n in CONFIG_NAMES),
    "**/requirements*.txt", "**/requirements/*.txt", "**/setup.cfg",
)
_SUFFIXES = (".py", ".pyi", ".ipynb")


class ReproLintServer(LanguageServer):
    worker: Optional[Worker] = None
    session: Optional[Session] = None

    def report_server_error(self, error: Exception, source) -> None:
        # logged, not shown: a failure in one notification must not interrupt the user
        try:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=f"{SOURCE}: internal error: {error}"))
        except Exception:
            pass


def _path(uri: str) -> Optional[Path]:
    if not uri.startswith("file:"):
        return None
    fs = to_fs_path(uri)
    return Path(fs) if fs else None


def build() -> ReproLintServer:
    server = ReproLintServer(
        SOURCE,
        __version__,
        text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        notebook_document_sync=types.NotebookDocumentSyncOptions(
            notebook_selector=[
                types.NotebookDocumentFilterWithCells(notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")])
            ],
            save=True,
        ),
    )

    def post(fn) -> None:
        if server.worker is not None:
            server.worker.post(fn)

    @server.feature(types.INITIALIZE)
    def initialize(ls: ReproLintServer, params: types.InitializeParams) -> None:
        loop = asyncio.get_running_loop()
        options = Options.from_client(params.initialization_options)

        def publish(uri: str, version, diagnostics: list) -> None:
            loop.call_soon_threadsafe(
                ls.text_document_publish_diagnostics,
                types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics),
            )

        def log(message: str, kind: types.MessageType) -> None:
            loop.call_soon_threadsafe(ls.window_log_message, types.LogMessageParams(type=kind, message=message))

        def show(message: str, kind: types.MessageType) -> None:
            loop.call_soon_threadsafe(ls.window_show_message, types.ShowMessageParams(type=kind, message=message))

        ls.session = Session(publish, log, show, options, ls.workspace.position_codec.client_num_units, _workspace(ls))
        ls.worker = Worker(ls.session)

    @server.feature(types.INITIALIZED)
    def initialized(ls: ReproLintServer, params: types.InitializedParams) -> None:
        caps = ls.client_capabilities.workspace
        watch = caps.did_change_watched_files if caps is not None else None
        if watch is None or not watch.dynamic_registration:
            return
        options = types.DidChangeWatchedFilesRegistrationOptions(watchers=[types.FileSystemWatcher(glob_pattern=g) for g in WATCHED])
        ls.client_register_capability(
            types.RegistrationParams(
                registrations=[types.Registration(id="repro-lint-watch", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options)]
            )
        )

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: ReproLintServer, params) -> None:
        if ls.worker is not None:
            ls.worker.stop()

    # -- text documents --------------------------------------------------------------------------
    def text_doc(ls: ReproLintServer, uri: str) -> Optional[Doc]:
        path = _path(uri)
        if path is None or not path.name.endswith(_SUFFIXES):
            return None
        td = ls.workspace.get_text_document(uri)
        return Doc(uri, path, td.version, td.source)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ReproLintServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = text_doc(ls, params.text_document.uri)
        if doc is not None:
            post(lambda: ls.session.opened(doc))

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ReproLintServer, params: types.DidChangeTextDocumentParams) -> None:
        doc = text_doc(ls, params.text_document.uri)
        if doc is not None:
            post(lambda: ls.session.changed(doc))

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: ReproLintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        post(lambda: ls.session.saved(uri))

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ReproLintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        post(lambda: ls.session.closed(uri))

    # -- notebook documents --------------------------------------------------------------------------
    def notebook_doc(ls: ReproLintServer, uri: str) -> Optional[Doc]:
        path = _path(uri)
        nb = ls.workspace.get_notebook_document(notebook_uri=uri)
        if path is None or nb is None:
            return None
        cells = []
        for cell in nb.cells:
            td = ls.workspace.get_text_document(cell.document)
            cells.append(Cell(cell.document, cell.kind == types.NotebookCellKind.Code, td.source, td.version))
        meta = nb.metadata if isinstance(nb.metadata, dict) else {}
        return Doc(uri, path, nb.version, cells=cells, metadata=meta, notebook_document=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def nb_open(ls: ReproLintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        doc = notebook_doc(ls, params.notebook_document.uri)
        if doc is not None:
            post(lambda: ls.session.opened(doc))

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def nb_change(ls: ReproLintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        doc = notebook_doc(ls, params.notebook_document.uri)
        if doc is not None:
            post(lambda: ls.session.changed(doc))

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def nb_save(ls: ReproLintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        post(lambda: ls.session.saved(uri))

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def nb_close(ls: ReproLintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        post(lambda: ls.session.closed(uri))

    # -- files on disk ---------------------------------------------------------------------------------
    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: ReproLintServer, params: types.DidChangeWatchedFilesParams) -> None:
        kinds = {types.FileChangeType.Created: "created", types.FileChangeType.Changed: "changed", types.FileChangeType.Deleted: "deleted"}
        changes = [(p, kinds.get(c.type, "changed")) for c in params.changes if (p := _path(c.uri)) is not None]
        if changes:
            post(lambda: ls.session.watched(changes))

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def folders_changed(ls: ReproLintServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        paths = _workspace(ls)  # (pygls has applied the change)
        post(lambda: ls.session.set_workspace(paths))

    # -- code actions ------------------------------------------------------------------------------------
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=True),
    )
    async def code_action(ls: ReproLintServer, params: types.CodeActionParams):
        lazy = _resolves_edits(ls)
        changes = _document_changes(ls)
        uri, rng, only = params.text_document.uri, params.range, params.context.only
        return await asyncio.wrap_future(ls.worker.post(lambda: code_actions(ls.session, uri, rng, only, lazy, changes)))

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: ReproLintServer, action: types.CodeAction):
        changes = _document_changes(ls)

        def run():
            try:
                return resolve(ls.session, action, changes)
            except ActionError as exc:
                ls.session.log(f"{SOURCE}: {exc}", types.MessageType.Warning)
                raise

        return await asyncio.wrap_future(ls.worker.post(run))

    return server


def _workspace(ls: LanguageServer) -> list[Path]:
    """The workspace folders the client opened (`workspaceFolders`, else `rootUri`)."""
    ws = ls.workspace
    uris = [f.uri for f in ws.folders.values()] or ([ws.root_uri] if ws.root_uri else [])
    return [p for p in map(_path, uris) if p is not None]


def _resolves_edits(ls: LanguageServer) -> bool:
    text = ls.client_capabilities.text_document
    action = text.code_action if text is not None else None
    support = action.resolve_support if action is not None else None
    return support is not None and "edit" in (support.properties or [])


def _document_changes(ls: LanguageServer) -> bool:
    ws = ls.client_capabilities.workspace
    edit = ws.workspace_edit if ws is not None else None
    return bool(edit is not None and edit.document_changes)


def serve() -> int:
    logging.basicConfig(level=logging.WARNING, format="repro-lint server: %(levelname)s: %(message)s")
    try:
        build().start_io(stdin=BoundedInput(sys.stdin.buffer))
    except MessageRefused as exc:
        print(f"repro-lint server: error: {exc} refused; stopping", file=sys.stderr)
        return 2
    return 0
