"""The shared edit operations that fixes are made of.

Rules never edit trees. They return these descriptions, located with the positions of
the `ast` layer (1-based lines, 0-based character columns); the engine maps them to libcst
nodes and applies them.

Code templates may hold placeholders that the engine fills in per file:
- `{mod:numpy}` — the local name of a module, importing it if the file lacks it
  (an existing `import numpy as np` is reused); `{mod:utils}.f` of a project module that the
  file imports names from (`from utils import a, b`) reads `f`, which joins that import;
- `{attr:torch.backends.cudnn}` — a submodule by the name the file already binds it to
  (`cudnn` after `import torch.backends.cudnn as cudnn`), else `{mod:torch}.backends.cudnn`;
- `{seed}` — the program's seed expression (see `SeedSpec`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Optional

# without a `__dict__` each where the language allows (3.10+): a large project's findings
# carry tens of thousands of these (about 20 MB of dicts on a 38,000-file tree)
_SLOTS = {"slots": True} if sys.version_info >= (3, 10) else {}

Span = tuple  # (line, col, end_line, end_col)


@dataclass(frozen=True, **_SLOTS)
class SeedSpec:
    """Which seed expression fixes use: an existing one, or a new module constant."""

    expr: Optional[str]  # reuse this expression; None means add `SEED = <value>` after the imports
    value: str = "0"  # the configured seed, for the new constant
    # added to the seed where each rank of a run must draw its own stream (`seed + rank`)
    offset: Optional[str] = None


@dataclass(frozen=True, **_SLOTS)
class AddKeyword:
    call: Span  # span of the Call expression
    name: str
    value: str  # code template
    path: str = ""  # the file to edit, when not the file of the finding


@dataclass(frozen=True, **_SLOTS)
class ReplaceExpression:
    span: Span
    code: str  # code template


@dataclass(frozen=True, **_SLOTS)
class InsertStatements:
    """Insert statements relative to an anchor.

    where:
    - "after" / "before": next to the statement whose span is `anchor`;
    - "body-start": first statements of function `function` (after its docstring);
    - "main-start": first statements of the `if __name__ == "__main__":` block;
    - "after-imports": after the module's leading import block (after the docstring and
      `__future__` imports when there are no imports).
    `key` identifies the inserted block so that fixes of several findings asking for the
    same statement insert it once. `order` places blocks inserted at the same point among
    each other (lower first; equal orders keep the order of the findings), so that the
    statements of several fixes come out as one block in a stable order.
    An `anchor` may also be the span of an expression: the statement that holds it is used.
    With a `guard` (an expression's source), the statements run under `if <guard>:`; blocks
    with the same guard inserted at the same point share one `if`.
    """

    where: str
    code: str  # one or more statements, as a template
    anchor: Optional[Span] = None
    function: Optional[str] = None
    key: str = ""
    order: int = 0
    guard: str = ""
    path: str = ""  # the file to edit, when not the file of the finding (as findings show paths)


@dataclass(frozen=True, **_SLOTS)
class MoveStatements:
    """Move statements (module level or `__main__` block), in order, to the start of a function's body."""

    stmts: tuple  # spans of the statements to move
    function: str
    prelude: str = ""  # code placed before the moved statements (e.g. `import torch`)


@dataclass(frozen=True, **_SLOTS)
class WrapStatements:
    """Put consecutive statements of one block (`stmts`: their spans, in order) inside a new
    compound statement that takes their place: `header` is its first line as a template
    (`with {mod:torch}.random.fork_rng():`). The statements keep their comments, and the
    edits other fixes make inside them."""

    stmts: tuple
    header: str
    path: str = ""


@dataclass(frozen=True, **_SLOTS)
class AddDictItems:
    """Add `key: value` items (`items`: pairs of code templates) to the dict display at
    `dict` (its span), in its own layout: one item per line where it has one per line, else on
    its line while that fits the line length, else one per line as black writes it. A key
    the dict already has is left as it is."""

    dict: Span
    items: tuple
    path: str = ""


@dataclass(frozen=True, **_SLOTS)
class EnsureFunction:
    """Add a module-level function after the imports unless one of that name exists."""

    name: str
    code: str  # template of the whole `def`


Edit = object  # any of the above
