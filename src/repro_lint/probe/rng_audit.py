"""Watches the global random number generators: who draws from them, and who seeds them.

Python's `random` and numpy's legacy global functions are bound methods of one hidden
generator object, so replacing the module attributes sees every call made through the
module. Torch draws are seen by the op recorder (ops tagged `nondeterministic_seeded`);
torch seeding calls are wrapped here.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

from repro_lint.probe import errors
from repro_lint.probe.fingerprint import stable_hash
from repro_lint.probe.frames import UserCode, code_file

# Calls that reseed from OS entropy: after them a generator is unseeded again.
_ENTROPY_RESEEDERS = {
    "torch.seed": ("torch",),
    "torch.random.seed": ("torch",),
    "torch.cuda.seed": ("torch.cuda",),
    "torch.cuda.seed_all": ("torch.cuda",),
}


def torch_source(device_type: str) -> str:
    """Name of the global torch generator for a device: `torch` (CPU) or `torch.<type>`."""
    return "torch" if device_type == "cpu" else f"torch.{device_type}"


@dataclass
class _Record:
    source: str
    function: str
    location: int
    seeded: bool
    count: int
    first_op: int
    importing: Optional[str] = None  # the module whose import made the draw
    kind: str = "draw"  # or "entropy-generator": a generator object started from OS entropy
    values: int = 0  # a digest of the values drawn (compared across seeds by --vary-seed)


# Generator objects whose construction without a seed starts them from OS entropy:
# (module, attribute, source). Their draws are not global, so only their start is audited.
_ENTROPY_GENERATORS = (("numpy.random", "default_rng", "numpy"),)


def importing_module(frame, user: UserCode) -> Optional[str]:
    """The module whose import is running between `frame` and the user's code (a library that
    draws while it is imported), or None."""
    module = None
    while frame is not None:
        code = frame.f_code
        if user.is_user_file(code.co_filename) and not code.co_filename.startswith("<"):
            return None if module is None else module
        if code.co_name == "<module>" and module is None:
            module = frame.f_globals.get("__name__")
        if code.co_filename.startswith("<frozen importlib") and module is not None:
            return module
        frame = frame.f_back
    return None


class RngAudit:
    def __init__(self, user: UserCode, op_index: Callable[[], int]):
        self._user = user
        self._op_index = op_index
        self._seeded: set[str] = set()
        self._local = threading.local()
        self.active = True
        self.draws: dict[tuple, _Record] = {}
        self.seeds: dict[tuple, _Record] = {}
        self._patched: list[tuple[Any, str, Any]] = []
        self.seed_shift = 0  # --vary-seed: added to every seed the program sets (see `_shifted`)

    def start_fresh(self) -> None:
        """A forked child's own records; which generators are seeded is inherited."""
        self.draws = {}
        self.seeds = {}

    # -- state ---------------------------------------------------------------------------
    def is_seeded(self, source: str) -> bool:
        # `torch.manual_seed` seeds every device; `torch.cuda.manual_seed*` only CUDA ones.
        return source in self._seeded or (source.startswith("torch.") and "torch" in self._seeded)

    def draw(self, source: str, function: str, location: int, frame=None, value: Any = None) -> None:
        seeded = self.is_seeded(source)
        importing = importing_module(frame, self._user) if frame is not None else None
        key = (source, function, location, seeded, importing)
        rec = self.draws.get(key)
        if rec is None:
            rec = self.draws[key] = _Record(source, function, location, seeded, 0, self._op_index(), importing)
        rec.count += 1
        if value is not None:
            rec.values = stable_hash((rec.values, value))

    def entropy_generator(self, source: str, function: str, location: int) -> None:
        """A generator object started without a seed (`numpy.random.default_rng()`)."""
        key = (source, function, location, False, "entropy-generator")
        rec = self.draws.get(key)
        if rec is None:
            self.draws[key] = _Record(source, function, location, False, 1, self._op_index(), kind="entropy-generator")
        else:
            rec.count += 1

    def seeding(self, sources: tuple[str, ...], function: str, location: int, fixed: bool) -> None:
        for source in sources:
            if fixed:
                self._seeded.add(source)
            else:
                self._seeded.discard(source)
                if source == "torch":
                    self._seeded = {s for s in self._seeded if not s.startswith("torch.")}
        key = (",".join(sources), function, location, fixed)
        rec = self.seeds.get(key)
        if rec is None:
            self.seeds[key] = _Record(",".join(sources), function, location, fixed, 1, self._op_index())
        else:
            rec.count += 1

    # -- patching ------------------------------------------------------------------------
    def install(self, rng_catalog: dict[str, Any]) -> None:
        for source in ("python", "numpy"):
            for name in rng_catalog.get("consumers", {}).get(source, {}).get("functions", []):
                self._patch(name, self._draw_hook(source, name))
        for seeder in rng_catalog.get("seeders", []):
            if seeder.get("framework"):
                continue  # helpers end in the basic seeders, which are wrapped themselves
            name = seeder["name"]
            sources = tuple(_probe_sources(name, seeder.get("sources", [])))
            shift = self._shifted if self.seed_shift else None
            self._patch(name, self._seed_hook(sources, name, bool(seeder.get("requires-arg"))), shift)
        for name, sources in _ENTROPY_RESEEDERS.items():
            self._patch(name, self._reseed_hook(sources, name))
        for module, attr, source in _ENTROPY_GENERATORS:
            self._patch(f"{module}.{attr}", self._generator_hook(source, f"{module}.{attr}"))

    def _patch(self, qualified: str, hook: Callable[..., None], before: Optional[Callable[[tuple, dict], tuple]] = None) -> None:
        module_name, _, attr = qualified.rpartition(".")
        module = _existing_module(module_name)
        original = getattr(module, attr, None) if module is not None else None
        if original is None or getattr(original, "__repro_lint_wrapped__", False):
            return
        audit = self

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            local = audit._local
            if not audit.active or getattr(local, "busy", False):
                return original(*args, **kwargs)
            local.busy = True  # calls made by a wrapped call are part of it
            try:
                if before is not None:
                    args, kwargs = before(args, kwargs)
                result = original(*args, **kwargs)
                try:
                    hook(args, kwargs, sys._getframe(1), result)
                except Exception as exc:  # the probe's failure, not the program's
                    errors.record(errors.RNG_AUDIT, exc, qualified)
                return result
            finally:
                local.busy = False

        wrapper.__repro_lint_wrapped__ = True  # type: ignore[attr-defined]
        setattr(module, attr, wrapper)
        self._patched.append((module, attr, original))

    def _shifted(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The seeding call's arguments with the seed moved by `seed_shift` (`--vary-seed`
        without a seed option of the program's). Not in a DataLoader worker: a worker's seed
        should follow from the loader's base seed, and a `worker_init_fn` that seeds with a
        constant is what the comparison is to find."""
        data = sys.modules.get("torch.utils.data")
        if data is not None and data.get_worker_info() is not None:
            return args, kwargs
        if args:
            return (_moved(args[0], self.seed_shift), *args[1:]), kwargs
        for key in ("seed", "a"):
            if key in kwargs:
                return args, dict(kwargs, **{key: _moved(kwargs[key], self.seed_shift)})
        return args, kwargs

    def uninstall(self) -> None:
        for module, attr, original in reversed(self._patched):
            setattr(module, attr, original)
        self._patched.clear()

    def _draw_hook(self, source: str, name: str):
        def hook(args, kwargs, frame, result=None):
            if result is None and args and isinstance(args[0], list):
                result = tuple(args[0])  # shuffled in place
            self.draw(source, name, self._user.location_id(frame), frame, _digest(result))

        return hook

    def _generator_hook(self, source: str, name: str):
        def hook(args, kwargs, frame, result=None):
            seed = args[0] if args else kwargs.get("seed")
            location = self._user.location_id(frame)
            # a library's own generator (a temporary name, a scheduler's jitter) is not the program's
            if seed is None and location >= 0 and self._user.is_user_file(code_file(frame)):
                self.entropy_generator(source, name, location)

        return hook

    def _seed_hook(self, sources: tuple[str, ...], name: str, requires_arg: bool):
        def hook(args, kwargs, frame, result=None):
            value = args[0] if args else next(iter(kwargs.values()), None)
            fixed = not (requires_arg and value is None)
            self.seeding(sources, name, self._user.location_id(frame), fixed)

        return hook

    def _reseed_hook(self, sources: tuple[str, ...], name: str):
        def hook(args, kwargs, frame, result=None):
            self.seeding(sources, name, self._user.location_id(frame), False)

        return hook


def _moved(seed: Any, shift: int) -> Any:
    if isinstance(seed, bool) or seed is None:
        return seed
    if isinstance(seed, int):
        return (seed + shift) % 2**32  # numpy accepts seeds below 2**32
    if isinstance(seed, float):
        return seed + shift
    if isinstance(seed, (str, bytes)):
        return seed + (f"+{shift}" if isinstance(seed, str) else f"+{shift}".encode())
    return seed


def _digest(value: Any) -> Any:
    """What identifies drawn values across runs: the value itself for Python numbers, the
    bytes of an array (numpy draws)."""
    if value is None or isinstance(value, (int, float, str, bool)):
        return value
    tobytes = getattr(value, "tobytes", None)
    if callable(tobytes):
        try:
            return stable_hash(tobytes())
        except Exception:
            return type(value).__name__
    if isinstance(value, (list, tuple)):
        return stable_hash(repr(value)[:10000])
    return type(value).__name__


def _probe_sources(name: str, sources: list[str]) -> list[str]:
    # The catalog names one `torch` source; at run time CUDA generators are separate.
    if name.startswith("torch.cuda."):
        return ["torch.cuda" if s == "torch" else s for s in sources]
    return sources


def _existing_module(name: str) -> Optional[Any]:
    """Import a module only if its top-level package is installed; never fail."""
    try:
        return importlib.import_module(name)
    except Exception:
        return None
