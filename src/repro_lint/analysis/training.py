"""Where and when a program trains (spec: "Flags count where they take effect").

A determinism flag only matters in the process that trains, before training starts. This
module works out, once per program:
- the launches: hand-offs (`mp.spawn`, submitit) of a function that trains, which make that
  function's process the one that trains (catalog `processes.toml`, `[training-launchers]`);
- a walk of the program in execution order (statements in source order, descending into the
  project functions they call) from where the training process starts, and the first
  statement on it that certainly trains (`.backward()`, an optimizer's `step()`, a
  framework's `trainer.fit(...)`);
- the functions only DataLoader workers run (`worker_init_fn=`).
A flag set on the walk after training started, only in a launcher's parent, or only in a
`worker_init_fn` does not count; one set somewhere the walk does not follow (a callback, a
call the index cannot resolve) gets the benefit of the doubt.
"""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass, field
from typing import Optional

from repro_lint.core import catalog
from repro_lint.index.grad_reach import grad_scopes
from repro_lint.index.project_index import ProjectIndex
from repro_lint.index.program import Program
from repro_lint.facts.model import HANDED, HANDED_SLOTS, MAIN_SCOPE, PARAM_CALLS, MODULE_SCOPE, Event, ModuleInfo, is_reference
from repro_lint.analysis.context import Context, line_words, program_cache

# Train events that mean training is under way (building an optimizer or a Trainer is not);
# a framework's training call (`trainer.fit(...)`, catalog `frameworks.toml`) is one too.
_TRAINS = frozenset(["backward", "step"])
# Events the walk keeps in order (the others do not matter for when flags take effect).
_KINDS = frozenset(["flag", "switch", "env", "seed", "seedcand", "configload", "train", "trainer", "handoff", "runner"])
# the kinds `Training.no_effect` is asked about: only their steps are kept (most events a
# walk meets train; a large project's programs met 244,000 of them)
_ASKED = frozenset(["flag", "switch", "env", "seed", "seedcand", "configload"])


@functools.lru_cache(maxsize=1)
def _launchers() -> dict:
    return dict(catalog.load("processes").get("training-launchers", {}))


@functools.lru_cache(maxsize=1)
def _runner_trains() -> frozenset:
    """(framework, method) of the framework calls that train (`trainer.fit(...)`)."""
    return frozenset(
        (r["framework"], m) for r in catalog.load("frameworks")["runners"] for m in r.get("training-methods", ())
    )


def _starts_training(ev: Event) -> bool:
    if ev.kind == "train":
        return ev.data.get("what") in _TRAINS
    return ev.kind == "runner" and (ev.data.get("framework"), ev.data.get("method")) in _runner_trains()


@dataclass(frozen=True)
class Launch:
    """A hand-off that starts the process that trains."""

    info: ModuleInfo
    event: Event
    target: str  # function key
    runs: str  # what the new process runs first: "module" or "nothing"

    @property
    def name(self) -> str:
        return self.target.rpartition(".")[2]


@dataclass
class Training:
    # (the program's index, not the program: `_CACHE`'s entry for a program is let go with it
    # only while its value does not refer to it)
    index: ProjectIndex
    launches: list = field(default_factory=list)
    # id(event) -> its step on the walk (events of the `_ASKED` kinds the walk reaches)
    steps: dict = field(default_factory=dict)
    start_step: Optional[int] = None  # step of the first statement that certainly trains
    # ((module, scope), span) from the start body down to the train event: in each scope, the
    # statement during which training starts
    chain: tuple = ()
    worker_only: set = field(default_factory=set)  # scopes only DataLoader workers run
    trains_in: set = field(default_factory=set)  # launch target scopes
    # (module info, event) of the hand-offs to training launchers whose callable is not known
    unknown_launches: list = field(default_factory=list)

    def no_effect(self, info: ModuleInfo, scope: str, ev: Event, inherited: bool = False) -> Optional[str]:
        """Why a flag set by `ev` (an event of the `_ASKED` kinds) has no effect on the
        training, or None when it counts. `inherited`: the setting passes to processes
        started later (an environment variable), so setting it in a launcher's parent counts."""
        reason = self.elsewhere(info, scope, inherited)
        if reason is not None:
            return reason
        branch = ev.data.get("branch")
        if branch is not None and branch[2]:
            # set in a branch that leaves the function (`if args.test_only: ...; return`)
            # while the training starts further down that function: it never gets there
            for ref, span in self.chain:
                if ref == (info.module, scope) and span is not None and span[0] > branch[2]:
                    return (
                        f"set on {line_words(info, ev.line)} in a branch that leaves `{scope}` before training starts "
                        f"({line_words(info, span[0])}), so it does not govern that training"
                    )
        hit = self.steps.get(id(ev))
        if hit is not None and self.start_step is not None and hit[0] > self.start_step:
            # the statement that trains, in the innermost body the flag and the training share
            common = 0
            while common < min(len(hit[1]), len(self.chain)) and hit[1][common] == self.chain[common][0]:
                common += 1
            frame = self.chain[max(common - 1, 0)]
            return self._late(info, ev.line, frame[0][0], frame[1][0])
        return None

    def no_effect_at(self, info: ModuleInfo, scope: str, pos: tuple) -> Optional[str]:
        """The same for a statement at `pos` that the walk does not number (a call)."""
        reason = self.elsewhere(info, scope)
        if reason is not None:
            return reason
        for ref, span in self.chain:
            if ref == (info.module, scope) and span is not None and (span[0], span[1]) < pos:
                return self._late(info, pos[0], ref[0], span[0])
        return None

    def before_training(self, program: Program, info: ModuleInfo, scope: str, line: int) -> bool:
        """Whether what runs at `line` of `scope` runs only before training starts, each time:
        in a scope on the way to the training that runs once, ahead of (and in no loop
        around) the statement during which training starts there, or in a function that only
        such places call, when training is a loop (of `program`, this walk's). The training's
        backward passes do not run through what was computed there (a graph built before the
        loop would be freed by the first of them, and the second would fail), so an operation
        nondeterministic only in its backward does not make them differ."""
        if self.start_step is None or not self.chain:
            return False
        memo = self.__dict__.get("_before_memo")
        if memo is None:  # (a Training is its program's: asked once, with that program's scopes)
            sites = self._call_sites(program.scopes)
            once = self._once_frames(sites)
            memo = self.__dict__["_before_memo"] = (sites, once, self._loops(once))
        sites, once, looped = memo
        if not looped:
            return False  # training is one backward pass, which runs through whatever came before
        return self._before(once, sites, (info.module, scope), line, 0)

    def _call_sites(self, scopes) -> dict:
        """Function key -> [(calling scope, call)] over the program's scopes."""
        index = self.index
        out: dict = {}
        for ref in scopes:
            info = index.modules[ref[0]]
            for call, keys in index.callees(info, ref[1]):
                for key in keys:
                    out.setdefault(key, []).append((ref, call))
        return out

    def _loops(self, once: dict) -> bool:
        """Whether training repeats: the chain to it passes through a loop, or a scope of it
        that runs once takes a backward pass or optimizer step in a loop."""
        modules = self.index.modules
        if any(span is not None and in_loop(modules[ref[0]], ref[1], span[0]) for ref, span in self.chain):
            return True
        for ref in once:
            info = modules[ref[0]]
            for ev in info.events.get(ref[1], ()):
                if ev.kind == "train" and ev.data.get("what") in _TRAINS and in_loop(info, ref[1], ev.line):
                    return True
        return False

    def _once_frames(self, sites: dict) -> dict:
        """The scopes of the chain to training that run once -> the span there of the
        statement that leads on to training: the start scope, then each scope that only the
        chain's call (in no loop) calls."""
        out: dict = {}
        index = self.index
        previous = None
        for ref, span in self.chain:
            if span is None:
                break
            if previous is not None:
                prev_ref, prev_span = previous
                calls = sites.get(_key(ref), ())
                if (
                    len(calls) != 1
                    or calls[0][0] != prev_ref
                    or calls[0][1][2] != prev_span[0]
                    or is_reference(calls[0][1])
                    or in_loop(index.modules[prev_ref[0]], prev_ref[1], prev_span[0])
                ):
                    break
            out[ref] = span
            previous = (ref, span)
        return out

    def _before(self, once: dict, sites: dict, ref: tuple, line: int, depth: int) -> bool:
        span = once.get(ref)
        if span is not None:
            if line >= span[0]:
                return False
            loops = self.index.modules[ref[0]].loops.get(ref[1], ())
            return not any(a <= line <= b and a <= span[0] <= b for a, b in loops)
        if ref[1] in (MODULE_SCOPE, MAIN_SCOPE) or depth > 3 or any(r == ref for r, _ in self.chain):
            return False
        calls = sites.get(_key(ref), ())
        return bool(calls) and all(
            not is_reference(call) and self._before(once, sites, caller, call[2], depth + 1) for caller, call in calls
        )

    def _late(self, info: ModuleInfo, line: int, start_module: str, start: int) -> str:
        started = line_words(self.index.modules.get(start_module, info), start)
        return f"set on {line_words(info, line)}, after training starts ({started}), so it does not govern that training"

    def elsewhere(self, info: ModuleInfo, scope: str, inherited: bool = False) -> Optional[str]:
        """Why what `scope` sets does not reach the process that trains, or None."""
        ref = (info.module, scope)
        if ref in self.worker_only:
            return (
                f"set only in `{scope}`, which runs in DataLoader worker processes (`worker_init_fn`), "
                "not in the process that trains"
            )
        if self.launches and not inherited and not self._in_launched(info, scope):
            launch = self.launches[0]
            return (
                f"set only in the process that launches training: `{launch.name}` trains in new processes "
                f"started by `{launch.event.data['api']}` (line {launch.event.line}), which do not run it"
            )
        return None

    def _in_launched(self, info: ModuleInfo, scope: str) -> bool:
        if (info.module, scope) in self.trains_in:
            return True
        return scope == MODULE_SCOPE and any(launch.runs == "module" for launch in self.launches)


def _key(ref: tuple) -> str:
    """The function key of a scope reference."""
    return f"{ref[0]}.{ref[1]}" if ref[0] else ref[1]


def in_loop(info: ModuleInfo, scope: str, line: int) -> bool:
    """Whether `line` of `scope` is in a `for`/`while` statement there (it runs more than once)."""
    return any(a <= line <= b for a, b in info.loops.get(scope, ()))


def loop_around(info: ModuleInfo, scope: str, line: int) -> Optional[tuple]:
    """The innermost `for`/`while` statement of `scope` (its first and last lines) whose body
    holds `line`: what is there runs once per iteration. A call on the loop's first line is
    taken to be its header (`for batch in make_loader(args):` makes one loader)."""
    best = None
    for a, b in info.loops.get(scope, ()):
        if a < line <= b and (best is None or a > best[0]):
            best = (a, b)
    return best


# -- the processes a launch starts ------------------------------------------------------------
def launch_reach(ctx: Context, launch: Launch) -> frozenset:
    """The scopes the processes a launch starts run: the function handed over and what it
    reaches (worked out once per check and function)."""
    cache = ctx.__dict__.setdefault("_launch_reach", {})
    hit = cache.get(launch.target)
    if hit is None:
        index = ctx.index
        hit = cache[launch.target] = frozenset(index.reach([index.scope_of(launch.target)], include_imports=False))
    return hit


def launch_seeds(ctx: Context, program: Program, launch: Launch, source: str) -> bool:
    """Whether the processes a launch starts seed `source` themselves: the function handed over
    seeds it (itself or through what it calls), or the new process re-runs the module level
    of the program's entry (spawn re-imports the main module) and that seeds it. A seed the
    parent process made before the launch does not pass to them."""
    index = ctx.index
    if source in index.effects(launch.target).seeds:
        return True
    if launch.runs != "module":
        return False
    entry = program.entry
    return any(
        source in index.seed_sources(entry, ev) for ev in entry.events.get(MODULE_SCOPE, ()) if ev.kind in ("seed", "seedcand")
    )


def unseeded_launch(ctx: Context, program: Program, info: ModuleInfo, scope: str, source: str) -> Optional[Launch]:
    """A launch of the program (`mp.spawn`, submitit) whose processes run `scope` without ever
    seeding `source`: there the source's state is a fresh one on every run, whatever the
    program's own seed (RPL202 reports the hand-off)."""
    ref = (info.module, scope)
    for launch in draw_launches(ctx, program):
        if ref in launch_reach(ctx, launch) and not launch_seeds(ctx, program, launch, source):
            return launch
    return None


_CACHE: "weakref.WeakKeyDictionary[Program, Training]" = program_cache()


def draw_launches(ctx: Context, program: Program) -> list:
    """The hand-offs to process launchers (`mp.spawn`, submitit) of the program, whatever the
    function they run does: where its draws happen when it trains nothing (an evaluation
    spread over GPUs), which `training_of` does not follow."""
    out = []
    launchers = _launchers()
    for info, _, ev in program.events("handoff"):
        runs = launchers.get(ev.data["api"])
        if runs is None or ev.data["target"] is None:
            continue
        for key in launched_keys(ctx.index, ev, info):
            out.append(Launch(info, ev, key, runs))
    return out


def launched_keys(index, ev: Event, info: ModuleInfo) -> tuple[str, ...]:
    """The project functions a hand-off runs in the other process: the function handed over,
    or the `__call__` of the instance handed over (`executor.submit(Trainer(args))`)."""
    if ev.data.get("instance"):
        return instance_call(index, ev.data["target"], info)
    return index.resolve(ev.data["target"], info)


def instance_call(index, qual: str, info: ModuleInfo) -> tuple[str, ...]:
    """The `__call__` an instance of the project class `qual` runs when called, if any."""
    cls = index.class_key(qual, info)
    for base in index.class_bases(cls) if cls else ():
        if f"{base}.__call__" in index.functions:
            return (f"{base}.__call__",)
    return ()


def training_of(ctx: Context, program: Program) -> Training:
    hit = _CACHE.get(program)
    if hit is None:
        hit = _CACHE[program] = _analyse(ctx, program)
    return hit


def runs_with_gradients(ctx: Context, program: Program, info: ModuleInfo, scope: str, line: int, runs_here: bool = True) -> bool:
    """Whether gradients can flow where `scope` runs in the program (what an operation that is
    nondeterministic, or raises, only in its backward pass needs), and, for an operation that
    runs where it is written (`runs_here`: not a module built there to run later), it runs
    during the training, not only before it starts."""
    if (info.module, scope) not in grad_scopes(ctx.index, program):
        return False
    return not runs_here or not training_of(ctx, program).before_training(program, info, scope, line)


def trains(ctx: Context, key: str) -> bool:
    """Whether calling project function `key` does the model's work: it trains (`.backward()`,
    an optimizer or a Trainer) or builds or runs a torch model (a launcher's job may train
    through a library, `timm`'s loss scaler or a framework, that the index does not see)."""
    cache = ctx.__dict__.setdefault("_trains", {})
    hit = cache.get(key)
    if hit is None:
        index = ctx.index
        hit = cache[key] = any(
            ev.kind in ("train", "torchuse")
            for mod, scope in index.reach([index.scope_of(key)], include_imports=False)
            for ev in index.modules[mod].events.get(scope, ())
        )
    return hit


def _analyse(ctx: Context, program: Program) -> Training:
    index = ctx.index
    out = Training(index)
    launchers = _launchers()
    for info, _, ev in program.events("handoff"):
        if ev.data["api"] in launchers and ev.data["target"] is None:
            out.unknown_launches.append((info, ev))
    out.launches = [launch for launch in draw_launches(ctx, program) if trains(ctx, launch.target)]
    entry = program.entry
    if out.launches:
        starts = [(entry, MODULE_SCOPE)] if any(la.runs == "module" for la in out.launches) else []
        for launch in out.launches:
            mod, scope = index.scope_of(launch.target)
            starts.append((index.modules[mod], scope))
        out.trains_in = {
            ref for launch in out.launches for ref in index.reach([index.scope_of(launch.target)], include_imports=False)
        }
    else:
        starts = [(entry, MODULE_SCOPE), (entry, MAIN_SCOPE), *((entry, q) for q in entry.hydra_mains)]
    # the scopes the walk reaches: needed only until the worker-only scopes are known (kept
    # for every program of a large project, they were the largest part of its walks)
    visited: set = set()
    _walk(ctx, out, starts, visited)
    if out.launches:
        # the parent's own path is walked too: its scopes are not worker-only
        _walk(ctx, out, [(entry, MODULE_SCOPE), (entry, MAIN_SCOPE)], visited, record=False)
    workers = _worker_functions(ctx, program)
    if workers:
        reached = index.reach([index.scope_of(k) for k in workers], include_imports=False)
        out.worker_only = {ref for ref in reached if ref not in visited}
    return out


def _items(ctx: Context, info: ModuleInfo, scope: str) -> list:
    """A scope's events (of the kinds the walk keeps) and calls of project functions, in source order."""
    # by where each starts, then ends: of two calls that start together the inner one runs
    # first (`Trainer(seed=1).train()` builds the trainer, then trains)
    items = [((ev.line, ev.col, ev.end_line, ev.end_col), 0, ev, None) for ev in info.events.get(scope, ()) if ev.kind in _KINDS]
    handed = []
    calling = ctx.index.m.calling_methods
    for call, keys in ctx.index.callees(info, scope):
        if not is_reference(call):
            items.append(((call[2], call[3], call[4], call[5]), 1, call, keys))
        elif call[0] is not None and call[0].startswith(HANDED) and call[1] in calling:
            handed.append((call, keys))
    for call, keys in handed:
        # an object handed to a project function that may call it (`train_one_epoch(model,
        # loader, loss_scaler)`, whose scaler runs the backward pass): its `__call__` runs
        # during that call, so the walk goes there after the function's own body; certain
        # when the function called is (what it is handed to a library runs there, later)
        outer = _enclosing(items, call)
        if outer is not None:
            items.append(((call[2], call[3], call[4], call[5]), 2, call, keys))
    items.sort(key=lambda it: (it[0], it[1]))
    return items


def _enclosing(items: list, call: tuple) -> "tuple | None":
    """The project-function call among `items` whose arguments hold `call`'s span."""
    span = (call[2], call[3], call[4], call[5])
    best = None
    for it in items:
        if it[1] == 1 and it[0][:2] < span[:2] and span[2:] <= it[0][2:]:
            if best is None or best[0][:2] < it[0][:2]:
                best = it
    return best


def _walk(ctx: Context, out: Training, starts: list, visited: set, record: bool = True) -> None:
    """Walk the program in execution order from `starts`, numbering the events it meets.

    A call reaches the functions it may call, in order, each scope once. Training starts at
    the first train event met on a certain path: through calls of one known function, not
    a method name that fans out to several functions, nor a class whose protocol methods
    (`forward`, `training_step`, ...) run later, in an order the walk cannot know."""
    index = ctx.index
    step = len(out.steps)
    # scopes reached only on uncertain paths so far: walked again when a certain path
    # reaches them before training has started (`load(scaler=scaler)` keeps the scaler
    # that `train_one_epoch(..., scaler)` later calls)
    uncertain: set = set()
    for info, scope in starts:
        ref = (info.module, scope)
        if ref in visited:
            continue
        visited.add(ref)
        # frames: [module, items, position, certain, path, refs]; the path holds, from the
        # start scope down, each scope and the span of the call in it that led further down;
        # refs, the scopes alone (one tuple for all the events of a frame)
        stack = [[info, _items(ctx, info, scope), 0, True, ((ref, None),), (ref,)]]
        while stack:
            frame = stack[-1]
            finfo, items, pos, certain, path, refs = frame
            if pos >= len(items):
                stack.pop()
                continue
            frame[2] = pos + 1
            _, kind, what, keys = items[pos]
            if kind == 0:
                if record and what.kind in _ASKED:
                    out.steps.setdefault(id(what), (step, refs))
                step += 1
                if record and out.start_step is None and certain and _starts_training(what):
                    out.start_step = step - 1
                    out.chain = path[:-1] + ((path[-1][0], (what.line, what.col, what.end_line, what.end_col)),)
                continue
            call = what
            if kind == 2:
                # a handed object's protocol: certain when the function it is handed to is
                # certainly called and calls the parameter that receives it
                outer = _enclosing(items, call)
                sure = (
                    certain
                    and len(keys) == 1
                    and outer is not None
                    and _sure_call(index, outer[2], outer[3])
                    and _calls_handed(index, finfo, path[-1][0][1], call, outer[3][0])
                )
            else:
                sure = certain and _sure_call(index, call, keys)
            here = path[:-1] + ((path[-1][0], tuple(call[2:6])),)
            frames = []
            for key in keys:
                mod, sub = index.scope_of(key)
                if (mod, sub) in visited:
                    if not (sure and record and out.start_step is None and (mod, sub) in uncertain):
                        continue
                    uncertain.discard((mod, sub))
                elif not sure:
                    uncertain.add((mod, sub))
                visited.add((mod, sub))
                sub_info = index.modules[mod]
                frames.append([sub_info, _items(ctx, sub_info, sub), 0, sure, here + (((mod, sub), None),), refs + ((mod, sub),)])
            stack.extend(reversed(frames))


def _calls_handed(index, info: ModuleInfo, scope: str, call: tuple, key: str) -> bool:
    """Whether project function `key` calls the parameter that the object handed over at
    `call` (an argument of a call in `scope` of `info`) is bound to."""
    slot = next(
        (s for sc, line, col, s in info.extra.get(HANDED_SLOTS, ()) if sc == scope and line == call[2] and col == call[3]),
        None,
    )
    fn = index.functions.get(key)
    if slot is None or fn is None:
        return False
    params = fn.params or ()
    if isinstance(slot, int):
        # a method called on an instance (or its class built) binds `self` first
        shift = 1 if fn.class_name is not None and params and params[0] in ("self", "cls") else 0
        name = params[slot + shift] if slot + shift < len(params) else None
    else:
        name = slot if slot in params else None
    mod, sub = index.scope_of(key)
    return name is not None and name in index.modules[mod].extra.get(PARAM_CALLS, {}).get(sub, ())


def _sure_call(index, call: tuple, keys: tuple) -> bool:
    """Whether a call certainly runs its one known function (the walk's certain path)."""
    return len(keys) == 1 and call[0] is not None and not _instantiates(index, call[0], keys[0])


def _instantiates(index, target: str, key: str) -> bool:
    """Whether a call of `target` that resolves to function `key` builds an instance (`key`
    is then a protocol method of the class, not the function called)."""
    if target.startswith("@"):
        return False
    owner, _, method = key.rpartition(".")
    return owner in index.classes and not target.endswith("." + method)


def _worker_functions(ctx: Context, program: Program) -> list[str]:
    """Project functions the program's DataLoaders run in their workers (`worker_init_fn=`)."""
    index = ctx.index
    out: list[str] = []
    for info, _, ev in program.events("loader"):
        desc = ev.data.get("kws", {}).get("worker_init_fn")
        if desc and desc[0] == "qual":
            for key in index.resolve(desc[1], info):
                if key not in out:
                    out.append(key)
    return out
