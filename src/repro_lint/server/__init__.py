"""`repro-lint server`: a language server (LSP over stdio) with the checker's diagnostics
and quick fixes. It needs the optional `server` extra (pygls); without it the command says
so in one line and exits 2.

The protocol side is `lsp`; what the server knows and does is `session` (run by the thread
in `worker`); code actions are `actions`; documents and positions are `documents`. The
project held in memory is `repro_lint.check.workspace`, its index `repro_lint.index.live`.
"""

from __future__ import annotations

import sys
from typing import Optional

MISSING = "repro-lint: error: `repro-lint server` needs pygls 2: pip install 'pygls>=2,<3', or install repro-lint with its `server` extra"


def main(argv: Optional[list] = None) -> int:
    from repro_lint.core.usage import Parser

    p = Parser(
        prog="repro-lint server",
        description="Run the language server over stdin and stdout (start it from an editor; see README, \"Editors\").",
    )
    p.add_argument("--stdio", action="store_true", help="speak LSP over stdin and stdout (the default and only transport)")
    p.parse_args(argv or [])
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        print(MISSING, file=sys.stderr)
        return 2
    from repro_lint.server.lsp import serve

    return serve()
