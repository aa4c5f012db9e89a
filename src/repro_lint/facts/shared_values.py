"""One object for each repeated value of a large project's outlines.

The outlines of a large project's files repeat most of their values: the same imports at
the same places (`("torch.nn", 3, 0, 3, 15, "<module>")`), the same exported names, the
same parameter tuples and `SUMMARIES` answers. Each file's extraction makes its own copies;
on a 38,000-file tree they took about 60 MB more than one copy of each. Outline values are
never changed once extracted, so equal ones can be one object.

A table lives while a check extracts (`Sharing`), and is let go after: what it made shared
stays shared, and the table's own entries (one per distinct value) do not outlast it.
"""

from __future__ import annotations

import marshal
from typing import Any, Optional

from repro_lint.facts.model import ClassInfo, FunctionInfo, ModuleInfo
from repro_lint.facts.spill import Spill, take


# marshalled body fields (`model.pack`) of up to this many bytes are shared
_SMALL_PACKED = 32
# the shared empty values (never changed: facts are not, once extracted)
_NO_NOQA: dict = {}
_NO_MAINS: list = []


class Sharing:
    """Equal outline values replaced by the first one met (`share`), and the larger packed
    body fields moved to `spill` when given."""

    def __init__(self, spill: Optional[Spill] = None) -> None:
        # where the larger packed body fields go (`spill`): they are read again only when
        # decoded
        self.spill = spill
        self._strings: dict[str, str] = {}
        # keyed by marshal's bytes (version 2: no references, the same bytes for equal
        # values): equality alone takes `(1,)` for `(True,)`
        self._values: dict[bytes, Any] = {}
        self._packed: dict[bytes, bytes] = {}

    def text(self, value: Any) -> Any:
        if type(value) is str:
            return self._strings.setdefault(value, value)
        return value

    def value(self, value: Any) -> Any:
        """`value` itself, or an equal one met before (tuples and dicts of plain data)."""
        kind = type(value)
        if kind is str:
            return self._strings.setdefault(value, value)
        if kind is not tuple and kind is not dict or not value:
            return value
        try:
            key = marshal.dumps(value, 2)
        except ValueError:  # holds something marshal does not write
            return value
        hit = self._values.get(key)
        if hit is None:
            text = self.text
            if kind is tuple:
                hit = tuple([self.value(v) if type(v) is tuple or type(v) is dict else text(v) for v in value])
            else:
                hit = {text(k): self.value(v) for k, v in value.items()}
            self._values[key] = hit
        return hit

    def share(self, info: ModuleInfo) -> None:
        """Share the outline values of `info` (freshly extracted or received: nothing has
        read them yet)."""
        state = info.__dict__
        value = self.value
        text = self.text
        # most modules have no noqa comment and no Hydra main: one empty dict and list for
        # all of them (64 and 56 bytes each, 4 MB on 38,000 files)
        if "noqa" in state and not state["noqa"] and type(state["noqa"]) is dict:
            state["noqa"] = _NO_NOQA
        if "hydra_mains" in state and not state["hydra_mains"] and type(state["hydra_mains"]) is list:
            state["hydra_mains"] = _NO_MAINS
        imports = state.get("imports")
        if imports:
            state["imports"] = [value(imp) for imp in imports]
        exports = state.get("exports")
        if exports:
            state["exports"] = {text(k): text(v) for k, v in exports.items()}
        functions = state.get("functions")
        if functions:
            out = {}
            for qual, fn in functions.items():
                if type(fn) is FunctionInfo:
                    fn.qual = text(fn.qual)
                    fn.name = text(fn.name)
                    fn.class_name = text(fn.class_name)
                    fn.params = value(fn.params)
                    fn.decorators = value(fn.decorators)
                out[text(qual)] = fn
            state["functions"] = out
        classes = state.get("classes")
        if classes:
            out = {}
            for qual, cls in classes.items():
                if type(cls) is ClassInfo:
                    cls.qual = text(cls.qual)
                    cls.name = text(cls.name)
                    if type(cls.bases) is list:
                        cls.bases = [text(b) for b in cls.bases]
                    if type(cls.methods) is list:
                        cls.methods = [text(m) for m in cls.methods]
                out[text(qual)] = cls
            state["classes"] = out
        summary = state.get("_summary")
        if summary:
            state["_summary"] = value(summary)
        packed = state.get("_packed")
        if packed:
            # the marshalled body fields that hold nothing or next to nothing (most modules'
            # constants and loops): 40 bytes of object each, 3 MB on 38,000 files
            table = self._packed
            for i, data in enumerate(packed):
                if type(data) is bytes and len(data) <= _SMALL_PACKED:  # (not one in a file: `spill`)
                    packed[i] = table.setdefault(data, data)
            if self.spill is not None:
                take(info, self.spill)
