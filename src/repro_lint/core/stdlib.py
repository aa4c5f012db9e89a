"""The names of the standard library's top-level modules, on every supported Python."""

from __future__ import annotations

import functools
import os
import sys


@functools.lru_cache(maxsize=1)
def stdlib_module_names() -> frozenset[str]:
    """`sys.stdlib_module_names` (Python 3.10+); on 3.9 the modules of the interpreter's own
    library folders and its built-in modules."""
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return frozenset(names)
    import sysconfig

    found = set(sys.builtin_module_names)
    paths = sysconfig.get_paths()
    for folder in {paths["stdlib"], paths["platstdlib"], os.path.join(paths["stdlib"], "lib-dynload")}:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            name = entry.split(".", 1)[0]
            if not name.isidentifier() or name in ("site-packages", "dist-packages", "__pycache__"):
                continue
            if entry.endswith((".py", ".so", ".pyd")) or os.path.isfile(os.path.join(folder, entry, "__init__.py")):
                found.add(name)
    return frozenset(found)
