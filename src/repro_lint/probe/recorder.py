"""Records every aten op a run executes, forward and backward, with fingerprints of its
inputs and outputs and the line of user code that caused it."""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from repro_lint.probe import errors
from repro_lint.probe.fingerprint import fingerprint_storage, fingerprint_tensors, stable_hash
from repro_lint.probe.frames import UserCode
from repro_lint.probe.predict import matching_entries
from repro_lint.probe.rng_audit import RngAudit, torch_source
from repro_lint.probe.trace_format import BACKWARD, COLLECTIVE, GLOBAL_DRAW, RANDOM, SINK, STATE

# Ops whose outputs are uninitialised memory: their bits differ from run to run by design,
# so their contents count as "unset" rather than as a difference. A later read of unset
# memory still shows up, as an op whose outputs differ for identical inputs.
_UNINITIALISED = frozenset(
    {
        "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::empty_permuted",
        "aten::new_empty", "aten::new_empty_strided", "aten::resize_", "aten::resize_as_",
        "aten::_empty_affine_quantized", "aten::_empty_per_channel_affine_quantized",
    }
)

# In-place ops that overwrite all of `self` without reading it (with every in-place op that
# draws random numbers): the old contents of `self`, often fresh memory from an `empty` that
# another tensor object wraps (nn.Parameter), are not an input.
_OVERWRITING = frozenset({"aten::fill_", "aten::zero_", "aten::copy_"})

# The fingerprint of what the probe failed to fingerprint (the failure is counted in `errors`).
_FAILED = 0xFFFF_FFFF_FFFF_FFFF

_current_node = getattr(torch._C, "_current_autograd_node", lambda: None)
_sequence_nr = getattr(torch._C._autograd, "_get_sequence_nr", None)


class ProbeStop(BaseException):
    """Ends the user's program early (op budget or time limit). A BaseException so that
    the program's own `except Exception` handlers let it through."""


class _OpInfo:
    __slots__ = (
        "name", "name_id", "view", "seeded", "uninit", "overwrites", "outs", "predict", "positions", "mutated",
        "collective", "callers",
    )


class Recorder(TorchDispatchMode):
    def __init__(
        self,
        user: UserCode,
        audit: RngAudit,
        *,
        max_ops: int,
        fingerprints: bool = True,
        predict: Optional[dict[str, list[dict]]] = None,
        stop_program: bool = True,
    ):
        super().__init__()
        self.stop_program = stop_program  # False in child processes: stop recording, not the process
        self.user = user
        self.audit = audit
        self.max_ops = max_ops
        self.fingerprints = fingerprints
        self.ops: list[tuple[int, int, int, int, int]] = []
        self.names: list[str] = []
        self.predicted: dict[tuple, int] = {}
        self.recording = True
        self.stop_reason: Optional[str] = None
        self.current: tuple[int, int] = (-1, -1)  # (name id, location) of the op running now
        self._predict_table = predict or {}
        self._infos: dict[Any, _OpInfo] = {}
        self._cache: dict[int, tuple[Any, int, int]] = {}
        # autograd sequence nr -> (location, op, torch functions that called the op)
        self._forward: dict[int, tuple[int, int, frozenset]] = {}
        self._callers: frozenset = frozenset()  # of the op running now (see `python-caller`)
        self._stop_pending = False
        self._births: dict[int, tuple[int, int]] = {}  # id(tensor) -> (op index, slot) where first seen
        self.sinks: list[list] = []  # [kind, location, fingerprint, op index, segment]: values that left torch
        self.segment: Optional[str] = None  # the job or task running now (see session.enter_segment)
        self.state: dict[str, int] = {}  # parameter/buffer (by birth) -> fingerprint after its last write
        self.on_stop = None  # told the reason when the recording stops (the ranks of a run: the others stop too)

    def start_fresh(self, *, stop_program: bool) -> None:
        """A forked child's own trace: what the parent recorded stays with the parent."""
        self.ops = []
        self.predicted = {}
        self.sinks = []
        self.state = {}
        self._cache.clear()
        self._births.clear()
        self._stop_pending = False
        self.stop_reason = None
        self.stop_program = stop_program

    # -- the hook ------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.recording:
            if self._stop_pending and threading.current_thread() is threading.main_thread():
                self._stop_pending = False
                raise ProbeStop(self.stop_reason)
            return func(*args, **kwargs)
        # Everything but `func(...)` is the probe's own work: a failure there is counted as
        # the probe's error (see `errors`) and the op runs as it would without the probe.
        try:
            info = self._infos.get(func) or self._info(func)
        except Exception as exc:
            errors.record(errors.OTHER, exc, getattr(func, "__name__", str(func)))
            return func(*args, **kwargs)
        try:
            node = _current_node()
            loc, forward = self._locate(node, info)
        except Exception as exc:
            errors.record(errors.LOCATION, exc, info.name)
            node, loc, forward = None, -1, -1
            self._callers = frozenset()
        flags = 0 if node is None else BACKWARD
        index = len(self.ops)
        try:
            if info.collective:
                # Compared by their results: what a rank's buffer held before (a broadcast's
                # target, an all_gather's output list) is not an input.
                flags |= COLLECTIVE
                in_hash = stable_hash((info.name, [_plain(v) for v in _flatten(args) if not isinstance(v, torch.Tensor)]))
            else:
                in_hash = self._input_hash(info, args, kwargs, index) if self.fingerprints else 0
        except Exception as exc:
            errors.record(errors.FINGERPRINT, exc, info.name)
            in_hash = _FAILED
        outer, self.current = self.current, (info.name_id, loc)
        try:
            out = func(*args, **kwargs)
        finally:
            self.current = outer
        if info.collective:
            _wait(out)  # a collective that fails fails as the program's own wait would
        if self.fingerprints:
            try:
                out_hash, wrote_state = self._output_hash(info, out, in_hash, args, kwargs, index)
            except Exception as exc:
                errors.record(errors.FINGERPRINT, exc, info.name)
                out_hash, wrote_state = _FAILED, False
            if wrote_state:
                flags |= STATE
            if _returns_data(out):
                flags |= SINK
        else:
            out_hash = 0
        if info.seeded:
            flags |= RANDOM
        if info.seeded and not _has_generator(args, kwargs):
            flags |= GLOBAL_DRAW
            try:
                self.audit.draw(torch_source(_device_type(out, args)), info.name, loc, sys._getframe(1), out_hash)
            except Exception as exc:
                errors.record(errors.RNG_AUDIT, exc, info.name)
        if info.predict:
            try:
                forward_op = self.names[forward] if forward >= 0 else None
                self._note_prediction(info, args, kwargs, out, loc, forward_op, node is not None)
            except Exception as exc:
                errors.record(errors.PREDICTION, exc, info.name)
        self.ops.append((info.name_id, loc, in_hash, out_hash, flags))
        if len(self.ops) >= self.max_ops:
            self.stop("max-ops")
        return out

    def stop(self, reason: str, asynchronous: bool = False) -> None:
        """Stop recording; end the program at the next op that runs on the main thread.

        `asynchronous`: called from a signal handler, whose exception the interpreter
        swallows when it lands in a weakref callback or a `__del__` ("Exception ignored
        in ..."): the next op raises it again."""
        self.recording = False
        self.stop_reason = self.stop_reason or reason
        if self.on_stop is not None:
            try:
                self.on_stop(reason)
            except Exception as exc:
                errors.record(errors.OTHER, exc, "stop")
        if not self.stop_program:
            return  # a child process goes on unrecorded; ending it would fail its parent
        if threading.current_thread() is threading.main_thread():
            self._stop_pending = asynchronous
            raise ProbeStop(reason)
        self._stop_pending = True

    # -- per-op facts ------------------------------------------------------------------------
    def _info(self, func) -> _OpInfo:
        schema = func._schema
        info = _OpInfo()
        info.name = schema.name
        info.name_id = self._name_id(schema.name)
        info.view = any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)
        info.seeded = torch.Tag.nondeterministic_seeded in func.tags
        info.uninit = schema.name in _UNINITIALISED
        info.overwrites = torch.Tag.inplace in func.tags and (info.seeded or schema.name in _OVERWRITING)
        info.outs = frozenset(a.name for a in schema.arguments if a.is_out)
        info.mutated = tuple(
            (i, a.name) for i, a in enumerate(schema.arguments) if a.alias_info is not None and a.alias_info.is_write
        )
        info.collective = schema.name.startswith("c10d::")
        info.positions = {a.name: i for i, a in enumerate(schema.arguments)}
        info.predict = self._predict_table.get(schema.name, [])
        info.callers = frozenset(name for entry in info.predict for name in entry.get("python-caller", ()))
        self._infos[func] = info
        return info

    def _name_id(self, name: str) -> int:
        self.names.append(name)
        return len(self.names) - 1

    def _locate(self, node, info: _OpInfo) -> tuple[int, int]:
        """Location of the op's user code, and the forward op it belongs to (-1: itself).

        Backward ops are put at the line of the forward call that built their autograd
        node, which is where a user can change something.
        """
        frame = sys._getframe(2)
        if node is None:
            loc = self.user.location_id(frame)
            self._callers = _torch_callers(frame, info.callers) if info.callers else frozenset()
            if _sequence_nr is not None and torch.is_grad_enabled():
                # The autograd node of this op (if any) was created just before it ran and
                # took the previous sequence number.
                self._forward.setdefault(_sequence_nr() - 1, (loc, info.name_id, self._callers))
            return loc, -1
        origin = self._forward.get(node._sequence_nr())
        if origin is not None:
            self._callers = origin[2]
            return origin[0], origin[1]
        self._callers = frozenset()
        if threading.current_thread() is not threading.main_thread():
            frame = sys._current_frames().get(threading.main_thread().ident)
        return self.user.location_id(frame), -1

    # -- fingerprints --------------------------------------------------------------------
    def _cached(self, t: torch.Tensor) -> Optional[int]:
        entry = self._cache.get(id(t))
        if entry is None or entry[0]() is not t:
            return None
        try:
            return entry[2] if entry[1] == t._version else None
        except RuntimeError:  # inference tensors carry no version counter
            return None

    def _remember(self, t: torch.Tensor, fp: int, birth: tuple[int, int]) -> None:
        try:
            version = t._version
        except RuntimeError:
            return
        key = id(t)
        entry = self._cache.get(key)
        if entry is not None and entry[0]() is t:
            ref = entry[0]
        else:
            cache, births = self._cache, self._births

            def forget(_r, key=key):
                cache.pop(key, None)
                births.pop(key, None)

            ref = weakref.ref(t, forget)
            self._births[key] = birth
        self._cache[key] = (ref, version, fp)

    def birth(self, t: torch.Tensor) -> Optional[str]:
        """Where a tensor was first seen, `op:slot`: the same in every run whose ops agree so far."""
        entry = self._cache.get(id(t))
        if entry is None or entry[0]() is not t:
            return None
        op, slot = self._births.get(id(t), (-1, 0))
        return f"{op}:{slot}"

    def _input_hash(self, info: _OpInfo, args: tuple, kwargs: dict, index: int) -> int:
        values = list(args) + [v for k, v in kwargs.items() if k not in info.outs]
        parts: list[Any] = []
        missing: list[tuple[int, torch.Tensor]] = []
        if info.overwrites and values and isinstance(values[0], torch.Tensor):
            parts.append(("overwritten", str(values[0].dtype), tuple(values[0].shape)))
            values = values[1:]
        for value in _flatten(values):
            if isinstance(value, torch.Tensor):
                fp = self._cached(value)
                if fp is None:
                    missing.append((len(parts), value))
                parts.append(fp)
            elif isinstance(value, (torch.UntypedStorage, torch.TypedStorage)):
                parts.append(fingerprint_storage(value))
            else:
                parts.append(_plain(value))
        if missing:
            for (i, t), fp in zip(missing, fingerprint_tensors(t for _, t in missing)):
                parts[i] = fp
                self._remember(t, fp, (index, -1 - i))
        return stable_hash(parts)

    def _output_hash(self, info: _OpInfo, out: Any, in_hash: int, args: tuple, kwargs: dict, index: int) -> tuple[int, bool]:
        """The fingerprint of what an op produced: its outputs and the arguments it wrote
        (foreach and fused optimizer ops return nothing), and whether it wrote a
        parameter or buffer."""
        flat = list(_flatten([out]))
        tensors = [(i, v) for i, v in enumerate(flat) if isinstance(v, torch.Tensor)]
        written = self._written(info, args, kwargs, {id(v) for _, v in tensors})
        if info.view or info.uninit:
            # Views hold the same bits as their inputs, and fresh memory holds nothing yet:
            # both are fixed by the inputs, so no reduction needs to run.
            fps = [stable_hash((info.name, in_hash, i)) for i, _ in tensors]
        else:
            fps = fingerprint_tensors([t for _, t in tensors] + written)
        parts: list[Any] = [_plain(v) for v in flat]
        for (i, t), fp in zip(tensors, fps):
            parts[i] = fp
            self._remember(t, fp, (index, i))
        wrote_state = False
        for t, fp in zip(written, fps[len(tensors):]):
            parts.append(fp)
            self._remember(t, fp, (index, len(parts)))
        for t in [v for _, v in tensors] + written:
            if info.mutated and _is_state(t):
                birth = self.birth(t)
                entry = self._cache.get(id(t))
                if birth is not None and entry is not None:
                    self.state[birth] = entry[2]
                    wrote_state = True
        return stable_hash(parts), wrote_state

    def _written(self, info: _OpInfo, args: tuple, kwargs: dict, returned: set) -> list:
        """Tensors an op wrote in place that it does not return."""
        if not info.mutated:
            return []
        found = []
        for position, name in info.mutated:
            value = kwargs.get(name, args[position] if position < len(args) else None)
            for t in _flatten([value]):
                if isinstance(t, torch.Tensor) and id(t) not in returned:
                    returned.add(id(t))
                    found.append(t)
        return found

    # -- results: values that leave torch, and what is alive at the end ---------------------
    def note_sink(self, kind: str, t: torch.Tensor, frame) -> None:
        """A tensor's values leave torch (to numpy, a list, a file or another process)."""
        if not self.fingerprints or not self.recording:
            return
        try:
            fp = self._cached(t)
            if fp is None:
                with _unrecorded():  # the fingerprint's own reductions are not the program's ops
                    fp = fingerprint_tensors([t])[0]
            loc = self.user.location_id(frame) if frame is not None else -1
        except Exception as exc:
            errors.record(errors.RESULTS, exc, kind)
            fp, loc = _FAILED, -1
        self.sinks.append([kind, loc, fp, len(self.ops), self.segment])

    def final_state(self) -> list[list]:
        """Every tensor the recording saw that is still alive: [birth, fingerprint]."""
        if not self.fingerprints:
            return []
        with _unrecorded():
            out = []
            for key, (ref, version, fp) in list(self._cache.items()):
                t = ref()
                if t is None:
                    continue
                try:
                    if t._version != version:
                        fp = fingerprint_tensors([t])[0]
                except RuntimeError:
                    pass
                op, slot = self._births.get(key, (-1, 0))
                out.append([f"{op}:{slot}", fp])
            return out

    # -- prediction of CUDA nondeterminism ---------------------------------------------------
    def _note_prediction(self, info, args, kwargs, out, loc: int, forward_op: Optional[str], backward: bool) -> None:
        device = _device_type(out, args)
        matches = matching_entries(
            info.predict, info.name, info.positions, args, kwargs, backward, forward_op, device, self._callers
        )
        for entry in matches:
            key = (entry["id"], info.name, loc, device, backward)
            self.predicted[key] = self.predicted.get(key, 0) + 1


def _torch_callers(frame, wanted: frozenset, depth: int = 40) -> frozenset:
    """Which of the `torch.nn.functional` functions `wanted` are on the stack (an aten
    operator shared by several Python functions: `interpolate(mode="area")` runs adaptive
    average pooling)."""
    found = set()
    while frame is not None and depth > 0:
        code = frame.f_code
        if code.co_name in wanted and code.co_filename.replace("\\", "/").endswith("torch/nn/functional.py"):
            found.add(code.co_name)
        frame = frame.f_back
        depth -= 1
    return frozenset(found)


def _flatten(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _flatten(v)
        else:
            yield v


def _plain(value: Any) -> Any:
    """A representation of a non-tensor argument that is equal across processes."""
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return value
    if isinstance(value, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return str(value)
    return type(value).__name__


def _unrecorded():
    """Ops of the probe's own, run on this thread without any dispatch mode seeing them."""
    return torch._C._DisableTorchDispatch()


def _wait(out: Any) -> None:
    """A collective's results are there once its work is done (collectives run async)."""
    for v in _flatten([out]):
        if isinstance(v, torch.Tensor):
            continue
        wait = getattr(v, "wait", None)  # a c10d Work (a ScriptObject in the dispatcher)
        if callable(wait):
            wait()


def _returns_data(out: Any) -> bool:
    """An op that hands values to Python (`.item()`, `bool(t)`, `torch.equal`)."""
    return any(isinstance(v, (bool, int, float, complex)) for v in _flatten([out]))


def _is_state(t: torch.Tensor) -> bool:
    return isinstance(t, torch.nn.Parameter) or getattr(t, "_is_buffer", False) or id(t) in _BUFFERS


# ids of tensors registered as module buffers (running statistics and the like)
_BUFFERS: set = set()


def watch_buffers() -> None:
    """Remember tensors registered as buffers, so that writes to them count as state."""
    register = torch.nn.Module.register_buffer

    def register_buffer(self, name, tensor, *args, **kwargs):
        result = register(self, name, tensor, *args, **kwargs)
        if isinstance(tensor, torch.Tensor):
            key = id(tensor)
            _BUFFERS.add(key)
            try:
                weakref.finalize(tensor, _BUFFERS.discard, key)
            except TypeError:
                pass
            except Exception as exc:
                errors.record(errors.RESULTS, exc, "register_buffer")
        return result

    torch.nn.Module.register_buffer = register_buffer


def _has_generator(args: tuple, kwargs: dict) -> bool:
    return any(isinstance(v, torch.Generator) for v in (*args, *kwargs.values()))


def _device_type(out: Any, args: tuple) -> str:
    for v in _flatten([out, args]):
        if isinstance(v, torch.Tensor):
            return v.device.type
    return "cpu"
