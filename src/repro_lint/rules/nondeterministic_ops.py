"""RPL405: calls of operations that are nondeterministic on CUDA (the catalog
`rules/catalog/nondeterministic_ops.toml`), in programs that show determinism intent.

What extraction records ("ndop" and "litcall" events, wrappers): `facts/families/nondeterministic_ops.py`.
"""

from __future__ import annotations

from typing import Iterable, Optional

from repro_lint.analysis.context import Context, location, sentences
from repro_lint.analysis.determinism_state import state_of
from repro_lint.analysis.training import runs_with_gradients
from repro_lint.core.findings import Finding, Related
from repro_lint.facts.families.nondeterministic_ops import WRAPPERS, table
from repro_lint.index.program import Program
from repro_lint.rules.registry import rule


# -- messages ------------------------------------------------------------------------------
def explain(op: dict) -> str:
    """The help of an RPL405 finding: what the determinism switch does about the operation,
    and the deterministic alternative where there is one."""
    if op["with-deterministic-algorithms"] == "deterministic":
        effect = "`torch.use_deterministic_algorithms(True)` switches it to a deterministic implementation"
        if op.get("warn-only-stays-nondeterministic"):
            effect += " (not with warn_only=True, which only warns)"
    else:
        effect = (
            "`torch.use_deterministic_algorithms(True)` makes it raise RuntimeError (it has no deterministic "
            "implementation; with warn_only=True it only warns and stays nondeterministic)"
        )
    alternative = f"deterministic alternative: {op['alternative']}" if op["alternative"] else ""
    return sentences("results can differ between runs", effect, alternative)


def _pick(ops: list[dict]) -> dict:
    """The entry a message is about: one that raises under the flag first."""
    return sorted(ops, key=lambda op: op["with-deterministic-algorithms"] != "raises")[0]


# -- the rule ---------------------------------------------------------------------------
def _relevant(ops: Iterable[dict], algorithms: str) -> list[dict]:
    """Entries still nondeterministic given how the program sets deterministic algorithms:
    "on" (error mode or the user's own value), "warn" (warn_only=True) or "off"."""
    out = []
    for op in ops:
        if op["with-deterministic-algorithms"] == "deterministic":
            if algorithms == "on" or algorithms == "warn" and not op.get("warn-only-stays-nondeterministic"):
                continue
        out.append(op)
    return out


def _holds_tensors(ctx: Context, info) -> bool:
    """Whether a module imports torch or a library built on it (`tensor-method-modules`):
    elsewhere `x.cumsum(0)` is most likely a numpy array's or a pandas series' method."""
    memo = ctx.__dict__.setdefault("_holds_tensors", {})
    hit = memo.get(info.module)
    if hit is None:
        roots = table().tensor_modules
        hit = memo[info.module] = any(imp[0].partition(".")[0] in roots for imp in info.imports)
    return hit


def _position(fn, param: str) -> Optional[int]:
    """Where a call site passes `param` positionally (a method's `self` is bound already)."""
    params = list(fn.params or ())
    if param not in params:
        return None
    index = params.index(param)
    if fn.class_name is not None and params[0] in ("self", "cls"):
        index -= 1
    return index


@rule("RPL405", per="program", follows="intent")
def nondeterministic_op(ctx: Context, program: Program) -> Iterable[Finding]:
    st = state_of(ctx, program)
    if not st.intent:
        return
    t = table()
    algorithms = st.algorithms_mode()
    wrappers: dict[str, list] = {}
    index = ctx.index

    def gradients(info, scope, line: int, runs_here: bool = True) -> bool:
        return runs_with_gradients(ctx, program, info, scope, line, runs_here)

    for info, scope, ev in program.events("ndop"):
        if ev.data["api"].startswith("Tensor.") and not _holds_tensors(ctx, info):
            continue
        ops = _relevant((t.by_id[i] for i in ev.data["ops"] if i in t.by_id), algorithms)
        if any(op["backward-only"] for op in ops) and not gradients(info, scope, ev.line, ev.data["api"] not in t.modules):
            ops = [op for op in ops if not op["backward-only"]]
        if ops:
            op = _pick(ops)
            yield ctx.finding("RPL405", info, ev, f"`{ev.data['api']}(...)`: {op['summary']}", help=explain(op))
    for mod, scope in program.scopes:
        info = index.modules[mod]
        found = info.extra.get(WRAPPERS)  # (most modules have none: asked of every scope reached)
        recs = found.get(scope) if found else None
        if recs:
            key = f"{info.module}.{scope}" if info.module else scope
            wrappers[key] = [(info, *rec) for rec in recs]
    if not wrappers:
        return
    for info, scope, ev in program.events("litcall"):
        target, method = ev.data["target"], ev.data["method"]
        keys = index.resolve(target, info) if target is not None else index.method_targets(method, info, ev.data.get("marker"))
        args, kwargs = dict(ev.data["args"]), dict(ev.data["kwargs"])
        for key in keys:
            fn = index.functions[key]
            if target is not None and fn.class_name is not None and fn.name != "__init__":
                continue  # a class called by name: its arguments go to `__init__`
            for winfo, op_id, param, api, span in wrappers.get(key, ()):
                op = t.by_id.get(op_id)
                if op is None or op["backward-only"] and (ev.data["no_grad"] or not gradients(info, scope, ev.line)):
                    continue
                pos = _position(fn, param)
                value = kwargs.get(param, args.get(pos) if pos is not None else None)
                if value is None or value not in op["argument"]["values"] or not _relevant([op], algorithms):
                    continue
                name = key.rsplit(".", 1)[-1]
                yield ctx.finding(
                    "RPL405", info, ev,
                    f"`{name}(...)` passes {param}={value!r} on to `{api}(...)`: {op['summary']}",
                    [Related(location(winfo, span), f"`{name}` hands `{param}` to `{api}` here")],
                    help=explain(op),
                )
                break
            else:
                continue
            break
