"""Code actions: the fix of a finding, "fix all" (the safe fixes of a document), and
"ignore this rule on this line" (`# noqa: CODE`, as `--add-noqa` writes it).

Fixes are computed by the fix engine of `repro-lint check --fix` (`fix.rounds.apply_fixes`,
without writing: its re-checks run against the server's live index) from the documents'
current texts, and come back as a WorkspaceEdit against the versions the client sent. An
unsafe fix is offered for its own finding only, with "(unsafe)" in its title and never
preferred; "fix all" applies safe fixes only. With resolve support the client gets the
actions at once and their edits when it asks for one (`codeAction/resolve`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from lsprotocol import types

from repro_lint.fix.add_noqa import with_noqa
from repro_lint.core.bounded_read import read_regular
from repro_lint.core.findings import Finding
from repro_lint.server import places
from repro_lint.server.documents import Doc, decode_python
from repro_lint.server.session import SOURCE, Session

FIX_ALL = "source.fixAll.repro-lint"


class ActionError(Exception):
    """An action's edit cannot be made (one line, logged)."""


def code_actions(session: Session, uri: str, rng: types.Range, only: Optional[list], lazy: bool, document_changes: bool) -> list:
    doc = _doc(session, uri)
    if doc is None or not session.editable(doc):
        return []  # (a document outside the workspace is only checked)
    current = _current(session, doc)
    out: list[types.CodeAction] = []
    for i, f in enumerate(current):
        span = doc.span(f.location.line, f.location.col, f.location.end_line, f.location.end_col, session.units)
        if span.uri != uri or span.end[0] < rng.start.line or span.start[0] > rng.end.line:
            continue
        diag = session.diagnostic(f, span, doc, None)
        if f.fixable and (f.fix.safety == "safe" or session.options.unsafe_fixes):  # type: ignore[union-attr]
            unsafe = f.fix.safety != "safe"  # type: ignore[union-attr]
            title = f"{f.code}: {f.fix.description}" + (" (unsafe)" if unsafe else "")  # type: ignore[union-attr]
            out.append(_action(title, types.CodeActionKind.QuickFix, [diag], not unsafe, {"uri": doc.uri, "version": doc.version, "do": "fix", "finding": i}))
        if f.code != "RPL001":
            out.append(_action(f"Ignore {f.code} for this line (# noqa)", types.CodeActionKind.QuickFix, [diag], False,
                               {"uri": doc.uri, "version": doc.version, "do": "noqa", "finding": i}))
    if any(f.fixable and f.fix.safety == "safe" for f in current):  # type: ignore[union-attr]
        out.append(_action(f"{SOURCE}: fix all safe fixes", FIX_ALL, None, False,
                           {"uri": doc.uri, "version": doc.version, "do": "fixall"}))
    if only:
        out = [a for a in out if any(a.kind == k or str(a.kind).startswith(f"{k}.") for k in only)]
    if not lazy:
        done = []
        for action in out:
            try:
                done.append(resolve(session, action, document_changes))
            except ActionError as exc:
                session.log(f"{SOURCE}: {exc}", types.MessageType.Warning)
        out = done
    return out


def resolve(session: Session, action: types.CodeAction, document_changes: bool) -> types.CodeAction:
    """The action with its edit. Raises ActionError when it cannot be made now."""
    data = action.data if isinstance(action.data, dict) else {}
    doc = session.docs.get(str(data.get("uri")))
    if doc is None or doc.version != data.get("version"):
        raise ActionError("the document changed since the action was offered; ask again")
    if not session.editable(doc):
        raise ActionError(f"{doc.path}: not edited: it is outside the workspace")
    current = _current(session, doc)
    what = data.get("do")
    if what == "fixall":
        chosen = [f for f in current if f.fixable and f.fix.safety == "safe"]  # type: ignore[union-attr]
        texts = _fixed(session, doc, chosen, unsafe=False)
    else:
        i = data.get("finding")
        if not isinstance(i, int) or not 0 <= i < len(current):
            raise ActionError("the finding is gone; ask again")
        f = current[i]
        if what == "fix":
            texts = _fixed(session, doc, [f], unsafe=f.fix is not None and f.fix.safety != "safe")
        elif what == "noqa":
            texts = {doc.path.resolve(): _with_noqa(doc, f)}
        else:
            raise ActionError(f"unknown action {what!r}")
    action.edit = _workspace_edit(session, texts, document_changes)
    return action


def _action(title: str, kind, diagnostics, preferred: bool, data: dict) -> types.CodeAction:
    return types.CodeAction(title=title, kind=kind, diagnostics=diagnostics, is_preferred=preferred or None, data=data)


def _doc(session: Session, uri: str) -> Optional[Doc]:
    doc = session.docs.get(uri)
    if doc is not None:
        return doc
    for d in session.docs.values():  # a notebook document's cell
        if uri in d.uris:
            return d
    return None


def _current(session: Session, doc: Doc) -> list[Finding]:
    """The document's findings for its current text (checked now if the last check is older)."""
    last = session.published.get(doc.uri)
    if last is None or last.version != doc.version or doc.uri in session.unsynced:
        session.dirty.pop(session.root_of[doc.uri], None)
        session.check_project(session.root_of[doc.uri])
        last = session.published.get(doc.uri)
    return list(last.findings) if last is not None else []


def _fixed(session: Session, doc: Doc, findings: list, unsafe: bool) -> dict:
    """Resolved path -> fixed content of every file the fixes change."""
    from repro_lint.fix.rounds import apply_fixes

    state = session.state(session.root_of[doc.uri])
    session.sync()
    outcome = apply_fixes(
        state.report(), findings, state.cfg, unsafe=unsafe, write=False, overrides=dict(state.buffers),
        checker=state.check_edited, reaching=state.reaching(),
    )
    if outcome.errors:
        raise ActionError(outcome.errors[0])
    if not outcome.texts:
        raise ActionError("the fix changes nothing here")
    return {Path(shown).resolve(): data for shown, data in outcome.texts.items()}


def _with_noqa(doc: Doc, f: Finding) -> bytes:
    from repro_lint.fix.source import SourceError, SourceFile

    try:
        src = SourceFile.from_bytes(doc.path, doc.data())
        text, added, warnings = with_noqa(src.text, {f.location.line: {f.code}})
        if warnings:
            raise ActionError(f"{doc.path.name}:{warnings[0]}")
        if not added:
            raise ActionError("the line has a noqa comment that covers it already")
        return src.encode(text)
    except SourceError as exc:
        raise ActionError(str(exc)) from exc


def _workspace_edit(session: Session, texts: dict, document_changes: bool) -> types.WorkspaceEdit:
    changes: list[types.TextDocumentEdit] = []
    plain: dict[str, list] = {}
    for path, data in texts.items():
        if not places.contains(session.folders, path):
            raise ActionError(f"{path}: not edited: it is outside the workspace")
        doc = next((d for d in session.docs.values() if d.path.resolve() == path), None)
        if doc is None:  # a file the editor does not have open: edited as it is on disk
            try:
                raw = read_regular(path)
                text = raw.decode("utf-8") if path.name.endswith(".ipynb") else decode_python(raw)
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as exc:
                raise ActionError(f"{path}: cannot read it: {exc}") from exc
            doc = Doc(path.as_uri(), path, None, text)
        for uri, edits in doc.edits(data, session.units):
            text_edits = [
                types.TextEdit(range=types.Range(start=types.Position(line=a[0], character=a[1]), end=types.Position(line=b[0], character=b[1])), new_text=t)
                for a, b, t in edits
            ]
            version = doc.version_of(uri)
            changes.append(types.TextDocumentEdit(text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=text_edits))
            plain.setdefault(uri, []).extend(text_edits)
    if document_changes:
        return types.WorkspaceEdit(document_changes=changes)
    return types.WorkspaceEdit(changes=plain)
