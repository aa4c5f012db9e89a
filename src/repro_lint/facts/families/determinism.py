"""What the extraction walk records for RPL401-RPL404 (hooks of the walk, `facts.hooks.Family`), beyond the shared
"flag", "switch", "trainer" and "env" events: what the fixes need (the span of a flag's
value, of a switch's mode argument and of a Trainer's `deterministic=` value), Trainers
built by config factories, and seeding helpers that switch determinism on through a keyword.
The flags catalog, read once, is here too.
"""

from __future__ import annotations

import ast
import functools
from typing import Optional

from repro_lint.core import catalog
from repro_lint.facts.hooks import Family
from repro_lint.facts.walker import extractor
from repro_lint.facts.model import Event
from repro_lint.facts.syntax import get_arg


@functools.lru_cache(maxsize=1)
def flags() -> dict:
    data = catalog.load("flags")
    return {
        "flags": {f["name"]: f for f in data["flags"]},
        "switches": {s["name"]: s for s in data["switches"]},
        "trainer": catalog.load("frameworks")["trainer"],
        "cublas": data["cublas"],
    }


def _event_at(ex: extractor.Extractor, kind: str, node: ast.AST) -> Optional[Event]:
    """The event of `kind` the core extraction just recorded for `node`."""
    line, col = node.lineno, ex.col(node.lineno, node.col_offset)
    for ev in reversed(ex.info.events.get(ex.scope, ())):
        if ev.kind == kind and ev.line == line and ev.col == col:
            return ev
        if ev.line < line:
            break
    return None


def _flag_value(ex: extractor.Extractor, stmt: ast.AST) -> None:
    """Where the value of a flag assignment is, for fixes that replace it."""
    # the walk records a flag as an event of this statement: without an event in it (most
    # assignments) there is nothing to do, whatever the statement assigns
    events = ex.info.events.get(ex.scope)
    if not events or events[-1].line < stmt.lineno:  # type: ignore[attr-defined]
        return
    value = getattr(stmt, "value", None)
    if value is None or isinstance(stmt, ast.AugAssign):
        return
    # flags are attributes (`torch.backends.cudnn.benchmark = ...`), possibly in a tuple
    for target in stmt.targets if type(stmt) is ast.Assign else (stmt.target,):  # type: ignore[attr-defined]
        if type(target) is not ast.Name:
            break
    else:
        return
    span = ex.span(stmt)
    for ev in reversed(events):
        if ev.kind == "flag" and ev.data.get("assign") == span:
            ev.data["value_span"] = ex.span(value)
            if ev.data["value"] is None:  # the user's switch (`args.deterministic`): fixes reuse it
                ev.data["value_text"] = ex.text_of(value)
                ev.data["value_names"] = frozenset(n.id for n in ast.walk(value) if isinstance(n, ast.Name))
        elif ev.line < stmt.lineno:
            break


def _determinism_call(ex: extractor.Extractor, node: ast.Call, qual: Optional[str]) -> None:
    if qual is None:
        return
    cat = flags()
    switch = cat["switches"].get(qual)
    if switch is not None and "arg" in switch:
        ev = _event_at(ex, "switch", node)
        if ev is not None:
            arg = get_arg(node, switch["arg"], switch["kw"])
            if arg is not None:
                ev.data["arg_span"] = ex.span(arg)
            warn = get_arg(node, 1, "warn_only")
            if warn is not None:
                ev.data["warn_only_span"] = ex.span(warn)
        return
    trainer = cat["trainer"]
    if qual in trainer["classes"]:
        ev = _event_at(ex, "trainer", node)
        arg = get_arg(node, -1, trainer["keyword"])
        if ev is not None and arg is not None:
            ev.data["value_span"] = ex.span(arg)
        return
    if qual in trainer["instantiators"]:
        first = node.args[0] if node.args else None
        stmt = ex.stmt_node
        names = [ex.text_of(first)] if first is not None else []
        if isinstance(stmt, ast.Assign) and stmt.value is node:
            names += [ex.text_of(t) for t in stmt.targets]
        if any(trainer["hint"] in n.lower() for n in names):
            ex.add("trainer", node, api=qual, deterministic="unknown")
        return
    owner, _, method = qual.rpartition(".")
    if method in trainer["builders"] and owner in trainer["classes"] or qual in trainer.get("cli-classes", ()):
        # `Trainer.from_argparse_args(args)`, `LightningCLI(Model, Data)`
        ex.add("trainer", node, api=qual, deterministic="unknown")


@functools.lru_cache(maxsize=1)
def _call_names() -> frozenset:
    cat = flags()
    trainer = cat["trainer"]
    quals = [*cat["switches"], *trainer["classes"], *trainer["instantiators"], *trainer.get("cli-classes", ())]
    return frozenset([*(q.rpartition(".")[2] for q in quals), *trainer["builders"]])


FAMILY = Family(order=60, call_hooks=(_determinism_call,), call_names={_determinism_call: _call_names}, assign_hooks=(_flag_value,))
