"""The per-file facts that the one extraction pass produces (cached, picklable).

Rules never see syntax trees: they read these facts and the project index built from
them. That keeps the tree walk to one per file and lets results be cached per file.
"""

from __future__ import annotations

import functools
import marshal
from typing import Any, Callable, Optional

from repro_lint.facts.hooks import registry

MODULE_SCOPE = "<module>"
MAIN_SCOPE = "<main>"
# The scope an import is recorded with when only type checkers run it (`if TYPE_CHECKING:`,
# a lazy module's `if TYPE_CHECKING or SLOW_IMPORT:`): its names are bound for resolution,
# but importing the module runs nothing of it
TYPING_SCOPE = "<typing>"
# Call targets recorded for `self.m()` / `cls.m()` and `super().m()` in a method: the
# marker followed by the class's qualified name within its module.
SELF_CALL = "@self:"
SUPER_CALL = "@super:"
# The method field of a recorded function reference (`pool.map(work, xs)`,
# `atexit.register(report)`): the function is reached, but runs later, not there.
REF_CALL = "@ref"
# Call targets recorded for a method handed over as a callback (`collate_fn=self.collate`,
# `collate_fn=dataset.collate`): the method field names the method, the target is the
# marker (followed by the class, for `self`). It is reached, but not run there either.
SELF_REF = "@selfref:"
NAME_REF = "@ref"
# The method field of a function handed to a DataLoader as its `worker_init_fn` (by name or
# attribute): reached too, but it runs in the loader's worker processes, so what it seeds or
# draws is not the caller's (`FunctionEffects` leaves it out).
REF_WORKER = "@ref:worker"
# The method field of a function a module's top level hands to another function, followed by
# that function's qualified name (`register("crop", random_crop)`): reached only where that
# function is not the project's (a project function keeps it to call later, by key or never)
REF_HANDED = "@ref:to:"
# The method field of a function registered with a decorator of an object (`@trainer.on(...)`),
# followed by what made the object: reached only where that maker is the project's (a project
# object keeps it to call later; a web framework's `@app.post(...)` serves requests)
REF_REGISTERED = "@ref:on:"


def is_reference(call: tuple) -> bool:
    """Whether a recorded call hands a function over instead of calling it."""
    method = call[1]
    target = call[0]
    return method is not None and method[:4] == REF_CALL or target is not None and (target.startswith(NAME_REF) or target.startswith(HANDED))


class Event:
    """Something a scope does, in source order: a draw, a seeding call, a flag set, ...

    `line/col/end_line/end_col` locate the expression (1-based line, 0-based character
    column, as in `ast` but in characters). `stmt` is the (line, col, end_line, end_col)
    of the statement in the scope's own body that contains it, where statements are
    inserted or moved by fixes. `data` holds the kind-specific facts.
    """

    __slots__ = ("kind", "line", "col", "end_line", "end_col", "stmt", "data")

    def __init__(self, kind: str, line: int, col: int, end_line: int, end_col: int, stmt: tuple, data: dict) -> None:
        self.kind = kind
        self.line = line
        self.col = col
        self.end_line = end_line
        self.end_col = end_col
        self.stmt = stmt
        self.data = data

    def __getstate__(self):
        return (self.kind, self.line, self.col, self.end_line, self.end_col, self.stmt, self.data)

    def __setstate__(self, state):
        (self.kind, self.line, self.col, self.end_line, self.end_col, self.stmt, self.data) = state

    @property
    def pos(self) -> tuple[int, int]:
        return (self.line, self.col)

    def __repr__(self) -> str:  # for test failure messages
        return f"Event({self.kind!r}, {self.line}:{self.col}, {self.data!r})"


_FUNCTION_FACTS = (
    "qual", "name", "line", "col", "end_line", "params", "decorators", "hydra_config_path",
    "class_name", "docstring_end", "body_line", "body_col", "no_grad", "is_async", "hydra_config_name",
)


# The facts most functions have the same value for (no decorator, no Hydra config, not
# async, not run without gradients): held together in one tuple, the common one shared
# (`FunctionInfo._rare`): four fields fewer on each of a project's functions (6 MB on
# 38,000 files).
_RARE_FACTS = ("decorators", "hydra_config_path", "no_grad", "is_async", "hydra_config_name")
_NO_DECORATORS: tuple = ()
_COMMON = (_NO_DECORATORS, None, False, False, None)


def _rare(decorators, hydra_config_path, no_grad, is_async, hydra_config_name) -> tuple:
    if (
        decorators is _NO_DECORATORS and hydra_config_path is None and no_grad is False
        and is_async is False and hydra_config_name is None
    ):
        return _COMMON
    return (decorators, hydra_config_path, no_grad, is_async, hydra_config_name)


def _rare_fact(i: int) -> property:
    def get(self):
        return self._rare[i]

    def set(self, value):
        rare = self._rare
        if rare[i] is not value:
            self._rare = _rare(*rare[:i], value, *rare[i + 1:])

    return property(get, set)


class FunctionInfo:
    # `module`: the name of the module defining it, set by the project index (its table of
    # functions then holds the function alone, not a (module facts, function) pair: 12 MB
    # on 38,000 files); not part of the facts stored or sent (`_FUNCTION_FACTS`)
    __slots__ = tuple(k for k in _FUNCTION_FACTS if k not in _RARE_FACTS) + ("_rare", "module")

    def __init__(
        self, qual=None, name=None, line=None, col=None, end_line=None, params=None, decorators=None,
        hydra_config_path=None, class_name=None, docstring_end=None, body_line=None, body_col=None,
        no_grad=None, is_async=None, hydra_config_name=None,
    ) -> None:
        # spelled out: one of these is made for every function of a project
        self.qual = qual
        self.name = name
        self.line = line
        self.col = col
        self.end_line = end_line
        self.params = params
        self.class_name = class_name
        self.docstring_end = docstring_end
        self.body_line = body_line
        self.body_col = body_col
        # (hydra_config_name: the primary config's name, when a literal)
        self._rare = _rare(decorators, hydra_config_path, no_grad, is_async, hydra_config_name)
        self.module = None

    decorators = _rare_fact(0)
    hydra_config_path = _rare_fact(1)
    no_grad = _rare_fact(2)
    is_async = _rare_fact(3)
    hydra_config_name = _rare_fact(4)

    def __getstate__(self):
        return tuple(getattr(self, k) for k in _FUNCTION_FACTS)

    def __setstate__(self, state):
        self._rare = _COMMON
        for key, value in zip(_FUNCTION_FACTS, state):
            setattr(self, key, value)
        self.module = None


class ClassInfo:
    __slots__ = ("qual", "name", "line", "bases", "methods")

    def __init__(self, qual: str, name: str, line: int, bases: list[str], methods: list[str]) -> None:
        self.qual = qual
        self.name = name
        self.line = line
        self.bases = bases
        self.methods = methods

    def __getstate__(self):
        return (self.qual, self.name, self.line, self.bases, self.methods)

    def __setstate__(self, state):
        self.qual, self.name, self.line, self.bases, self.methods = state


class ModuleInfo:
    """Facts about one Python file."""

    # Facts read from the cache or received from a worker hold only the outline fields that
    # differ from these (`to_plain_parts` leaves the others out): an object's dict of 22
    # fields takes 832 bytes, of up to 21 fields 464. Never changed in place: extraction
    # sets every field on the objects it makes (`__init__`).
    error = None
    is_test = False
    never_entry = False
    main_block = None
    module_work = False
    hydra_mains: "tuple | list" = ()
    import_block_end = 0
    docstring_end = 0
    future_end = 0
    noqa: dict = {}
    file_noqa = None
    file_noqa_set = False

    def __init__(self, path: str, module: str, is_package: bool) -> None:
        self.path = path  # as displayed (relative to the working directory when possible)
        self.module = module
        self.is_package = is_package
        self.digest = ""
        self.is_test = False
        self.never_entry = False  # setup.py, a package's __init__.py, ...: never a program
        # (kind, message, line, col) for files that could not be read or parsed.
        self.error: Optional[tuple[str, str, int, int]] = None
        # (qualified name, line, col, end_line, end_col, scope) for every import.
        self.imports: list[tuple] = []
        self.functions: dict[str, FunctionInfo] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.events: dict[str, list[Event]] = {}
        # Calls per scope: (target, method name or None, line, col, end_line, end_col). The
        # target is a qualified name, a SELF_CALL/SUPER_CALL marker, or None for a method of
        # an unknown receiver or an unbound name (then the method name says what is called).
        # A function handed over as an argument has REF_CALL as its method.
        self.calls: dict[str, list[tuple]] = {}
        # Module-level names bound to simple literals (SEED = 1234, WORKERS = 0).
        self.constants: dict[str, Any] = {}
        # (line, end_line) of every `for`/`while` statement, per scope: what is called there
        # runs more than once
        self.loops: dict[str, list[tuple[int, int]]] = {}
        self.main_block: Optional[tuple[int, int, int]] = None  # (line, end_line, body first line)
        self.module_work = False
        self.hydra_mains: list[str] = []
        self.exports: dict[str, str] = {}
        # Line after the module's leading import block (where `SEED = 0` or helpers go).
        self.import_block_end = 0
        self.docstring_end = 0
        self.future_end = 0
        self.noqa: dict[int, Optional[frozenset]] = {}
        self.file_noqa: Optional[frozenset] = None  # frozenset() means "everything"
        self.file_noqa_set = False
        # Per-family facts that do not fit the generic event stream.
        self.extra: dict[str, Any] = {}

    # Facts of a file that came from the cache are split in two: the outline (every field
    # but `BODY_FIELDS`), which the index reads of every module, and the body, kept
    # marshalled until something reads one of its fields: a check of a few files in a large
    # project reaches a small part of it.
    #
    # A large project's freshly extracted facts are kept the same way (`pack`): the body
    # marshalled in memory, field by field. The events, once decoded, stay decoded (rules
    # tell events apart by identity); the other fields are let go again while those decoded
    # at once exceed a budget (`DECODED`), and decoded again when next read.
    def __getattr__(self, name: str) -> Any:
        # called only for a field not set: a body not decoded yet
        if name in BODY_FIELDS:
            state = self.__dict__
            packed = state.get("_packed")
            if packed is not None:
                if name == "events":
                    state["events"] = _unpacked_events(packed_field(packed, 0), self)
                    packed[0] = None
                else:
                    data = packed_field(packed, BODY_FIELDS.index(name))
                    state[name] = marshal.loads(data)
                    DECODED.add(self, name, len(data))
                return state[name]
            body = state.pop("_body", None)
            if body is not None:
                _decode_body(self, body)
                return state[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self) -> dict:
        # (a body still marshalled is decoded: a memory view is no state to copy or pickle)
        if "_packed" in self.__dict__:
            unpack(self)
        for name in BODY_FIELDS:
            getattr(self, name)
        return self.__dict__

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def summary(self, name: str) -> Any:
        """The answer of the `summaries()` function `name` for this module, from the outline
        while the body is not decoded."""
        stored = stored_summary(self)
        if stored is not None:
            if type(stored) is tuple:  # (`pack`: the answers in `summaries()` order)
                return stored[summary_slots()[name]]
            if name in stored:
                return stored[name]
        return summaries()[name](self)

    def scope_events(self, scope: str) -> list[Event]:
        return self.events.get(scope, [])

    def all_events(self, kind: Optional[str] = None):
        for scope, events in self.events.items():
            for ev in events:
                if kind is None or ev.kind == kind:
                    yield scope, ev


def _event_scopes(info: ModuleInfo) -> tuple[str, ...]:
    return tuple(s for s, evs in info.events.items() if evs)


BODY_FIELDS = ("events", "calls", "constants", "loops", "extra")
# What whole-project questions (asked of every module, not of the reached ones) need of a
# module's body, by name: stored with its outline, so that they decode no body
# (`ModuleInfo.summary`). These are the core walk's; the families add theirs (`Family.summaries`).
CORE_SUMMARIES: dict[str, Callable[[ModuleInfo], Any]] = {
    "event_scopes": _event_scopes,
    "device_scopes": lambda info: tuple(info.extra.get("device_scopes", ())),
}
# ModuleInfo.extra key: the modules `from m import *` brings names from, in import order
# (`names.Resolver.star_imports`); the index resolves the names they leave unbound
STAR_IMPORTS = "star_imports"
CORE_SUMMARIES[STAR_IMPORTS] = lambda info: info.extra.get(STAR_IMPORTS, ())
# ModuleInfo.extra key: module-level dicts of callables (`MODELS = {"resnet": ResNet, ...}`),
# name -> the qualified names of the values: calling an item (`MODELS[args.arch](...)`) may
# call any of them, which the index resolves for the modules that import the dict
REGISTRIES = "registries"
CORE_SUMMARIES[REGISTRIES] = lambda info: info.extra.get(REGISTRIES, {})
# ModuleInfo.extra key: per function scope, the project functions it returns by name
# (`return get_csv_dataset`): a call of what a call of it gives (`get_dataset_fn(kind)(args)`,
# recorded with the `RETURNED` marker) may call any of them
RETURNS = "returns"
CORE_SUMMARIES[RETURNS] = lambda info: info.extra.get(RETURNS, {})
# ModuleInfo.extra key: per function scope, the callees whose result it returns (`return
# Net(cfg)`, `model = build(cfg); return model`): the object a call of it gives is one they
# made (`INSTANCE` calls are looked up there)
RETURNS_MADE = "returns_made"
# ... with this entry where a return gives an object whose maker the scope does not show (the
# list is then not all the function may return)
MADE_UNKNOWN = "?"
# ... with this one where a class method returns an instance of the class it is called on
# (`return cls(items)` in a `@classmethod`): `ClipDataset.from_manifest(p)` gives a `ClipDataset`
MADE_CLS = "@cls"
CORE_SUMMARIES[RETURNS_MADE] = lambda info: info.extra.get(RETURNS_MADE, {})
# ModuleInfo.extra key: objects built into a container under a literal key (`postprocessors["aux"]
# = AuxUpsample()`): (container name, key, the building callee), for calls of the item
STORED_MADE = "stored_made"
CORE_SUMMARIES[STORED_MADE] = lambda info: info.extra.get(STORED_MADE, ())
# Call target marker: `ITEM + "<container name>[<key>]"` for a call of an item of a container
# (`postprocessors["aux"](out)`): it calls what the project stores there (`STORED_MADE`)
ITEM = "@item:"
# ModuleInfo.extra key: the hook gates a file was walked light by (`hooks.HookGate`)
LIGHT_HOOKS = "light_hooks"
CORE_SUMMARIES[LIGHT_HOOKS] = lambda info: info.extra.get(LIGHT_HOOKS, ())
# ModuleInfo.extra key: per class, the methods its methods bind under another name
# (`self.train_dataloader = self._train_dataloader`): a framework calls them by that name
METHOD_ALIASES = "method_aliases"
CORE_SUMMARIES[METHOD_ALIASES] = lambda info: info.extra.get(METHOD_ALIASES, {})


@functools.lru_cache(maxsize=1)
def summaries() -> dict[str, Callable[[ModuleInfo], Any]]:
    """Every summary question by name: the core walk's and the families'."""
    return {**CORE_SUMMARIES, **registry().summaries}


@functools.lru_cache(maxsize=1)
def summary_slots() -> dict[str, int]:
    """The place of each `summaries()` answer in the tuple `pack` keeps."""
    return {name: i for i, name in enumerate(summaries())}


# Call target marker: `RETURNED + "<qualified callee>"` for a call of a call's result
RETURNED = "@returned:"
# Call target marker: `INSTANCE + "<qualified callee>"` for a method of (or a call of) an
# object that a call of that callee made (`net = Net(); net.to(d)`, `net(x)`): the index
# looks the method up in what the callee builds or returns, not by its name alone
INSTANCE = "@inst:"
# Call target marker of a method of an object a library made (`net.load_state_dict(...)` of a
# `torch.nn` module): it reaches no project function; only the methods rules ask about by
# name (`checkpoint-methods`, `eval-methods`) are recorded so
LIBRARY = "@library"
# Call target marker: `HANDED + "<qualified callee>"` for an object a call of that callee made,
# handed over as an argument (`DataLoader(ds)` after `ds = Shapes()`): whoever it is handed to
# may run its protocol (the method field names one); reached, but run later, not there
HANDED = "@handed:"
# ModuleInfo.extra key: where an object is handed over as an argument, and to which parameter:
# (scope, line, col, position or keyword) of the argument (the `HANDED` calls' place)
HANDED_SLOTS = "handed_slots"
# ModuleInfo.extra key: the scopes that put work on an accelerator (`.cuda()`, `.to(device)`,
# `device=` keywords, catalog `device-call-prefixes`)
DEVICE_SCOPES = "device_scopes"
# ModuleInfo.extra key: function scope -> the names of its parameters it calls (`scaler(loss)`)
PARAM_CALLS = "param_calls"


# -- bodies kept marshalled in memory (a large project's cold check) ----------------------
# the body fields let go again once read (all but the events), see `ModuleInfo.__getattr__`
_REST_FIELDS = BODY_FIELDS[1:]


def stored_summary(info: ModuleInfo) -> "dict | tuple | None":
    """The `summaries()` answers stored with an outline whose body is kept marshalled (by
    name, or in `summaries()` order: `pack`), or None; read them with `ModuleInfo.summary`."""
    state = info.__dict__
    if "_body" in state or "_packed" in state:
        return state.get("_summary")
    return None


def _events(plain: dict) -> dict[str, list[Event]]:
    return {s: [Event(*e) for e in evs] for s, evs in plain.items()}


def _plain_events(info: ModuleInfo) -> dict:
    return {s: [(e.kind, e.line, e.col, e.end_line, e.end_col, e.stmt, e.data) for e in evs] for s, evs in info.events.items()}


# Most events' data repeats across a project (a draw's source and API, what a training step
# does): when packed events are decoded, data of up to this many bytes marshalled is shared
# by every event that has it for the rest of the check (`_SHARED_DATA`; data is never changed
# once extracted). On a 38,000-file tree the events' data took 72 MB decoded, 33 MB shared.
# The statements' spans are shared too, keyed by themselves (213,000 events held 129,000
# span tuples of 2,900 values there: 9 MB).
_SHARE_DATA_BYTES = 128
_SHARED_DATA: "dict[bytes | tuple, dict | tuple]" = {}
# the events of a module that has none, shared (decoded events are never changed)
_NO_EVENTS: "dict[str, list[Event]]" = {}
_SCOPE_NAMES = {MODULE_SCOPE: MODULE_SCOPE, MAIN_SCOPE: MAIN_SCOPE, TYPING_SCOPE: TYPING_SCOPE}


def _unpacked_events(packed: bytes, info: ModuleInfo) -> dict[str, list[Event]]:
    """Decoded packed events (`pack`) of `info`, their data and statement spans shared where
    they repeat, their scopes named by the outline's strings."""
    rows_by_scope = marshal.loads(packed)
    if not rows_by_scope:
        return _NO_EVENTS
    shared = _SHARED_DATA
    dumps = marshal.dumps
    functions = info.functions
    out: dict[str, list[Event]] = {}
    for s, rows in rows_by_scope.items():
        # the scope's name as the outline holds it (decoded, each module's events had their
        # own copies of the names of its functions and of `<module>`: 2 MB on 38,000 files)
        fn = functions.get(s)
        s = fn.qual if fn is not None and fn.qual == s else _SCOPE_NAMES.get(s, s)
        # (filled in place: a list grown by appending keeps spare room, for as long as the
        # events stay decoded)
        evs = out[s] = [None] * len(rows)
        for i, (kind, line, col, end_line, end_col, stmt, data) in enumerate(rows):
            raw = dumps(data)
            if len(raw) <= _SHARE_DATA_BYTES:
                data = shared.setdefault(raw, data)
            else:
                # larger data (a loader call's arguments) is seldom equal as a whole, but
                # its parts are: `("lit", 0)`, `("name", "dataset", "main", True)`
                for key, value in data.items():
                    if type(value) is tuple and value:
                        data[key] = _shared_tuple(value, shared, dumps, 1)
            if stmt is not None:
                stmt = shared.setdefault(stmt, stmt)
            evs[i] = Event(kind, line, col, end_line, end_col, stmt, data)
    return out


def _shared_tuple(value: tuple, shared: dict, dumps: Callable, depth: int) -> tuple:
    """`value`, or an equal tuple met before (`_SHARED_DATA`); a larger one made of such
    (down to a depth of 2): 7 MB less at the peak of a cold check of 38,000 files."""
    raw = dumps(value)
    if len(raw) <= _SHARE_DATA_BYTES:
        return shared.setdefault(raw, value)
    if depth < 2:
        return tuple([_shared_tuple(v, shared, dumps, depth + 1) if type(v) is tuple and v else v for v in value])
    return value


_EMPTY_DICT: dict = {}
_EMPTY_FROZENSET: frozenset = frozenset()


def _shared_empty(answer: Any) -> Any:
    """`answer`, or the shared empty value of its type (answers are never changed)."""
    if answer or answer is None:
        return answer
    kind = type(answer)
    if kind is dict:
        return _EMPTY_DICT
    if kind is frozenset:
        return _EMPTY_FROZENSET
    return answer


def pack(info: ModuleInfo) -> bool:
    """Keep the body of freshly extracted facts marshalled in memory, decoded when a field of
    it is read (see `ModuleInfo.__getattr__`); whether it is (facts that are not plain data,
    and those of files that could not be read, stay as they are)."""
    state = info.__dict__
    if info.error is not None or "_body" in state or "_packed" in state:
        return False
    try:
        packed = [marshal.dumps(_plain_events(info)), *[marshal.dumps(state[k]) for k in _REST_FIELDS]]
    except ValueError:
        return False
    # a tuple, not a dict by name: 460 bytes less on each module (17 MB on 38,000 files);
    # answers that are empty are the shared empty ones (most modules' answers)
    state["_summary"] = tuple([_shared_empty(ask(info)) for ask in summaries().values()])
    for k in BODY_FIELDS:
        del state[k]
    state["_packed"] = packed  # (by field, in `BODY_FIELDS` order)
    return True


def packed_plain(info: ModuleInfo) -> Optional[tuple]:
    """Packed facts (`pack`) as plain data to send between processes, or None for facts that
    are not packed."""
    packed = info.__dict__.get("_packed")
    if packed is None:
        return None
    state = _outline_plain(info)
    state["_summary"] = info.__dict__["_summary"]
    return (state, *[packed_field(packed, i) for i in range(len(BODY_FIELDS))])


def packed_body(info: ModuleInfo) -> Optional[list]:
    """The packed body of `info` (`pack`: the marshalled fields in `BODY_FIELDS` order, an int
    for a field moved to the temporary file, which then ends the list), or None when its body
    is not packed: for tests and diagnostics of a large project's memory."""
    return info.__dict__.get("_packed")


def packed_field(packed: list, i: int) -> Optional[bytes]:
    """The marshalled body field `i` (in `BODY_FIELDS` order) of packed facts, read back
    from the temporary file it was moved to (`spill.take`: then an int says where, and the
    list ends with the file)."""
    data = packed[i]
    if type(data) is int:
        return packed[-1].get(data)
    return data


def from_packed_plain(plain: tuple) -> ModuleInfo:
    state, *packed = plain
    info = _from_outline(state)
    info.__dict__["_packed"] = packed
    return info


def unpack(info: ModuleInfo) -> None:
    """Decode a packed body for good (facts kept past the check, or copied)."""
    state = info.__dict__
    packed = state.get("_packed")
    if packed is None:
        return
    if packed[0] is not None:
        state["events"] = _unpacked_events(packed_field(packed, 0), info)
    for i, name in enumerate(_REST_FIELDS, 1):
        if name not in state:  # (else decoded now, and kept)
            state[name] = marshal.loads(packed_field(packed, i))
        DECODED.forget(info, name)
    del state["_packed"]
    state.pop("_summary", None)


class _DecodedBodies:
    """The fields of packed bodies decoded (other than events), oldest first: past `limit`
    bytes (of their marshalled size) the oldest are let go again. Rules read a module's body
    over and over while they look at it, then move on, mostly in module order."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.held: dict[tuple[int, str], tuple[ModuleInfo, int]] = {}

    def add(self, info: ModuleInfo, name: str, size: int) -> None:
        self.held[(id(info), name)] = (info, size)
        self.size += size
        while self.size > self.limit and len(self.held) > 1:
            key = next(iter(self.held))
            old, old_size = self.held.pop(key)
            self.size -= old_size
            old.__dict__.pop(key[1], None)

    def clear(self) -> None:
        """Hold on to nothing (what is decoded stays so): a check's facts are not kept
        alive past it by this table (nor by the table of shared event data)."""
        self.held = {}
        self.size = 0
        _SHARED_DATA.clear()

    def forget(self, info: ModuleInfo, name: str) -> None:
        hit = self.held.pop((id(info), name), None)
        if hit is not None:
            self.size -= hit[1]


# A decoded body takes about 5 times its marshalled size. On a 38,000-file tree 2 MB held
# about 1,000 bodies at once; the modules a program or a module's rules read together are
# far fewer: a quarter of a MB decoded the fields 279,000 times instead of 246,000 (169 MB
# marshalled instead of 163) and took 16 MB less at the peak of a cold check of 38,308
# files (each body is decoded about 3 times in a check: programs, module rules, program
# rules); 16 MB held 14,000 and cost 80 MB more for a tenth fewer decodings. (Tests lower
# its `limit` to make bodies be let go and decoded again.)
DECODED = _DecodedBodies(1 << 18)


def release_decoded() -> None:
    """Empty the table of decoded body fields (a check ends)."""
    DECODED.clear()


# -- a compact form for sending facts between processes ---------------------------------
# Plain tuples, dicts and strings that `marshal` writes and reads several times faster than
# pickle writes and reads the objects (pickle calls back into Python for every event and
# function). Facts holding anything else are pickled as they are.
_EVENT_FIELDS = Event.__slots__
_FUNCTION_FIELDS = _FUNCTION_FACTS


def to_plain(info: ModuleInfo) -> dict:
    if "_body" in info.__dict__ or "_packed" in info.__dict__:
        info.__getstate__()  # decodes the body
    state = _outline_plain(info)
    state["events"] = _plain_events(info)
    return state


def _outline_plain(info: ModuleInfo) -> dict:
    state = dict(info.__dict__)
    state.pop("_summary", None)
    state.pop("_body", None)
    if state.pop("_packed", None) is not None:
        for k in BODY_FIELDS:
            state.pop(k, None)
    state["functions"] = {q: tuple([getattr(f, k) for k in _FUNCTION_FIELDS]) for q, f in info.functions.items()}
    state["classes"] = {q: (c.qual, c.name, c.line, c.bases, c.methods) for q, c in info.classes.items()}
    return state


def to_plain_parts(info: ModuleInfo) -> tuple[dict, Any]:
    """(the outline, the body) of `to_plain`, the outline with the `summaries()` answers; a
    body not read yet is given as where it lies (`from_plain_parts`)."""
    summary = {name: info.summary(name) for name in summaries()}
    body = info.__dict__.get("_body")
    packed = info.__dict__.get("_packed")
    if packed is not None:  # (marshalled as it is stored)
        body = {"events": marshal.loads(packed_field(packed, 0)) if packed[0] is not None else _plain_events(info)}
        body.update((name, marshal.loads(packed_field(packed, i))) for i, name in enumerate(_REST_FIELDS, 1))
        state = _outline_plain(info)
    elif body is None:
        state = to_plain(info)
        body = {k: state.pop(k) for k in BODY_FIELDS}
    else:
        state = _outline_plain(info)
    for name in _SHARED_DEFAULTS:
        value = state.get(name, _SHARED_DEFAULTS)
        if not value and (value is None or type(value) in _EMPTY_TYPES):
            del state[name]  # the class's value stands for it
    state["_summary"] = summary
    return state, body


# the outline fields left out of a stored outline when empty, false, zero or None
_SHARED_DEFAULTS = {
    name: None
    for name in (
        "error", "is_test", "never_entry", "main_block", "module_work", "hydra_mains", "import_block_end",
        "docstring_end", "future_end", "noqa", "file_noqa", "file_noqa_set",
    )
}
# (not frozenset: an empty `file_noqa` means "every code", unlike None)
_EMPTY_TYPES = (bool, int, list, tuple, dict)


def from_plain_parts(outline: dict, body: Any) -> ModuleInfo:
    """The facts of `to_plain_parts`; `body` is where the marshalled body lies (a reader
    with a `read(offset, size, digest)` method, then those three), read and decoded when
    a field of it is first read."""
    info = _from_outline(outline)
    info.__dict__["_body"] = body
    return info


def _from_outline(outline: dict) -> ModuleInfo:
    """Facts made from a plain outline (functions and classes as tuples), without a body."""
    info = ModuleInfo.__new__(ModuleInfo)
    info.__dict__.update(outline)
    info.functions = {q: FunctionInfo(*f) for q, f in outline["functions"].items()}
    info.classes = {q: ClassInfo(*c) for q, c in outline["classes"].items()}
    return info


def _decode_body(info: ModuleInfo, body: Any) -> None:
    try:
        state = body if isinstance(body, dict) else marshal.loads(body[0].read(*body[1:]))
        info.__dict__.update({k: state[k] for k in BODY_FIELDS})
        info.events = _events(state["events"])
    except (ValueError, EOFError, TypeError, KeyError) as exc:
        # authenticated data this code wrote: only a bug gets here
        raise RuntimeError(f"{info.path}: cached facts cannot be read ({exc}); remove .repro_lint_cache") from exc


def from_plain(state: dict) -> ModuleInfo:
    info = _from_outline(state)
    info.events = _events(state["events"])
    return info
