"""A program's seed settings at rule time, from what extraction recorded
(`facts/families/seed_settings.py`): which `<name>.<attr>` expressions hold the user's seed
in a scope (`args.seed` where the parser defines `--seed`, a parsed config, `self.seed`,
a local `seed`), for fixes that use the user's seed (spec "Fixes", item 2).
"""

from __future__ import annotations

from typing import Optional

from repro_lint.facts.families.seed_settings import DATACLASS, FACTS, names
from repro_lint.facts.model import ModuleInfo


# what a module without seed settings has: one shared value, only ever read (this is asked of
# every module of every program)
_NO_FACTS: dict = {"options": (), "parsed": {}, "parsers": (), "attrs": {}, "locals": {}}


def facts_of(info: ModuleInfo) -> dict:
    return info.extra.get(FACTS) or _NO_FACTS


def options(infos) -> list[str]:
    """The seed options the argparse parsers of these modules define, in catalog order,
    but for those whose value may be None (`add_argument("--seed", type=int)` without a
    default): `torch.manual_seed(args.seed)` would raise on a run that does not pass one."""
    found: set = set()
    unset: set = set()
    for info in infos:  # (asked of every module of every program: most have no settings)
        facts = info.extra.get(FACTS)
        if facts:
            found.update(facts["options"])
            unset.update(facts.get("none", ()))
            # a dict of defaults built where a parser is made, which gives it its options
            # (`add_dict_to_argparser(parser, dict(seed=42))`)
            made = facts.get("parser_made", ())
            for scope, keys in facts.get("dict_options", {}).items():
                if scope in made:
                    found.update(keys)
    found -= unset
    return [a for a in names()["attrs"] if a in found]


def parsed_names(info: ModuleInfo, scope: str, parser_functions: set) -> list[tuple[str, tuple]]:
    """Names a scope binds to parsed command-line arguments, with the span of the binding
    statement. `parser_functions` are the project functions (keys or names) that return
    parsed arguments."""
    return [(name, span) for name, span, _ in parsed_bindings(info, scope, parser_functions)]


def parsed_bindings(info: ModuleInfo, scope: str, parser_functions: set) -> list[tuple[str, tuple, str]]:
    """`parsed_names` with how each name is bound: "parse" (`parser.parse_args()` in the
    scope) or the parser function called."""
    out = []
    for name, span, how in facts_of(info)["parsed"].get(scope, ()):
        if how == "parse" or how.startswith(DATACLASS) or how in parser_functions or how.rpartition(".")[2] in parser_functions:
            out.append((name, tuple(span), how))
    return out


def own_options(info: ModuleInfo) -> Optional[list[str]]:
    """The seed options of a module that builds an argparse parser of its own (`add_argument`
    calls), in catalog order: what `parse_args()` there returns has no others (`opt.seed`
    of another module's parser would raise AttributeError). None when it adds no argument
    (it parses a parser built elsewhere)."""
    facts = facts_of(info)
    if not facts.get("adds"):
        return None
    return options([info])


def parser_function_names(infos) -> set:
    """Names of project functions that parse the command line and are named for it
    (`get_args`, `parse_opt`): `args = get_args()` binds parsed arguments."""
    pattern = names()["config_function"]
    out: set = set()
    for info in infos:
        facts = info.extra.get(FACTS)
        for scope in facts["parsers"] if facts else ():
            fn = info.functions.get(scope)
            if fn is not None and pattern.search(fn.name):
                out.add(fn.name)
                out.add(f"{info.module}.{scope}" if info.module else scope)
    return out


def local_seeds(info: ModuleInfo, scope: str) -> list[tuple[str, tuple]]:
    """Local names of a function named like a seed, with the span of their binding."""
    return [(name, tuple(span)) for name, span in facts_of(info).get("locals", {}).get(scope, ())]


def instance_attrs(info: ModuleInfo, cls: str) -> list[str]:
    return list(facts_of(info)["attrs"].get(cls, ()))
