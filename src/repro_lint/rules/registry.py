"""The rule registry: every rule function, found by discovery.

A rule is a function `check(ctx, unit) -> iterable of Finding`, registered with `@rule(CODE)`
in a module of this package (one module per family). `load_rules()` imports every module of
the package, so a new module is found without being listed; a module that fails to import
stops the run, and a rule whose document (`rules/CODE.toml`) is missing is an error.
The check engine filters the findings (targets, selection, noqa).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

RULES: dict[str, "RuleSpec"] = {}


@dataclass(frozen=True)
class RuleSpec:
    """A registered rule. `per` says what one call checks, so a failure stays contained:
    "module" rules are called with (ctx, module info), "program" rules with (ctx, program).
    `apart`: with --jobs above 1, the rule runs in the forked copy of the check that runs
    beside the main process (the rules marked so are about half of the rules' work).
    `follows`: "intent" for a program rule that looks only at programs showing determinism
    intent: a fix that seeds a program without intent makes the rule look at it, and what it
    then finds and fixes is announced as that fix's follow-ons (spec "Fixes" 13), as is what
    it finds once a fix turns a switch on (`Fix.switches_on`). A module rule's finding reported
    without a fix is looked at again once the programs that reach it are seeded
    (`check.across`)."""

    code: str
    per: str
    check: Callable
    apart: bool = False
    follows: str = ""


def rule(code: str, per: str = "program", apart: bool = False, follows: str = ""):
    assert per in ("module", "program")
    assert follows in ("", "intent") and (not follows or per == "program")

    def register(fn):
        RULES[code] = RuleSpec(code, per, fn, apart, follows)
        return fn

    return register


class RuleError(Exception):
    """A rule module is broken (a packaging or programming error, not the user's)."""


@functools.lru_cache(maxsize=1)
def load_rules() -> dict[str, RuleSpec]:
    """Import every module of this package (registering its rules), and order the rules by code."""
    from repro_lint import rules as package
    from repro_lint.core import catalog

    for mod in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{mod.name}")
    docs = catalog.rule_docs()
    missing = [code for code in RULES if code not in docs]
    if missing:
        raise RuleError(f"rules without a document in rules/: {', '.join(sorted(missing))}")
    ordered = dict(sorted(RULES.items()))
    RULES.clear()
    RULES.update(ordered)
    return RULES
