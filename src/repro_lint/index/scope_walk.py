"""The walk of a program through the call graph (part of `index.ProjectIndex`): scopes are
numbered as the walk first meets them, each scope's successors (the functions its calls
reach, the modules it imports) are worked out once and shared by every program, and a
program is the breadth-first order of the scopes its entry point reaches, framework hooks
included (`framework_reach`)."""

from __future__ import annotations

import sys
from typing import Callable, Iterable, Iterator, Optional

from repro_lint.index import framework_reach
from repro_lint.facts.walker.extractor import ISINSTANCE_BODIES
from repro_lint.facts.model import MAIN_SCOPE, MODULE_SCOPE, NAME_REF, REF_HANDED, SELF_CALL, Event, ModuleInfo, stored_summary
from repro_lint.index.program import Program

ScopeRef = tuple[str, str]  # (module name, scope name)
# a successor standing for "any project class may be built here" (`_call_successors`)
ANY_CLASS = "*"


class Guarded(tuple):
    """A successor that runs only on an object of certain classes (a call in the body of
    `if isinstance(config, LoraConfig):`): (the keys that mark one of those classes or a
    subclass built, `_wait_key`; the scope numbers the calls there reach)."""

    __slots__ = ()


class ScopeWalk:
    """Reach and programs over the index's call graph (`callees`, `scope_of`, `modules`, the
    tables `ProjectIndex.__init__` sets up)."""

    def reach(self, starts: Iterable[ScopeRef], include_imports: bool = True) -> list[ScopeRef]:
        """Scopes reachable from `starts`: called functions, callbacks, imported modules' top level."""
        refs = self._scope_refs()
        return [refs[i] for i in self._bfs(starts, include_imports)]

    def _scope_refs(self) -> list[ScopeRef]:
        """The scopes numbered so far: the walk marks numbers, not tuples. A scope is numbered
        when a walk first meets it (`_number`): a check of a few files in a large project
        meets a small part of its scopes, and a table of them all took 40 MB on 38,000 files.
        The lists below are indexed by these numbers and grow with them."""
        if self._refs is None:
            self._refs = []
            self._ref_ids = {}
            self._succ = {True: [], False: []}
            self._call_succ = []
            self._has_events = bytearray()
            self._kinds = []
            self.guarded_scopes: set = set()  # numbers of scopes with `Guarded` successors
        return self._refs

    def scope_refs(self) -> list[ScopeRef]:
        """The scopes numbered so far, by number (a program's `_event_ids` index it)."""
        return self._scope_refs()

    def scope_number(self, ref: ScopeRef) -> Optional[int]:
        """The number of a scope a walk has met (every scope of a program has one), or None."""
        return self._ref_ids.get(ref)

    def scope_numbers(self, refs: Iterable[ScopeRef]) -> list[int]:
        """The numbers of scopes a walk has met (a program's scopes: every one has one)."""
        return list(map(self._ref_ids.__getitem__, refs))

    def _number(self, ref: ScopeRef) -> Optional[int]:
        """The number of a scope, numbered now if new; None for a scope that does not exist
        (an unknown module or function)."""
        i = self._ref_ids.get(ref)
        if i is not None:
            return i
        mod, scope = ref
        info = self.modules.get(mod)
        if info is None or scope not in info.functions and scope != MODULE_SCOPE and scope != MAIN_SCOPE:
            return None
        refs = self._scope_refs()
        i = self._ref_ids[ref] = len(refs)
        refs.append(ref)
        self._succ[True].append(None)
        self._succ[False].append(None)
        self._call_succ.append(None)
        # whether it has events: from the outline while the body is not decoded
        if stored_summary(info) is not None:
            flag = scope in info.summary("event_scopes")
        else:
            flag = bool(info.events.get(scope))
        self._has_events.append(flag)  # type: ignore[union-attr]
        self._kinds.append(None)  # type: ignore[union-attr]
        return i

    def _bfs(self, starts: Iterable[ScopeRef], include_imports: bool, within: Optional[str] = None) -> list[int]:
        """Breadth-first order of the scope numbers reached from `starts` (each scope once,
        at its first discovery: the same order as queueing every edge and skipping repeats).
        With `within` (an entry module), only scopes of the modules it imports, directly or
        not (or its configs make it load): code of a module a program never imports does not
        run in it (a base class's `self.m()` reaches no override in another script)."""
        self._scope_refs()
        succ = self._succ[include_imports]
        groups = self._by_name_ids
        # a start can name a scope that does not exist (an unknown module or function)
        first = [i for i in map(self._number, starts) if i is not None]
        seen = bytearray(len(succ))
        # asked only of the scopes the walk meets (a table over every numbered scope, made for
        # each program, cost a large project time in the square of its size)
        outside = self._outside(within) if within is not None else None
        groups_done: set[tuple[str, str]] = set()
        queue: list[int] = []
        for i in first:
            if not seen[i]:
                seen[i] = 1
                queue.append(i)
        append = queue.append
        # a program's call by method name on an object of unknown class reaches a method only
        # once the program may have built an object that has it: the building method of its
        # class or of a subclass ran (or the class was called: `_inheriting_made`). Until then
        # the method waits under those classes' keys (`_builders_of`).
        waiting: dict = {}
        implied: dict = {}  # classes registered together: one built, the others may be
        fired: set = set()
        anything = False  # the program builds classes by name: any of them may be built

        def fire(key) -> None:
            fire_pair((key, None))

        def fire_pair(first: tuple) -> None:
            stack = [first]
            while stack:
                k, cls = stack.pop()
                if k in fired:
                    continue
                fired.add(k)
                # a class built by a registry the walk cannot follow: its building methods run
                building = () if cls is None else self._building_numbers(cls)
                if len(seen) < len(succ):
                    seen.extend(bytes(len(succ) - len(seen)))
                for y in (*waiting.pop(k, ()), *building):
                    if not seen[y]:
                        seen[y] = 1
                        if outside is None or not outside(y):
                            append(y)
                stack.extend(implied.pop(k, ()))

        pos = 0
        while pos < len(queue):
            i = queue[pos]
            pos += 1
            if i in waiting or i in implied:
                fire(i)
            items = succ[i]
            if items is None:
                items = succ[i] = self._successors(i, include_imports)
                if len(seen) < len(succ):  # scopes numbered just now
                    seen.extend(bytes(len(succ) - len(seen)))
            for x in items:
                cls = x.__class__
                if cls is int:
                    if not seen[x]:
                        seen[x] = 1
                        if outside is None or not outside(x):
                            append(x)
                elif cls is str:
                    if x is ANY_CLASS:
                        if not anything:
                            anything = True
                            for key in list(waiting):
                                fire(key)
                    elif x not in fired:
                        fire(x)
                elif cls is Guarded:
                    builders, targets = x
                    if len(seen) < len(succ):
                        seen.extend(bytes(len(succ) - len(seen)))
                    if outside is None or anything or any(b in fired or b.__class__ is int and seen[b] for b in builders):
                        for y in targets:
                            if not seen[y]:
                                seen[y] = 1
                                if outside is None or not outside(y):
                                    append(y)
                    else:
                        # an `isinstance` body: it runs once the program may hold such an object
                        for b in builders:
                            waiting.setdefault(b, []).extend(targets)
                elif cls is frozenset:
                    if outside is not None:
                        pairs = [(k, c) for k, c in zip(map(self._wait_key, x), x) if k is not None]
                        if len(seen) < len(succ):
                            seen.extend(bytes(len(succ) - len(seen)))
                        if any(k in fired or k.__class__ is int and seen[k] for k, _ in pairs):
                            for pair in pairs:
                                fire_pair(pair)
                        else:
                            for k, _ in pairs:
                                implied.setdefault(k, []).extend(pairs)
                elif x not in groups_done:
                    # every function of a method name: once queued, all of them are seen
                    groups_done.add(x)
                    own = self._own_classes(x) if len(x) == 3 else None
                    for y in groups[x]:
                        if not seen[y]:
                            if outside is not None and not anything and (own is None or self._class_of(y) not in own):
                                builders = self._builders_of(y)
                                if len(seen) < len(succ):  # building methods numbered just now
                                    seen.extend(bytes(len(succ) - len(seen)))
                                if builders and not any(b in fired or b.__class__ is int and seen[b] for b in builders):
                                    for b in builders:
                                        waiting.setdefault(b, []).append(y)
                                    continue
                            seen[y] = 1
                            if outside is None or not outside(y):
                                append(y)
                                if outside is not None:
                                    # a class method called on a class of unknown kind (from a
                                    # registry) may build any class it is inherited by
                                    for pair in self._class_level(y):
                                        fire_pair(pair)
        return queue

    def _builders_of(self, i: int) -> tuple:
        """What shows that a program may hold an object with method `i` (of its class, or of
        a subclass): the key (`_wait_key`) of each such class; () where one of those classes
        has no project building method (a library builds it: any program may hold one)."""
        hit = self._builders.get(i)
        if hit is not None:
            return hit
        cls_key = self._class_of(i)
        out: tuple = ()
        # a building method reached is the class being built (`Net(...)` called by a name a
        # star import brings): nothing to wait for
        building = self._refs[i][1].rpartition(".")[2] in self.m.building_order  # type: ignore[index,attr-defined]
        if cls_key is not None and cls_key in self.classes and not building and not self._runs_on_class(i):  # type: ignore[attr-defined]
            found: dict = {}
            for cls in (cls_key, *self.subclasses(cls_key)):  # type: ignore[attr-defined]
                key = self._wait_key(cls)
                if key is None:
                    found = {}
                    break
                found[key] = None
            out = tuple(found)
        self._builders[i] = out
        return out

    def _isinstance_builders(self, mod: ModuleInfo, scope: str, line: int) -> Optional[tuple]:
        """For a call on `line` in the body of an `isinstance` test naming project classes:
        the keys that mark one of them (or a subclass) built, the innermost such body's; None
        where no such test holds the line, or a class is one the index cannot see built."""
        best = None
        for first, last, names in mod.extra[ISINSTANCE_BODIES][scope]:
            if first <= line <= last and (best is None or first >= best[0]):
                best = (first, names)
        if best is None:
            return None
        found: dict = {}
        for name in best[1]:
            cls = self.class_key(name, mod)  # type: ignore[attr-defined]
            if cls is None:
                return None
            for c in (cls, *self.subclasses(cls)):  # type: ignore[attr-defined]
                key = self._wait_key(c)
                if key is None:
                    return None  # built where the walk cannot tell (a library builds it)
                found[key] = None
        return tuple(found)

    def _building_numbers(self, cls: str) -> tuple:
        """The scope numbers of the methods that run when the class is built."""
        found = (self._number(self.scope_of(k)) for k in self.class_methods(cls))  # type: ignore[attr-defined]
        return tuple(j for j in found if j is not None)

    def _runs_on_class(self, i: int) -> bool:
        """Whether a numbered method is a class method or static method: it runs on the class,
        not on an object of it, so no object needs to have been built."""
        mod, qual = self._refs[i]  # type: ignore[index]
        fn = self.modules[mod].functions.get(qual)
        return fn is not None and fn.class_name is not None and any(
            d.rpartition(".")[2] in ("classmethod", "staticmethod") for d in fn.decorators
        )

    def _class_level(self, i: int) -> tuple:
        """For a class method or static method: (`_wait_key`, class) of its class and of each
        subclass, the classes a call of it on a class of unknown kind may build; () for
        anything else."""
        hit = self._class_level_memo.get(i)
        if hit is not None:
            return hit
        out: tuple = ()
        cls_key = self._class_of(i)
        if cls_key is not None and cls_key in self.classes and self._runs_on_class(i):  # type: ignore[attr-defined]
            pairs = ((self._wait_key(c), c) for c in (cls_key, *self.subclasses(cls_key)))  # type: ignore[attr-defined]
            out = tuple((k, c) for k, c in pairs if k is not None)
        self._class_level_memo[i] = out
        return out

    def _wait_key(self, cls: str):
        """What marks a class built in a walk: the scope number of its own building method
        (the first of `class_methods`: reached when it is built, or by a subclass's `super()`),
        or its key where it inherits that method (`_inheriting_made` marks it where it is
        called); None where it has no project building method."""
        building = self.class_methods(cls)  # type: ignore[attr-defined]
        if not building:
            return None
        if building[0].rpartition(".")[0] == cls:
            return self._number(self.scope_of(building[0]))  # type: ignore[attr-defined]
        return sys.intern(cls)

    def _class_of(self, i: int) -> Optional[str]:
        """The class key of a numbered method (None for a function)."""
        mod, qual = self._refs[i]  # type: ignore[index]
        fn = self.modules[mod].functions.get(qual)
        if fn is None or fn.class_name is None:
            return None
        return f"{mod}.{fn.class_name}" if mod else fn.class_name

    def _own_classes(self, group: tuple) -> tuple:
        """For `self.m()` in a method: its class and the bases, whose methods run on any
        object the method runs on (an object of the class is there: no building needed)."""
        mod, marker = group[1], group[2]
        qual = marker[len(SELF_CALL):]
        return tuple(self.class_bases(f"{mod}.{qual}" if mod else qual))

    def _outside(self, entry: str) -> Callable[[int], bool]:
        """Whether a numbered scope's module is one the entry module does not see."""
        visible = self.visible_modules(entry)
        ids = self.module_ids
        refs = self._refs
        if type(visible) is tuple:
            members = frozenset(visible)
            return lambda i: ids[refs[i][0]] not in members  # type: ignore[index]
        return lambda i: not visible >> ids[refs[i][0]] & 1  # type: ignore[index,operator]

    def _successors(self, i: int, include_imports: bool) -> tuple:
        """What scope `i` leads to, in discovery order: scope numbers, and method names
        standing for all the functions of that name. Computed once per index: every program
        walks the same shared code again."""
        calls = self._call_succ[i]
        if calls is None:
            calls = self._call_succ[i] = self._call_successors(i)
        if not include_imports:
            return calls
        ref = self._refs[i]  # type: ignore[index]
        mod = self.modules[ref[0]]
        number = self._number
        out: dict = {}  # ordered and without repeats; a scope that does not exist is never reached
        if ref[1] in (MODULE_SCOPE, MAIN_SCOPE):
            for target in self.imports_of.get(ref[0], ()):
                out[number((target, MODULE_SCOPE))] = None
        else:
            # imports inside a function body run when it is called
            for imp in mod.imports:
                if imp[5] == ref[1]:
                    for target in self.import_targets(imp[0], mod):  # type: ignore[attr-defined]
                        out[number((target, MODULE_SCOPE))] = None
        if not out:
            return calls
        out.update(dict.fromkeys(calls))
        out.pop(None, None)
        return tuple(out)

    def _call_successors(self, i: int) -> tuple:
        """The part of `_successors` that the scope's calls (and a Hydra main's config) give."""
        ref = self._refs[i]  # type: ignore[index]
        mod = self.modules[ref[0]]
        ids = self._ref_ids
        number = self._number
        out: dict = {}
        guards = mod.extra.get(ISINSTANCE_BODIES, {}).get(ref[1])
        for call, keys in self.callees(mod, ref[1]):
            target = call[0]
            if (target is None or target == NAME_REF) and keys or len(keys) > 1 and target.startswith(SELF_CALL):
                # a call by method name fans out to many functions, the same for every
                # caller in this module: the walk expands each group once (and a program's
                # walk only to methods of classes it may have built); `self.m()` reaches the
                # overrides of the subclasses, built or not
                group = (call[1], ref[0]) if target is None or target == NAME_REF else (call[1], ref[0], target)
                if group not in self._by_name_ids:
                    members = (number(self.scope_of(k)) for k in keys)
                    self._by_name_ids[group] = tuple(dict.fromkeys(j for j in members if j is not None))
                out[group] = None
            else:
                builders = self._isinstance_builders(mod, ref[1], call[2]) if guards is not None else None
                if builders is not None:
                    found = (number(self.scope_of(k)) for k in keys)
                    out[Guarded((builders, tuple(j for j in found if j is not None)))] = None
                    self.guarded_scopes.add(i)
                else:
                    for k in keys:
                        r = self.scope_of(k)
                        j = ids.get(r)
                        out[number(r) if j is None else j] = None
                if keys and target is not None and target[0] != "@":
                    for cls in self._inheriting_made(target, mod):
                        out[cls] = None
        if ref[1] == MODULE_SCOPE:
            for group in self._registered_together(mod):
                out[group] = None
        if any(ev.kind == "byname" and self._builds_project_class(ev, mod) for ev in mod.events.get(ref[1], ())):
            # a class built from a string the index does not read (`instantiate_from_config`,
            # `construct_class_by_name`): any class may have been built
            out[ANY_CLASS] = None
        if ref[1] in mod.hydra_mains:
            for k in self.hydra_targets(mod, mod.functions[ref[1]]):
                out[number(self.scope_of(k))] = None
            for name in self.config_names(mod, mod.functions[ref[1]]):  # type: ignore[attr-defined]
                for cls in self._inheriting_made(name, mod):
                    out[cls] = None
        out.pop(None, None)
        return tuple(out)

    def _builds_project_class(self, ev: Event, mod: ModuleInfo) -> bool:
        """Whether a "byname" event may build a project class the walk cannot see: Hydra's
        factories are followed through the configs (`hydra_targets`); `getattr(module, name)`
        builds what that module holds, a project class only for a project module."""
        api = ev.data["api"]
        if api in self.m.hydra_factories:  # type: ignore[attr-defined]
            return False
        if api == "getattr":
            module = ev.data.get("module")
            return bool(module) and self.module_of(module, mod) is not None  # type: ignore[attr-defined]
        return True

    def _registered_together(self, mod: ModuleInfo) -> Iterator[frozenset]:
        """The project classes a module's top level hands together to a project function
        (`register_method(name="wave", config_cls=WaveConfig, model_cls=WaveModel)`): the
        registry builds the one of them that goes with the other the program built."""
        together: dict = {}
        for call in mod.calls.get(MODULE_SCOPE, ()):
            how = call[1]
            target = call[0]
            if how is None or how[:8] != REF_HANDED or target is None or target[0] == "@":
                continue
            cls = self.class_key(target, mod)  # type: ignore[attr-defined]
            if cls is not None and self.resolve(how[8:], mod):  # type: ignore[attr-defined]
                together.setdefault((call[2], how), []).append(cls)
        for classes in together.values():
            if len(classes) > 1:
                yield frozenset(classes)

    def _inheriting_made(self, target: str, mod: ModuleInfo) -> Iterator[str]:
        """The classes a call of `target` builds (the class called, each class of a dict of
        them called by item, the class whose method is called on it: `Model.from_config(...)`)
        that have no building method of their own: a walk marks them built (a successor that is
        a class key), as reaching their base's `__init__` does not tell them from its other
        subclasses."""
        cls = self.class_key(target, mod)  # type: ignore[attr-defined]
        found = [cls] if cls is not None else [*self.registry_classes(target, mod)]  # type: ignore[attr-defined]
        if not found and "." in target:
            owner = self.class_key(target.rpartition(".")[0], mod)  # type: ignore[attr-defined]
            if owner is not None and self._called_on_class(target, mod):
                found = [owner]
        for cls in found:
            building = self.class_methods(cls)  # type: ignore[attr-defined]
            if building and building[0].rpartition(".")[0] != cls:
                yield sys.intern(cls)

    def _called_on_class(self, target: str, mod: ModuleInfo) -> bool:
        """Whether `Owner.method(...)` runs a class method or static method (which may build
        the class: `Model.from_config(cfg)`), not a method called with an explicit object
        (`LoraModel._create_and_replace(self, config)` builds nothing)."""
        keys = self.resolve(target, mod)  # type: ignore[attr-defined]
        if not keys:
            return True
        for key in keys:
            fn = self.functions.get(key)  # type: ignore[attr-defined]
            if fn is None or fn.class_name is None or any(d.rpartition(".")[2] in ("classmethod", "staticmethod") for d in fn.decorators):
                return True
        return False

    def program(self, entry: ModuleInfo) -> "Program":
        starts: list[ScopeRef] = [(entry.module, MODULE_SCOPE), (entry.module, MAIN_SCOPE)]
        starts += [(entry.module, q) for q in entry.hydra_mains]
        order = self._bfs(starts, True, entry.module)
        flags = self._event_flags()
        event_ids = [i for i in order if flags[i]]
        # frameworks that run project hooks (`trainer.fit`): their hooks are reached too,
        # and what those reach (a hook can build more classes with hooks of their own)
        hooks: list[ScopeRef] = []
        for _ in range(4):
            more = framework_reach.hook_starts(self, order, event_ids)
            if not more:
                break
            hooks += more
            order = self._bfs([*(self._refs[i] for i in order), *more], True, entry.module)  # type: ignore[index]
            event_ids = [i for i in order if flags[i]]
        program = Program.walked(self, entry, order, event_ids)
        program.hook_starts = tuple(hooks)
        return program

    def kind_bits(self, kinds: Iterable[str]) -> int:
        """The bit set of event kinds `kinds` (a bit for each kind, given as first asked)."""
        bits = self._kind_bits
        out = 0
        for kind in kinds:
            bit = bits.get(kind)
            if bit is None:
                bit = bits[kind] = 1 << len(bits)
            out |= bit
        return out

    def scope_kinds(self, i: int) -> int:
        """The kinds of the events of scope number `i`, as a bit set (`kind_bits`). Only the
        kinds are kept per scope, not its events grouped by kind: a program's questions
        filter the few events of each scope it reaches (the groups took 15 MB on 38,000
        files). Worked out when first asked: a program reads the bodies it reaches only."""
        self._scope_refs()
        mask = self._kinds[i]  # type: ignore[index]
        if mask is None:
            mod, scope = self._refs[i]  # type: ignore[index]
            mask = self.kind_bits({ev.kind: None for ev in self.modules[mod].events.get(scope, ())})
            # (one int object for each set of kinds met)
            mask = self._kinds[i] = self._kind_sets.setdefault(mask, mask)  # type: ignore[index]
        return mask

    def kind_events(self, i: int, kind: str) -> "list[Event]":
        """The events of kind `kind` of scope number `i`, in the scope's order."""
        bit = self.kind_bits((kind,))
        mask = self.scope_kinds(i)
        if not mask & bit:
            return []
        mod, scope = self._refs[i]  # type: ignore[index]
        events = self.modules[mod].events.get(scope, ())
        return list(events) if mask == bit else [ev for ev in events if ev.kind == kind]

    def _event_flags(self) -> bytearray:
        """1 for each numbered scope that has events (set when numbered): most scopes have
        none, and a program's event queries then skip them without looking them up."""
        self._scope_refs()
        return self._has_events  # type: ignore[return-value]
