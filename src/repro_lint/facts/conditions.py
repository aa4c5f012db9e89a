"""Whether the statement the walk is at runs under the program's own switch: an `if` whose
condition reads the program's configuration (a parameter, parsed arguments, a config object,
a module constant), not one that only asks a library about the machine
(`torch.cuda.is_available()`, `hasattr(torch.backends, "fp32_precision")`).

A setting made under such a switch (`if args.allow_tf32: ...`) is the user's choice, as a
non-literal value is (`allow_tf32 = args.allow_tf32`): rules that report settings chosen for
speed leave it alone.
"""

from __future__ import annotations

import ast
import builtins
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pragma: no cover
    from repro_lint.facts.walker.extractor import Extractor

_BUILTINS = frozenset(dir(builtins))


def user_switch(ex: "Extractor", library_roots: frozenset = frozenset()) -> Optional[str]:
    """The source of the innermost `if` around the current statement whose condition reads the
    program's configuration (prefixed with "not " on its `else` side), or None. Packages in
    `library_roots` count as libraries, as the standard library and the catalog's known
    packages do."""
    guards = ex.guards
    for i in range(len(guards) - 1, -1, -1):
        test = guards[i]
        negated = not isinstance(test, ast.AST)
        if negated:  # the `else` side: the walk keeps its `if`'s condition (else: the `if` at that line)
            test = getattr(test, "test", None) or _if_test(ex, ex.branches[i][0])
            if test is None:
                return "an `else` branch"
        if reads_configuration(ex, test, library_roots):
            text = ex.text_of(test)
            return f"not ({text})" if negated else text
    return None


def reads_configuration(ex: "Extractor", test: ast.AST, library_roots: frozenset = frozenset()) -> bool:
    """Whether an expression reads a name that is neither a builtin nor a library's."""
    external = ex.m.external_roots
    for node in ast.walk(test):
        if type(node) is not ast.Name:
            continue
        name = node.id  # type: ignore[attr-defined]
        qual = ex.r.qualify(node)
        if qual is None:
            if name in _BUILTINS and ex.r.is_unbound(name):
                continue
            return True  # a parameter, a local or module-level value: the program's own
        root = qual.split(".", 1)[0]
        if root not in external and root not in library_roots:
            return True
    return False


def _if_test(ex: "Extractor", line: int) -> Optional[ast.AST]:
    """The condition of the `if` at `line` within the statement being walked."""
    stmt = ex.stmt_node
    if stmt is None:
        return None
    for node in ast.walk(stmt):
        if type(node) is ast.If and node.lineno == line:  # type: ignore[attr-defined]
            return node.test  # type: ignore[attr-defined]
    return None
