"""RPL4xx: deterministic execution, for programs that show determinism intent.

RPL401–RPL404 are about the switches (cuDNN flags, deterministic algorithms, the cuBLAS
workspace); RPL405, calls of nondeterministic operations, lives in `nondeterministic_ops`.

Facts come from the shared extraction ("flag", "switch", "trainer", "env" events) and the
hooks in `facts/families/determinism.py`.
"""

from __future__ import annotations

import weakref
from typing import Any, Iterable, Optional

from repro_lint.core.findings import Finding, Fix, Related
from repro_lint.core.edits import AddKeyword, InsertStatements, ReplaceExpression
from repro_lint.index.program import Program
from repro_lint.facts.model import Event, ModuleInfo
from repro_lint.facts.syntax import negated
from repro_lint.analysis.context import Context, location, program_cache, sentences, unfixed
from repro_lint.analysis.messages import import_bringing
from repro_lint.rules.registry import rule
from repro_lint.analysis.determinism_state import (
    ALGORITHMS,
    CUDNN_BENCHMARK,
    CUDNN_DETERMINISTIC,
    USE_DETERMINISTIC,
    State,
    function_intent,
    switch_key,
    raising_ops,
    shows_intent,
    state_of,
)
from repro_lint.analysis import by_name, flag_placement
from repro_lint.analysis import placement
from repro_lint.facts.families.determinism import flags
from repro_lint.analysis.torch_target import admits_before, program_target
from repro_lint.discover.requirements import Target, release

# Keys and orders of inserted blocks: after the seeding calls (orders 0-2), the cuDNN flags,
# then deterministic algorithms, so that fixes of several rules come out as one block.
KEY_CUDNN, ORDER_CUDNN = "determinism:cudnn", 10
KEY_ALGORITHMS, ORDER_ALGORITHMS = "determinism:algorithms", 20
KEY_CUBLAS = "determinism:cublas"


def finding_site(ctx: Context, program: Program) -> tuple[ModuleInfo, Any]:
    """Where RPL401/RPL403 report: the torch seeding statement in the entry module, else the
    entry module's first statement that shows intent, else the import that brings it in."""
    hit = _FINDING_SITES.get(program)
    if hit is None:  # RPL401 and RPL403 both ask
        hit = _FINDING_SITES[program] = _finding_site(ctx, program)
    return hit


_FINDING_SITES: "weakref.WeakKeyDictionary[Program, tuple]" = program_cache()


def _finding_site(ctx: Context, program: Program) -> tuple[ModuleInfo, Any]:
    entry = program.entry
    site = flag_placement.torch_seed_site(ctx, program, effective=False)
    if site is not None:
        return entry, site.at
    bodies = flag_placement.main_functions(ctx, program)
    for scope in flag_placement.entry_scopes(program):
        best: Optional[tuple] = None
        for ev in entry.events.get(scope, ()):
            if shows_intent(ctx, entry, ev) and (best is None or ev.pos < best[0]):
                best = (ev.pos, ev)
        for call, keys in ctx.index.callees(entry, scope):
            pos = (call[2], call[3])
            # a helper that shows intent, or the call that hands over to another module's code
            # that does (a launcher's `main.main(args)`)
            if (best is None or pos < best[0]) and any(
                ctx.index.scope_of(k) not in bodies and function_intent(ctx, k)
                and (not ctx.index.effects(k).draws or ctx.index.scope_of(k)[0] != entry.module)
                for k in keys
            ):
                best = (pos, tuple(call[2:6]))
        if best is not None:
            return entry, best[1]

    modules = {info.module for info, _, ev in program.events() if shows_intent(ctx, info, ev)}
    return entry, import_bringing(ctx, program, modules)


def cublas_edit(place: placement.Place) -> InsertStatements:
    return place.insert(flags()["cublas"]["code"], key=KEY_CUBLAS)


def cublas_needed(ctx: Context, st: State, program: Optional[Program] = None) -> bool:
    """The targeted releases check CUBLAS_WORKSPACE_CONFIG and the program does not set it."""
    cublas = flags()["cublas"]
    return program_target(ctx, program).admits_before(cublas["removed-in"]) and cublas["variable"] not in st.covered


def _warn_only(ctx: Context) -> bool:
    return bool(ctx.settings.get("warn-only"))


def _value_fix(ev: Event, span_key: str, code: str, description: str, safety: str = "safe") -> Optional[Fix]:
    span = ev.data.get(span_key)
    if span is None:
        return None
    return Fix(description, safety, (ReplaceExpression(span, code),))


# -- RPL401 ---------------------------------------------------------------------------------
def _without_effect(st: State, setting: str, what: str) -> tuple[str, list]:
    """Message words and related locations for a setting made only where it has no effect."""
    ignored = st.ignored.get(setting, [])
    if not ignored:
        return "", []
    (info, _, ev), why = ignored[0]
    related = [Related(location(i, e), f"{what} here, with no effect on the training") for (i, _, e), w in ignored[:5]]
    return why, related


def _framework_fix(ctx: Context, program: Program, st: State, cudnn_only: bool = False) -> Optional[Fix]:
    """The framework's own switch, where the program has one (spec "Fixes", item 6).

    A Lightning Trainer built in the entry module: `deterministic=` (it sets deterministic
    algorithms, which cover cuDNN, and the cuBLAS workspace itself); "warn" (the algorithms
    only warn) when the program reaches operations that raise, when the configuration asks
    for warnings, or for the cuDNN flags alone (`cudnn_only`: RPL401's fix must not make
    anything raise). Else a framework call with a determinism keyword left out
    (`TrainingArguments(full_determinism=True)`, `set_seed(seed, deterministic=True)`):
    that keyword, unsafe since it turns deterministic algorithms on with no warning form;
    none when the program reaches operations that would then raise."""
    entry = program.entry
    lightning = [occ for occ in st.trainers_missing if occ[0] is entry]
    if not lightning:
        return _keyword_fix(ctx, program, st, CUDNN_DETERMINISTIC if cudnn_only else ALGORITHMS)
    trainer = flags()["trainer"]
    raising = raising_ops(ctx, program)
    warn = cudnn_only or _warn_only(ctx) or bool(raising)
    value = f'"{trainer["warn-only-value"]}"' if warn else "True"
    ev = lightning[0][2]
    edit = AddKeyword((ev.line, ev.col, ev.end_line, ev.end_col), trainer["keyword"], value)
    return Fix(f"pass {trainer['keyword']}={value} to the Trainer{_raising_words(raising)}", "safe" if warn else "unsafe", (edit,))


def _parsed_words(st: State, setting: str) -> str:
    """Why plain flags are not inserted where the program reads its framework configuration
    from the command line: its switch is an option of the run (spec, "Fixes" 6 and 10)."""
    cls, keyword = st.parsed_switch(setting)
    if not cls:
        return ""
    return (
        f"the program reads its `{cls}` from the command line: run it with `--{keyword} true` (or `{keyword}: true` "
        "in the configuration file it reads), the framework's own switch, which also sets the cuDNN flags and the "
        "cuBLAS workspace"
    )


def _keyword_too_new(ctx: Context, program: Program, ev: Event) -> bool:
    """Whether a release the project declares lacks the framework keyword (`set_seed(...,
    deterministic=True)` is in accelerate from 0.29): the fix then uses plain calls."""
    since = ev.data.get("since")
    return since is not None and admits_before(ctx, program, since[0], since[1])


def _keyword_fix(ctx: Context, program: Program, st: State, setting: str) -> Optional[Fix]:
    candidates = [occ for occ in st.switchable if setting in occ[2].data["sets"] and not _keyword_too_new(ctx, program, occ[2])]
    if not candidates or raising_ops(ctx, program):
        return None
    # the switch that covers the most (`full_determinism` over `set_seed(deterministic=)`)
    info, _, ev = max(candidates, key=lambda occ: len(occ[2].data["sets"]))
    keyword, value = ev.data["keyword"], repr(ev.data["value"])
    path = info.path if info is not program.entry else ""
    edit = AddKeyword((ev.line, ev.col, ev.end_line, ev.end_col), keyword, value, path=path)
    name = ev.data["api"].rpartition(".")[2]
    return Fix(
        f"pass {keyword}={value} to `{name}` (the framework's switch: it also turns deterministic algorithms on, "
        "which raise on operations without a deterministic implementation)", "unsafe", (edit,),
        switches_on=((*switch_key(info, ev), False),),
    )


def _raising_words(raising: list) -> str:
    return f" (warnings only: {_reaches_raising(raising)})" if raising else ""


def _reaches_raising(raising: list) -> str:
    names = ", ".join(f"`{api}` (line {ev.line})" for _, ev, api in raising[:4])
    more = f" and {len(raising) - 4} more" if len(raising) > 4 else ""
    return f"the program reaches {names}{more}, which raise under deterministic algorithms on CUDA"


@rule("RPL401", per="program", follows="intent")
def cudnn_nondeterministic(ctx: Context, program: Program) -> Iterable[Finding]:
    st = state_of(ctx, program)
    # (the cuDNN flags govern convolutions and recurrent layers: nothing else the program runs)
    if not (st.intent and st.uses_torch and program.uses_cudnn() and program.cuda_settings_matter()):
        return
    wrong = st.wrong.get(CUDNN_DETERMINISTIC, [])
    for info, _, ev in wrong:
        value, what = _switched(ctx, program, ev, "set `torch.backends.cudnn.deterministic` to True", "True", determinism_on=True)
        yield ctx.finding(
            "RPL401", info, ev, "`torch.backends.cudnn.deterministic` is set to False",
            fix=_value_fix(ev, "value_span", value, what),
            help=sentences("cuDNN may then pick convolution algorithms whose results differ from run to run on GPU, even with the same seed"),
        )
    if CUDNN_DETERMINISTIC in st.covered or wrong:
        return
    why_not = _parsed_words(st, CUDNN_DETERMINISTIC)
    fix = None if why_not else _framework_fix(ctx, program, st, cudnn_only=True)
    if fix is None and not why_not:
        place = flag_placement.flags_place(ctx, program)
        if isinstance(place, str):
            why_not = place
        else:
            code = [flags()["flags"][CUDNN_DETERMINISTIC]["code"]]
            if CUDNN_BENCHMARK not in st.covered and CUDNN_BENCHMARK not in st.wrong:
                code.append(flags()["flags"][CUDNN_BENCHMARK]["code"])
            edit = place.insert("\n".join(code) + "\n", key=KEY_CUDNN, order=ORDER_CUDNN)
            fix = _checked(Fix(_flags_description("set the cuDNN determinism flags", place), "safe", (edit,)), place)
    note = ""
    if st.algorithms_mode() != "off":
        note = (
            " (`torch.use_deterministic_algorithms(True)` also selects deterministic cuDNN algorithms while it "
            "is on; the cuDNN flag keeps convolutions deterministic independently of it)"
        )
    why, related = _without_effect(st, CUDNN_DETERMINISTIC, "`cudnn.deterministic` is set")
    consequence = f"cuDNN may pick convolution algorithms whose results differ from run to run on GPU, even with the same seed{note}"
    if why:
        message = "`torch.backends.cudnn.deterministic = True` has no effect on the training"
        help = sentences(f"it is {why}", f"without it, {consequence}", unfixed(why_not))
    else:
        message = "this program runs convolutions or recurrent layers but never sets `torch.backends.cudnn.deterministic = True`"
        help = sentences(f"without it, {consequence}", unfixed(why_not))
    info, at = finding_site(ctx, program)
    yield ctx.finding("RPL401", info, at, message, related, fix=fix, help=help)


def _under_condition(ctx: Context, program: Program, place: placement.Place) -> bool:
    """Whether statements inserted at `place` run only under a condition: the place's own
    guard, or the `if` of the statement they follow (the user's `if args.deterministic:`)."""
    if place.guard or place.switch:
        return True
    if place.where != "after" or place.anchor is None:
        return False
    info = ctx.index.modules.get(place.module) if place.module else program.entry
    if info is None:
        return False
    at = (place.anchor[0], place.anchor[1])
    return any(ev.pos == at and ev.data.get("guard") for evs in info.events.values() for ev in evs)


def _checked(fix: Fix, place: placement.Place) -> Fix:
    """`fix` made unsafe, saying what to check, where its place depends on what the index
    cannot see (spec, "Fixes" 9)."""
    if not place.caveat:
        return fix
    return Fix(f"{fix.description}; check: {place.caveat}", "unsafe", fix.edits)


def _flags_description(what: str, place: placement.Place) -> str:
    if place.where == "body-start" and place.function:
        where = f"at the start of `{place.function}`, in the processes that run it"
        if place.guard:
            where += f", under `if {place.guard}:`"
        return f"{what} {where}"
    return f"{what} after the torch seed"


# -- RPL402 ---------------------------------------------------------------------------------
@rule("RPL402", per="program", follows="intent")
def cudnn_benchmark_enabled(ctx: Context, program: Program) -> Iterable[Finding]:
    st = state_of(ctx, program)
    if not (st.intent and program.uses_cudnn()):
        return
    for info, _, ev in st.wrong.get(CUDNN_BENCHMARK, []):
        if ev.kind == "flag" and ev.data["value"] is True:
            what, fix = "`torch.backends.cudnn.benchmark = True`", "set `torch.backends.cudnn.benchmark` to False"
        elif ev.kind == "switch" and ev.data.get("keyword"):  # a framework keyword: `Trainer(benchmark=True)`
            what = f"`{ev.data['api'].rsplit('.', 1)[-1]}({ev.data['keyword']}=True)` (which sets `torch.backends.cudnn.benchmark`)"
            fix = f"pass {ev.data['keyword']}=False"
        else:
            continue
        value, fix = _benchmark_value(ctx, program, ev, fix)
        yield ctx.finding(
            "RPL402", info, ev, f"{what} turns cuDNN's benchmark mode on",
            fix=_value_fix(ev, "value_span", value, fix),
            help=sentences(
                "cuDNN then times several convolution algorithms and keeps the fastest, which can differ from run to "
                "run and gives different results; turn it off"
            ),
        )


def _benchmark_value(ctx: Context, program: Program, ev: Event, description: str) -> tuple[str, str]:
    """What benchmark mode becomes: off; or, where the program's torch seed runs under a
    condition (its own switch: `if args.seed is not None:`) that this setting is not under,
    on only where that switch leaves determinism off (`args.seed is None`): one switch, one
    condition (spec, "Fixes" 10)."""
    return _switched(ctx, program, ev, description, "False", determinism_on=False)


def _switched(ctx: Context, program: Program, ev: Event, description: str, fixed: str, determinism_on: bool) -> tuple[str, str]:
    """The value a flag set to a wrong literal gets: `fixed`, or the program's own switch
    where its torch seed runs only under a condition this setting is not under: the
    condition (`args.seed is not None`) for a flag that turns determinism on, its negation
    for one that turns speed on (benchmark mode)."""
    site = flag_placement.torch_seed_site(ctx, program, effective=False)
    guard = site.guard if site is not None else None
    if not guard or ev.data.get("value_span") is None:
        return fixed, description
    own = ev.data.get("guard")
    if own is not None and guard[0] in own[0]:
        return fixed, description  # (set under the switch itself)
    value = guard[0] if determinism_on else negated(guard[0])
    return value, f"{description} where the program's switch `{guard[0]}` holds (it becomes `{value}`)"


# -- RPL403 ---------------------------------------------------------------------------------
def _switch_on_fix(ctx: Context, info: ModuleInfo, ev: Event) -> Optional[Fix]:
    """Turn a literal `use_deterministic_algorithms(False)` (or debug mode 0) on."""
    span = ev.data.get("arg_span")
    if span is None:
        return None
    warn = _warn_only(ctx)
    if ev.data["api"] == USE_DETERMINISTIC:
        edits: list = [ReplaceExpression(span, "True")]
        if warn and ev.data.get("warn_only") is not True:
            wspan = ev.data.get("warn_only_span")
            edits.append(ReplaceExpression(wspan, "True") if wspan else AddKeyword((ev.line, ev.col, ev.end_line, ev.end_col), "warn_only", "True"))
        safe = warn or ev.data.get("warn_only") is True
    else:
        edits = [ReplaceExpression(span, '"warn"' if warn else '"error"')]
        safe = warn
    switch = (*switch_key(info, ev), safe)  # (it only warns where it is safe)
    return Fix("turn deterministic algorithms on", "safe" if safe else "unsafe", tuple(edits), switches_on=(switch,))


@rule("RPL403", per="program", follows="intent")
def deterministic_algorithms_off(ctx: Context, program: Program) -> Iterable[Finding]:
    st = state_of(ctx, program)
    if not (st.intent and st.uses_torch and program.cuda_settings_matter(cpu_ops=True)):
        return
    warn = _warn_only(ctx)
    safety = "safe" if warn else "unsafe"
    wrong = [occ for occ in st.wrong.get(ALGORITHMS, []) if occ[2].kind == "switch"]
    for info, _, ev in wrong:
        yield ctx.finding(
            "RPL403", info, ev, f"`{ev.data['api']}(...)` turns deterministic algorithms off",
            fix=_switch_on_fix(ctx, info, ev),
            help=sentences(
                "CUDA operations without a deterministic default (scatter/index accumulation, pooling and "
                "interpolation backwards, ...) may then give different results from run to run"
            ),
        )
    trainer = flags()["trainer"]
    value_code = f'"{trainer["warn-only-value"]}"' if warn else "True"
    for info, _, ev in st.trainers_off:
        yield ctx.finding(
            "RPL403", info, ev, "`Trainer(deterministic=False)` turns deterministic algorithms off",
            fix=_value_fix(ev, "value_span", value_code, "build the Trainer with deterministic algorithms", safety),
            help=sentences("CUDA operations without a deterministic default may then give different results from run to run"),
        )
    if ALGORITHMS in st.covered or wrong or st.trainers_off:
        return
    # (the run's own option first: a keyword or flag added in code would bypass it)
    why_not = _parsed_words(st, ALGORITHMS)
    fix = None if why_not else _framework_fix(ctx, program, st)
    if fix is None and not why_not:
        place = flag_placement.flags_place(ctx, program, after_flags=True)
        made = place if isinstance(place, str) else _algorithms_fix(ctx, program, st, place)
        if isinstance(made, str):
            why_not = made
        else:
            fix = made
    why, related = _without_effect(st, ALGORITHMS, "deterministic algorithms are turned on")
    consequence = (
        "the cuDNN flags cover convolutions only, other CUDA operations (scatter/index accumulation, pooling "
        "and interpolation backwards, ...) stay nondeterministic"
    )
    if why:
        message = "`torch.use_deterministic_algorithms(True)` has no effect on the training"
        help = sentences(f"it is {why}", f"without it, {consequence}", unfixed(why_not))
    else:
        message = "this program never calls `torch.use_deterministic_algorithms(True)`"
        help = sentences(f"without it, {consequence}", unfixed(why_not))
    info, at = finding_site(ctx, program)
    yield ctx.finding("RPL403", info, at, message, related, fix=fix, help=help)


def _algorithms_missing(ctx: Context, program: Program, warn: bool, raising: list) -> str:
    """Why the torch the project targets cannot run the inserted call (it is older than the
    call, or than its `warn_only=` when the fix needs that: `raising` operations, or the
    configuration asks for warnings), or ""."""
    target = program_target(ctx, program)
    if target.lower is None:
        return ""
    spec = flags()["switches"][USE_DETERMINISTIC]
    shown = ".".join(map(str, target.lower)).removesuffix(".0")
    for key, what in (("since", f"`{USE_DETERMINISTIC}`"), ("warn-only-since", f"`{USE_DETERMINISTIC}(..., warn_only=True)`")):
        if key == "since" or warn:
            first = release(spec[key])
            if first is not None and target.lower < first:
                why = f"the project targets torch {shown} ({target.where}), which has no {what} (added in {spec[key]})"
                if key != "since":
                    why += f", needed since {_reaches_raising(raising)}" if raising else ", which the `warn-only` setting asks for"
                return why
    return ""


def _algorithms_fix(ctx: Context, program: Program, st: State, place: placement.Place) -> "Fix | str":
    """`torch.use_deterministic_algorithms(<switch>)` after the cuDNN flags: the user's switch
    when the cuDNN flag is set from one; `warn_only=True` (and a safe fix) when the
    configuration asks for it or the program reaches operations that would raise. Why there
    is none when the targeted torch lacks what it would insert."""
    raising = raising_ops(ctx, program)
    # what classes built by name run is not seen: an operation there may raise
    unseen = by_name.built_by_name_words(ctx, program)
    warn = _warn_only(ctx) or bool(raising) or bool(unseen)
    missing = _algorithms_missing(ctx, program, warn, raising)
    if missing:
        return missing
    mode = place.switch or "True"
    args = f"{mode}, warn_only=True" if warn else mode
    code = f"{{mod:torch}}.use_deterministic_algorithms({args})\n"
    edits: tuple = (place.insert(code, key=KEY_ALGORITHMS, order=ORDER_ALGORITHMS),)
    env_words = ""
    if cublas_needed(ctx, st, program) and flags()["cublas"]["variable"] not in st.wrong:
        variable = flags()["cublas"]["variable"]
        if _under_condition(ctx, program, place):
            # one switch, one condition (spec, "Fixes" 10): the variable, which cuBLAS reads when
            # it starts, goes with the switch rather than into every run
            edits += (place.insert(flags()["cublas"]["code"], key=KEY_CUBLAS, order=ORDER_ALGORITHMS - 1),)
            env_words = f", with {variable} set just before"
        else:
            env = flag_placement.environment_place(ctx, program)
            if isinstance(env, placement.Place):
                edits += (cublas_edit(env),)
                env_words = f", and {variable} set " + ("after the imports" if env.where == "after-imports" else "where the program starts")
    what = "turn deterministic algorithms on" + (f" with the program's switch `{mode}`" if place.switch else "")
    description = _flags_description(what, place).replace("after the torch seed", "after the cuDNN flags") + env_words + _raising_words(raising)
    if unseen and not raising:
        return Fix(
            f"{description}, with `warn_only=True`; check: what the program builds by name ({unseen}) is not seen here, "
            "and an operation without a deterministic implementation there would raise without it", "unsafe", edits,
        )
    return _checked(Fix(description, "safe" if warn else "unsafe", edits), place)


# -- RPL404 ---------------------------------------------------------------------------------
def _target_words(target: Target) -> str:
    if target.source == "undeclared":
        return "no torch requirement is declared"
    return f"targeted: {target.where}"


@rule("RPL404", per="program", follows="intent")
def cublas_workspace_config(ctx: Context, program: Program) -> Iterable[Finding]:
    st = state_of(ctx, program)
    cublas = flags()["cublas"]
    variable = cublas["variable"]
    if not st.enabling or variable in st.covered or not program.cuda_settings_matter():
        return
    target = program_target(ctx, program)
    if not target.admits_before(cublas["removed-in"]):
        return
    values = " or ".join(repr(v) for v in cublas["values"])
    consequence = (
        f"on PyTorch releases before {cublas['removed-in']} ({_target_words(target)}) the first cuBLAS call on "
        f"CUDA then raises RuntimeError; the variable is read once, when CUDA initialises, and must hold {values}"
    )
    wrong = st.wrong.get(variable, [])
    for (info, _, ev), _ in st.enabling:
        if ev.kind != "switch" or variable in ev.data["sets"]:
            continue  # framework switches that set the variable themselves
        api = ev.data["api"]
        if wrong:
            winfo, _, wev = wrong[0]
            fix = None
            if winfo is info and wev.data.get("value_span") is not None:
                fix = Fix(f"set {variable} to {cublas['default']!r}", "safe", (ReplaceExpression(wev.data["value_span"], repr(cublas["default"]).replace("'", '"')),))
            yield ctx.finding(
                "RPL404", info, ev,
                f"`{api}(...)` turns deterministic algorithms on but {variable} is set to {wev.data['value']!r}",
                [Related(location(winfo, wev), f"{variable} is set here")],
                fix=fix, help=sentences(consequence),
            )
        else:
            env = flag_placement.environment_place(ctx, program)
            fix = None
            if isinstance(env, placement.Place):
                where = "after the imports" if env.where == "after-imports" else "where the program starts"
                fix = Fix(f"set {variable} {where}", "safe", (cublas_edit(env),))
            why, related = _without_effect(st, variable, f"{variable} is set")
            said = "is set only where it has no effect" if why else "is never set"
            yield ctx.finding(
                "RPL404", info, ev, f"`{api}(...)` turns deterministic algorithms on but {variable} {said}",
                related, fix=fix, help=sentences(f"it is {why}" if why else "", consequence),
            )

