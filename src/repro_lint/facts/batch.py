"""Extracting many files' facts: in this process, or in worker processes that send them
back in a compact form, with a large project's bodies kept marshalled (`model.pack`)."""

from __future__ import annotations

import hashlib
import marshal
import os
import pickle
import struct
import traceback
from typing import Callable, Optional

from repro_lint.core import progress
from repro_lint.discover import notebook
from repro_lint.core.bounded_read import read_regular
from repro_lint.facts.walker.extractor import extract, quiet_parsing
from repro_lint.facts.hooks import registry
from repro_lint.facts.matchers import get_matchers
from repro_lint.facts.model import LIGHT_HOOKS, ModuleInfo, from_packed_plain, from_plain, pack, packed_plain, to_plain
from repro_lint.facts.shared_values import Sharing
from repro_lint.facts.spill import Spill

# Below this many files to extract, worker start-up costs more than it saves.
PARALLEL_MIN_FILES = 24

_WORKER_MATCHER_KEY: tuple = ((), ())
# The files' bytes, read by this process before the workers are forked: a forked worker
# takes its files from here instead of reading them again (elsewhere it reads them).
_FORKED_DATAS: dict[str, bytes] = {}


# In a worker: (the numbers of the next part from the front and one past the last from the
# back, shared; their lock; the parts' jobs), see `_claim`.
_CLAIMS: Optional[tuple] = None


def init_worker(matcher_key: tuple, claims: Optional[tuple] = None) -> None:
    """Make this process a worker (the pool's initializer). The worker's steps are public
    (`init_worker`, `extract_part`, `extract_job`, and `received_part` in the parent) so that
    tests can run them in one process and stand in for a worker that dies."""
    global _WORKER_MATCHER_KEY, _CLAIMS
    _WORKER_MATCHER_KEY = matcher_key
    _CLAIMS = claims
    registry()  # (the families' hooks, found once per worker)


def extract_part(jobs: list[tuple], packing: bool = False) -> bytes:
    """A worker's part, extracted and sent back at once (results sent one by one must be
    read by the parent while it extracts its own part, and the two then take turns), in
    the compact form of `model.to_plain` (pickling the objects took as long as a tenth
    of the extraction, on both sides), or with `packing` their bodies packed (`model.pack`).

    One buffer of records (`_RECORD` head, then the bytes): the parent decodes each record
    where it lies (`received_part`). A marshalled list of the records' bytes made the
    parent copy every one of them first: on a 38,000-file tree about 70 MB more of the
    parent's memory stayed in use after the copies were freed (small blocks in between)."""
    out = []
    with quiet_parsing():
        for job in jobs:
            info = extract_job(job)
            try:
                if packing and pack(info):
                    form, item = 2, marshal.dumps(packed_plain(info))
                else:
                    form, item = 1, marshal.dumps(to_plain(info))
            except ValueError:  # holds something marshal does not write: pickled as it is
                form, item = 0, pickle.dumps(info, protocol=pickle.HIGHEST_PROTOCOL)
            out.append(_RECORD.pack(form, len(item)))
            out.append(item)
    return b"".join(out)


# a record of a worker's part: its form (0 pickled, 1 plain, 2 packed) and its size
_RECORD = struct.Struct("<BQ")


def received_part(data: bytes, sharing: Optional[Sharing] = None) -> list[ModuleInfo]:
    """The facts of a worker's part (`extract_part`), decoded in the parent."""
    out = []
    view = memoryview(data)
    head = _RECORD.size
    offset = 0
    with view:
        while offset < len(view):
            form, size = _RECORD.unpack_from(view, offset)
            offset += head
            with view[offset:offset + size] as item:
                if form == 2:
                    info = from_packed_plain(marshal.loads(item))
                    if sharing is not None:
                        sharing.share(info)
                    out.append(info)
                else:
                    out.append(from_plain(marshal.loads(item)) if form else pickle.loads(item))
            offset += size
    return out


def extract_job(job: tuple, key: Optional[tuple] = None) -> ModuleInfo:
    """The facts of a job's file, read here unless this is a forked worker that has its bytes."""
    path, display, module, is_package, digest = job
    data = _FORKED_DATAS.get(path)
    if data is None:
        digest = None  # read again here: its digest is worked out again too
        try:
            data = read_regular(path)
        except OSError as exc:
            info = ModuleInfo(display, module, is_package)
            info.error = ("read-error", f"cannot read file: {exc.strerror or exc}", 0, 0)
            return info
    return safe_extract(display, module, is_package, data, key or _WORKER_MATCHER_KEY, digest)


def safe_extract(display: str, module: str, is_package: bool, data: bytes, key: tuple, digest: Optional[str] = None, full: bool = False) -> ModuleInfo:
    """The facts of a file from its bytes (a notebook is read as the module its code cells
    make; its facts keep the digest of the file's bytes). With `full`, no hooks are gated."""
    cells = None
    if notebook.is_notebook(display):
        digest = digest or hashlib.blake2b(data, digest_size=16).hexdigest()
        try:
            nb = notebook.read(data)
        except notebook.NotebookError as exc:
            info = ModuleInfo(display, module, is_package)
            info.digest = digest
            info.error = ("read-error", str(exc), 0, 0)
            return info
        data, cells = nb.text.encode("utf-8"), nb.cell_starts()
    try:
        info = extract(display, module, is_package, data, get_matchers(*key), digest, full)
        if cells and info.error is None:
            info.extra[notebook.CELL_STARTS] = cells
        return info
    except Exception as exc:  # a bug in an extraction hook must not stop the other files
        info = ModuleInfo(display, module, is_package)
        info.digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        info.error = ("internal-error", f"internal error while analysing: {type(exc).__name__}: {exc}", 0, 0)
        info.extra["traceback"] = traceback.format_exc()
        return info


def walked_light(infos: dict[str, ModuleInfo]) -> list[str]:
    """The keys of the files walked with a gate's light hooks (`hooks.HookGate`) that
    the facts of the whole project now show to need their full facts: to be extracted again
    with `full` (a project that has just made its first DataLoader subclass, say)."""
    light = [k for k, info in infos.items() if info.summary(LIGHT_HOOKS)]
    if not light:
        return []
    wanted = {g.name: ask for g in registry().gates if (ask := g.needs_full(infos.values())) is not None}
    return [k for k in light if any(wanted[n](infos[k]) for n in infos[k].summary(LIGHT_HOOKS) if n in wanted)]


def extract_light_again(infos: dict[str, ModuleInfo], key: tuple, read: Callable[[str], bytes]) -> tuple[list[str], bool]:
    """Extract again in full the files of `infos` (by key) that `walked_light` names, reading
    each with `read(key)`: (the keys of those extracted again, whether each still had the
    content its earlier facts were of). A file that cannot be read now keeps its facts."""
    redone = []
    same = True
    for k in walked_light(infos):
        old = infos[k]
        try:
            data = read(k)
        except OSError:
            continue
        infos[k] = info = safe_extract(old.path, old.module, old.is_package, data, key, full=True)
        same = same and info.digest == old.digest
        redone.append(k)
    return redone, same


def extract_all(jobs: list[tuple], datas: dict[str, bytes], n_jobs: int, key: tuple, packing: bool = False) -> list[ModuleInfo]:
    """The facts of `jobs`; with `packing`, their bodies packed (`model.pack`) and equal
    outline values shared (`shared_values`)."""
    sharing = Sharing(Spill.open()) if packing else None
    if n_jobs > 1 and len(jobs) >= PARALLEL_MIN_FILES:
        return _extract_parallel(jobs, datas, n_jobs, key, packing, sharing)
    return _extract_here(jobs, datas, key, packing, sharing)


def _extract_here(
    jobs: list[tuple], datas: dict[str, bytes], key: tuple, packing: bool = False, sharing: Optional[Sharing] = None
) -> list[ModuleInfo]:
    # each file's bytes are let go once extracted: a large project's sources need not all stay in memory
    out = []
    with quiet_parsing():
        for j in jobs:
            data = datas.pop(j[0], None)
            # (the bytes of a part a worker took are let go: should that worker die, its
            # files are read again here)
            info = safe_extract(j[1], j[2], j[3], data, key, j[4]) if data is not None else extract_job(j, key)
            if packing and pack(info) and sharing is not None:
                sharing.share(info)
            out.append(info)
            progress.advance()
    return out


# Facts held as objects take 6 to 7 times the size of their source (a 5,106-file corpus of
# 35 MB: 215 MB; a 38,308-file tree of 73 MB: 515 MB). Past this much source to extract
# (about 300 MB of facts) each file's body is kept marshalled (`model.pack`, about a fifth
# of the size) and decoded when read; below it, as in a project of a few thousand files,
# nothing is decoded twice.
PACK_SOURCE_BYTES = 48 << 20


def packing_for(jobs: list[tuple], datas: dict[str, bytes]) -> bool:
    """Whether the facts of `jobs` are to be packed (see `PACK_SOURCE_BYTES`)."""
    return sum(len(datas.get(j[0], b"")) for j in jobs) > PACK_SOURCE_BYTES


# The work is cut into parts handed out as they are asked for (`_claim`): workers take
# them from the front, this process from the back. Bytes are a poor measure of a file's
# cost (two halves of a 5,106-file corpus of equal bytes took 4.08 and 3.73 s), and a
# shared machine slows one process more than another: whoever is free takes the next part.
PARTS_PER_PROCESS = 24


def byte_runs(sizes: list[int], n: int) -> list[range]:
    """Runs of consecutive indices of `sizes`, about `n` of them, of about equal total size
    (never an empty one)."""
    total = sum(sizes) or 1
    runs: list[range] = []
    start = 0
    done = 0
    for i, size in enumerate(sizes):
        done += size
        if done * n >= total * (len(runs) + 1) or i == len(sizes) - 1:
            runs.append(range(start, i + 1))
            start = i + 1
    return runs


def _claim(claims: tuple, from_back: bool) -> Optional[int]:
    """The number of the next part nobody has taken, or None when all are taken."""
    taken, lock, _ = claims
    with lock:
        front, back = taken[0], taken[1]
        if front >= back:
            return None
        if from_back:
            taken[1] = back - 1
            return back - 1
        taken[0] = front + 1
        return front


def _extract_claimed(packing: bool = False) -> tuple[list[int], bytes]:
    """A worker's share: parts taken from the front until none is left, as (their numbers,
    the records of their files in that order; see `extract_part`)."""
    parts = _CLAIMS[2]  # type: ignore[index]
    taken: list[int] = []
    records: list[bytes] = []
    while True:
        n = _claim(_CLAIMS, False)  # type: ignore[arg-type]
        if n is None:
            return taken, b"".join(records)
        taken.append(n)
        records.append(extract_part(parts[n], packing))


def _extract_parallel(
    jobs: list[tuple], datas: dict[str, bytes], n_jobs: int, key: tuple, packing: bool, sharing: Optional[Sharing] = None
) -> list[ModuleInfo]:
    """`n_jobs - 1` worker processes and this one, which would otherwise only wait, and
    whose own results need no pickling, each extracting parts as long as some are left."""
    import multiprocessing

    global _FORKED_DATAS
    runs = byte_runs([len(datas.get(j[0], b"")) for j in jobs], n_jobs * PARTS_PER_PROCESS)
    parts = [[jobs[i] for i in run] for run in runs]
    try:
        ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else multiprocessing.get_context()
        claims = (ctx.RawArray("q", [0, len(parts)]), ctx.Lock(), parts)
        _FORKED_DATAS = datas
        try:
            pool = ctx.Pool(n_jobs - 1, initializer=init_worker, initargs=(key, claims))
        finally:
            _FORKED_DATAS = {}
    except (OSError, ImportError):
        return _extract_here(jobs, datas, key, packing, sharing)  # no process support here
    done: dict[int, list[ModuleInfo]] = {}
    with pool:
        pending = [pool.apply_async(_extract_claimed, (packing,)) for _ in range(n_jobs - 1)]
        # The bytes of the parts the workers take (from the front) are theirs, by the fork:
        # kept here they stand among this process's facts while it extracts, and their room
        # is left in pieces (25 MB more at the end of a cold check of 38,000 files). Those
        # of the parts the workers will most likely take go at once (a part this process
        # takes after all has its files read again), the others once a worker took them.
        dropped = max(0, len(parts) * (n_jobs - 1) // n_jobs - PARTS_PER_PROCESS // 4)
        for part in parts[:dropped]:
            for j in part:
                datas.pop(j[0], None)
        while True:
            n = _claim(claims, True)
            front = len(parts) if n is None else n
            front = min(front, claims[0][0])
            while dropped < front:
                for j in parts[dropped]:
                    datas.pop(j[0], None)
                dropped += 1
            if n is None:
                break
            done[n] = _extract_here(parts[n], datas, key, packing, sharing)
        for result in pending:
            try:
                taken, records = result.get()
            except Exception:  # a worker died: the parts it took are done here below
                continue
            infos = received_part(records, sharing)
            start = 0
            for n in taken:
                done[n] = infos[start:start + len(parts[n])]
                start += len(parts[n])
            progress.advance(len(infos))
    out: list[ModuleInfo] = []
    for n, part in enumerate(parts):
        got = done.get(n)
        out.extend(got if got is not None else _extract_here(part, datas, key, packing, sharing))
    return out
