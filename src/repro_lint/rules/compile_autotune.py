"""RPL407 compile-autotune: a program that asks for repeatable results lets torch.compile pick
kernels by timing them (`mode="max-autotune"`, inductor's `max_autotune` and
`coordinate_descent_tuning`), on torch releases where deterministic algorithms do not switch
inductor's deterministic mode on (every release read so far: the catalog says since when one
does, if one does).

What extraction records ("autotune" and "inductordet" events): `facts/families/compile_autotune.py`;
the data: `[compile-autotune]` in `rules/catalog/flags.toml`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Optional

from repro_lint.analysis import flag_placement, placement
from repro_lint.analysis.context import Context, sentences, unfixed
from repro_lint.analysis.determinism_state import USE_DETERMINISTIC, State, state_of
from repro_lint.analysis.package_target import admits_older, shown, target_of
from repro_lint.core.findings import Finding, Fix
from repro_lint.facts.families.compile_autotune import AUTOTUNE, INDUCTOR_DETERMINISTIC, autotune_catalog
from repro_lint.index.program import Program
from repro_lint.rules.registry import rule

# after the seeding calls, the cuDNN flags (10) and deterministic algorithms (20)
KEY_INDUCTOR, ORDER_INDUCTOR = "determinism:inductor", 30


def _deterministic_mode_set(program: Program, cat: dict) -> bool:
    """Whether the program turns inductor's deterministic mode on (or sets it from its own value)."""
    for _ in program.events(INDUCTOR_DETERMINISTIC):
        return True
    for _, _, ev in program.events("env"):
        if ev.data["var"] == cat["deterministic-environment"] and ev.data["value"] in (None, "1"):
            return True
    return False


def _autotuning(program: Program, cat: dict) -> list:
    """The places that turn autotuning on, outside the program's own switch."""
    found = [occ for occ in program.events(AUTOTUNE) if not occ[2].data["switch"]]
    for info, scope, ev in program.events("env"):
        if ev.data["var"] in cat["environment"] and ev.data["value"] == "1" and not ev.data.get("guard"):
            found.append((info, scope, ev))
    return found


def _after_algorithms(program: Program, st: State) -> Optional[placement.Place]:
    """Right after the program's own `torch.use_deterministic_algorithms(...)` in the entry
    module, where it takes effect: the inductor setting joins the determinism settings there."""
    entry = program.entry
    for (info, _scope, ev), _warn in st.enabling:
        if info is entry and ev.kind == "switch" and ev.data["api"] == USE_DETERMINISTIC:
            return placement.Place("after", anchor=(ev.line, ev.col, ev.end_line, ev.end_col), module=entry.module, path=entry.path)
    return None


def _fix(ctx: Context, program: Program, st: State, cat: dict) -> "Fix | str":
    """The targeted release's deterministic setting after the program's determinism flags, or
    why there is none."""
    torch = target_of(ctx, "torch", program)
    since = cat["deterministic-since"]
    # (a torch requirement without a lower bound installs a current release, as for RPL403's fix)
    if admits_older(torch, since):
        return (
            f"the project targets torch releases without inductor's deterministic mode ({shown(torch)}; "
            f"`{cat['deterministic-setting']}` exists from {since}): compile without max-autotune there"
        )
    flags = flag_placement.flags_place(ctx, program, after_flags=True)
    place = _after_algorithms(program, st) or flags
    if isinstance(place, str):
        return place
    # the program's own determinism switch where its flags follow one (`args.deterministic`)
    value = (flags.switch if isinstance(flags, placement.Place) else "") or "True"
    code = cat["deterministic-code"].replace("= True", f"= {value}") + "\n"
    edit = place.insert(code, key=KEY_INDUCTOR, order=ORDER_INDUCTOR)
    where = f"at the start of `{place.function}`" if place.where == "body-start" and place.function else "with the determinism flags"
    return Fix(
        f"turn inductor's deterministic mode on {where}{{file}} (`{cat['deterministic-setting']} = {value}`): "
        "autotuned kernels are then chosen without timing them, which costs speed",
        "unsafe", (edit,),
    )


@rule("RPL407", per="program", follows="intent")
def compile_autotune(ctx: Context, program: Program) -> Iterable[Finding]:
    st = state_of(ctx, program)
    if not (st.intent and st.uses_torch):
        return
    cat = autotune_catalog()
    found = _autotuning(program, cat)
    if not found or _deterministic_mode_set(program, cat):
        return
    implied = cat["implied-by-deterministic-algorithms-since"]
    if implied and st.algorithms_mode() != "off" and not target_of(ctx, "torch", program).admits_before(implied):
        return
    made = _fix(ctx, program, st, cat)
    fix: Optional[Fix] = made if isinstance(made, Fix) else None
    why = made if isinstance(made, str) else ""
    algorithms = (
        " `torch.use_deterministic_algorithms(True)` does not change that choice" if st.algorithms_mode() != "off" else ""
    )
    for info, _scope, ev in found:
        if ev.kind == "env":
            what = f"`{ev.data['var']}=1`"
        else:
            what = ev.data["shown"]
        own_fix = None
        if fix is not None and not placement.not_editable(program.entry):
            # a setting in a module the program imports: the fix goes where the program runs
            file = f" in `{program.entry.path}`" if info is not program.entry else ""
            own_fix = replace(fix, description=fix.description.replace("{file}", file))
        yield ctx.finding(
            "RPL407", info, ev, f"{what} lets torch.compile pick kernels by timing them",
            fix=own_fix,
            help=sentences(
                "autotuning benchmarks candidate kernels on the device and keeps the fastest; timings vary from run "
                "to run, so two runs can pick kernels that sum in different orders and give different results."
                + algorithms,
                f"set `{cat['deterministic-setting']} = True` (torch {cat['deterministic-since']} and later) or "
                "compile without max-autotune where results must repeat",
                unfixed(why),
            ),
        )
