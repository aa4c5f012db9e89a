"""Project code that frameworks run on a program's behalf.

A Lightning program calls `trainer.fit(model, datamodule=dm)` and Lightning calls the
model's `training_step`, `configure_optimizers`, the datamodule's `setup` and
`train_dataloader`, the callbacks' `on_*` methods. Extraction records such calls as "runner"
events (`facts/families/frameworks.py`); for a program that makes one, the hooks of the project
classes the program reaches that derive from the framework's bases are reached too. Which
calls, bases and hooks: `runners` in `rules/catalog/frameworks.toml`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro_lint.facts.model import METHOD_ALIASES

if TYPE_CHECKING:  # pragma: no cover
    from repro_lint.index.project_index import ProjectIndex, ScopeRef



def hook_starts(index: "ProjectIndex", order: list[int], event_ids: list[int]) -> list["ScopeRef"]:
    """Hook methods that the program made of the scopes `order` reaches through its runner
    calls and does not reach yet (`event_ids`: the numbers in `order` of scopes with events)."""
    called: dict[str, set] = {}  # framework -> the runner methods called
    for i in event_ids:
        for ev in index.kind_events(i, "runner"):
            called.setdefault(ev.data["framework"], set()).add(ev.data["method"])
    if not called:
        return []
    runners = [r for r in index.m.runners if r.framework in called]
    refs = index._refs
    reached = {refs[i] for i in order}  # type: ignore[index]
    out: list = []
    for cls in reached_classes(index, [refs[i] for i in order]):  # type: ignore[index]
        hierarchy = index.class_bases(cls)
        for runner in runners:
            if not any(b in runner.bases for b in hierarchy):
                continue
            for base in hierarchy:
                hit = index.classes.get(base)
                if hit is None:
                    continue
                info, cls = hit
                aliases = info.summary(METHOD_ALIASES).get(cls.qual, ())  # type: ignore[attr-defined]
                for hook, name in [*((m, m) for m in cls.methods), *aliases]:  # type: ignore[attr-defined]
                    key = f"{base}.{name}"
                    if runner.is_hook(hook, called[runner.framework]) and key in index.functions:
                        ref = index.scope_of(key)
                        if ref not in reached:
                            reached.add(ref)
                            out.append(ref)
    return out


def reached_classes(index: "ProjectIndex", refs: list["ScopeRef"]) -> list[str]:
    """Project classes a program reaches: those of the methods it reaches, those its reached
    code calls or hands over, and those its Hydra configs name."""
    out: dict[str, None] = {}
    for mod, scope in refs:
        info = index.modules[mod]
        fn = info.functions.get(scope)
        if fn is not None and fn.class_name is not None:
            cls = scope.rpartition(".")[0]
            out[f"{mod}.{cls}" if mod else cls] = None
        for call in info.calls.get(scope, ()):
            target = call[0]
            if target is not None and target[0] != "@":
                key = index.class_key(target, info)
                if key is not None:
                    out[key] = None
        if fn is not None and scope in info.hydra_mains:
            for name in index.config_names(info, fn):
                key = index.class_key(name, info)
                if key is not None:
                    out[key] = None
    return list(out)
