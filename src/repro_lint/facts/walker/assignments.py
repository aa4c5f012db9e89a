"""What the extraction walk records of assignments (part of `extract.Extractor`): the names
a function binds (for resolution), what a drawn value is kept under (the idiom that draws a
seed to seed with; a value that only picks a network port is no draw), objects stored in
containers under a literal key, methods bound under another name, and the value each local
name was last bound to, which hooks ask about (`receiver_root`). The assignment hooks of the
rule families run after the core facts.
"""

from __future__ import annotations

import ast
from typing import Optional

from repro_lint.facts.model import INSTANCE, METHOD_ALIASES, STORED_MADE
from repro_lint.facts.walker.calls import parameter_of, r_dotted
from repro_lint.facts.walker.value_flow import value_end
from repro_lint.facts.walker.names import UNKNOWN
from repro_lint.facts.syntax import NOT_LITERAL, literal, names_in

_Name = ast.Name
_Constant = ast.Constant
_Attribute = ast.Attribute
# ModuleInfo.extra key: objects built into a container under a literal key, by the position
# of the building call: (container name, key) (calls of such items: `calls.ITEM_CALLS`)
STORES = "stored_objects"
# steps `receiver_root` follows through names, attributes and calls (a name bound to itself
# ends there)
_MAX_VALUE_STEPS = 16


class AssignmentFacts:
    def _bind_targets(self, target: ast.AST) -> None:
        if self.func is None:
            return  # module-level rebinding of names is left to the prebind pass
        if type(target) is _Name:  # the commonest target: `for x in ...`, `with ... as f`
            self.r.scope.bindings[target.id] = UNKNOWN  # type: ignore[attr-defined]
            if self.local_values:
                self.local_values.pop(target.id, None)  # type: ignore[attr-defined]
            return
        for sub in names_in(target):
            self.r.bind(sub.id, None)
            self.local_values.pop(sub.id, None)

    def _visit_assign(self, stmt: ast.stmt) -> None:
        value = stmt.value  # type: ignore[attr-defined]
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]  # type: ignore[attr-defined]
        if value is not None:
            tv = type(value)
            if tv is ast.Call:
                self.value_call = value
            elif tv is ast.Constant and value.value.__class__ is str and value.value[:4] == "cuda":  # type: ignore[attr-defined]
                self._uses_device()  # type: ignore[attr-defined]  # (`device = "cuda"`)
            self._visit_header(value)
        for target in targets:
            self._visit_target(target, value, stmt)
        for hook in self.assign_hooks:  # (`hooks.hook_set`)
            hook(self, stmt)

    def _visit_target(self, target: ast.AST, value: Optional[ast.AST], stmt: ast.stmt) -> None:
        tt = type(target)
        tv = type(value)
        if tt is _Name:
            if self.func is not None:
                qual = self.r.qualify(value) if tv is _Name or tv is _Attribute else None
                self.r.scope.bindings[target.id] = qual or UNKNOWN  # type: ignore[attr-defined]
                if tv is _Constant or tv is ast.UnaryOp:  # what `literal` can read
                    lit = literal(value)
                    if lit is not NOT_LITERAL:
                        self.info.extra.setdefault("local_constants", {}).setdefault(self.scope, {})[target.id] = lit  # type: ignore[attr-defined]
            if tv is ast.Call:
                qual = self.callee_of(value)  # type: ignore[arg-type]
                if qual:
                    if self.m.is_optimizer(qual):
                        self.optimizer_names.add(target.id)  # type: ignore[attr-defined]
                    elif qual.split(".", 1)[0] not in self.m.external_roots:
                        self.call_results[target.id] = qual  # type: ignore[attr-defined]
            elif self.call_results:
                self.call_results.pop(target.id, None)  # type: ignore[attr-defined]
            self.local_values[target.id] = value  # type: ignore[attr-defined, assignment]
            if value is not None and tv is not _Name and tv is not _Constant:
                events = self.info.events.get(self.scope)
                if events and events[-1].line >= value.lineno:  # (most values record no event)
                    drawn = self._mark_assigned(value, target.id)  # type: ignore[attr-defined]
                    if drawn and self.func_node is not None and type(stmt) is ast.Assign and len(stmt.targets) == 1:
                        self._draws_end(drawn, target.id, stmt)  # type: ignore[attr-defined]
                if tv is ast.Dict:  # `postprocessors = {"bbox": PostProcess()}`
                    for k, v in zip(value.keys, value.values):  # type: ignore[union-attr]
                        if type(v) is ast.Call and k is not None:
                            self._stored(target, k, v)
                    quals = self._callables_in(value)  # type: ignore[arg-type]
                    if quals:
                        self.local_registries[(self.scope, target.id)] = quals  # type: ignore[attr-defined]
                        return
            if self.local_registries:
                self.local_registries.pop((self.scope, target.id), None)  # type: ignore[attr-defined]
        elif isinstance(target, ast.Attribute):
            fn = self.func
            if fn is not None and fn.class_name is not None:
                if tv is _Attribute:
                    self._method_alias(target, value)  # type: ignore[arg-type]
                if value is not None and type(target.value) is _Name and fn.params and target.value.id == fn.params[0]:
                    self._attribute_made(target.attr, value)
            if value is not None and tv is not _Name and tv is not _Constant:
                dotted = r_dotted(target)
                if dotted:
                    self._mark_assigned(value, dotted)
            qual = self.r.qualify(target)
            if qual is None:
                return
            if qual in self.m.flags and not isinstance(stmt, ast.AugAssign):
                lit = literal(value)
                self.add("flag", target, name=qual, value=None if lit is NOT_LITERAL else lit, assign=self.span(stmt))
        elif isinstance(target, ast.Subscript):
            if tv is ast.Call:  # `postprocessors["segm"] = PostProcessSegm()`
                self._stored(target.value, target.slice, value)  # type: ignore[arg-type]
                if self.callee_of(value) in self.m.parameter_constructors:  # type: ignore[arg-type]
                    # `self.lora_A[name] = nn.Parameter(torch.randn(r, n))`: an initial value
                    self._mark_initial(value)
            qual = self.r.qualify(target.value)
            if qual == "os.environ":
                key = literal(target.slice)
                if isinstance(key, str):
                    if value is not None and self.m.is_network_destination(key):
                        self._mark_assigned(value, key)
                    lit = literal(value)
                    self.add("env", target, var=key, value=None if lit is NOT_LITERAL else lit, how="item", value_span=self.span(value) if value is not None else None)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._visit_target(elt, None, stmt)
            if type(value) is ast.Call:  # `fig, ax = plt.subplots()`: parts of what it returned
                for elt in target.elts:
                    if type(elt) is _Name:
                        self.local_values[elt.id] = value  # type: ignore[attr-defined]

    def _attribute_made(self, attr: str, value: ast.AST) -> None:
        """`self.ema = EMA(model)` in a method: what made the object the instances of the class
        keep under that name (`self.ema.update()` in its methods is looked up there); an
        attribute bound to objects of different makers is unknown."""
        key = (self.scope.rpartition(".")[0], attr)
        made = self._receiver(value)  # type: ignore[attr-defined]
        before = self.attribute_makers.get(key, made)
        self.attribute_makers[key] = made if before == made else None  # type: ignore[attr-defined]

    def receiver_root(self, node: Optional[ast.AST]) -> Optional[str]:
        """The top-level package whose call made the value of `node` (`np.arange(6).cumsum`,
        `df["a"]` with `df = pd.DataFrame(...)`, `ax` with `fig, ax = plt.subplots()`: numpy,
        pandas, matplotlib), as far as the scope shows; None when unknown (a parameter; a
        project function's result gives its package's name)."""
        for _ in range(_MAX_VALUE_STEPS):
            t = type(node)
            if t is ast.Call:
                qual = self.callee_of(node)  # type: ignore[arg-type]
                if qual:
                    return qual.split(".", 1)[0]
                node = node.func  # type: ignore[attr-defined]  (a method of a value: its owner)
            elif t is _Attribute or t is ast.Subscript:
                node = node.value  # type: ignore[attr-defined]
            elif t is _Name:
                node = self.local_values.get(node.id)  # type: ignore[attr-defined]
            else:
                return None
        return None

    def _method_alias(self, target: ast.Attribute, value: ast.Attribute) -> None:
        """`self.train_dataloader = self._train_dataloader` in a method: the class's method bound
        under another name, which is how a framework calls it (`framework_reach.hook_starts`)."""
        params = self.func.params  # type: ignore[union-attr]
        me = params[0] if params else None
        recv, inner = target.value, value.value
        if type(recv) is not _Name or type(inner) is not _Name or recv.id != me or inner.id != me:  # type: ignore[attr-defined]
            return
        cls_qual = self.scope.rpartition(".")[0]
        cls = self.info.classes.get(cls_qual)
        if cls is not None and value.attr in cls.methods and target.attr not in cls.methods:
            self.info.extra.setdefault(METHOD_ALIASES, {}).setdefault(cls_qual, []).append((target.attr, value.attr))

    def _stored(self, container: ast.AST, key: ast.AST, call: ast.Call) -> None:
        """An object built by `call` kept under a literal key of a container: it runs (its
        `forward`, `__call__`) where that container's item is called (see `item calls`)."""
        name = container.attr if type(container) is _Attribute else container.id if type(container) is _Name else None  # type: ignore[attr-defined]
        key_value = literal(key)
        if name and isinstance(key_value, str):
            self.info.extra.setdefault(STORES, {})[(call.lineno, self.col(call.lineno, call.col_offset))] = (name, key_value)
            made = self._receiver(call)  # type: ignore[attr-defined]
            if made is not None and made.startswith(INSTANCE):
                self.info.extra.setdefault(STORED_MADE, []).append((name, key_value, made[len(INSTANCE):]))

    def _mark_initial(self, value: ast.AST) -> None:
        """The draws in `value`, a parameter constructor's call, make a parameter's initial value."""
        events = self.info.events.get(self.scope)
        line = value.lineno  # type: ignore[attr-defined]
        if not events or events[-1].line < line:
            return
        start = (line, self.col(line, value.col_offset))  # type: ignore[attr-defined]
        end_line = value.end_lineno or line  # type: ignore[attr-defined]
        end = (end_line, self.col(end_line, value.end_col_offset or 0))  # type: ignore[attr-defined]
        for ev in reversed(events):
            if ev.line < line:
                break
            if ev.kind == "draw" and start <= (ev.line, ev.col) <= end:
                ev.data["initialises"] = True

    def _draws_end(self, drawn: list, name: str, stmt: ast.Assign) -> None:
        """Draws kept in a local variable whose value the function only copies into a module's
        parameter (its initial value) or only hands to calls that name or trace (no draw: spec,
        "Precision on large repositories" 9)."""
        end = value_end(self.func_node.body, name, stmt, self._value_use, self._library_call)  # type: ignore[attr-defined]
        if end == "parameter":
            for ev in drawn:
                ev.data["initialises"] = True
        elif end == "naming":
            events = self.info.events[self.scope]
            gone = {id(ev) for ev in drawn}
            events[:] = [ev for ev in events if id(ev) not in gone]

    def _value_use(self, call: ast.Call) -> Optional[str]:
        func = call.func
        m = self.m
        if type(func) is _Attribute and func.attr in m.parameter_copy_methods and parameter_of(func.value, m.parameter_attributes):
            return "parameter"
        qual = self.r.qualify(func)
        if qual in m.parameter_constructors:
            return "parameter"
        return "naming" if qual in m.naming_sinks else None

    def _library_call(self, call: ast.Call) -> bool:
        qual = self.r.qualify(call.func)
        return qual is not None and qual.split(".", 1)[0] in self.m.external_roots

    def _mark_assigned(self, value: ast.AST, name: str) -> list:
        """A drawn value kept in `name` (a variable or `opt.seed`): for the idiom that draws a
        seed and then seeds with it; no draw for a port; a parameter's initial value. The
        draws it keeps."""
        events = self.info.events.get(self.scope)
        line = value.lineno  # type: ignore[attr-defined]
        drawn: list = []
        if not events or events[-1].line < line:
            return drawn  # no event in this statement's value
        start = (line, self.col(line, value.col_offset))  # type: ignore[attr-defined]
        end_line = value.end_lineno or line  # type: ignore[attr-defined]
        end = (end_line, self.col(end_line, value.end_col_offset or 0))  # type: ignore[attr-defined]
        # a value that picks a port or address (`MASTER_PORT`, `args.dist_url`): its draws
        # change no result, and are not draws of the program (catalog `network-destinations`)
        network = self.m.is_network_destination(name)
        # a parameter's initial value (`self.pos = nn.Parameter(torch.randn(n, d) * scale)`):
        # what a program that loads saved parameters over it does not depend on
        initial = type(value) is ast.Call and self.callee_of(value) in self.m.parameter_constructors  # type: ignore[arg-type]
        for i in range(len(events) - 1, -1, -1):
            ev = events[i]
            if ev.line < line:
                break  # events are recorded in statement order: the rest come before
            if (ev.kind == "draw" or ev.kind == "gen") and start <= (ev.line, ev.col) <= end:
                if network and ev.kind == "draw":
                    del events[i]
                    continue
                ev.data["assigned"] = name
                if ev.kind == "draw":
                    drawn.append(ev)
                    if initial:
                        ev.data["initialises"] = True
        return drawn
