"""RPL101's opt-in numpy fix (`numpy-fix = "generator"`): draw from a seeded `Generator`.

The default fix seeds numpy's legacy global generator (`np.random.seed(SEED)`), which keeps
every existing draw and its meaning, but is what ruff's NPY002 reports. With this setting,
where the program allows it, the fix instead creates `rng = np.random.default_rng(SEED)`
after the entry module's imports and turns each legacy draw into the Generator method with
the same arguments and meaning (`np.random.normal(0, 1, 3)` -> `rng.normal(0, 1, 3)`), so the
result passes NPY002 too. The program allows it when every numpy draw of the program is a
call in the entry module after its imports, of a function the catalog maps
(`rules/catalog/rng.toml`, `[numpy-generator]`), and the generator's name is free there;
otherwise (draws in other modules would need the generator passed to them) the default fix
applies. The rewritten draws give other numbers than the legacy generator would: they were
not seeded before, so no run could be repeated with the old ones anyway.
"""

from __future__ import annotations

from typing import Optional

from repro_lint.core import catalog
from repro_lint.core.findings import Fix
from repro_lint.core.edits import InsertStatements, ReplaceExpression
from repro_lint.index.program import Program
from repro_lint.facts.model import MODULE_SCOPE, ModuleInfo
from repro_lint.analysis.context import Context
from repro_lint.analysis import placement


def generator_fix(ctx: Context, program: Program, draws: list) -> Optional[Fix]:
    """The Generator fix of the program's unseeded numpy `draws` ((info, scope, event)
    triples), or None when it is not asked for or the program does not allow it."""
    if ctx.settings.get("numpy-fix") != "generator":
        return None
    data = catalog.load("rng")["numpy-generator"]
    entry = program.entry
    name = data["name"]
    if not draws or _bound(entry, name):
        return None
    edits: list = []
    for info, _scope, ev in draws:
        api, callee, npos = ev.data["api"], ev.data.get("callee"), ev.data.get("npos", -1)
        method = data["methods"].get(api)
        if method is None and 0 <= npos <= 1:
            method = data["one-dimension"].get(api)
        if info is not entry or method is None or callee is None or ev.line <= entry.import_block_end:
            return None
        edits.append(ReplaceExpression(tuple(callee), f"{name}.{method}"))
    if placement.is_library(ctx, entry):
        return None  # nothing is added at module level of a module others import
    spec = placement.seed_for(ctx, entry, MODULE_SCOPE, (entry.import_block_end + 1, 0))
    if isinstance(spec, str):
        return None
    create = data["create"].replace("{name}", name)
    edits.insert(0, InsertStatements("after-imports", create, key=f"numpy-generator:{name}"))
    return Fix(f"draw from a seeded `numpy.random.Generator` (`{name}`) instead of numpy's global generator", "safe", (*edits, spec))


def _bound(info: ModuleInfo, name: str) -> bool:
    """Whether `name` may already mean something in the module (then the fix keeps away)."""
    if name in info.constants or name in info.exports:
        return True
    if any(fn.name == name or name in (fn.params or ()) for fn in info.functions.values()):
        return True
    if any(cls.name == name for cls in info.classes.values()):
        return True
    if any(imp[0] == name or imp[0].endswith("." + name) for imp in info.imports):
        return True
    return any(
        ev.data.get("assigned") == name or name in ev.data.get("names", ()) for _, ev in info.all_events()
    )
