"""A small Language Server Protocol client over a server's stdin and stdout, as an editor
drives it: used by the tests (tests/server/test_server.py) and by `server_latency.py`.

    with LspClient([sys.executable, "-m", "repro_lint", "server"], cwd=root) as c:
        c.initialize(root)
        c.open(path, text)
        diags = c.diagnostics(uri_of(path), version=1)

Requests the server sends (`client/registerCapability`) are answered with `null`; every
notification is kept, in order, and `wait_for` waits for one that matches.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Optional


def uri_of(path: Path) -> str:
    return Path(path).resolve().as_uri()


class LspError(Exception):
    def __init__(self, error: dict) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.error = error


class LspClient:
    def __init__(self, cmd: list, cwd: Optional[Path] = None, env: Optional[dict] = None) -> None:
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._next_id = 0
        self._responses: dict = {}
        self._cond = threading.Condition()
        self.notifications: list = []  # (time received, message)
        self.stderr: list = []
        self._versions: dict = {}
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # -- transport -------------------------------------------------------------------------------
    def _send(self, msg: dict) -> None:
        body = json.dumps(msg).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    with self._cond:
                        self._cond.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = out.read(int(headers["content-length"]))
            msg = json.loads(body)
            now = time.perf_counter()
            if "id" in msg and "method" in msg:  # a request from the server
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                continue
            with self._cond:
                if "id" in msg:
                    self._responses[msg["id"]] = msg
                else:
                    self.notifications.append((now, msg))
                self._cond.notify_all()

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def request(self, method: str, params: object, timeout: float = 60.0):
        self._next_id += 1
        rid = self._next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self._cond:
            while rid not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"no answer to {method} (server {'exited' if self.proc.poll() is not None else 'silent'})")
                self._cond.wait(left)
            msg = self._responses.pop(rid)
        if "error" in msg:
            raise LspError(msg["error"])
        return msg.get("result")

    def notify(self, method: str, params: object) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for(self, match: Callable[[dict], bool], timeout: float = 60.0, after: int = 0) -> tuple:
        """The first notification from position `after` on that `match`es: (its position,
        the time it arrived, the message)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for i in range(after, len(self.notifications)):
                    at, msg = self.notifications[i]
                    if match(msg):
                        return i, at, msg
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError("no matching notification" + ("; server exited" if self.proc.poll() is not None else ""))
                self._cond.wait(left)

    # -- what an editor does ------------------------------------------------------------------------
    def initialize(self, root: Path, options: Optional[dict] = None, capabilities: Optional[dict] = None) -> dict:
        caps = capabilities if capabilities is not None else {
            "textDocument": {
                "publishDiagnostics": {"relatedInformation": True, "versionSupport": True, "codeDescriptionSupport": True},
                "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source"]}}},
            },
            "workspace": {"workspaceEdit": {"documentChanges": True}, "didChangeWatchedFiles": {"dynamicRegistration": True}},
        }
        result = self.request("initialize", {
            "processId": os.getpid(), "rootUri": uri_of(root), "capabilities": caps,
            "initializationOptions": options or {}, "workspaceFolders": [{"uri": uri_of(root), "name": Path(root).name}],
        })
        self.notify("initialized", {})
        return result

    def open(self, path: Path, text: str, language: str = "python") -> str:
        uri = uri_of(path)
        self._versions[uri] = 1
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}})
        return uri

    def change(self, path: Path, text: str) -> int:
        """Replace the whole text (an incremental change of everything); returns the new version."""
        uri = uri_of(path)
        self._versions[uri] += 1
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": self._versions[uri]}, "contentChanges": [{"text": text}]})
        return self._versions[uri]

    def version(self, path: Path) -> int:
        return self._versions[uri_of(path)]

    def diagnostics(self, uri: str, version: Optional[int] = None, after: int = 0, timeout: float = 60.0) -> list:
        def match(msg: dict) -> bool:
            if msg.get("method") != "textDocument/publishDiagnostics" or msg["params"]["uri"] != uri:
                return False
            return version is None or msg["params"].get("version") == version

        return self.wait_for(match, timeout, after)[2]["params"]["diagnostics"]

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.request("shutdown", None, timeout=10)
                self.notify("exit", None)
                self.proc.wait(timeout=10)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except Exception:
                pass

    def __enter__(self) -> "LspClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def apply_edits(text: str, edits: list) -> str:
    """`text` with LSP TextEdits applied (positions in UTF-16 units; edits must not overlap)."""
    lines = text.splitlines(keepends=True) or [""]

    def offset(pos: dict) -> int:
        line, char = pos["line"], pos["character"]
        if line >= len(lines):
            return len(text)
        before = sum(len(x) for x in lines[:line])
        body = lines[line]
        units = 0
        for i, ch in enumerate(body):
            if units >= char:
                return before + i
            units += 2 if ord(ch) > 0xFFFF else 1
        return before + len(body)

    for edit in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]), reverse=True):
        a, b = offset(edit["range"]["start"]), offset(edit["range"]["end"])
        text = text[:a] + edit["newText"] + text[b:]
        lines = text.splitlines(keepends=True) or [""]
    return text
