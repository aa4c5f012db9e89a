"""The whole-program view: entry points, the code each program reaches, and what it does.

Built from the per-file facts (`model.ModuleInfo`) of every file in the project, so that
checking one changed file still knows that `utils.set_seed` seeds torch and numpy.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from repro_lint.facts.families.frameworks import FACTORY
from repro_lint.index import hydra_configs
from repro_lint.index.effects import Effects, FunctionEffects
from repro_lint.facts.matchers import Matchers
from repro_lint.facts.model import HANDED, INSTANCE, ITEM, LIBRARY, MADE_CLS, MADE_UNKNOWN, MAIN_SCOPE, MODULE_SCOPE, NAME_REF, REF_HANDED, REF_REGISTERED, REGISTRIES, RETURNED, RETURNS, RETURNS_MADE, STAR_IMPORTS, STORED_MADE, TYPING_SCOPE, FunctionInfo, ModuleInfo
from repro_lint.index.scope_walk import ScopeRef, ScopeWalk

_NO_SCOPES: frozenset = frozenset()
_SCOPE_NAMES = {MODULE_SCOPE: MODULE_SCOPE, MAIN_SCOPE: MAIN_SCOPE}


def _compact_bits(mask: int, numbers: "list[int]") -> "int | tuple[int, ...]":
    """A bit set, or the ascending tuple of its members where that is much smaller (a
    member takes 8 bytes of the tuple, a bit set one bit per number up to the highest)
    and short enough to search. The members are the int objects of `numbers` (number i
    at i): an int made for each member of each tuple took 5 MB on 38,000 files."""
    count = bin(mask).count("1")  # (int.bit_count: Python 3.10 and later)
    if count > _FEW_VISIBLE or count * 256 >= mask.bit_length():
        return mask
    out = []
    while mask:
        low = mask & -mask
        out.append(numbers[low.bit_length() - 1])
        mask ^= low
    return tuple(out)


_FEW_VISIBLE = 64


def _method_key(method: str, marker: Optional[str]) -> "str | tuple[str, str]":
    """A method call's key in its module's table of `ProjectIndex._method_cache`: the name
    alone for a call on an unknown receiver (most of them), else (name, marker)."""
    return method if marker is None else (method, marker)
# A method name defined in more modules than this gets a bit set of them (see _visible_named).
_FEW_MODULES = 8
# The modules whose names that name no project class are remembered (`class_key`).
_NO_CLASS_MODULES = 256


class ProjectIndex(FunctionEffects, ScopeWalk):
    def __init__(self, modules: Iterable[ModuleInfo], matchers: Matchers, root: Optional[Path] = None) -> None:
        self.m = matchers
        self.root = root
        self.modules: dict[str, ModuleInfo] = {}
        for info in modules:
            if info.error is None:
                self.modules.setdefault(info.module, info)
        # a top-level `src/` folder is a layout root and a package: `src.models.x` is `models.x`
        self._src_package = "src" not in self.modules
        # key -> function; its module is `self.modules[fn.module]` (`function`)
        self.functions: dict[str, FunctionInfo] = {}
        self.classes: dict[str, tuple[ModuleInfo, object]] = {}
        self.by_name: dict[str, "list[str] | tuple[str, ...]"] = {}
        for info in self.modules.values():
            prefix = f"{info.module}." if info.module else ""
            module = info.module
            exported = info.exports
            for qual, fn in info.functions.items():
                # a module's own top-level function is exported under its key: that string
                # is the key, not a copy of it (8 MB less at the peak on 38,000 files)
                key = prefix + qual
                if exported.get(qual) == key:
                    key = exported[qual]
                fn.module = module
                self.functions[key] = fn
                self.by_name.setdefault(fn.name, []).append(key)
            for qual, cls in info.classes.items():
                key = prefix + qual
                if exported.get(qual) == key:  # (as for functions)
                    key = exported[qual]
                self.classes[key] = (info, cls)
        self._module_of: dict[tuple[str, str], Optional[str]] = {}
        self._packages_above: dict[str, tuple[str, ...]] = {}
        # modules importing each module (each importer once) and modules each module imports
        # (the empty tuple shared): one of each per module of a large project
        self.importers: dict[str, "list[str] | tuple[str, ...]"] = {}
        self.imports_of: dict[str, tuple[str, ...]] = {}
        # per module with `from m import *` of project modules, those modules (last first:
        # a later star import's name wins)
        self.star_imports: dict[str, tuple[str, ...]] = {}
        for info in self.modules.values():
            self._set_star_imports(info)
            targets: set[str] = set()
            for imp in info.imports:  # (`import_targets`, written out: every import of a project)
                if imp[5] == TYPING_SCOPE:
                    continue  # only type checkers import it
                mod = self.module_of(imp[0], info)
                if mod is not None:
                    targets.add(mod)
                    if "." in mod:
                        targets.update(self.packages_above(mod))
            targets.discard(info.module)
            self.imports_of[info.module] = tuple(targets) if targets else ()
            if not info.is_test:
                for mod in targets:
                    self.importers.setdefault(mod, []).append(info.module)
        # the memo served the imports above, which recur across files; kept, it held one
        # entry per imported name and package (14 MB on 38,000 files) that few later asks reuse
        self._module_of = {}
        # tuples once filled: a list grown by appending keeps spare room, and one of each is
        # kept per function name and per imported module of a project (4 MB on 38,000 files)
        self.by_name = {name: tuple(keys) for name, keys in self.by_name.items()}  # type: ignore[misc]
        self.importers = {mod: tuple(mods) for mod, mods in self.importers.items()}  # type: ignore[misc]
        self._effects: dict[str, Effects] = {}
        self._seeding_names: Optional[frozenset[str]] = None
        self._seed_callers: Optional[frozenset[ScopeRef]] = None  # (`seed_reach.seed_callers`)
        self._seed_callers_by_module: Optional[dict[str, frozenset[str]]] = None  # (`seed_reach.seed_callers_in`)
        # the memos of name resolution, per asking module (module -> name -> keys): a tuple
        # key per answer took 80 bytes more than a name in a module's own table, for 160,000
        # answers of each kind on 38,000 files (`_method_key` for method calls)
        self._resolve_cache: dict[str, dict[str, tuple[str, ...]]] = {}
        # the reach walk's numbering of scopes and its memoised edges (built on first use)
        self._refs: Optional[list[ScopeRef]] = None
        self._ref_ids: dict[ScopeRef, int] = {}
        self._succ: dict[bool, list] = {}
        self._call_succ: list = []  # the calls' part of each scope's successors, shared by both kinds of walk
        self._by_name_ids: dict[tuple[str, str], tuple[int, ...]] = {}
        self._builders: dict[int, tuple] = {}  # (`ScopeWalk._builders_of`)
        self._class_level_memo: dict[int, tuple] = {}  # (`ScopeWalk._class_level`)
        self._has_events: Optional[bytearray] = None
        self._kinds: Optional[list] = None  # (`ScopeWalk.scope_kinds`)
        self._kind_bits: dict[str, int] = {}
        self._kind_sets: dict[int, int] = {}
        self._method_cache: dict[str, dict] = {}
        self._callees: dict[str, dict[str, tuple]] = {}  # module -> scope -> callees
        self._visible: dict[str, "int | tuple[int, ...]"] = {}
        self.module_ids = {name: i for i, name in enumerate(self.modules)}
        self._module_numbers = list(self.module_ids.values())  # (the same int objects, by number)
        self._subclasses: Optional[dict[str, list[str]]] = None
        self._bases_cache: dict[str, tuple[str, ...]] = {}
        self._module_class: dict[str, bool] = {}
        self._named: Optional[dict[str, object]] = None
        # the memo of `class_key`, per asking module (module -> name -> class key): a tuple key
        # per answer took 11 MB on 38,000 files. Only classes found are kept for good; the
        # names that name no project class (nine answers in ten) are kept for the modules
        # asked about last (`_no_class`): kept for every module, they and their names took
        # 13 MB at the peak of a cold check of 38,308 files, and a module's questions come
        # together (its scopes' calls, its rules)
        self._class_keys: dict[str, dict[str, str]] = {}
        self._no_class: dict[str, set[str]] = {}
        self._alone: dict[str, tuple[str]] = {}  # (`_keys`)
        self._config_names: dict[str, tuple[str, ...]] = {}
        self._config_pattern = hydra_configs.line_pattern(matchers.config_keys)
        self._loads: Optional[dict[str, set[str]]] = None

    def _set_star_imports(self, info: ModuleInfo) -> None:
        stars = info.summary(STAR_IMPORTS)
        found = [m for m in (self.module_of(b, info) for b in reversed(stars)) if m is not None] if stars else ()
        if found:
            self.star_imports[info.module] = tuple(dict.fromkeys(found))
        else:
            self.star_imports.pop(info.module, None)

    # -- resolution ----------------------------------------------------------------
    def _candidates(self, qual: str, ctx: ModuleInfo) -> list[str]:
        cands = [qual]
        # `src.models.x` names the `src/` layout root's `models.x`: before the name beside the
        # importing module, whose leading part can be that module's own package (`models`)
        if self._src_package and qual.startswith("src."):
            cands.append(qual[4:])
        # scripts import siblings by bare name (`from utils import x` beside train.py)
        pkg = ctx.module if ctx.is_package else ctx.module.rpartition(".")[0]
        if pkg:
            beside = f"{pkg}.{qual}"
            if not ctx.is_package and pkg not in self.modules and f"{pkg}.{qual.partition('.')[0]}" in self.modules:
                # a script in a folder that is no package runs with that folder first on
                # `sys.path`: its sibling `tp.py` wins over a `tp.py` at the root
                cands.insert(0, beside)
            else:
                cands.append(beside)
        return cands

    def module_of(self, qual: str, ctx: ModuleInfo) -> Optional[str]:
        """The project module that an imported qualified name lives in, if any."""
        key = (qual, ctx.module if ctx.is_package else ctx.module.rpartition(".")[0])
        try:
            return self._module_of[key]  # the same imports recur across a project's files
        except KeyError:
            pass
        found = None
        pkg = key[1]
        for cand in self._candidates(qual, ctx):
            # a name beside the importer (`pkg.utils` for `utils`) names a module of that
            # package, never the package itself: `import torch` in `pkg/models.py` is not
            # `pkg` (what importing runs of the package is `import_targets`' business)
            floor = len(pkg) if pkg and cand.startswith(pkg + ".") and not qual.startswith(pkg + ".") else 0
            name = cand
            while len(name) > floor:  # the longest leading part of `cand` that is a project module
                if name in self.modules:
                    found = name
                    break
                if "." not in name:
                    break
                name = name.rpartition(".")[0]
            if found is not None:
                break
        self._module_of[key] = found
        return found

    def import_targets(self, qual: str, ctx: ModuleInfo) -> tuple[str, ...]:
        """The project modules an import of `qual` in `ctx` runs: the module, and before it
        the packages it is in (importing `a.b.c` runs `a/__init__.py` and `a/b/__init__.py`
        first), the importer itself left out."""
        mod = self.module_of(qual, ctx)
        if mod is None:
            return ()
        above = self.packages_above(mod)
        if not above:
            return (mod,) if mod != ctx.module else ()
        return tuple(m for m in (mod, *above) if m != ctx.module)

    def packages_above(self, module: str) -> tuple[str, ...]:
        """The project packages `module` is in, innermost first (`a.b`, `a` for `a.b.c`)."""
        if "." not in module:
            return ()
        hit = self._packages_above.get(module)
        if hit is None:
            out = []
            parent = module.rpartition(".")[0]
            while parent:
                if parent in self.modules:
                    out.append(parent)
                parent = parent.rpartition(".")[0]
            hit = self._packages_above[module] = tuple(out) if out else ()
        return hit

    def resolve(self, qual: str, ctx: ModuleInfo) -> tuple[str, ...]:
        """Function keys a qualified callee name refers to (a class gives its protocol methods)."""
        per = self._resolve_cache.get(ctx.module)
        hit = per.get(qual) if per is not None else None
        if hit is None:
            hit = self._resolve(qual, ctx, 0)[0]
        return hit

    # Re-exports followed in a row (`from .a import f` in a package whose `a` re-exports it ...)
    _REEXPORT_DEPTH = 5

    def _resolve(self, qual: str, ctx: ModuleInfo, depth: int) -> tuple[tuple[str, ...], bool]:
        """(the keys, whether the answer is complete). An answer cut short by the re-export
        depth is not memoised: asked first from another depth it would be longer, and a memo
        must not make answers depend on which question came first."""
        per = self._resolve_cache.get(ctx.module)
        if per is None:
            per = self._resolve_cache[ctx.module] = {}
        hit = per.get(qual)
        if hit is not None:
            return hit, True
        out: tuple[str, ...] = ()
        complete = True
        if qual in self.m.factories:
            # `hydra.utils.instantiate(cfg.x)` builds what a config names: any of them
            out = per[qual] = self._configured()
            return out, True
        for cand in self._candidates(qual, ctx):
            if cand in self.functions:
                out = self._keys((cand,))
                break
            if cand in self.classes:
                out = self._keys(self.class_methods(cand))
                break
            # a name re-exported by a package or module (`from .utils import set_seed`, or
            # `from .utils import *`)
            mod, _, name = cand.rpartition(".")
            info = self.modules.get(mod)
            if info is not None:
                target = info.exports.get(name)
                targets = [target] if target and target != cand else [f"{m}.{name}" for m in self.star_imports.get(mod, ())]
                for target in targets:
                    if depth >= self._REEXPORT_DEPTH:
                        complete = False
                        break
                    out, whole = self._resolve(target, info, depth + 1)
                    complete = complete and whole
                    if out:
                        break
                if out:
                    break
                # a dict of callables (`from models import DiT_models`, called by item): any of them
                values = info.summary(REGISTRIES).get(name)
                if values:
                    if depth >= self._REEXPORT_DEPTH:
                        complete = False
                        break
                    found: list[str] = []
                    for value in values:
                        keys, whole = self._resolve(value, info, depth + 1)
                        complete = complete and whole
                        found.extend(keys)
                    out = tuple(dict.fromkeys(found))
                    if out:
                        break
        if not out and "." in qual:
            # `Converter.register(...)`, `Model.from_config(...)`: a method of a project class
            # (re-exported, or defined on one of its bases) called on the class
            owner, _, method = qual.rpartition(".")
            cls_key = self.class_key(owner, ctx) if method not in self.m.loading_classmethods else None
            if cls_key is not None:
                for base in self.class_bases(cls_key):
                    if f"{base}.{method}" in self.functions:
                        out = (f"{base}.{method}",)
                        break
        if complete:
            per[qual] = out
        return out, complete

    def class_key(self, qual: str, ctx: ModuleInfo) -> Optional[str]:
        """The project class a qualified name refers to (through re-exports too), if any."""
        module = ctx.module
        per = self._class_keys.get(module)
        if per is not None:
            found = per.get(qual)
            if found is not None:
                return found
        missing = self._no_class.get(module)
        if missing is not None and qual in missing:
            return None
        found = None
        for cand in self._candidates(qual, ctx):
            if cand in self.classes:
                found = cand
                break
            mod, _, name = cand.rpartition(".")
            other = self.modules.get(mod)
            if other is not None:
                target = other.exports.get(name)
                if target and target != cand and target in self.classes:
                    found = target
                    break
        if found is not None:
            if per is None:
                per = self._class_keys[module] = {}
            # (the name interned: most are made from a call's marker, one string per call, and
            # the memo kept them all: 9 MB on 38,000 files)
            per[sys.intern(qual)] = found
        else:
            if missing is None:
                missing = self._no_class[module] = set()
                if len(self._no_class) > _NO_CLASS_MODULES:
                    del self._no_class[next(iter(self._no_class))]  # the module asked about first
            missing.add(qual)
        return found

    def registry_classes(self, qual: str, ctx: ModuleInfo) -> Iterator[str]:
        """The project classes of a module-level dict of callables that `qual` names
        (`MODELS[args.arch](...)` calls one of them)."""
        for cand in self._candidates(qual, ctx):
            mod, _, name = cand.rpartition(".")
            info = self.modules.get(mod)
            if info is None:
                continue
            target = info.exports.get(name)
            if target and target != cand:
                mod, _, name = target.rpartition(".")
                info = self.modules.get(mod)
                if info is None:
                    continue
            values = info.summary(REGISTRIES).get(name)
            if values:
                for value in values:
                    cls = self.class_key(value, info)
                    if cls is not None:
                        yield cls
                return

    def is_project(self, qual: str, ctx: ModuleInfo) -> bool:
        return bool(self.resolve(qual, ctx)) or self.module_of(qual, ctx) is not None and qual in self.modules

    def class_bases(self, key: str, seen: Optional[set] = None) -> "list[str] | tuple[str, ...]":
        """Project classes in the hierarchy of `key` (itself first) and external base names."""
        if seen is None:
            hit = self._bases_cache.get(key)
            if hit is None:
                # (a tuple: the list keeps spare room, and one is kept per class asked about)
                hit = self._bases_cache[key] = tuple(self.class_bases(key, set()))
            return hit
        if key in seen or key not in self.classes:
            return []
        seen.add(key)
        info, cls = self.classes[key]
        out = [key]
        for base in cls.bases:  # type: ignore[attr-defined]
            if not base:
                continue
            resolved = None
            for cand in self._candidates(base, info):
                if cand in self.classes:
                    resolved = cand
                    break
            if resolved:
                out.extend(self.class_bases(resolved, seen))
            else:
                out.append(base)
        return out

    def class_methods(self, key: str, names: Optional[Iterable[str]] = None) -> list[str]:
        """The methods that run when an instance of the class is built (catalog
        `building-methods`: `__init__`, `__post_init__`), along its bases; or those of
        `names`. The rest of its protocol runs where the instance is used: called
        (`net(x)`), handed over (`DataLoader(ds)`), iterated."""
        wanted = self.m.building_order if names is None else tuple(names)
        methods = []
        for cls_key in self.class_bases(key):
            if cls_key not in self.classes:
                continue
            for name in wanted:
                fkey = f"{cls_key}.{name}"
                if fkey in self.functions:
                    methods.append(fkey)
        return methods

    def is_module_class(self, key: str) -> bool:
        hit = self._module_class.get(key)
        if hit is None:  # asked for every method a program reaches
            hit = self._module_class[key] = any(b in self.m.module_bases for b in self.class_bases(key))
        return hit

    def let_go_of_calls(self) -> None:
        """Forget the calls worked out per scope and the answers of name resolution (asked
        again, they are worked out again): on 38,000 files about 50 MB that a check no longer
        needs once its rules have run."""
        self._callees = {}
        self._method_cache = {}
        self._resolve_cache = {}

    def held_answers(self) -> dict[str, int]:
        """How many modules' worked-out calls, method answers and resolution answers the index
        holds now (what `let_go_of_calls` lets go of): for tests and memory diagnostics."""
        return {"callees": len(self._callees), "methods": len(self._method_cache), "resolved": len(self._resolve_cache)}

    def callees(self, info: ModuleInfo, scope: str) -> "Iterable[tuple[tuple, tuple[str, ...]]]":
        """Each recorded call of a scope with the project functions it may reach, as
        (call, keys) pairs to iterate once (worked out once per scope: effects, reach and
        several rules ask for the same scopes; kept as `callee_row` has them)."""
        row = self.callee_row(info, scope)
        if not row:
            return row
        it = iter(row)
        return zip(it, it)

    def callee_row(self, info: ModuleInfo, scope: str) -> tuple:
        """The calls of a scope that reach project functions and their keys, one after the
        other: (call, keys, call, keys, ...). A tuple per pair took 11 MB on 38,000 files."""
        per_scope = self._callees.get(info.module)
        if per_scope is None:
            per_scope = self._callees[info.module] = {}
        hit = per_scope.get(scope)
        if hit is not None:
            return hit
        out: list = []
        module = info.module
        methods = self._method_cache.get(module) or self._method_cache.setdefault(module, {})
        resolved = self._resolve_cache.get(module) or self._resolve_cache.setdefault(module, {})
        for call in info.calls.get(scope, ()):
            target = call[0]
            # the caches' lookups written out: this runs for every call of a project
            if target is None:
                keys = methods.get(call[1])
                if keys is None:
                    keys = self.method_targets(call[1], info, target)
            elif target[0] == "@":
                keys = methods.get((call[1], target))
                if keys is None:
                    keys = self.method_targets(call[1], info, target)
            else:
                keys = resolved.get(target)
                if keys is None:
                    keys = self.resolve(target, info)
                how = call[1]
                if keys and how is not None and how[:8] == REF_HANDED and self.resolve(how[8:], info):
                    keys = ()  # handed at import time to a project function that keeps it
                elif keys and how is not None and how[:8] == REF_REGISTERED and not self.resolve(how[8:], info):
                    keys = ()  # registered on a library's object (a web framework's route)
            if keys:
                out.append(call)
                out.append(keys)
        # a tuple holds no spare room, and most scopes share the empty one
        hit = per_scope[scope] = tuple(out) if out else ()
        return hit

    def call_targets(self, info: ModuleInfo, call: tuple) -> tuple[str, ...]:
        """The project functions one recorded call of `info` may reach (as `callees` has it)."""
        target = call[0]
        if target is None or target[0] == "@":
            return self.method_targets(call[1], info, target)
        return self.resolve(target, info)

    def method_targets(self, method: str, info: ModuleInfo, marker: Optional[str] = None) -> tuple[str, ...]:
        """Project functions a call by method name can reach.

        `self.m()` / `super().m()` look `m` up in the class hierarchy (overrides in project
        subclasses included for `self`). Any other receiver, or an unbound name, matches the
        functions called `m` in the modules the calling module imports, directly or not: an
        object's class is defined in a module that was loaded, and matching every function
        of a common name (`write`, `step`, `__init__`) across a project links unrelated code."""
        if marker == LIBRARY:
            return ()  # a library object's method
        if marker is not None and marker.startswith(ITEM):
            # `postprocessors["aux"](out)`: what the project stores under that name and key
            name, _, key = marker[len(ITEM):-1].partition("[")
            return tuple(k for cls in self.stored_classes().get((name, key), ()) for k in self.class_methods(cls, self.m.calling_order))
        per = self._method_cache.get(info.module)
        if per is None:
            per = self._method_cache[info.module] = {}
        if marker is not None and marker.startswith(RETURNED):
            key = (method, marker)
            hit = per.get(key)
            if hit is None:
                hit = per[key] = self._returned_by(marker[len(RETURNED):], info)
            return hit
        if marker is not None and (marker.startswith(INSTANCE) or marker.startswith(HANDED)):
            # not memoised: a scope's calls are worked out once (`callee_row`), and fewer than
            # a tenth of these answers were asked for again, where the memo took 40 MB on
            # 38,000 files (388,000 keys) to the end of the check
            return self._instance_method(marker.partition(":")[2], method, info)
        stars = self.star_imports.get(info.module) if self.star_imports and (marker is None or marker == NAME_REF) else None
        if method not in self.by_name and not stars:
            # no project function has this name (most calls of a library's methods): the
            # answer is known at once, and memoised it took a third of this memo
            return ()
        key = _method_key(method, marker)
        hit = per.get(key)
        if hit is not None:
            return hit
        if marker is not None and marker != NAME_REF:
            kind, _, cls = marker.partition(":")
            cls_key = f"{info.module}.{cls}" if info.module else cls
            out = self._class_lookup(cls_key, method, kind == "@super")
        else:
            # by its name alone only a name library objects do not commonly have (`x.to()`,
            # `cfg.get()` on an object of unknown type are most likely a tensor's, a dict's)
            named = method in self.by_name and method not in self.m.library_methods
            out = self._visible_named(method, self.visible_modules(info.module)) if named else ()
            if stars:
                # an unbound name of a module with `from m import *` is m's name, if m has it
                # (a class called gives its protocol methods)
                for mod in stars:
                    found = self.resolve(f"{mod}.{method}", info)
                    if found:
                        out = tuple(dict.fromkeys([*found, *out]))
                        break
        per[key] = out
        return out

    def _instance_method(self, qual: str, method: str, info: ModuleInfo, depth: int = 0) -> tuple[str, ...]:
        """The project functions `method` of an object that a call of `qual` made may be: the
        class's own (or inherited) method for a project class; for a project function, the
        method of what it returns (`return Net(cfg)`, followed a few calls deep), else any
        project method of that name the module sees (but names library objects commonly
        have); for a config factory's object (`hydra.utils.instantiate`), any method of that
        name the module sees. Nothing for an object a library made."""
        if qual in self.m.factories:
            # what the configs name (`_target_:`): a method of theirs, or of that name the module sees
            own = [k for cls in self._configured_classes() for k in self.own_method(cls, method)]
            if own or method in self.m.instance_methods:
                return tuple(dict.fromkeys(own))
            return self._visible_named(method, self.visible_modules(info.module)) if method in self.by_name else ()
        cls = self.class_key(qual, info)
        if cls is None and "." not in qual:
            # a bare name a star import brings (`from datasets import *`): the last that has it
            for mod in self.star_imports.get(info.module, ()):
                cls = self.class_key(f"{mod}.{qual}", info)
                if cls is not None:
                    break
        if cls is not None:
            return self.own_method(cls, method)
        keys = self.resolve(qual, info)
        if not keys:
            return ()
        out: list[str] = []
        known = False  # what the functions return is known
        for key in keys:
            mod, scope = self.scope_of(key)
            minfo = self.modules[mod]
            for made in minfo.summary(RETURNS_MADE).get(scope, ()):
                if made == MADE_CLS:
                    # (on a class the caller names: `ClipDataset.from_manifest(p)`; else not known)
                    cls = self.class_key(qual.rpartition(".")[0], info) if "." in qual else None
                    if cls is not None:
                        known = True
                        out.extend(self.own_method(cls, method))
                elif made != MADE_UNKNOWN and depth < self._REEXPORT_DEPTH:
                    known = True
                    out.extend(self._instance_method(made, method, minfo, depth + 1))
        if not known and method in self.by_name and method not in self.m.library_methods and method not in self.m.instance_methods:
            # (a protocol method, `__getitem__`, is every class's: never by its name alone)
            out.extend(self._visible_named(method, self.visible_modules(info.module)))
        return self._keys(dict.fromkeys(out))

    def _keys(self, keys: Iterable[str]) -> tuple[str, ...]:
        """`keys` as a tuple; one naming a single function is the same tuple each time (with
        the same string): most answers of resolution name one function, and the memos and
        the scopes' calls kept a tuple (and often a string) for each answer (9 MB on 38,000
        files)."""
        out = tuple(keys)
        if len(out) != 1:
            return out
        hit = self._alone.get(out[0])
        if hit is None:
            hit = self._alone[out[0]] = out
        return hit

    def own_method(self, cls_key: str, method: str) -> tuple[str, ...]:
        """The method `method` of an instance of exactly this class: its own or the first
        definition along its bases."""
        for c in self.class_bases(cls_key):
            if c in self.classes and f"{c}.{method}" in self.functions:
                return self._keys((f"{c}.{method}",))
        return ()

    def _returned_by(self, qual: str, info: ModuleInfo) -> tuple[str, ...]:
        """The project functions that the functions `qual` names return by name; for a
        class, the methods that run when the instance it builds is called."""
        cls = self.class_key(qual, info)
        if cls is not None:  # `Reseed()(seed)`: the instance built is called
            return tuple(self.class_methods(cls, self.m.calling_order))
        out: list[str] = []
        for key in self.resolve(qual, info):
            owner, _, method = key.rpartition(".")
            if owner in self.classes and not qual.endswith("." + method):
                continue
            mod, scope = self.scope_of(key)
            minfo = self.modules[mod]
            for returned in minfo.summary(RETURNS).get(scope, ()):
                out.extend(self.resolve(returned, minfo))
        return tuple(dict.fromkeys(out))

    def _visible_named(self, method: str, visible: "int | tuple[int, ...]") -> tuple[str, ...]:
        """Functions called `method` defined in the `visible` modules, in project order."""
        # per name, its functions grouped by module number (module numbers follow project
        # order, as `by_name` does). Most names live in one or a few modules and keep a
        # tuple of (number, functions); a name defined in many keeps a bit set of its
        # modules too, so that a module seeing none of them is answered at once. Made for
        # the names asked about only: a check of a few files asks for a few.
        if self._named is None:
            self._named = {}
        entry = self._named.get(method)
        if entry is None:
            keys = self.by_name.get(method)
            if keys is None:
                return ()
            entry = self._named[method] = self._named_entry(keys)
        if type(visible) is tuple:  # a few modules, ascending (see `visible_modules`)
            if type(entry) is tuple:
                return tuple(k for i, ks in entry if i in visible for k in ks)
            per = entry[1]  # type: ignore[index]
            return tuple(k for i in visible if i in per for k in per[i])
        if type(entry) is tuple:
            return tuple(k for i, ks in entry if visible >> i & 1 for k in ks)  # type: ignore[operator]
        hit = entry[0] & visible  # type: ignore[index]
        per = entry[1]  # type: ignore[index]
        out: list[str] = []
        while hit:
            low = hit & -hit
            out.extend(per[low.bit_length() - 1])
            hit ^= low
        return tuple(out)

    def _named_entry(self, keys: list[str]) -> object:
        """The `_visible_named` table's entry for the functions `keys` of one name."""
        ids = self.module_ids
        per: dict[int, list[str]] = {}
        for k in keys:
            per.setdefault(ids[self.functions[k].module], []).append(k)
        groups = tuple((i, tuple(ks)) for i, ks in per.items())
        if len(groups) <= _FEW_MODULES:
            return groups
        mask = 0
        for i, _ in groups:
            mask |= 1 << i
        return [mask, dict(groups)]

    def _class_lookup(self, cls_key: str, method: str, skip_own: bool) -> tuple[str, ...]:
        hierarchy = self.class_bases(cls_key)
        out: list[str] = []
        for c in hierarchy[1:] if skip_own else hierarchy:
            if c in self.classes and f"{c}.{method}" in self.functions:
                out.append(f"{c}.{method}")
                break  # the first definition along the bases is the one that runs
        if not skip_own:
            out.extend(k for sub in self.subclasses(cls_key) if (k := f"{sub}.{method}") in self.functions)
        return self._keys(dict.fromkeys(out))

    def subclasses(self, cls_key: str) -> list[str]:
        """Project classes deriving from `cls_key`, directly or not."""
        if self._subclasses is None:
            below: dict[str, list[str]] = {}
            for key in self.classes:
                for base in self.class_bases(key)[1:]:
                    if base in self.classes:
                        below.setdefault(base, []).append(key)
            self._subclasses = below
        return self._subclasses.get(cls_key, [])

    def visible_modules(self, module: str) -> "int | tuple[int, ...]":
        """`module`, the packages it is in when it is imported, and every project module they
        import, directly or not (imports inside functions included), as a bit set over
        `module_ids`: a large project has thousands of modules that each see hundreds. A
        set with few members for its highest number is kept as the tuple of them instead (a
        bit set reaching number 30,000 takes 4 KB however few modules it holds: 99 MB for the
        36,000 modules of a generated 38,000-file project, which see five each)."""
        hit = self._visible.get(module)
        if hit is None:
            ids = self.module_ids
            mask = 1 << ids[module]
            # an imported module's packages were imported before it (`a/__init__.py` runs
            # before `a.b`): what they import exists when its code runs. A module nothing
            # imports is a script, run by path, where they never run.
            stack = [module, *self.packages_above(module)] if self.importers.get(module) else [module]
            for parent in stack[1:]:
                mask |= 1 << ids[parent]
            loads = self._config_loads()
            while stack:
                current = stack.pop()
                targets = self.imports_of.get(current, ())
                if current in loads:
                    targets = [*targets, *loads[current]]
                for target in targets:
                    bit = 1 << ids[target]
                    if not mask & bit:
                        done = self._visible.get(target)
                        if done is None:
                            mask |= bit
                            stack.append(target)
                            for parent in self.packages_above(target):  # (as a memo's answer has them)
                                if not mask & 1 << ids[parent]:
                                    mask |= 1 << ids[parent]
                                    stack.append(parent)
                        elif type(done) is tuple:
                            for i in done:
                                mask |= 1 << i
                        else:
                            mask |= done  # type: ignore[operator]
            hit = self._visible[module] = _compact_bits(mask, self._module_numbers)
        return hit

    def scope_of(self, key: str) -> ScopeRef:
        fn = self.functions[key]
        return (fn.module, fn.qual)

    def function(self, key: str) -> tuple[ModuleInfo, FunctionInfo]:
        """(the facts of the module defining it, the function) for a function key."""
        fn = self.functions[key]
        return self.modules[fn.module], fn

    # -- programs (the walk itself: `scope_walk.ScopeWalk`) ----------------------------
    def hydra_targets(self, info: ModuleInfo, fn: FunctionInfo) -> list[str]:
        """Project functions/classes named by `_target_:` lines in the Hydra config folder."""
        return [k for name in self.config_names(info, fn) for k in self.resolve(name, info)]

    def config_names(self, info: ModuleInfo, fn: FunctionInfo) -> tuple[str, ...]:
        """The dotted names the config files of a Hydra main name (project or not)."""
        if self.root is None or fn.hydra_config_path is None:
            return ()
        folder = hydra_configs.config_folder(info.path, fn.hydra_config_path, self.root)
        if folder is None:
            return ()
        hit = self._config_names.get(str(folder))
        if hit is None:
            hit = self._config_names[str(folder)] = hydra_configs.config_targets(folder, self._config_pattern, self.root)
        return hit

    def _configured(self) -> tuple[str, ...]:
        """Project functions (and classes' protocol methods) that any Hydra main's configs name."""
        hit = self.__dict__.get("_configured_keys")
        if hit is None:
            keys: dict[str, None] = {}
            for info in self.modules.values():
                for q in info.hydra_mains:
                    keys.update(dict.fromkeys(self.hydra_targets(info, info.functions[q])))
            hit = self.__dict__["_configured_keys"] = tuple(keys)
        return hit

    def stored_classes(self) -> dict[tuple[str, str], tuple[str, ...]]:
        """(container name, key) -> the project classes whose instances some module stores
        there (`postprocessors["aux"] = AuxUpsample()`), worked out once for the project."""
        hit = self.__dict__.get("_stored_classes")
        if hit is None:
            found: dict[tuple[str, str], dict[str, None]] = {}
            for info in self.modules.values():
                for name, key, qual in info.summary(STORED_MADE):
                    cls = self.class_key(qual, info)
                    if cls is not None:
                        found.setdefault((name, key), {})[cls] = None
            hit = self.__dict__["_stored_classes"] = {k: tuple(v) for k, v in found.items()}
        return hit

    def _configured_classes(self) -> tuple[str, ...]:
        """Project classes that any Hydra main's configs name."""
        hit = self.__dict__.get("_configured_class_keys")
        if hit is None:
            keys: dict[str, None] = {}
            for info in self.modules.values():
                for q in info.hydra_mains:
                    for name in self.config_names(info, info.functions[q]):
                        cls = self.class_key(name, info)
                        if cls is not None:
                            keys[cls] = None
            hit = self.__dict__["_configured_class_keys"] = tuple(keys)
        return hit

    def _config_loaded(self) -> set[str]:
        """Modules some config file makes a Hydra app load."""
        hit = self.__dict__.get("_loaded")
        if hit is None:
            hit = self.__dict__["_loaded"] = set().union(*self._config_loads().values())
        return hit

    def _config_loads(self) -> dict[str, set[str]]:
        """Modules that config files make a module load: an object built by a config factory
        (`hydra.utils.instantiate`) is of a class the program's configs name. The module of a
        Hydra main loads what its configs name; a module calling a factory, what any does."""
        if self._loads is None:
            loads: dict[str, set[str]] = {}
            named: set[str] = set()
            for info in self.modules.values():
                for q in info.hydra_mains:
                    mods = {self.module_of(n, info) for n in self.config_names(info, info.functions[q])}
                    mods.discard(None)
                    if mods:
                        loads.setdefault(info.module, set()).update(mods)  # type: ignore[arg-type]
                        named |= mods  # type: ignore[arg-type]
            if named:
                for info in self.modules.values():
                    if info.summary(FACTORY):
                        loads.setdefault(info.module, set()).update(named)
            for mod, targets in loads.items():
                targets.discard(mod)
            self._loads = loads
        return self._loads

    def scopes_calling(self, names: "frozenset[str]") -> "Callable[[str], frozenset]":
        """For a module, the scopes that call a method of one of `names` (worked out once per
        module: programs share most of their modules)."""
        memo = self.__dict__.setdefault("_calling", {}).setdefault(names, {})

        def calling(mod: str) -> frozenset:
            hit = memo.get(mod)
            if hit is None:
                info = self.modules[mod]
                found = [s for s, cs in info.calls.items() if any(c[1] in names for c in cs)]
                # the scope names as the outline holds them: the decoded body's own copies
                # would be kept for this memo alone (6 MB on 38,000 files)
                functions = info.functions
                hit = memo[mod] = frozenset(functions[s].qual if s in functions else _SCOPE_NAMES.get(s, s) for s in found) or _NO_SCOPES
            return hit

        return calling

    def trains(self, refs: Iterable[ScopeRef]) -> bool:
        """Whether the scopes train: a backward pass or optimizer step, or a framework call that
        runs the training (`trainer.fit(...)`)."""
        runner_trains = self.m.runner_trains
        for mod, scope in refs:
            for ev in self.modules[mod].events.get(scope, ()):
                if ev.kind == "train" or ev.kind == "runner" and (ev.data["framework"], ev.data["method"]) in runner_trains:
                    return True
        return False

    def entry_points(self) -> list[ModuleInfo]:
        return [info for info in self.modules.values() if self.is_entry_point(info)]

    def is_entry_point(self, info: ModuleInfo) -> bool:
        if info.is_test or info.never_entry:
            return False
        # a module a config names is imported by the Hydra app that instantiates it
        imported = bool(self.importers.get(info.module)) or info.module in self._config_loaded()
        if info.hydra_mains:
            return True
        if info.main_block is not None:
            # a library with a self-test is not
            return not imported or self.trains(self.reach([(info.module, MAIN_SCOPE)], include_imports=False))
        return info.module_work and not imported
