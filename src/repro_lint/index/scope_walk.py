"""The walk of a program through the call graph (part of `index.ProjectIndex`): scopes are
numbered as the walk first meets them, each scope's successors (the functions its calls
reach, the modules it imports) are worked out once and shared by every program, and a
program is the breadth-first order of the scopes its entry point reaches, framework hooks
included (`framework_reach`)."""

from __future__ import annotations

from typing import Callable, Iterable, Optional

from repro_lint.index import framework_reach
from repro_lint.facts.model import MAIN_SCOPE, MODULE_SCOPE, NAME_REF, Event, ModuleInfo, stored_summary
from repro_lint.index.program import Program

ScopeRef = tuple[str, str]  # (module name, scope name)


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
            self._by_kind = []
        return self._refs

    def scope_number(self, ref: ScopeRef) -> Optional[int]:
        """The number of a scope a walk has met (every scope of a program has one), or None."""
        return self._ref_ids.get(ref)

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
        stored = stored_summary(info)
        if stored is not None and "event_scopes" in stored:
            flag = scope in stored["event_scopes"]
        else:
            flag = bool(info.events.get(scope))
        self._has_events.append(flag)  # type: ignore[union-attr]
        self._by_kind.append(None)  # type: ignore[union-attr]
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
        pos = 0
        while pos < len(queue):
            i = queue[pos]
            pos += 1
            items = succ[i]
            if items is None:
                items = succ[i] = self._successors(i, include_imports)
                if len(seen) < len(succ):  # scopes numbered just now
                    seen.extend(bytes(len(succ) - len(seen)))
            for x in items:
                if x.__class__ is int:
                    if not seen[x]:
                        seen[x] = 1
                        if outside is None or not outside(x):
                            append(x)
                elif x not in groups_done:
                    # every function of a method name: once queued, all of them are seen
                    groups_done.add(x)
                    for y in groups[x]:
                        if not seen[y]:
                            seen[y] = 1
                            if outside is None or not outside(y):
                                append(y)
        return queue

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
        for call, keys in self.callees(mod, ref[1]):
            if (call[0] is None or call[0] == NAME_REF) and len(keys) > 1:
                # a call by method name fans out to many functions, the same for every
                # caller in this module: the walk expands each group once
                group = (call[1], ref[0])
                if group not in self._by_name_ids:
                    members = (number(self.scope_of(k)) for k in keys)
                    self._by_name_ids[group] = tuple(dict.fromkeys(j for j in members if j is not None))
                out[group] = None
            else:
                for k in keys:
                    r = self.scope_of(k)
                    j = ids.get(r)
                    out[number(r) if j is None else j] = None
        if ref[1] in mod.hydra_mains:
            for k in self.hydra_targets(mod, mod.functions[ref[1]]):
                out[number(self.scope_of(k))] = None
        out.pop(None, None)
        return tuple(out)

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
        refs = self._refs
        program = Program(self, entry, [refs[i] for i in order])  # type: ignore[index]
        program._event_ids = event_ids
        program.hook_starts = tuple(hooks)
        return program

    def _events_by_kind(self) -> list:
        """For each numbered scope, its events grouped by kind (source order kept), or None
        until `kind_groups` is asked for it: a program reads the bodies it reaches only."""
        self._scope_refs()
        return self._by_kind  # type: ignore[return-value]

    def kind_groups(self, i: int) -> "dict[str, list[Event] | tuple[Event, ...]]":
        """The events of scope number `i` grouped by kind (source order kept)."""
        by_kind = self._events_by_kind()
        groups = by_kind[i]
        if groups is None:
            mod, scope = self._refs[i]  # type: ignore[index]
            lists: dict[str, list[Event]] = {}
            for ev in self.modules[mod].events.get(scope, ()):
                lists.setdefault(ev.kind, []).append(ev)
            # (tuples: a list keeps room to grow, and one is kept per kind of every scope)
            groups = {kind: tuple(evs) for kind, evs in lists.items()}
            by_kind[i] = groups
        return groups

    def _event_flags(self) -> bytearray:
        """1 for each numbered scope that has events (set when numbered): most scopes have
        none, and a program's event queries then skip them without looking them up."""
        self._scope_refs()
        return self._has_events  # type: ignore[return-value]
