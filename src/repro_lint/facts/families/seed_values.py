"""RPL105 and RPL106, the extraction side: what a seeding call is given, and what the function
it is in does (the rules are in `rules/seed_values.py` and `rules/library_reseeds.py`).

"varyseed" events (RPL105): a seeding call (a catalog seeder, a generator constructor, a
`manual_seed`/`seed` method, a helper named like a seeder) whose value comes from something
that differs on every run (`time.time()`, `os.getpid()`, `uuid4()`, `id()`, `hash()` of text,
or an unseeded draw, see `drawn`), directly or through names and attributes assigned from it
in the same body. Data: `api`, `what` (how the message names the source), `via` (the name or
attribute it went through, None when inline), `recorded` (that name, or an object it was
stored in, is printed, logged or saved in the body), `local` (inside a `fork_rng` block or a
saved-and-restored state), `drawn` (the RNG source of a draw it came from, else None),
`sources`, `drawn_at` (where that draw is), `text_option` (for `hash(args.x)` where the
module does not declare `--x` itself: the option, which the rule looks up in the modules it
imports).

"reseed" events (RPL106): a call of a global seeding function (`torch.manual_seed`,
`random.seed`, `np.random.seed`, framework helpers) inside a function. Data: `api`,
`sources`, `value` ("literal", "constant", "user" or "other": the seed given), `seeder`
(the function's purpose is seeding: its name says so, or it makes only seeding calls and the
calls of `seeder-calls`), `local`, and for the fix `block` (the spans of the statements from
the call to the end of its block) and `leaves` (the block yields: a generator's caller would
run inside it).
"""

from __future__ import annotations

import ast
import functools
import re
from typing import Any, Optional

from repro_lint.core import catalog
from repro_lint.facts.families import scope_syntax as syn
from repro_lint.facts.hooks import Family
from repro_lint.facts.syntax import NOT_LITERAL, argparse_dest, get_arg, literal

VARYING = "seed_values:varying"
# ModuleInfo.extra key (and summary): the argparse options the module declares as text
# (`add_argument("--run_name", type=str)`), for `hash(args.run_name)` in modules that import it
TEXT_OPTIONS = "seed_values:text_options"
RESEED = "seed_values:reseed"
_MAX_DEPTH = 4  # names followed through names


@functools.lru_cache(maxsize=1)
def values_catalog() -> dict:
    data = catalog.load("seed_values")
    rng = catalog.load("rng")
    rec = data["recording"]
    seeding = data["seeding"]
    reseeding = data["reseeding"]
    return {
        "varying": dict(data["varying"]),
        "hash": data["hash"]["function"],
        "text_calls": frozenset(data["hash"]["text-calls"]),
        "text_methods": frozenset(data["hash"]["text-methods"]),
        "record_calls": frozenset(rec["functions"]),
        "record_methods": frozenset(rec["methods"]),
        "record_pattern": re.compile(rec["function-pattern"], re.IGNORECASE),
        "seed_readers": frozenset(rec["seed-readers"]),
        "seed_methods": frozenset(seeding["methods"]),
        "helpers": frozenset(seeding["helper-names"]),
        "global": frozenset(reseeding["global-seeders"]),
        "seeder_calls": frozenset(reseeding["seeder-calls"]),
        "seeder_methods": frozenset(reseeding["seeder-methods"]),
        "fork_rng": reseeding["fork-rng"],
        "seed_attributes": frozenset(a.lower() for a in rng["seed-attributes"] + rng["seed-names"]),
        "config_names": frozenset(rng["config-names"]),
    }


def _call_names() -> frozenset:
    cat = values_catalog()
    rng = catalog.load("rng")
    names = {s["name"].rpartition(".")[2] for s in rng["seeders"]}
    names |= {g["name"].rpartition(".")[2] for g in rng["generators"]}
    names |= {m["method"] for m in rng.get("seeding-methods", ())}
    return frozenset(names | cat["seed_methods"] | cat["helpers"])


# -- the walk -----------------------------------------------------------------------------
_OPTIONS = "_seed_values_options"  # (on the extractor) {"text": dests, "other": dests} declared in the file


def _on_option(ex: Any, node: ast.Call, qual: Optional[str]) -> None:
    """`parser.add_argument(...)`: whether the option holds text (`type=str`, or a str
    default and no `type=`)."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr != "add_argument":
        return
    dest = argparse_dest(node)
    if not dest:
        return
    kind = get_arg(node, -1, "type")
    default = get_arg(node, -1, "default")
    text = isinstance(kind, ast.Name) and kind.id == "str" if kind is not None else default is not None and isinstance(literal(default), str)
    ex.__dict__.setdefault(_OPTIONS, {"text": set(), "other": set()})["text" if text else "other"].add(dest)
    if text:
        options = ex.info.extra.setdefault(TEXT_OPTIONS, [])
        if dest not in options:
            options.append(dest)


def _on_call(ex: Any, node: ast.Call, qual: Optional[str]) -> None:
    cat = values_catalog()
    m = ex.m
    func = node.func
    spec = m.seeders.get(qual) if qual else None
    arg: Optional[ast.AST] = None
    api = qual or ""
    sources: tuple = ()
    if spec is not None:
        if spec.build:
            return
        if spec.seed_from_keyword:
            arg = next((k.value for k in node.keywords if k.arg == spec.seed_from_keyword), None)
        else:
            arg = node.args[0] if node.args else (node.keywords[0].value if node.keywords and node.keywords[0].arg else None)
        sources = spec.sources
    elif qual in m.generators and not m.generators[qual].nested_only and m.generators[qual].bit_generator_arg < 0:
        gen = m.generators[qual]
        arg = node.args[gen.seed_arg] if len(node.args) > gen.seed_arg else next((k.value for k in node.keywords if k.arg == gen.seed_kw), None)
    elif isinstance(func, ast.Attribute) and func.attr in cat["seed_methods"] and not (qual and qual in m.seeders):
        arg = node.args[0] if node.args else None
        api = api or f".{func.attr}"
    else:
        last = qual.rpartition(".")[2] if qual else func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if last in cat["helpers"] or last in m.seeding_methods:
            arg = node.args[0] if node.args else (node.keywords[0].value if node.keywords and node.keywords[0].arg else None)
            api = api or last
            seeding = m.seeding_methods.get(last)
            sources = seeding.sources if seeding is not None else ()
    local = bool(ex.rng_local) or bool(sources) and set(sources) <= ex.local_sources
    if arg is not None and literal(arg) is NOT_LITERAL:
        ev = ex.add("varyseed", node, api=api, sources=tuple(sources), local=local)
        syn.keep(ex, VARYING, node, ev)
        ev.data["_arg"] = arg  # (taken out when the file is done)
    if ex.func is not None and (qual in cat["global"] or spec is not None and spec.framework and not spec.build):
        ev = ex.add("reseed", node, api=qual, sources=tuple(sources), local=local)
        syn.keep(ex, RESEED, node, ev)
        ev.data["_arg"] = arg


def _on_finish(ex: Any) -> None:
    cat = values_catalog()
    for kept in syn.kept(ex, VARYING):
        ev = kept.event
        arg = ev.data.pop("_arg")
        values = _Values(ex, kept, cat)
        found = values.varying(arg)
        if found is None:
            ex.info.events[kept.scope].remove(ev)
            continue
        what, via, drawn = found
        body = syn.body_of(ex, kept.scope, kept.func)
        ev.data.update(what=what, via=via, drawn=drawn, recorded=_recorded(ex, body, via, ev.data["sources"], cat))
        if values.text_option:
            ev.data["text_option"] = values.text_option
        if drawn:
            ev.data["drawn_at"] = values.drawn_at
    for kept in syn.kept(ex, RESEED):
        ev = kept.event
        arg = ev.data.pop("_arg")
        ev.data.update(_reseed_facts(ex, kept, arg, cat))
    for scope in {k.scope for k in syn.kept(ex, VARYING)} | {k.scope for k in syn.kept(ex, RESEED)}:
        events = ex.info.events.get(scope)
        if events is not None and not events:
            del ex.info.events[scope]


# -- RPL105: values that differ per run ----------------------------------------------------
class _Values:
    def __init__(self, ex: Any, kept: syn.Kept, cat: dict) -> None:
        self.ex = ex
        self.kept = kept
        self.cat = cat
        self.body = syn.body_of(ex, kept.scope, kept.func)
        self.params = set(kept.func.params) if kept.func is not None else set()
        self.drawn_at: Optional[tuple] = None  # where the draw a seed came from is
        # the option `hash()` was given when the module does not declare it (`args.run_name`)
        self.text_option: Optional[str] = None

    def callee(self, func: ast.AST) -> Optional[str]:
        if isinstance(func, ast.Name) and self.ex.r.is_unbound(func.id):
            return func.id
        return self.ex.r.qualify(func)

    def assigned(self, name: str, before: ast.AST) -> Optional[ast.AST]:
        """The value last assigned to a name or attribute before `before`, in the body."""
        line = getattr(before, "lineno", 0)
        found = None
        for stmt in syn.statements(self.body):
            if stmt.lineno >= line:
                break
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                if any(syn.dotted(t) == name for t in syn.assigned_targets(stmt)):
                    found = stmt.value
        return found

    def varying(self, arg: ast.AST, depth: int = 0, via: Optional[str] = None) -> Optional[tuple]:
        """(how it is named, the name it went through, the source of a draw) of a part of
        `arg` that differs per run, or None."""
        for node in ast.walk(arg):
            if isinstance(node, ast.Call):
                callee = self.callee(node.func)
                if callee is None and isinstance(node.func, ast.Attribute):
                    # `datetime.now()` after `from datetime import datetime`
                    base = self.callee(node.func.value)
                    callee = f"{base}.{node.func.attr}" if base else None
                if callee in self.cat["varying"]:
                    return f"`{callee}()` ({self.cat['varying'][callee]})", via, None
                if callee == self.cat["hash"] and node.args and self.text(node.args[0], depth):
                    return "`hash()` of text (randomised per interpreter unless PYTHONHASHSEED is set when it starts)", via, None
                source = self.ex.m.draw_source(callee) if callee else None
                if source is not None:
                    self.drawn_at = (node.lineno, self.ex.col(node.lineno, node.col_offset))
                    return f"`{callee}()` (a draw from {source}'s global RNG, which nothing seeds before it)", via, source
            elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load) and depth < _MAX_DEPTH:
                name = syn.dotted(node)
                if name is None or name in self.params:
                    continue
                value = self.assigned(name, self.kept.node if depth == 0 else arg)
                if value is not None:
                    found = self.varying(value, depth + 1, via or name)
                    if found is not None:
                        return found
        return None

    def text(self, node: ast.AST, depth: int) -> bool:
        """Whether a value is known to be a str or bytes (or a tuple holding one)."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (str, bytes))
        if isinstance(node, ast.JoinedStr):
            return True
        if isinstance(node, ast.Tuple):
            return any(self.text(e, depth) for e in node.elts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
            return self.text(node.left, depth)
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in self.cat["text_methods"]:
                return True
            return self.callee(node.func) in self.cat["text_calls"]
        if isinstance(node, (ast.Name, ast.Attribute)) and depth < _MAX_DEPTH:
            name = syn.dotted(node)
            if name is None:
                return False
            value = self.assigned(name, self.kept.node)
            if value is not None:
                return self.text(value, depth + 1)
            if isinstance(node, ast.Attribute):
                if _text_option(self.ex, node.attr):
                    return True
                base = node.value
                if isinstance(base, ast.Name) and base.id in self.cat["config_names"] and not _declares_option(self.ex, node.attr):
                    # an option of a parser another module builds: the rule looks there
                    self.text_option = node.attr
                    return True
        return False


def _declares_option(ex: Any, dest: str) -> bool:
    return any(dest in names for names in ex.__dict__.get(_OPTIONS, {}).values())


def _text_option(ex: Any, dest: str) -> bool:
    """Whether the module declares an argparse option `dest` that holds text."""
    options = ex.__dict__.get(_OPTIONS)
    return bool(options) and dest in options["text"] and dest not in options["other"]


def _mentions(node: ast.AST, names: set) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Name, ast.Attribute)) and syn.dotted(sub) in names:
            return True
    return False


def _recorded(ex: Any, body: list, via: Optional[str], sources: tuple, cat: dict) -> bool:
    """Whether the body prints, logs or saves the seed: the name it went through, an object
    it was stored in (`args.seed = seed`, then `print(args)`), or what torch was given."""
    names: set = set()
    if via:
        names = {via, via.split(".", 1)[0]} if "." in via else {via}
        for stmt in syn.statements(body):
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and _mentions(stmt.value, {via}):
                for target in syn.assigned_targets(stmt):
                    root = target
                    while isinstance(root, (ast.Attribute, ast.Subscript)):
                        root = root.value
                    if isinstance(root, ast.Name):
                        names.add(root.id)
    for node in syn.nodes(body):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = ex.r.qualify(func) or (func.id if isinstance(func, ast.Name) else None)
        sink = name in cat["record_calls"] or isinstance(func, ast.Attribute) and func.attr in cat["record_methods"]
        if not sink:
            last = (name or getattr(func, "attr", "") or "").rpartition(".")[2]
            sink = bool(last) and bool(cat["record_pattern"].search(last))
        if not sink:
            continue
        args = [*node.args, *(k.value for k in node.keywords)]
        if names and any(_mentions(a, names) for a in args):
            return True
        if "torch" in sources or not via:
            for a in args:
                for sub in ast.walk(a):
                    if isinstance(sub, ast.Call) and ex.r.qualify(sub.func) in cat["seed_readers"]:
                        return True
    return False


# -- RPL106: what the function around a global seeding call is ----------------------------
def _reseed_facts(ex: Any, kept: syn.Kept, arg: Optional[ast.AST], cat: dict) -> dict:
    fn = kept.func
    node = syn.function_node(ex, fn)
    body = node.body if node is not None else []
    return {
        "value": _value_kind(ex, arg, fn, cat),
        "seeder": ex.m.looks_like_seeder(fn.name) or _seeds_only(ex, body, cat),
        "function": fn.name,
        **_block(ex, body, kept.node),
    }


def _value_kind(ex: Any, arg: Optional[ast.AST], fn: Any, cat: dict) -> str:
    if arg is None:
        return "other"
    leaves = [n for n in ast.walk(arg) if isinstance(n, (ast.Name, ast.Attribute, ast.Call, ast.Constant))]
    if all(isinstance(n, ast.Constant) for n in leaves):
        return "literal"
    for n in ast.walk(arg):
        if isinstance(n, (ast.Name, ast.Attribute)):
            name = syn.dotted(n) or ""
            last = name.rpartition(".")[2]
            if last.lower() in cat["seed_attributes"] or ex.m.looks_like_seeder(last) or name in (fn.params or ()):
                return "user"
    if isinstance(arg, ast.Name) and arg.id in ex.info.constants:
        return "constant"
    return "other"


def _seeds_only(ex: Any, body: list, cat: dict) -> bool:
    """Whether a function makes nothing but seeding calls and the calls a seeding helper
    makes besides (logging, flags, the environment)."""
    m = ex.m
    for node in syn.nodes(body):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        qual = ex.r.qualify(func) or (func.id if isinstance(func, ast.Name) else None)
        if qual is not None and (qual in m.seeders or qual in cat["seeder_calls"] or qual in m.switches or m.looks_like_seeder(qual)):
            continue
        if isinstance(func, ast.Attribute) and (func.attr in cat["seeder_methods"] or func.attr in cat["seed_methods"]):
            continue
        return False
    return True


def _block(ex: Any, body: list, call: ast.Call) -> dict:
    """The statements from the seeding call's statement to the end of its block, and whether
    that block leaves the function early."""
    chain = syn.enclosing(body, call)
    if not chain:
        return {"block": (), "leaves": True}
    stmt = chain[-1]
    parent = chain[-2] if len(chain) > 1 else None
    block = body
    if parent is not None:
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(parent, field, None) or []
            if any(s is stmt for s in stmts):
                block = stmts
        for handler in getattr(parent, "handlers", ()) or ():
            if any(s is stmt for s in handler.body):
                block = handler.body
    i = next((i for i, s in enumerate(block) if s is stmt), None)
    if i is None:  # (a block this does not read, a `match` case)
        return {"block": (), "leaves": True}
    rest = block[i:]
    # (a `with` block is left by `return`, `break` and exceptions alike, restoring the state;
    # a generator's `yield` would leave the state forked while its caller runs)
    leaves = any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for s in rest for n in ast.walk(s))
    return {"block": tuple(ex.span(s) for s in rest), "leaves": leaves}


FAMILY = Family(
    order=50,
    call_hooks=(_on_call, _on_option),
    call_names={_on_call: _call_names, _on_option: lambda: frozenset(["add_argument"])},
    finish_hooks=(_on_finish,),
    summaries={TEXT_OPTIONS: lambda info: tuple(info.extra.get(TEXT_OPTIONS, ()))},
)
