"""RPL501: a training program saves checkpoints to resume from and loads them back, but
neither saves nor restores the RNG states (the facts are in `facts/families/checkpoints.py`)."""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Iterable, Optional

from repro_lint.analysis.context import Context, line_words, location, program_cache, sentences, unfixed
from repro_lint.analysis.placement import not_editable, programs_reaching
from repro_lint.analysis.torch_target import program_target
from repro_lint.core.edits import AddDictItems, AddKeyword, InsertStatements
from repro_lint.core.findings import Finding, Fix, Related
from repro_lint.discover.requirements import declared, declaring_folders, release
from repro_lint.facts.families.checkpoints import checkpoint_catalog
from repro_lint.facts.model import Event, ModuleInfo
from repro_lint.index.program import Program
from repro_lint.rules.registry import rule


def _framework_keeps_rng(ctx: Context, program: Program, package: str) -> bool:
    """Whether every release of `package` the project declares (the nearest declaration to
    the program, as for torch) writes the RNG states with its checkpoints."""
    since = release(checkpoint_catalog()["frameworks"][package]["since"])
    root = ctx.index.root
    if root is None or since is None:
        return True
    start = Path(program.entry.path).resolve().parent
    for folder in declaring_folders(root, start):
        found = declared(folder, package)
        if found:
            lowest = min((lower or ()) for _, lower in found)
            return lowest >= since
    return True  # undeclared: current releases


_KEEPS: "weakref.WeakKeyDictionary[Program, bool]" = program_cache()


def _keeps_rng(ctx: Context, program: Program) -> bool:
    """Whether the program saves or restores RNG states itself, or a framework it runs does,
    or seeds again inside a loop (each step or epoch from its number: a resumed run repeats)."""
    hit = _KEEPS.get(program)
    if hit is None:
        hit = _KEEPS[program] = _keeps_rng_of(ctx, program)
    return hit


def _keeps_rng_of(ctx: Context, program: Program) -> bool:
    for info, scope, ev in program.events("seed"):
        if any(start <= ev.line <= end for start, end in info.loops.get(scope, ())):
            return True  # seeded again as it goes (`set_torch_seed(seed + num_updates)` each step)
    for _, _, ev in program.events("rngstate"):
        if ev.data.get("local"):
            continue
        package = ev.data.get("framework")
        if not package or _framework_keeps_rng(ctx, program, package):
            return True
    runners = {fw.get("runner"): name for name, fw in checkpoint_catalog()["frameworks"].items() if fw.get("runner")}
    for _, _, ev in program.events("runner"):
        package = runners.get(ev.data.get("framework"))
        if package and _framework_keeps_rng(ctx, program, package):
            return True
    return False


def _trains(program: Program) -> bool:
    for _ in program.events("train"):
        return True
    return False


def _resumes(program: Program) -> list:
    return list(program.events("optload"))


def _matching(data: dict, loads: list) -> list:
    """The places that load this checkpoint's optimizer state back (by its keys, or a file
    holding the state alone), else every place that loads an optimizer's state."""
    keys = set(data.get("keys", ()))
    if keys:
        found = [load for load in loads if load[2].data.get("key") in keys]
    else:
        found = [load for load in loads if load[2].data.get("direct")]
    return found or loads


@rule("RPL501", per="module", apart=True)
def checkpoint_without_rng_state(ctx: Context, info: ModuleInfo) -> Iterable[Finding]:
    for scope, ev in info.all_events("ckptsave"):
        data = ev.data
        if not data.get("optimizer") or data.get("rng"):
            continue
        programs = [p for p in programs_reaching(ctx, info, scope) if _trains(p) and _resumes(p) and not _keeps_rng(ctx, p)]
        if not programs:
            continue
        program = programs[0]
        loads = _matching(data, _resumes(program))
        related = [Related(location(linfo, lev), "the optimizer's state is loaded back here") for linfo, _, lev in loads[:3]]
        fix, why = _fix(ctx, program, info, ev, loads)
        where = ", ".join(f"{linfo.path}:{lev.line}" if linfo is not info else line_words(info, lev.line) for linfo, _, lev in loads[:2])
        message = (
            "this checkpoint holds optimizer state to resume from, but the program neither saves nor restores "
            f"the RNG states (it resumes on {where})"
        )
        drawn = [s for s in ("torch", "numpy", "python") if s in program.draws()] or ["torch"]
        calls = {"torch": "`torch.get_rng_state()` and `torch.cuda.get_rng_state_all()`", "numpy": "`np.random.get_state()`",
                 "python": "`random.getstate()`"}
        names = {"torch": "torch's and CUDA's", "numpy": "numpy's", "python": "Python's"}
        help = sentences(
            f"a run resumed from it starts {_words([names[s] for s in drawn])} generators afresh, so from the step it "
            "resumes at it draws other dropout masks, augmentations and data order than the uninterrupted run; save "
            f"{_words([calls[s] for s in drawn])} with the checkpoint and set them back after loading it (and resume "
            "the data where it stopped: the epoch, or the sampler's position mid-epoch)",
            unfixed(why) if fix is None else "",
        )
        yield ctx.finding("RPL501", info, ev, message, related, fix, help=help)


def _words(parts: list) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _fix(ctx: Context, program: Program, info: ModuleInfo, ev: Event, loads: list) -> tuple[Optional[Fix], str]:
    cat = checkpoint_catalog()
    data = ev.data
    why = not_editable(info)
    if why:
        return None, why
    if data.get("dict") is None:
        return None, "what is saved is not a dict display the fix can add to"
    if data.get("rank_guard"):
        # each rank has its own streams: rank 0's states restored everywhere would make them one
        return None, (
            f"only one rank saves the checkpoint (under `{data['rank_guard']}`): restoring its RNG states on "
            "every rank would give every rank that rank's streams; save each rank's states (a file per rank)"
        )
    keys = set(data.get("keys", ()))
    resume = next(
        ((linfo, lev) for linfo, _, lev in loads if lev.data.get("ckpt") and lev.data.get("key") in keys and lev.data.get("stmt")),
        None,
    )
    if resume is None:
        return None, "no place that loads the optimizer's state back reads it from this checkpoint's keys"
    linfo, lev = resume
    why = not_editable(linfo)
    if why:
        return None, why
    ckpt = lev.data["ckpt"]
    draws = program.draws()
    sources = ["torch"] + [s for s in ("numpy", "python") if s in draws]
    edits: list = []
    note = ""
    if "numpy" in sources:
        found = _numpy_loadable(ctx, program, linfo, lev, "" if linfo is info else linfo.path)
        if isinstance(found, str):
            sources.remove("numpy")
            note = f" (numpy's state is left out: {found})"
        elif found is not None:
            edits.append(found)
    items = tuple(tuple(pair) for source in sources for pair in cat["fix"]["save"][source])
    edits.insert(0, AddDictItems(tuple(data["dict"]), items))
    restore = "\n".join(line.replace("{ckpt}", ckpt) for source in sources for line in cat["fix"]["restore"][source])
    guard = cat["fix"]["guard"].replace("{ckpt}", ckpt)
    edits.append(InsertStatements(
        "after", restore, anchor=tuple(lev.data["stmt"]), key=f"rng-restore:{lev.line}", guard=guard,
        path="" if linfo is info else linfo.path,
    ))
    names = {"torch": "torch's and CUDA's", "numpy": "numpy's", "python": "Python's"}
    what = ", ".join(names[s] for s in sources)
    description = (
        f"save {what} RNG states with the checkpoint and set them back after the optimizer's state is loaded "
        f"(when the checkpoint has them){note}; the sampler's position mid-epoch is not saved"
    )
    return Fix(description, "unsafe", tuple(edits)), ""


def _numpy_loadable(ctx: Context, program: Program, linfo: ModuleInfo, lev: Event, path: str):
    """What lets the resumed program read numpy's state back: None when `torch.load` reads
    it as it is, an edit passing `weights_only=False`, or why neither works (a str)."""
    cat = checkpoint_catalog()["weights_only"]
    load = lev.data.get("load")
    given = lev.data.get("weights_only")
    if given is False:
        return None
    if given is not None:
        return "the checkpoint is loaded with `weights_only=`, whose loader refuses numpy's arrays"
    if load is None:
        return "the checkpoint is not loaded by a `torch.load` call in the same function"
    target = program_target(ctx, program)
    if target.source != "undeclared" and target.admits_before(cat["since"]):
        return (
            f"the targeted torch releases before {cat['since']} have no `weights_only=`, and those from "
            f"{cat['default-true-since']} load weights only by default, which refuses numpy's arrays"
        )
    # harmless where `False` is the default (before 2.6), needed from there on
    return AddKeyword(tuple(load), cat["keyword"], "False", path=path)
