"""Words several rule families' findings share: how an RNG source is named, how many
related locations a finding lists, and where in the entry module a program brings in the
modules that do something (the import a finding points at)."""

from __future__ import annotations

from repro_lint.analysis.context import Context
from repro_lint.index.program import Program


MAX_RELATED = 20


def source_label(source: str) -> str:
    return {"python": "Python `random`", "numpy": "numpy's global", "torch": "torch's global"}.get(source, source)


def import_bringing(ctx: Context, program: Program, modules: set[str]) -> tuple:
    """Span of the first import in the entry module that (transitively) brings in `modules`."""
    index = ctx.index
    entry = program.entry
    # one walk down the import graph for all the imports, in order: what an earlier import
    # reaches without finding `modules` cannot lead there from a later one either
    seen: set[str] = set()
    for imp in sorted(entry.imports, key=lambda i: (i[1], i[2])):
        # the module and the packages it is in, which run first
        stack = [mod for mod in index.import_targets(imp[0], entry) if mod not in seen]
        seen.update(stack)
        while stack:
            current = stack.pop()
            if current in modules:
                return imp[1:5]
            for target in index.imports_of.get(current, ()):
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
    # brought in by a config factory (`hydra.utils.instantiate`): its first call in the entry
    # module, else the Hydra main function
    calls = sorted(c[2:6] for scope, calls in entry.calls.items() for c in calls if c[0] in index.m.factories and (entry.module, scope) in program.scope_set)
    if calls:
        return tuple(calls[0])
    for q in entry.hydra_mains:
        fn = entry.functions[q]
        return (fn.line, fn.col, fn.line, fn.col)
    return (1, 0, 1, 0)
