"""How a program stands on each determinism setting (RPL401–RPL405 and their fixes ask
here): which flags and switches it sets where they take effect, which it sets to a wrong
value or where they have no effect, whether an event shows determinism intent, and which
operations it reaches that raise under deterministic algorithms.
"""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass, field
from typing import Any, Iterable

from repro_lint.analysis.context import Context, program_cache
from repro_lint.analysis.training import runs_with_gradients, training_of
from repro_lint.facts.families.determinism import flags
from repro_lint.facts.families.frameworks import keyword_switches
from repro_lint.facts.families.nondeterministic_ops import table
from repro_lint.facts.model import Event, ModuleInfo
from repro_lint.index.program import Program

CUDNN_DETERMINISTIC = "torch.backends.cudnn.deterministic"
CUDNN_BENCHMARK = "torch.backends.cudnn.benchmark"
ALGORITHMS = "deterministic-algorithms"
USE_DETERMINISTIC = "torch.use_deterministic_algorithms"

# -- what a program sets -------------------------------------------------------------------
Occurrence = tuple  # (ModuleInfo, scope, Event)


@dataclass
class State:
    """How one program stands on each determinism setting."""

    intent: bool
    uses_torch: bool
    covered: dict = field(default_factory=dict)  # setting -> occurrences that take care of it
    wrong: dict = field(default_factory=dict)  # setting -> occurrences with a wrong literal
    trainers_off: list = field(default_factory=list)  # Trainer(deterministic=False)
    trainers_missing: list = field(default_factory=list)  # Trainer() without the keyword
    enabling: list = field(default_factory=list)  # (occurrence, warn_only) turning algorithms on
    # setting -> [(occurrence, why it has no effect)]: set towards determinism, but after
    # training starts, only in a launcher's parent or only in DataLoader workers
    ignored: dict = field(default_factory=dict)
    # framework calls whose determinism keyword is left out (`TrainingArguments(...)` without
    # `full_determinism=`), where the process that trains makes them: where fixes switch it
    switchable: list = field(default_factory=list)
    # framework configuration classes read from the command line (`HfArgumentParser(
    # TrainingArguments)`): their switch is an option of the run (`--full_determinism true`)
    parsed: list = field(default_factory=list)

    def parsed_switch(self, setting: str) -> tuple[str, str]:
        """For a program whose framework configuration comes from the command line, the class
        and the keyword of the option that turns `setting` on (`TrainingArguments`,
        `full_determinism`); ("", "") for none."""
        for cls, keyword, sets in self.parsed:
            if setting in sets:
                return cls, keyword
        return "", ""

    def algorithms_mode(self) -> str:
        """"on", "warn" (every switch that turns them on has warn_only=True) or "off"."""
        if ALGORITHMS not in self.covered:
            return "off"
        return "warn" if self.enabling and all(w is True for _, w in self.enabling) else "on"


_STATES: "weakref.WeakKeyDictionary[Program, State]" = program_cache()


def state_of(ctx: Context, program: Program) -> State:
    hit = _STATES.get(program)
    if hit is None:
        hit = _STATES[program] = _compute(ctx, program)
    return hit


def _compute(ctx: Context, program: Program) -> State:
    cat = flags()
    # a program that trains nothing (inference, evaluation, data preparation) shows intent for
    # its torch computations by seeding torch or setting a flag: a numpy seed that picks the
    # data it looks at says nothing about how its model runs
    trains = ctx.index.trains(program.scopes)
    st = State(intent=program.has_intent() if trains else program.has_intent(("torch",)), uses_torch=program.uses_torch())
    cublas = cat["cublas"]
    # the walk of the program in execution order, only for programs that set something
    # (most programs of a project set nothing)
    training = functools.partial(training_of, ctx, program)

    def cover(names: Iterable[str], occ: Occurrence) -> None:
        info, scope, ev = occ
        # an environment variable is inherited by the processes started later: only its time
        # counts; a framework's Trainer sets the flags in the processes it trains in
        why = None if ev.kind == "trainer" else training().no_effect(info, scope, ev, inherited=ev.kind == "env")
        for name in names:
            if why is None:
                st.covered.setdefault(name, []).append(occ)
            else:
                st.ignored.setdefault(name, []).append((occ, why))

    def wrong(names: Iterable[str], occ: Occurrence) -> None:
        # a wrong value matters where training runs (later training included), not in a
        # launcher's parent or in DataLoader workers; the fast side of the user's own switch
        # (`if args.deterministic: ... else: cudnn.benchmark = True`) is the user's choice
        if _other_side_deterministic(ctx, occ):
            return
        if training().elsewhere(occ[0], occ[1], inherited=occ[2].kind == "env") is None:
            for name in names:
                st.wrong.setdefault(name, []).append(occ)

    for info, scope, ev in program.events("flag", "switch", "trainer", "env", "switchable", "parsedswitch"):
        occ = (info, scope, ev)
        data = ev.data
        if ev.kind == "parsedswitch":
            if not info.is_test:
                st.parsed.extend(_parsed_switches(ctx, program, info, ev))
        elif ev.kind == "switchable":
            if training().no_effect(info, scope, ev) is None and not info.is_test:
                st.switchable.append(occ)
        elif ev.kind == "flag":
            spec = cat["flags"].get(data["name"], {})
            if data["value"] is None or data["value"] == spec.get("deterministic"):
                cover([data["name"], *spec.get("covers", ())], occ)
            else:
                wrong([data["name"]], occ)
        elif ev.kind == "switch":
            spec = cat["switches"].get(data["api"], {})
            if data["value"] is False:
                wrong(data["sets"], occ)
            else:
                cover([*data["sets"], *spec.get("covers", ())], occ)
                if ALGORITHMS in data["sets"] and ALGORITHMS in st.covered and st.covered[ALGORITHMS][-1] is occ:
                    st.enabling.append((occ, data.get("warn_only")))
        elif ev.kind == "trainer":
            value = data["deterministic"]
            if value == "missing":
                st.trainers_missing.append(occ)
            elif value is None or value == "unknown" or value:
                cover(cat["trainer"]["sets"], occ)
                st.enabling.append((occ, value == cat["trainer"]["warn-only-value"]))
            else:
                st.trainers_off.append(occ)
        elif ev.kind == "env" and data["var"] == cublas["variable"]:
            if data["value"] is None or data["value"] in cublas["values"]:
                cover([cublas["variable"]], occ)
            else:
                wrong([cublas["variable"]], occ)
    return st


def _other_side_deterministic(ctx: Context, occ: Occurrence) -> bool:
    """Whether the other side of the `if` a setting sits in sets a determinism flag or switch
    towards determinism: the setting is one side of the user's own switch."""
    info, scope, ev = occ
    branch = ev.data.get("branch")
    if branch is None:
        return False
    line, side = branch[0], 1 - branch[1]
    return any(
        o.kind in ("flag", "switch", "env") and (o.data.get("branch") or (0, -1))[:2] == (line, side) and shows_intent(ctx, info, o)
        for o in info.events.get(scope, ())
    )


def shows_intent(ctx: Context, info: ModuleInfo, ev: Event) -> bool:
    """The event seeds something or sets a determinism flag towards determinism
    (the per-event form of `Program.has_intent`)."""
    m = ctx.index.m
    if ev.kind in ("seed", "seedcand", "configload"):
        return bool(ctx.index.seed_sources(info, ev)) and ev.data.get("intent", True)
    if ev.kind == "intent":
        return True
    if ev.kind == "flag":
        spec = m.flags.get(ev.data["name"], {})
        return ev.data["value"] is None or ev.data["value"] == spec.get("deterministic")
    if ev.kind == "switch":
        return ev.data["value"] is not False
    if ev.kind == "trainer":
        return ev.data["deterministic"] not in (False, "missing")
    if ev.kind == "env":
        return ev.data["var"] == m.cublas["variable"]
    return False


_CALL_INTENT: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def function_intent(ctx: Context, key: str) -> bool:
    """Whether calling project function `key` shows intent, itself or through its callees."""
    index = ctx.index
    cache = _CALL_INTENT.setdefault(index, {})
    hit = cache.get(key)
    if hit is None:
        hit = False
        for mod, scope in index.reach([index.scope_of(key)], include_imports=False):
            info = index.modules[mod]
            if any(shows_intent(ctx, info, ev) for ev in info.events.get(scope, ())):
                hit = True
                break
        cache[key] = hit
    return hit


def _parsed_switches(ctx: Context, program: Program, info: ModuleInfo, ev: Event) -> list[tuple]:
    """The keyword switches of a configuration class a parser reads from the command line
    (the class's own, or a base's for a project subclass: `class SFTConfig(trl.SFTConfig)`),
    as (class name, keyword, settings), where the program runs the framework that reads them
    (a `Trainer` it trains: `HfArgumentParser(TrainingArguments)` before a loop of its own
    switches nothing)."""
    switches = keyword_switches()
    index = ctx.index
    cls = ev.data["api"]
    if ev.data["project"]:
        key = index.class_key(cls, info)
        bases = index.class_bases(key) if key is not None else ()
    else:
        bases = (cls,)
    out = []
    for base in bases:
        for entry in switches.get(base, ()):
            if entry.get("fix") != "add":
                continue
            framework = entry["framework"]
            if any(run.data.get("framework") == framework for _, _, run in program.events("runner")):
                out.append((cls.rpartition(".")[2], entry["keyword"], tuple(entry["sets"])))
    return out


def raising_ops(ctx: Context, program: Program) -> list[tuple]:
    """Calls the program reaches of operations that raise under
    `torch.use_deterministic_algorithms(True)` on CUDA: (module info, event, api). One that
    raises only in its backward pass counts only where gradients flow during the training (a
    bicubic `interpolate` of a checkpoint's tensor at load time never raises)."""
    t = table()
    out = []
    for info, scope, ev in program.events("ndop"):
        raising = [t.by_id[i] for i in ev.data["ops"] if i in t.by_id and t.by_id[i]["with-deterministic-algorithms"] == "raises"]
        if not raising:
            continue
        if all(op["backward-only"] for op in raising) and not runs_with_gradients(ctx, program, info, scope, ev.line, ev.data["api"] not in t.modules):
            continue
        out.append((info, ev, ev.data["api"]))
    return out


# -- what a fix that turns a switch on leaves ------------------------------------------------
def switch_key(info: ModuleInfo, ev: Event) -> tuple:
    """How a fix names the call whose switch it turns on: the module and place of its event."""
    return (info.path, ev.line, ev.col, ev.kind)


def switched_on(program: Program, switches: Iterable[tuple]) -> dict:
    """The events the program has once fixes turn `switches` on (`Fix.switches_on`: the
    `switch_key` of the call, then whether it only warns), by the key of the event each
    replaces (`Program.changed_by`): a framework call given its determinism keyword
    (`set_seed(seed, deterministic=True)`), a literal `False` made `True`. What they set is
    the call's own (`set_seed` sets no cuBLAS workspace)."""
    wanted = {tuple(s[:4]): s[4] for s in switches}
    out: dict = {}
    if not wanted:
        return out
    for info, _, ev in program.events("switchable", "switch"):
        key = switch_key(info, ev)
        if key not in wanted:
            continue
        data = {k: v for k, v in ev.data.items() if k != "since"}
        data["value"] = True
        data["warn_only"] = wanted[key]
        out[key] = Event("switch", ev.line, ev.col, ev.end_line, ev.end_col, ev.stmt, data)
    return out
