"""A project index kept up to date in place when one module's facts change.

Building `ProjectIndex` over a large project and working out what its programs reach takes
seconds; a language server re-checks after every edit. `LiveIndex` keeps what it has
worked out (resolved calls, the reach walk's edges, function effects, entry points, which
programs reach which module) and, when a module's facts are replaced, forgets only what can
depend on them:

- an edit that keeps the module's *outline* (`outline`: its functions, classes, exports and
  imports) changes only what its own scopes do: its own resolved calls and edges, and the
  effects of the functions that call into it, directly or not;
- an edit of the outline can change how other modules resolve their calls: the modules that
  import it (directly or not), that import a package above it or a module inside it, that
  define the classes its classes derive from, and those with a Hydra main forget their
  resolved calls and edges too.

Programs whose reach met a forgotten module are walked again when next asked for. What is
kept gives the same answers a fresh index gives (the tests compare them on edited
projects). A change of the set of modules (a file added, removed, or no longer parsing) is
not handled here, nor one that can change which modules Hydra configs make an app load (a
Hydra main or a config factory call added or removed, or any outline edit in a project that
has them): `replace` raises `RebuildNeeded` and the caller builds a new index.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterable, Optional

from repro_lint.facts.families.frameworks import FACTORY
from repro_lint.index.project_index import ProjectIndex, ScopeRef
from repro_lint.facts.matchers import Matchers
from repro_lint.facts.model import MAIN_SCOPE, MODULE_SCOPE, REGISTRIES, RETURNS, RETURNS_MADE, STAR_IMPORTS, STORED_MADE, ModuleInfo, TYPING_SCOPE


class RebuildNeeded(Exception):
    """The change reaches what the index works out from the whole project at once (which
    modules Hydra configs make an app load): build a new index instead."""


def config_outline(info: ModuleInfo) -> tuple:
    """What of a module the index reads for every module at once: its Hydra mains (and their
    config folders) and whether it builds objects from configs (`hydra.utils.instantiate`)."""
    return (
        tuple((q, info.functions[q].hydra_config_path if q in info.functions else None) for q in info.hydra_mains),
        bool(info.extra.get(FACTORY)),
        # (objects stored in containers are looked up project-wide: `ProjectIndex.stored_classes`)
        tuple(info.summary(STORED_MADE)),
    )


def outline(info: ModuleInfo) -> tuple:
    """What other modules' resolved calls can depend on: names defined, re-exported and
    imported (a change anywhere else in the module changes only its own scopes)."""
    return (
        info.module,
        info.is_package,
        info.is_test,
        info.error is None,
        tuple((q, fn.name) for q, fn in info.functions.items()),
        tuple((q, c.name, tuple(c.bases), tuple(c.methods)) for q, c in info.classes.items()),
        tuple(sorted(info.exports.items())),
        frozenset(imp[0] for imp in info.imports),
        tuple(info.summary(STAR_IMPORTS)),
        tuple(sorted(info.summary(REGISTRIES).items())),
        tuple(sorted((k, tuple(v)) for k, v in info.summary(RETURNS).items())),
        tuple(sorted((k, tuple(v)) for k, v in info.summary(RETURNS_MADE).items())),
        config_outline(info),
    )


def _class_outline(info: ModuleInfo) -> tuple:
    return tuple((q, tuple(c.bases)) for q, c in info.classes.items())


class LiveIndex(ProjectIndex):
    """A `ProjectIndex` whose modules can be replaced one at a time (`replace`), and which
    knows which programs reach a module (`entries_reaching`)."""

    def __init__(self, modules: Iterable[ModuleInfo], matchers: Matchers, root: Optional[Path] = None) -> None:
        super().__init__(modules, matchers, root)
        # function key -> the scopes whose resolved calls reach it (recorded as resolved)
        self._callers: dict[str, set[ScopeRef]] = {}
        # modules importing each module, test modules included (`importers` leaves them out)
        self._imported_by: dict[str, set[str]] = {}
        for mod, targets in self.imports_of.items():
            for target in targets:
                self._imported_by.setdefault(target, set()).add(mod)
        # changed in place below (`ProjectIndex` keeps each module's importers as a list)
        self.importers = {mod: set(importers) for mod, importers in self.importers.items()}  # type: ignore[misc]
        # every dotted prefix of each module's imported names -> the modules importing them
        self._import_prefixes: dict[str, set[str]] = {}
        self._exact_imports: dict[str, set[str]] = {}  # each imported name -> the modules importing it
        for info in self.modules.values():
            self._add_import_names(info)
        self._groups_in: dict[str, set] = {}
        self._entry_memo: dict[str, bool] = {}
        self._entry_reads: dict[str, set[str]] = {}  # module -> the modules its entry-point answer read
        self._recording: Optional[set[str]] = None
        # seeding functions: key -> name, and how many of each name (see `seeding_names`)
        self._seeders: Optional[dict[str, str]] = None
        self._seed_names: Counter = Counter()
        self._effects_todo: set[str] = set()
        # which programs reach which modules, kept per entry point
        self._program_modules: Optional[dict[str, frozenset]] = None
        self._reached_by: dict[str, set[str]] = {}
        self._stale_entries: set[str] = set()

    # -- what is recorded as it is worked out ---------------------------------------------
    def callee_row(self, info: ModuleInfo, scope: str) -> tuple:
        per_scope = self._callees.get(info.module)
        if per_scope is not None:
            hit = per_scope.get(scope)
            if hit is not None:
                return hit
        out = super().callee_row(info, scope)
        ref = (info.module, scope)
        for keys in out[1::2]:
            for k in keys:
                callers = self._callers.get(k)
                if callers is None:
                    callers = self._callers[k] = set()
                callers.add(ref)
        return out

    def _call_successors(self, i: int) -> tuple:
        out = super()._call_successors(i)
        groups = [x for x in out if x.__class__ is tuple]  # calls by method name: (method, module)
        if groups:
            self._groups_in.setdefault(self._refs[i][0], set()).update(groups)  # type: ignore[index]
        return out

    def reach(self, starts, include_imports: bool = True) -> list[ScopeRef]:
        out = super().reach(starts, include_imports)
        if self._recording is not None:
            self._recording.update(mod for mod, _ in out)
        return out

    def is_entry_point(self, info: ModuleInfo) -> bool:
        hit = self._entry_memo.get(info.module)
        if hit is None or self.modules.get(info.module) is not info:
            # an imported module with a main block is one when its main trains: the modules
            # that walk reads are kept, and an edit of one of them asks again
            self._recording = set()
            try:
                hit = super().is_entry_point(info)
                reached = self._recording
            finally:
                self._recording = None
            if self.modules.get(info.module) is info:
                self._entry_memo[info.module] = hit
                if reached:
                    self._entry_reads[info.module] = reached
        return hit

    def entry_modules(self) -> list[str]:
        """The names of the entry points, in project order (`entry_points`, remembered)."""
        memo = self._entry_memo
        if len(memo) != len(self.modules):
            for name, info in self.modules.items():
                if name not in memo:
                    self.is_entry_point(info)
        return [m for m in self.modules if memo[m]]

    def seeding_names(self) -> frozenset[str]:
        if self._seeders is None:
            self._seeders = {}
            self._effects_todo = set()
            self._seed_names = Counter()
            for key, fn in self.functions.items():
                if self.effects(key).seeds:
                    self._seeders[key] = fn.name
                    self._seed_names[fn.name] += 1
            self._seeding_names = None
        elif self._effects_todo:
            todo = self._effects_todo
            self._effects_todo = set()
            for key in todo:
                name = self._seeders.pop(key, None)
                if name is not None:
                    self._seed_names[name] -= 1
                    if not self._seed_names[name]:
                        del self._seed_names[name]
                hit = self.functions.get(key)
                if hit is not None and self.effects(key).seeds:
                    self._seeders[key] = hit.name
                    self._seed_names[hit.name] += 1
            self._seeding_names = None
        if self._seeding_names is None:
            self._seeding_names = frozenset(self._seed_names)
        return self._seeding_names

    # -- which programs reach a module ---------------------------------------------------------
    def entries_reaching(self, modules: Iterable[str]) -> set[str]:
        """The entry points (module names) whose programs reach any of `modules`."""
        self._refresh_reach()
        out: set[str] = set()
        for mod in modules:
            out |= self._reached_by.get(mod, set())
        return out

    def _refresh_reach(self) -> None:
        current = self.entry_modules()
        if self._program_modules is None:
            self._program_modules = {}
            self._stale_entries = set(current)
        known = self._program_modules
        wanted = set(current)
        for entry in [e for e in known if e not in wanted or e in self._stale_entries]:
            for mod in known.pop(entry):
                self._reached_by[mod].discard(entry)
        for entry in current:
            if entry not in known:
                mods = frozenset(m for m, _ in self.program(self.modules[entry]).scopes)
                known[entry] = mods
                for mod in mods:
                    self._reached_by.setdefault(mod, set()).add(entry)
        self._stale_entries = set()

    # -- replacing a module ------------------------------------------------------------------
    def replace(self, new: ModuleInfo) -> set[str]:
        """Put `new` in place of the module of the same name (which must be in the index, as
        `new` must parse); returns the modules whose resolved calls were forgotten."""
        name = new.module
        old = self.modules[name]
        if old is new:
            return set()
        for calling in self.__dict__.get("_calling", {}).values():  # (`scopes_calling`)
            calling.pop(name, None)
        same_outline = outline(old) == outline(new)
        if config_outline(old) != config_outline(new) or not same_outline and self._config_loads():
            # what configs make apps load, and what they name, is worked out for all at once
            raise RebuildNeeded(name)
        observers = {name} if same_outline else self._observers(old, new)
        self._forget(observers, old, new, same_outline)
        if same_outline:
            self._patch_same_outline(old, new)
        else:
            before = set(self.imports_of.get(name, ()))
            self._patch_outline(old, new)
            # the new classes' bases, now that they are in the index, and the modules it
            # imports or no longer imports: whether anything imports a module decides whether
            # it sees what its packages import (`visible_modules`)
            more = (self._ancestor_modules(new) | (before ^ set(self.imports_of.get(name, ())))) - observers
            if more:
                self._forget(more, new, new, False)
                observers |= more
        self._events_changed(old, new)
        self._forget_entries(old, new, observers)
        return observers

    def _forget(self, observers: set[str], old: ModuleInfo, new: ModuleInfo, same_outline: bool) -> None:
        if self._program_modules is not None:
            for mod in observers:
                self._stale_entries |= self._reached_by.get(mod, set())
        self._forget_effects(observers, old, new)
        self._forget_resolution(observers, old, new, same_outline)

    def _observers(self, old: ModuleInfo, new: ModuleInfo) -> set[str]:
        """Modules whose resolved calls can change when the outline of `old` becomes `new`'s."""
        name = old.module
        out = {name}
        out |= self._import_prefixes.get(name, set())  # they import it, or a module inside it
        parts = name.split(".")
        for i in range(1, len(parts)):  # they import a package above it (`import pkg` then `pkg.mod.f()`)
            out |= self._exact_imports.get(".".join(parts[:i]), set())
        stack = list(out)
        while stack:
            for mod in self._imported_by.get(stack.pop(), ()):
                if mod not in out:
                    out.add(mod)
                    stack.append(mod)
        # the modules inside a package see what it imports (`visible_modules`)
        packages = {m for m in out if m in self.modules and self.modules[m].is_package}
        if packages:
            out |= {m for m in self.modules if not packages.isdisjoint(self.packages_above(m))}
        # `self.m()` in a base class reaches the overrides of its subclasses
        out |= self._ancestor_modules(old)
        out |= {m for m, info in self.modules.items() if info.hydra_mains}
        return out

    def _ancestor_modules(self, info: ModuleInfo) -> set[str]:
        """Modules defining the project classes that the classes of `info` derive from."""
        out: set[str] = set()
        for cls in info.classes.values():
            for base in cls.bases:
                for cand in self._candidates(base, info) if base else ():
                    if cand in self.classes:
                        out |= {self.classes[k][0].module for k in self.class_bases(cand) if k in self.classes}
                        break
        return out

    def _add_import_names(self, info: ModuleInfo) -> None:
        pkg = info.module if info.is_package else info.module.rpartition(".")[0]
        for imp in info.imports:
            for qual in (imp[0], f"{pkg}.{imp[0]}") if pkg else (imp[0],):
                self._exact_imports.setdefault(qual, set()).add(info.module)
                part = qual
                while True:
                    self._import_prefixes.setdefault(part, set()).add(info.module)
                    if "." not in part:
                        break
                    part = part.rpartition(".")[0]

    def _drop_import_names(self, info: ModuleInfo) -> None:
        pkg = info.module if info.is_package else info.module.rpartition(".")[0]
        for imp in info.imports:
            for qual in (imp[0], f"{pkg}.{imp[0]}") if pkg else (imp[0],):
                self._exact_imports.get(qual, set()).discard(info.module)
                part = qual
                while True:
                    self._import_prefixes.get(part, set()).discard(info.module)
                    if "." not in part:
                        break
                    part = part.rpartition(".")[0]

    def _function_keys(self, info: ModuleInfo) -> list[str]:
        prefix = f"{info.module}." if info.module else ""
        return [prefix + q for q in info.functions]

    def _forget_effects(self, observers: set[str], old: ModuleInfo, new: ModuleInfo) -> None:
        """Forget the effects of the functions of `observers` and of every function whose
        effects were worked out through one of them (the members of a call cycle share one
        answer, and each calls the others: forgetting one forgets them all)."""
        seeds = set(self._function_keys(old) + self._function_keys(new))
        for mod in observers:
            if mod != old.module:
                seeds.update(self._function_keys(self.modules[mod]))
        effects = self._effects
        done: set[str] = set()
        stack = list(seeds)
        while stack:
            key = stack.pop()
            if key in done:
                continue
            done.add(key)
            if effects.pop(key, None) is None and key not in seeds:
                continue
            for mod, scope in self._callers.get(key, ()):
                if scope != MODULE_SCOPE and scope != MAIN_SCOPE:
                    caller = f"{mod}.{scope}" if mod else scope
                    if caller in effects and caller not in done:
                        stack.append(caller)
        self._effects_todo |= done
        self.__dict__.pop("_typed_seeds", None)  # (`typed_reach`: worked out again when asked)
        self.__dict__.pop("_override_refs", None)
        self._seeding_names = None
        self._seed_callers = None
        self._seed_callers_by_module = None

    def _module_scopes(self, info: ModuleInfo) -> list[ScopeRef]:
        return [(info.module, MODULE_SCOPE), (info.module, MAIN_SCOPE), *((info.module, q) for q in info.functions)]

    def _forget_resolution(self, observers: set[str], old: ModuleInfo, new: ModuleInfo, same_outline: bool) -> None:
        for mod in observers:
            per_scope = self._callees.pop(mod, None)
            for scope, found in (per_scope or {}).items():
                for keys in found[1::2]:
                    for k in keys:
                        callers = self._callers.get(k)
                        if callers is not None:
                            callers.discard((mod, scope))

        if self._refs is not None:
            ids = self._ref_ids
            for mod in observers:
                info = old if mod == old.module else self.modules[mod]
                for ref in self._module_scopes(info):
                    i = ids.get(ref)
                    if i is not None:
                        self._succ[True][i] = None
                        self._succ[False][i] = None
                        self._call_succ[i] = None
                        # (a method's decorators can change while the outline stays)
                        self._class_level_memo.pop(i, None)
                        self._builders.pop(i, None)
        if same_outline:
            return  # only the module's own calls changed: how names resolve did not
        for mod in observers:
            # (the memos of resolution are kept per asking module)
            self._resolve_cache.pop(mod, None)
            self._method_cache.pop(mod, None)
            for key in self._groups_in.pop(mod, ()):
                self._by_name_ids.pop(key, None)
            self._class_keys.pop(mod, None)
            self._no_class.pop(mod, None)
            self._visible.pop(mod, None)
        if _class_outline(old) != _class_outline(new):
            self._subclasses = None
            if self._refs is not None:
                # what an `isinstance` body waits for names the subclasses of its classes
                for i in self.guarded_scopes:
                    self._succ[True][i] = None
                    self._succ[False][i] = None
                    self._call_succ[i] = None
                self.guarded_scopes = set()
            self._builders = {}
            self._class_level_memo = {}
            self._bases_cache = {}
            self._module_class = {}

    def _patch_same_outline(self, old: ModuleInfo, new: ModuleInfo) -> None:
        self.modules[new.module] = new
        prefix = f"{new.module}." if new.module else ""
        for qual, fn in new.functions.items():
            fn.module = new.module
            self.functions[prefix + qual] = fn
        for qual, cls in new.classes.items():
            self.classes[prefix + qual] = (new, cls)

    def _patch_outline(self, old: ModuleInfo, new: ModuleInfo) -> None:
        name = new.module
        self.modules[name] = new
        prefix = f"{name}." if name else ""
        # functions, and the functions of each name in project order
        old_keys = self._function_keys(old)
        touched = {fn.name for fn in old.functions.values()} | {fn.name for fn in new.functions.values()}
        for key in old_keys:
            del self.functions[key]
        for qual, fn in new.functions.items():
            fn.module = new.module
            self.functions[prefix + qual] = fn
        gone = set(old_keys)
        ids = self.module_ids
        my_id = ids[name]
        for n in touched:
            keys = [k for k in self.by_name.get(n, ()) if k not in gone]
            at = 0
            while at < len(keys) and ids[self.functions[keys[at]].module] < my_id:
                at += 1
            keys[at:at] = [prefix + q for q, fn in new.functions.items() if fn.name == n]
            if keys:
                self.by_name[n] = keys
            else:
                self.by_name.pop(n, None)
            if self._named is not None:
                if keys:
                    self._named[n] = self._named_entry(keys)
                else:
                    self._named.pop(n, None)
        # classes, in project order (subclass lists follow it)
        if list(old.classes) != list(new.classes):
            self.classes = {
                (f"{info.module}." if info.module else "") + q: (info, c)
                for info in self.modules.values()
                for q, c in info.classes.items()
            }
        else:
            for qual, cls in new.classes.items():
                self.classes[prefix + qual] = (new, cls)
        # imports
        self._drop_import_names(old)
        self._add_import_names(new)
        self._set_star_imports(new)
        targets: set[str] = set()
        for imp in new.imports:
            if imp[5] != TYPING_SCOPE:  # (only type checkers import it)
                targets.update(self.import_targets(imp[0], new))
        before = set(self.imports_of.get(name, ()))
        self.imports_of[name] = tuple(targets) if targets else ()
        for mod in before - targets:
            self._imported_by.get(mod, set()).discard(name)
            if not new.is_test:
                self.importers.get(mod, set()).discard(name)
        for mod in targets - before:
            self._imported_by.setdefault(mod, set()).add(name)
            if not new.is_test:
                self.importers.setdefault(mod, set()).add(name)
        # the reach walk's numbering: scopes that went are never reached (new ones are
        # numbered when a walk meets them)
        if self._refs is not None:
            ids_of = self._ref_ids
            now = set(self._module_scopes(new))
            for ref in self._module_scopes(old):
                if ref not in now:
                    ids_of.pop(ref, None)

    def _events_changed(self, old: ModuleInfo, new: ModuleInfo) -> None:
        if self._refs is None:
            return
        ids = self._ref_ids
        for ref in self._module_scopes(new):
            i = ids.get(ref)
            if i is None:
                continue  # not numbered yet: its flag is set when it is
            events = new.events.get(ref[1], ())
            if self._has_events is not None:
                self._has_events[i] = 1 if events else 0
            if self._kinds is not None:
                self._kinds[i] = None  # (worked out again when asked: `scope_kinds`)

    def _forget_entries(self, old: ModuleInfo, new: ModuleInfo, observers: set[str]) -> None:
        """Forget whether the modules whose answer can change are entry points: the module
        itself, the modules it imports (before or after), and those whose answer read a
        module whose resolved calls were forgotten."""
        memo = self._entry_memo
        gone = {new.module}
        for info in (old, new):
            for imp in info.imports:
                gone.update(self.import_targets(imp[0], info))
        gone |= {m for m, reads in self._entry_reads.items() if not reads.isdisjoint(observers)}
        for mod in gone:
            memo.pop(mod, None)
            self._entry_reads.pop(mod, None)
