"""RPL406 reduced-precision-matmul: a program that asks for repeatable results turns TF32 or
another reduced float32 precision on (`torch.backends.cuda.matmul.allow_tf32 = True`,
`torch.set_float32_matmul_precision("high")`, `torch.backends.fp32_precision = "tf32"`,
`TrainingArguments(tf32=True)`). Results then repeat on one kind of GPU but differ between
GPU generations.

What extraction records ("reduced" events): `facts/families/precision.py`; the data:
`[reduced-precision]` in `rules/catalog/flags.toml`.
"""

from __future__ import annotations

from typing import Iterable, Optional

from repro_lint.analysis import placement
from repro_lint.analysis.context import Context, sentences
from repro_lint.analysis.determinism_state import state_of
from repro_lint.analysis.package_target import target_of
from repro_lint.core.edits import ReplaceExpression
from repro_lint.core.findings import Finding, Fix
from repro_lint.facts.families.precision import REDUCED, table
from repro_lint.index.program import Program
from repro_lint.rules.registry import rule


def shown_value(value: object) -> str:
    """A literal as the source writes it (`True`, `"high"`)."""
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _spec(api: str) -> Optional[dict]:
    t = table()
    return t.settings.get(api) or t.calls.get(api) or t.keywords.get(api)


def _statement(ev, spec: dict) -> str:
    api, value, how = ev.data["api"], shown_value(ev.data["value"]), ev.data["how"]
    if how == "assign":
        return f"`{api} = {value}`"
    if how == "keyword":
        return f"`{api.rpartition('.')[2]}({spec['keyword']}={value})`"
    return f"`{api}({value})`"


@rule("RPL406", per="program", follows="intent")
def reduced_precision_matmul(ctx: Context, program: Program) -> Iterable[Finding]:
    st = state_of(ctx, program)
    if not (st.intent and st.uses_torch):
        return
    torch = None
    for info, _scope, ev in program.events(REDUCED):
        if ev.data["switch"]:
            continue  # under the program's own switch (`if args.allow_tf32:`): the user's choice
        spec = _spec(ev.data["api"])
        if spec is None:
            continue
        before = spec.get("default-reduced-before")
        if before:
            torch = torch or target_of(ctx, "torch", program)
            if not torch.admits_from(before):
                continue  # every targeted release has it on by default: the statement changes nothing
        fix = None
        if not placement.not_editable(info):
            fix = Fix(
                f"set it to {spec['full']} (full float32 precision; float32 products are then slower on GPUs with "
                "TF32 units)", "unsafe", (ReplaceExpression(tuple(ev.data["value_span"]), spec["full"]),),
            )
        yield ctx.finding(
            "RPL406", info, ev, f"{_statement(ev, spec)} turns on {spec.get('what-by-value', {}).get(ev.data['value'], spec['what'])}",
            fix=fix,
            help=sentences(
                "on hardware with reduced-precision units (NVIDIA Ampere and later GPUs, CPUs with AMX) these "
                "float32 operations then round their inputs: results repeat on one kind of device but differ between "
                "GPU generations and from other machines' runs",
                "keep full precision where results must match across machines (matrix products default to it since "
                "PyTorch 1.12), or make it the program's own setting: under `if args.allow_tf32:` it is the user's "
                "choice and not reported",
            ),
        )
