"""RPL408 attention-kernel-nondeterministic: a training program that asks for repeatable
results runs an attention kernel whose backward pass torch's deterministic switch does not
reach: flash-attn's functions and modules without `deterministic=True`, and xformers'
memory-efficient attention on the xformers releases (or under the `warn_only=True` switch)
where torch's switch leaves it nondeterministic.

What extraction records ("attention" events): `facts/families/attention.py`; the data:
`rules/catalog/attention.toml`.
"""

from __future__ import annotations

from typing import Iterable, Optional

from repro_lint.analysis import placement
from repro_lint.analysis.context import Context, sentences, unfixed
from repro_lint.analysis.determinism_state import state_of
from repro_lint.analysis.package_target import admits_older, has_everywhere, shown, target_of
from repro_lint.core.edits import AddKeyword, ReplaceExpression
from repro_lint.core.findings import Finding, Fix
from repro_lint.facts.families.attention import ATTENTION, table
from repro_lint.index.grad_reach import grad_scopes
from repro_lint.index.program import Program
from repro_lint.rules.registry import rule


def _flash_fix(ctx: Context, program: Program, info, ev) -> "Fix | str":
    """`deterministic=True` at the call, where every targeted flash-attn release has it."""
    t = table()
    keyword = t.flash["keyword"]
    target = target_of(ctx, t.flash["package"], program)
    since = ev.data["since"]
    if not has_everywhere(target, since):
        return f"the project targets flash-attn releases without `{keyword}=` ({shown(target)}; it exists from {since})"
    why = placement.not_editable(info)
    if why:
        return why
    span = ev.data["value_span"]
    if span is not None:
        edit = ReplaceExpression(tuple(span), "True")
    else:
        edit = AddKeyword((ev.line, ev.col, ev.end_line, ev.end_col), keyword, "True")
    return Fix(f"pass `{keyword}=True` (a deterministic backward, slightly slower and using more memory)", "safe", (edit,))


def _xformers_outside(ctx: Context, program: Program, algorithms: str) -> str:
    """Why torch's switch leaves the program's xformers attention nondeterministic, or ""
    (it reaches it, or the program never turns it on: RPL403's finding)."""
    spec = table().xformers
    target = target_of(ctx, spec["package"], program)
    since, warn_since = spec["reached-by-switch-since"], spec["warn-only-leaves-it-since"]
    if admits_older(target, since):
        return (
            f"torch's deterministic switch does not reach it on xformers releases before {since} "
            f"({shown(target)})"
        )
    if algorithms == "warn" and target.admits_from(warn_since):
        return (
            f"with `warn_only=True` torch's deterministic switch only warns about it (xformers {warn_since} and "
            "later); it stays nondeterministic"
        )
    return ""


@rule("RPL408", per="program", follows="intent")
def attention_kernel_nondeterministic(ctx: Context, program: Program) -> Iterable[Finding]:
    st = state_of(ctx, program)
    if not (st.intent and st.uses_torch):
        return
    events = list(program.events(ATTENTION))
    if not events:
        return
    training = grad_scopes(ctx.index, program)  # empty when the program never trains
    xformers_why: Optional[str] = None
    for info, scope, ev in events:
        if ev.data["no_grad"] or (info.module, scope) not in training:
            continue  # no gradient of the training flows here: the backward never runs
        api = ev.data["api"]
        name = api.rpartition(".")[2]
        if ev.data["package"] == "flash-attn":
            made = _flash_fix(ctx, program, info, ev)
            fix = made if isinstance(made, Fix) else None
            said = "with `deterministic=False`" if ev.data["value_span"] is not None else "without `deterministic=True`"
            yield ctx.finding(
                "RPL408", info, ev, f"`{name}(...)` {said}: flash-attn's backward pass is nondeterministic",
                fix=fix,
                help=sentences(
                    "its backward adds the query gradients with atomic operations, so gradients differ in their last "
                    "bits from run to run; `torch.use_deterministic_algorithms(True)` does not reach flash-attn",
                    "pass `deterministic=True` (flash-attn 2.4.1 and later; modules 2.5.0)",
                    unfixed(made) if isinstance(made, str) else "",
                ),
            )
            continue
        if xformers_why is None:
            xformers_why = _xformers_outside(ctx, program, st.algorithms_mode())
        if not xformers_why:
            continue
        shown_api = f"`{name}()`" if "." not in api else f"`{api}(...)`"
        yield ctx.finding(
            "RPL408", info, ev, f"{shown_api} runs xformers' memory-efficient attention, whose backward pass is nondeterministic",
            help=sentences(
                "its backward splits the keys and adds the partial gradients with atomic operations",
                xformers_why,
                "use xformers 0.0.23 or later with `torch.use_deterministic_algorithms(True)` (without "
                "`warn_only=True`), or torch's `scaled_dot_product_attention`, where results must repeat",
            ),
        )
