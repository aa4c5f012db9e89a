"""What the extraction walk records of each call (part of `extract.Extractor`).

Every call of a project passes through `CallFacts._visit_call`: its callee is resolved, it is
recorded for the call graph (or as a callback handed over), and calls of catalog APIs become
events (draws, seeds, generators, determinism switches, environment variables) before the
rule families' call hooks run. The methods read the walk's state (`self.r`, `self.scope`,
`self.func`, ...) that `Extractor` keeps.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any, Optional

from repro_lint.facts.hooks import LITERAL_TYPES
from repro_lint.facts.model import DEVICE_SCOPES, HANDED, HANDED_SLOTS, INSTANCE, PARAM_CALLS, ITEM, LIBRARY, MODULE_SCOPE, NAME_REF, REF_CALL, REF_HANDED, REF_WORKER, RETURNED, SELF_CALL, SELF_REF, SUPER_CALL
from repro_lint.facts.syntax import NOT_LITERAL, get_arg, has_kwargs, literal

_Name = ast.Name
_Constant = ast.Constant
_Attribute = ast.Attribute
_NO_NAMES: frozenset = frozenset()
_SELF_NAMES = ("self", "cls")
_BUILTINS = frozenset(dir(builtins))
class _EveryRoot:
    """A set of top-level names that holds every name (`x in _EVERY_ROOT` is always True)."""

    def __contains__(self, item: object) -> bool:
        return True


_EVERY_ROOT = _EveryRoot()
# arguments that hold objects handed over with them (`nn.ModuleList([Block(), Block()])`)
_CONTAINERS = (ast.List, ast.Tuple, ast.Set, ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.Starred)
# receivers whose values are builtin objects (literals, displays, comprehensions, f-strings)
_BUILTIN_VALUES = (
    ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set,
    ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp, ast.BinOp, ast.Compare, ast.BoolOp,
)
# steps `_receiver` follows through names, attributes and calls
_MAX_RECEIVER_STEPS = 16
# ModuleInfo.extra key: calls of items of a container: (scope, container name, key, line, no_grad)
ITEM_CALLS = "item_calls"
# ModuleInfo.extra key: objects seeded by a method after they are made: (owner, dotted name, method)
RESEEDED = "reseeded"


# device values that keep the work on the host
_HOST = frozenset(["cpu", "meta", None])


def names_cuda(node: ast.AST) -> bool:
    """Whether a constant names a CUDA device (`"cuda"`, `"cuda:1"`)."""
    v = node.value  # type: ignore[attr-defined]
    return v.__class__ is str and v[:4] == "cuda"


def reseed_owner(scope: str, fn: Any, dotted: str) -> str:
    """Where an object kept under `dotted` lives, for `RESEEDED`: the class for `self.x` in
    one of its methods, else the scope."""
    return scope.rpartition(".")[0] if fn is not None and fn.class_name is not None and dotted.startswith("self.") else scope


def stars_here(ex: Any) -> bool:
    """Whether the module has `from m import *` (an unbound builtin's name may be m's)."""
    return bool(ex.r.star_imports)


def r_dotted(node: ast.AST) -> Optional[str]:
    """`opt.seed`: the dotted text of a Name/Attribute chain, else None."""
    parts: list[str] = []
    while type(node) is _Attribute:
        parts.append(node.attr)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if type(node) is not _Name:
        return None
    parts.append(node.id)  # type: ignore[attr-defined]
    return ".".join(reversed(parts))


class CallFacts:
    def _seeding_base(self, bases: list[str]):
        """The seeder spec of a base class whose construction seeds (`build`), if any."""
        for base in bases:
            spec = self.m.seeders.get(base)
            if spec is not None and spec.build:
                return spec
        return None

    @staticmethod
    def _build_seed(spec) -> dict:
        """A seed made by building a framework object: from the framework's default seed unless
        the user gives one (which `seed_arguments` records), so not the user's intent."""
        return dict(sources=spec.sources, api=spec.name, expr=None, names=_NO_NAMES, framework=True, heuristic=False, kwargs={}, intent=False)

    # -- calls -------------------------------------------------------------------
    def _visit_call(self, node: ast.Call) -> None:
        # runs for every call of a project: name resolution, the call record and the hook
        # dispatch are written out here rather than called
        func = node.func
        tf = type(func)
        qual: Optional[str] = None
        local = False  # a plain name bound in a function to something unknown (a variable)
        if tf is _Name:
            last: Optional[str] = func.id  # type: ignore[attr-defined]
            scope = self.r.scope
            while scope is not None:  # Scope.lookup, written out
                qual = scope.bindings.get(last)  # type: ignore[arg-type]
                if qual is not None:
                    local = not qual
                    qual = qual or None  # UNKNOWN shadows but resolves to nothing
                    break
                scope = scope.parent
            if qual is None and not local and self.r.star_imports:
                qual = self._star_catalog_qual(last)  # type: ignore[arg-type]
        elif tf is _Attribute:
            last = func.attr  # type: ignore[attr-defined]
            base = func.value  # type: ignore[attr-defined]
            if type(base) is _Name:  # `obj.method(...)`, the commonest call
                name = base.id  # type: ignore[attr-defined]
                scope = self.r.scope
                while scope is not None:  # Scope.lookup, written out
                    qual = scope.bindings.get(name)
                    if qual is not None:
                        qual = qual + "." + last if qual else None  # type: ignore[operator]
                        break
                    scope = scope.parent
                else:  # an unbound name
                    if self.r.star_imports:
                        qual = self._star_catalog_qual(f"{name}.{last}")
            elif type(base) is _Attribute:
                qual = self.r.qualify(func)
        else:
            last = None
            if tf is ast.Subscript:  # `postprocessors["segm"](...)`: an item of a container called
                container = func.value  # type: ignore[attr-defined]
                name = container.attr if type(container) is _Attribute else container.id if type(container) is _Name else None
                key = literal(func.slice)  # type: ignore[attr-defined]
                if name and isinstance(key, str):
                    self.info.extra.setdefault(ITEM_CALLS, []).append((self.scope, name, key, node.lineno, bool(self.no_grad)))
                    self.add_call(f"{ITEM}{name}[{key}]", "__call__", node)
                self._registry_call(container, node)  # type: ignore[attr-defined]
            elif tf is ast.Call:  # `get_dataset_fn(kind)(args)`: what the inner call returns is called
                inner = self.r.qualify(func.func)  # type: ignore[attr-defined]
                if inner and inner.split(".", 1)[0] not in self.m.external_roots:
                    self.add_call(RETURNED + inner, None, node)
        if node is self.value_call:
            self.value_qual = qual
        m = self.m
        if tf is _Attribute and (last == "cuda" or last == "to" and self._moves(node)) or qual is not None and qual.startswith(m.device_prefixes):
            self._uses_device()
        if qual is not None:
            self._resolved_call(node, qual)
            last = qual.rpartition(".")[2]
        elif tf is _Attribute:
            method = last
            facts = m.method_facts.get(method)  # (one lookup: most methods are neither)
            if facts is not None:
                src, seeder = facts
                if src is not None and get_arg(node, -1, "generator") is None:
                    ev = self.add("draw", node, source=src, api=f"Tensor.{method}", assigned=None)
                    if self._in_training_mode(node):
                        ev.data["train_mode"] = True
                    if method[-1] == "_" and parameter_of(func.value, m.parameter_attributes):  # type: ignore[attr-defined]
                        ev.data["initialises"] = True  # a parameter's initial value, drawn in place
                if seeder is not None:  # `fabric.seed_everything(seed)`
                    self._seed_event(node, seeder, seeder.name)
            if method in m.reseed_method_names and (node.args or node.keywords):
                self._reseeded(func.value, method)  # type: ignore[attr-defined]
            if method in m.train_methods and not self._fresh_tensor(func.value):  # type: ignore[attr-defined]
                self.add("train", node, what=method)
                self._torch_use(node)
            elif method == "step":
                recv = func.value  # type: ignore[attr-defined]
                name = recv.id if type(recv) is _Name else recv.attr if type(recv) is _Attribute else ""
                if name in self.optimizer_names or any(h in name.lower() for h in m.optimizer_hints):
                    self.add("train", node, what="step")
            marker = self.method_marker(func)  # type: ignore[arg-type]
            if marker is not None and marker.startswith(SELF_CALL):
                # `self.encoder(x)`: an object the class keeps there is called
                made = self._receiver(func)  # type: ignore[arg-type]
                if made is not None and made is not LIBRARY:
                    for calling in m.calling_order:
                        self.add_call(made, calling, node)
            if method == "__init__" and marker is not None and marker.startswith(SUPER_CALL):
                cls = self.info.classes.get(marker[len(SUPER_CALL):])
                build = self._seeding_base(cls.bases) if cls is not None else None
                if build is not None:  # `super().__init__(...)` of transformers' Trainer seeds
                    self.add("seed", node, **self._build_seed(build))
            if marker is not LIBRARY or method in m.asked_methods:
                self.add_call(marker, method, node)
        elif tf is _Name:
            # an unbound plain name (a builtin, a star import or an undefined helper), or a
            # variable: only the former can be a seeding helper the index does not know
            if local:
                # a variable called: the object a call made (`net(x)` after `net = Net()`)
                # runs its calling methods; anything else reaches nothing by its name alone
                fn = self.func
                if fn is not None and last in fn.params:
                    # a parameter called: what a caller hands over there runs here
                    called = self.info.extra.setdefault(PARAM_CALLS, {}).setdefault(self.scope, [])
                    if last not in called:
                        called.append(last)
                made = self._receiver(func)
                if made is not None and made is not LIBRARY:
                    for calling in m.calling_order:
                        self.add_call(made, calling, node)
            elif last in self.module_values:
                # an object the module keeps at its top level (`net = Net()`, then `net(x)`)
                made = self._receiver(func)
                if made is not None and made is not LIBRARY:
                    for calling in m.calling_order:
                        self.add_call(made, calling, node)
            else:
                if m.looks_like_seeder(last):  # type: ignore[arg-type]
                    self._seed_candidate(node, last)  # type: ignore[arg-type]
                if last not in _BUILTINS or stars_here(self):
                    self.add_call(None, last, node)
        # functions handed over as arguments (callbacks) are reached too; literals that
        # hooks ask for (`CALL_HOOK_LITERALS`) are looked for in the same loops
        literals = self.hook_literals
        passes = False
        roots = m.external_roots
        stars = self.r.star_imports
        here = self.r.scope
        # what is handed to a function that never calls it (`isinstance(x, Net)`) is not
        # reached by the handing over; nor what a module's top level hands to a project
        # function (a registration, `register("crop", crop)`, called later by key or never):
        # those are recorded as handed to the callee, which the index looks up
        refs = (qual if qual is not None else last if tf is _Name and not local else None) not in m.non_calling
        ref_how = REF_CALL
        if not refs:
            stars = ()
            roots = _EVERY_ROOT
        elif self.scope == MODULE_SCOPE and qual is not None and qual.split(".", 1)[0] not in roots and qual not in m.catalog_names:
            ref_how = REF_HANDED + qual
        for slot, arg in enumerate(node.args):
            ta = type(arg)
            if ta is _Name:
                # `_maybe_ref` and `Scope.lookup`, written out: most are local variables
                name = arg.id  # type: ignore[attr-defined]
                scope = here
                while scope is not None:
                    ref = scope.bindings.get(name)
                    if ref is not None:
                        ref = ref or None
                        break
                    scope = scope.parent
                if ref is not None and ref.split(".", 1)[0] not in roots:
                    self.add_call(ref, ref_how, arg)
                elif stars and ref is None:
                    self._star_ref(arg)
                if refs and (ref is None or ref_how is REF_CALL):
                    self._hand_over(arg, slot)  # (an object a name holds)
            elif ta is _Attribute and refs:
                if not self._maybe_ref(arg, ref_how):
                    self._hand_over(arg, slot)
            elif ta is _Constant:
                if names_cuda(arg):
                    self._uses_device()
                if not passes:
                    v = arg.value  # type: ignore[attr-defined]
                    passes = v.__class__ in LITERAL_TYPES and v in literals
            elif refs and (ta is ast.Call or ta in _CONTAINERS):
                self._hand_over(arg, slot)
        for kw in node.keywords:
            v = kw.value
            ta = type(v)
            if kw.arg in m.device_keywords and not self._follows(v) or ta is _Constant and names_cuda(v):
                self._uses_device()
            if ta is _Name:
                ref = self.r.scope.lookup(v.id)
                if ref is not None and ref.split(".", 1)[0] not in roots:
                    self.add_call(ref, REF_WORKER if kw.arg in m.worker_callback_keywords else ref_how, v)
                elif stars and ref is None:
                    self._star_ref(v)
                if refs and (ref is None or ref_how is REF_CALL):
                    self._hand_over(v, kw.arg)  # (an object a name holds)
            elif ta is _Attribute and refs:
                if not self._maybe_ref(v, REF_WORKER if kw.arg in m.worker_callback_keywords else ref_how):
                    if kw.arg in m.callback_keywords:
                        self._method_ref(v)
                    else:
                        self._hand_over(v, kw.arg)
            elif refs and (ta is ast.Call or ta in _CONTAINERS):
                self._hand_over(v)
            elif ta is _Constant and not passes:
                c = v.value  # type: ignore[attr-defined]
                passes = c.__class__ in LITERAL_TYPES and c in literals
        if passes:
            hooks = self.hooks_for.get(last, self.hooks_any)  # type: ignore[arg-type]
        else:
            hooks = self.hooks_for_plain.get(last, self.hooks_any_plain)  # type: ignore[arg-type]
        for hook in hooks:
            hook(self, node, qual)

    def _moves(self, call: ast.Call) -> bool:
        """Whether `x.to(...)` may move `x` to another device: not to the CPU, a dtype, or
        where another tensor (`y.device`) or the caller (a parameter) already decided."""
        args = call.args
        if not args:
            return any(kw.arg == "device" and not self._follows(kw.value) or kw.arg is None for kw in call.keywords)
        first = args[0]
        t = type(first)
        if t is _Attribute and type(first.value) is _Name and first.value.id == "torch":  # type: ignore[attr-defined]
            return first.attr == "device"  # type: ignore[attr-defined]  # (`torch.float16`: a dtype)
        if t is _Attribute and first.attr == "dtype" or t is _Name and first.id.endswith("dtype"):  # type: ignore[attr-defined]
            return False  # (`x.to(y.dtype)`, `x.to(dtype)`)
        if t is ast.Call:
            # `torch.get_default_dtype()` and the like (a `torch.device(...)` is marked itself)
            inner = first.func  # type: ignore[attr-defined]
            return not (type(inner) is _Attribute and type(inner.value) is _Name and inner.value.id == "torch")
        return not self._follows(first)

    def _follows(self, value: ast.AST) -> bool:
        """Whether a device value keeps the work where it is: "cpu", None, another tensor's
        device (`x.device`), or a parameter (the caller's value, marked where it is given)."""
        t = type(value)
        if t is _Constant:
            return value.value in _HOST  # type: ignore[attr-defined]
        if t is _Attribute:
            return value.attr == "device"  # type: ignore[attr-defined]
        fn = self.func
        return t is _Name and fn is not None and value.id in fn.params  # type: ignore[attr-defined]

    def _uses_device(self) -> None:
        """This scope may put work on an accelerator (`DEVICE_SCOPES`)."""
        scopes = self.info.extra.setdefault(DEVICE_SCOPES, [])
        if self.scope not in scopes:
            scopes.append(self.scope)

    def _star_catalog_qual(self, dotted: str) -> Optional[str]:
        """`randrange` after `from random import *` (`random.randrange`), `random.rand` after
        `from numpy import *`: an unbound name that a star import of a library brings, when
        the catalog knows what it names (the last star import wins, as in Python)."""
        m = self.m
        for module in reversed(self.r.star_imports):
            qual = f"{module}.{dotted}"
            if qual in m.catalog_names or m.draw_source(qual) is not None:
                return qual
        # a name the star import of a project module brings: the module it conventionally names
        head, _, rest = dotted.partition(".")
        module = m.star_modules.get(head)
        if module is not None and rest:
            qual = f"{module}.{rest}"
            if qual in m.catalog_names or m.draw_source(qual) is not None or qual.split(".", 1)[0] in m.catalog_roots:
                return qual
        return None

    def _reseeded(self, recv: ast.AST, method: str) -> None:
        """`self.rng.seed(seed)`: the object under that name is seeded here (RPL102 leaves a
        generator made unseeded and kept there alone). Kept by owner: the class for `self.x`
        in a method, else the scope."""
        dotted = r_dotted(recv)
        if dotted is not None:
            self.info.extra.setdefault(RESEEDED, []).append((reseed_owner(self.scope, self.func, dotted), dotted, method))

    def _hand_over(self, arg: ast.AST, slot: "int | str | None" = None) -> None:
        """An object a project (or unknown) callee made, handed over as an argument (`ds`
        after `ds = Shapes()`, `Block()` in `nn.ModuleList([Block() for _ in range(n)])`):
        whoever it is handed to may run its protocol (`__getitem__`, `forward`, ...).
        `slot`: the argument's position or keyword, when `arg` is the argument itself."""
        t = type(arg)
        if t is ast.List or t is ast.Tuple or t is ast.Set:
            parts = arg.elts  # type: ignore[attr-defined]
        elif t is ast.ListComp or t is ast.GeneratorExp or t is ast.SetComp:
            parts = [arg.elt]  # type: ignore[attr-defined]
        elif t is ast.Starred:
            parts = [arg.value]  # type: ignore[attr-defined]
        else:
            parts = [arg]
        for part in parts:
            made = self._receiver(part)
            if made is not None and made is not LIBRARY:
                handed = HANDED + made[len(INSTANCE):]
                for method in self.m.handed_methods:
                    self.add_call(handed, method, part)
                if slot is not None and part is arg:
                    # which parameter of the callee receives it (whether the callee calls it)
                    where = self.span(part) if self.lines is not None else (part.lineno, part.col_offset)
                    self.info.extra.setdefault(HANDED_SLOTS, []).append((self.scope, where[0], where[1], slot))

    def method_marker(self, func: ast.Attribute) -> Optional[str]:
        """The target a call of the method `func` is recorded with (`obj.m` unresolved): a
        class marker for `self.m()`, `cls.m()`, `super().m()` in a method; else what made the
        receiver (`_receiver`): `LIBRARY` (the call reaches no project function), an
        `INSTANCE` marker, or None (by the method's name)."""
        fn = self.func
        recv = func.value
        tr = type(recv)
        # (only `self.m()`, `cls.m()` and `super().m()` in a method can name a class)
        if fn is not None and fn.class_name is not None and (tr is _Name and recv.id in _SELF_NAMES or tr is ast.Call):  # type: ignore[attr-defined]
            marker = self._receiver_class(recv)
            if marker is not None:
                return marker
        # a library's object reaches no project method; one a call made is looked up in what
        # that call builds (spec, "Precision on large repositories" 1)
        return self._receiver(recv)

    def _receiver(self, recv: ast.AST, steps: int = _MAX_RECEIVER_STEPS) -> Optional[str]:
        """What made the receiver of a method call, as far as the scope shows: `LIBRARY` for a
        value a library call made or a builtin value (`torch.zeros(2)`, `"a,b"`, `{}`,
        `x.float()` of such a value), `INSTANCE + callee` for one a call of a project (or
        unknown) callee made (`Net()`, `build_model(cfg)`, `hydra.utils.instantiate(cfg)`),
        else None (a parameter, an attribute of `self`, a loop variable: unknown)."""
        node = recv
        roots = self.m.external_roots
        while steps > 0:
            steps -= 1
            t = type(node)
            if t is ast.Call:
                qual = self.callee_of(node)  # type: ignore[arg-type]
                if qual:
                    return LIBRARY if qual.split(".", 1)[0] in roots else INSTANCE + qual
                f = node.func  # type: ignore[attr-defined]
                if type(f) is _Name:
                    if not self.r.is_unbound(f.id):
                        return None
                    if f.id in _BUILTINS:
                        return LIBRARY
                    # a name a star import brings (`from datasets import *`): the index finds it
                    return INSTANCE + f.id if self.r.star_imports else None
                if type(f) is _Attribute:
                    # a method of a value (`x.float()`): a library's value stays the library's
                    return LIBRARY if self._receiver(f.value, steps) is LIBRARY else None
                return None
            if t is _Name:
                name = node.id  # type: ignore[attr-defined]
                value = self.local_values.get(name)
                if value is None and self.func is not None and name not in self.r.scope.bindings:
                    # a closure's free name (the enclosing function's object), or a module-level one
                    outer = self.outer_values
                    value = outer.get(name) if outer is not None else None
                    if value is None:
                        value = self.module_values.get(name)
                if value is None or value is node:
                    return None
                node = value
            elif t is _Attribute or t is ast.Subscript:
                inner = node.value  # type: ignore[attr-defined]
                fn = self.func
                if t is _Attribute and type(inner) is _Name and fn is not None and fn.class_name is not None and fn.params and inner.id == fn.params[0]:
                    # `self.ema` in a method: what the class keeps there, if one maker made it
                    return self.attribute_makers.get((self.scope.rpartition(".")[0], node.attr))  # type: ignore[attr-defined]
                # an attribute or item of a library's object is the library's (`x.data`, `out[0]`)
                return LIBRARY if self._receiver(inner, steps) is LIBRARY else None
            elif isinstance(node, _BUILTIN_VALUES):
                return LIBRARY
            else:
                return None
        return None

    def _trained_head(self, node: ast.Call, qual: str) -> bool:
        """`AutoModelForSequenceClassification.from_pretrained(args.reward_model_path, ...)`:
        a checkpoint whose name says it was trained with its head (a reward model, a
        classifier) loads that head; only a base checkpoint gets a new, random one."""
        if not qual.endswith(".from_pretrained"):
            return False
        path = get_arg(node, 0, "pretrained_model_name_or_path")
        if path is None:
            return False
        words = [
            n.id if type(n) is _Name else n.attr if type(n) is _Attribute else n.value
            for n in ast.walk(path) if type(n) in (_Name, _Attribute) or type(n) is ast.Constant and type(n.value) is str  # type: ignore[attr-defined]
        ]
        return any(w in name.lower() for name in words for w in self.m.trained_head_words)  # type: ignore[attr-defined]

    def _fresh_tensor(self, recv: ast.AST) -> bool:
        """`torch.empty(1, requires_grad=True).backward()`: a backward pass through a tensor a
        factory made on the spot (a warm-up of the autograd engine, as some scripts do at
        import) trains nothing."""
        return type(recv) is ast.Call and self.r.qualify(recv.func) in self.m.tensor_factories  # type: ignore[attr-defined]

    def _receiver_class(self, recv: ast.AST) -> Optional[str]:
        """`self.m()`, `cls.m()` and `super().m()` inside a method: a marker naming the
        class, so that the index looks `m` up in the class hierarchy instead of matching
        every project function called `m`."""
        fn = self.func
        if fn is None or fn.class_name is None:
            return None
        if type(recv) is ast.Name:
            if not fn.params or recv.id != fn.params[0] or recv.id not in ("self", "cls"):
                return None
            kind = SELF_CALL
        elif type(recv) is ast.Call and type(recv.func) is ast.Name and recv.func.id == "super":
            kind = SUPER_CALL
        else:
            return None
        return kind + self.scope.rpartition(".")[0]

    def _maybe_ref(self, arg: ast.AST, how: str = REF_CALL) -> bool:
        """A name or attribute passed as an argument (the caller checked the type); False
        when it does not resolve."""
        qual = self.r.qualify(arg)
        if qual and qual.split(".", 1)[0] not in self.m.external_roots:
            self.add_call(qual, how, arg)
        return qual is not None

    def _star_ref(self, arg: ast.Name) -> None:
        """A name no scope binds handed over in a module with `from m import *`: maybe a
        function of `m` (`model.apply(weights_init_normal)`), which the index looks up."""
        if arg.id not in _BUILTINS and self.r.is_unbound(arg.id):
            self.add_call(NAME_REF, arg.id, arg)

    def _method_ref(self, arg: ast.Attribute) -> None:
        """A method of an object handed over as a callback (`collate_fn=self.collate`)."""
        marker = self._receiver_class(arg.value)
        if marker is not None:
            if marker.startswith(SUPER_CALL):
                return
            self.add_call(SELF_REF + marker.partition(":")[2], arg.attr, arg)
        else:
            self.add_call(NAME_REF, arg.attr, arg)

    def _resolved_call(self, node: ast.Call, qual: str) -> None:
        m = self.m
        root = qual.split(".", 1)[0]
        if root not in m.catalog_roots and qual not in m.catalog_names:
            # the common case: a project, standard-library or unknown callee
            if root in m.external_roots:
                return
            if m.looks_like_seeder(qual):
                self._seed_candidate(node, qual)
            self.add_call(qual, None, node)
            return
        if qual in m.cudnn_calls or qual.startswith(m.cudnn_prefixes):
            self._cudnn_use(node, qual)
        if qual in m.naming_sinks and self.func is not None:
            self._naming_wrapper(node)
        if qual in m.config_appliers:  # a config loader that calls what its files name
            self.add("configload", node, api=qual)
            return
        spec = m.seeders.get(qual)
        if spec is not None and spec.seed_keyword:
            # seeds only with the seed the keyword gives (its default draws a new seed each run)
            arg = get_arg(node, -1, spec.seed_keyword)
            if arg is not None and literal(arg) not in (True, False, None):
                names, attrs = _names_in(node)
                self.add(
                    "seed", node, sources=spec.sources, api=qual, expr=self.text_of(arg), names=names, attrs=attrs,
                    framework=True, heuristic=False, kwargs={},
                )
            elif arg is None and not has_kwargs(node):
                # where RPL101's fix gives it the seed (the framework's way, spec "Fixes" 6)
                self.add("seedable", node, api=qual, keyword=spec.seed_keyword, sources=spec.sources)
        elif spec is not None and spec.build:
            self.add("seed", node, **self._build_seed(spec))
        elif spec is not None:
            if self._seed_event(node, spec, qual):
                self._switch(node, qual)
            return
        src = m.draw_source(qual)
        if src is not None:
            if get_arg(node, -1, "generator") is None and not self._names_only(node) and not self._trained_head(node, qual):
                # `callee` and `npos` (positional arguments, -1 with a `*args`): for fixes that
                # call another function with the same arguments (numpy's Generator fix)
                npos = -1 if any(isinstance(a, ast.Starred) for a in node.args) else len(node.args)
                ev = self.add("draw", node, source=src, api=qual, assigned=None, callee=self.span(node.func), npos=npos)
                if self._in_training_mode(node):
                    ev.data["train_mode"] = True
            if qual.startswith(m.uses_torch_prefixes):
                self._torch_use(node)
            return
        src = m.draw_classes.get(qual)
        if src is not None:
            self.add("draw", node, source=src, api=qual, assigned=None)
            self._torch_use(node)
            return
        src = m.shuffling_loaders.get(qual)
        if src is not None:
            shuffle = get_arg(node, 2, "shuffle")
            if (
                shuffle is not None and literal(shuffle) not in (False, None, 0) and get_arg(node, -1, "generator") is None
                and _sampler_may_be_none(get_arg(node, 3, "sampler"), shuffle)
                and _sampler_may_be_none(get_arg(node, 4, "batch_sampler"), shuffle)
            ):
                self.add("draw", node, source=src, api=qual, assigned=None)
            return
        gen = m.generators.get(qual)
        if gen is not None:
            if not gen.nested_only:
                self._generator(node, qual, gen)
            return
        if qual in m.switches:
            self._switch(node, qual)
            return
        if qual in m.trainers:
            self.add("train", node, what="trainer")
            if qual in m.trainer_flag["classes"]:
                kw = m.trainer_flag["keyword"]
                value: Any = "missing"
                if has_kwargs(node):
                    value = "unknown"
                arg = get_arg(node, -1, kw)
                if arg is not None:
                    lit = literal(arg)
                    value = None if lit is NOT_LITERAL else lit
                self.add("trainer", node, api=qual, deterministic=value)
            return
        if m.is_optimizer(qual):
            self.add("train", node, what="optimizer")
            self._torch_use(node)
            return
        if qual.startswith(m.uses_torch_prefixes):
            self._torch_use(node)
        if qual in ("os.environ.setdefault", "os.environ.update", "os.putenv"):
            self._env_call(node, qual)
            return
        keyword = m.seed_arguments.get(qual)
        if keyword is not None:
            if get_arg(node, -1, keyword) is not None:
                self.add("intent", node, api=qual, keyword=keyword)
            return
        if root in m.external_roots:
            return
        if m.looks_like_seeder(qual):
            self._seed_candidate(node, qual)
        self.add_call(qual, None, node)

    def _seed_event(self, node: ast.Call, spec, api: str) -> bool:
        """The "seed" event of a call of the seeder `spec`; False for a call that reseeds from
        entropy (no argument where one is needed)."""
        if spec.requires_arg and not node.args and not node.keywords:
            return False
        if spec.seed_from_keyword:  # (None: the helper's own default seed)
            first = next((k.value for k in node.keywords if k.arg == spec.seed_from_keyword), None)
        else:
            first = node.args[0] if node.args else (node.keywords[0].value if node.keywords and node.keywords[0].arg else None)
        names, attrs = _names_in(node)
        kws = {k.arg: literal(k.value) for k in node.keywords if k.arg}
        self.add(
            "seed", node, sources=spec.sources, api=api, expr=self.text_of(first) if first is not None else None,
            names=names, attrs=attrs, framework=spec.framework, heuristic=False,
            kwargs={k: v for k, v in kws.items() if v is not NOT_LITERAL},
        )
        return True

    def _seed_candidate(self, node: ast.Call, target: str) -> None:
        if not node.args and not node.keywords and node is not self.stmt_call:
            return  # `seed = worker_seed()`, `return get_seed() + epoch`: a seed read, not set
        first = node.args[0] if node.args else (node.keywords[0].value if node.keywords and node.keywords[0].arg else None)
        names, attrs = _names_in(node)
        self.add("seedcand", node, target=target, expr=self.text_of(first) if first is not None else None, names=names, attrs=attrs)

    def _in_training_mode(self, node: ast.Call) -> bool:
        """A draw made only while a module trains: under `if self.training:`, or told so
        (`F.dropout(x, p, training=self.training)`): a model put in evaluation mode makes none."""
        for kw in node.keywords:
            if kw.arg == "training" and type(kw.value) is _Attribute and kw.value.attr == "training":  # type: ignore[attr-defined]
                return True
        values = self.local_values
        for test in self.guards:
            if isinstance(test, ast.expr) and _reads_training(test, values):
                return True
        # `F.dropout(x, self.p if self.training else 0.0)`: a draw of nothing outside training
        # (or of a rate bound to a name first: `p = self.p if self.training else 1`, then
        # `mask.bernoulli_(1 - p)`)
        for arg in (*node.args, *(kw.value for kw in node.keywords)):
            for part in ast.walk(arg):
                if type(part) is _Name:
                    part = values.get(part.id, part)  # type: ignore[attr-defined]
                if type(part) is ast.IfExp and _reads_training(part.test, values):  # type: ignore[attr-defined]
                    return True
        return False

    def _names_only(self, node: ast.AST) -> bool:
        """Whether the statement uses the value of the call `node` only to name something or
        to time a wait: formatted into a string (an f-string, `str(...)`, `"...".format`) or
        passed to a catalog `naming-sinks` call (`time.sleep`, `tempfile.mkdtemp`): such a
        draw changes no result (spec, "Precision on large repositories" 9)."""
        stmt = self.stmt_node
        if stmt is None:
            return False
        if self._naming_stmt is not stmt:
            self._naming_stmt = stmt
            self._naming_ids = ids = set()
            sinks = self.m.naming_sinks
            for sub in ast.walk(stmt):
                t = type(sub)
                inside: list = []
                if t is ast.JoinedStr:
                    inside = sub.values  # type: ignore[attr-defined]
                elif t is ast.Call:
                    func = sub.func  # type: ignore[attr-defined]
                    if type(func) is _Attribute and func.attr in ("format", "join") and type(func.value) is _Constant:
                        sink = True
                    elif type(func) is _Name and func.id == "str":
                        sink = self.r.is_unbound("str")
                    else:
                        sink = self.r.qualify(func) in sinks
                    if sink:
                        inside = [*sub.args, *(k.value for k in sub.keywords)]  # type: ignore[attr-defined]
                    elif self.naming_params and type(func) is _Name:
                        inside = self._naming_wrapper_args(sub)  # type: ignore[arg-type]
                for part in inside:
                    ids.update(id(n) for n in ast.walk(part))
        return id(node) in self._naming_ids

    def _naming_wrapper(self, node: ast.Call) -> None:
        """A sink call in a module-level function that passes it a parameter (`export(model,
        model_args, ...)` in `def onnx_export(model, model_args, ...)`): where sink calls are
        the parameter's only uses, what callers further down pass for it only names or traces
        too."""
        fn = self.func
        if fn is None or "." in fn.qual or self.func_node is None:
            return  # (methods and nested functions are not called by their plain name here)
        params = list(fn.params or ())
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if type(arg) is _Name and arg.id in params:  # type: ignore[attr-defined]
                name = arg.id  # type: ignore[attr-defined]
                found = self.naming_params.setdefault(fn.qual, {})
                if name not in found:  # [position, uses in the function, uses by sink calls]
                    uses = sum(1 for n in ast.walk(self.func_node) if type(n) is _Name and n.id == name)  # type: ignore[attr-defined]
                    found[name] = [params.index(name), uses, 0]
                found[name][2] += 1

    def _naming_wrapper_args(self, call: ast.Call) -> list:
        """The arguments a call of such a module-level function passes for those parameters."""
        name = call.func.id  # type: ignore[attr-defined]
        wrapped = self.naming_params.get(name)
        module = self.info.module
        if wrapped is None or self.r.qualify(call.func) != (f"{module}.{name}" if module else name):
            return []
        only = {name: pos for name, (pos, uses, sunk) in wrapped.items() if uses == sunk}
        positions = set(only.values())
        return [a for i, a in enumerate(call.args) if i in positions] + [k.value for k in call.keywords if k.arg in only]

    def _cudnn_use(self, node: ast.AST, qual: str) -> None:
        """A call of something cuDNN runs (a convolution, a recurrent layer): once per scope."""
        if self.scope not in self.cudnn_scopes:
            self.cudnn_scopes.add(self.scope)
            self.add("cudnn", node, api=qual)

    def _torch_use(self, node: ast.AST) -> None:
        if self.scope not in self.torch_used_scopes:
            self.torch_used_scopes.add(self.scope)
            self.add("torchuse", node)

    def _generator(self, node: ast.Call, qual: str, gen) -> None:
        if has_kwargs(node) or any(isinstance(a, ast.Starred) for a in node.args):
            return
        if gen.bit_generator_arg >= 0:
            bit = get_arg(node, gen.bit_generator_arg, "bit_generator")
            if not isinstance(bit, ast.Call):
                return
            bq = self.r.qualify(bit.func)
            bspec = self.m.generators.get(bq or "")
            if bspec is None:
                return
            seed = get_arg(bit, bspec.seed_arg, bspec.seed_kw)
            target_call = bit
        else:
            seed = get_arg(node, gen.seed_arg, gen.seed_kw)
            target_call = node
        if seed is not None and literal(seed) is not None:
            return
        self.add("gen", node, api=qual, call=self.span(target_call), seed_none=seed is not None)

    def _switch(self, node: ast.Call, qual: str) -> None:
        spec = self.m.switches.get(qual)
        if spec is None:
            return
        value: Any = True
        if "arg" in spec:
            arg = get_arg(node, spec["arg"], spec["kw"])
            lit = literal(arg) if arg is not None else NOT_LITERAL
            if arg is None:
                value = None
            elif lit is NOT_LITERAL:
                value = None
            elif qual == "torch.set_deterministic_debug_mode":
                value = lit not in (0, "default")
            else:
                value = bool(lit)
        warn = get_arg(node, 1, "warn_only")
        warn_lit = literal(warn) if warn is not None else False
        self.add("switch", node, api=qual, sets=tuple(spec["sets"]), value=value, warn_only=None if warn_lit is NOT_LITERAL else bool(warn_lit))

    def _env_call(self, node: ast.Call, qual: str) -> None:
        if qual == "os.environ.update":
            for arg in node.args:
                if isinstance(arg, ast.Dict):
                    for k, v in zip(arg.keys, arg.values):
                        key = literal(k) if k is not None else None
                        if isinstance(key, str):
                            lit = literal(v)
                            self.add("env", node, var=key, value=None if lit is NOT_LITERAL else lit, how="update", value_span=self.span(v))
            for kw in node.keywords:
                if kw.arg:
                    lit = literal(kw.value)
                    self.add("env", node, var=kw.arg, value=None if lit is NOT_LITERAL else lit, how="update", value_span=self.span(kw.value))
            return
        key_node = node.args[0] if node.args else None
        key = literal(key_node) if key_node is not None else None
        if isinstance(key, str):
            val = node.args[1] if len(node.args) > 1 else None
            lit = literal(val) if val is not None else None
            self.add("env", node, var=key, value=None if lit is NOT_LITERAL else lit, how="setdefault" if qual.endswith("setdefault") else "putenv", value_span=self.span(val) if val is not None else None)


def _names_in(call: ast.Call) -> tuple[frozenset, frozenset]:
    """The names a call's arguments read, and the dotted attribute chains (`opt.seed`)."""
    names = set()
    dotted = set()
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        for n in ast.walk(arg):
            if isinstance(n, ast.Name):
                names.add(n.id)
            elif isinstance(n, ast.Attribute):
                chain = r_dotted(n)
                if chain:
                    dotted.add(chain)
    return frozenset(names), frozenset(dotted) if dotted else _NO_NAMES


def _sampler_may_be_none(sampler: Optional[ast.AST], shuffle: ast.AST) -> bool:
    """Whether a loader's `sampler=` may leave the order to `shuffle` (the loader then draws
    it): none given, a literal None, a conditional with a None branch, or the expression that
    `shuffle` tests for None (`shuffle=(sampler is None), sampler=sampler`)."""
    if sampler is None or literal(sampler) is None:
        return True
    if isinstance(sampler, ast.IfExp):
        return _sampler_may_be_none(sampler.body, shuffle) or _sampler_may_be_none(sampler.orelse, shuffle)
    if isinstance(shuffle, ast.Compare) and len(shuffle.ops) == 1 and isinstance(shuffle.ops[0], ast.Is):
        sides = (shuffle.left, shuffle.comparators[0])
        text = ast.dump(sampler)
        return any(literal(a) is None and ast.dump(b) == text for a, b in (sides, sides[::-1]))
    return False


# What tells a module's training mode where it draws: `self.training`, `mod.training`, and
# `x.requires_grad` (an activation needs a gradient only while the model trains).
_TRAINING_ATTRIBUTES = frozenset(["training", "requires_grad"])


def _reads_training(test: ast.AST, values: Optional[dict] = None, depth: int = 3) -> bool:
    """Whether `test` reads the training mode, itself or through a name the scope bound to
    such a value (`is_training = x.requires_grad`, then `if self.shuffle and is_training:`)."""
    for n in ast.walk(test):
        if type(n) is _Attribute and n.attr in _TRAINING_ATTRIBUTES:  # type: ignore[attr-defined]
            return True
        if type(n) is _Name and values and depth:
            value = values.get(n.id)  # type: ignore[attr-defined]
            if value is not None and value is not n and _reads_training(value, values, depth - 1):
                return True
    return False


def parameter_of(receiver: ast.AST, attributes: set) -> bool:
    """Whether an in-place draw's receiver is a module's parameter: an attribute of one of the
    catalog's names (`weight`, `bias`), or its `.data` (`self.fc.weight.data`)."""
    if type(receiver) is ast.Attribute and receiver.attr == "data":  # type: ignore[attr-defined]
        receiver = receiver.value  # type: ignore[attr-defined]
    return type(receiver) is ast.Attribute and receiver.attr in attributes  # type: ignore[attr-defined]
