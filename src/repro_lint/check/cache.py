"""On-disk cache in `.repro_lint_cache/` at the project root.

Two layers, both keyed by the tool's code (version, Python version, and a digest of its
source and rule catalogs, so an edited rule never reads results of the old one) and the
configuration:
- facts: the extracted `ModuleInfo` of every file, keyed by its content hash
  (`load_facts` / `store_facts`, then `cached_facts` for one file);
- results: the findings of a whole run, keyed by the digest of every file's content hash
  (`load_results` / `store_results`).

The folder lives in the checked project, so a repository can ship one (`git add -f`).
Nothing read from it is trusted:
- every file is authenticated before anything is decoded: it carries a keyed BLAKE2b
  digest of its content under a secret that lives in the user's cache folder
  (`$XDG_CACHE_HOME/repro-lint/key`, else `~/.cache/repro-lint/key`, mode 0600), never in
  a project. A file that does not match is ignored and rebuilt;
- the content is plain data (`marshal` of dicts, tuples, strings and numbers, never of
  code objects), turned back into objects by the code here; `pickle` is never used;
- the folder is used only when it is a real folder (a link, which could lead out of the
  project, makes the run go without a cache), and files in it are opened without following
  links and only when they are regular files.
Anything unreadable, corrupt, unauthenticated or from another version is ignored and
rebuilt, and writes are atomic (temporary file, then rename).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import marshal
import os
import re
import stat
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from repro_lint import __version__
from repro_lint.core.bounded_read import read_regular

CACHE_DIR = ".repro_lint_cache"
GITIGNORE = "# created by repro-lint\n*\n"
_MAGIC = b"repro-lint cache 2\n"
_MAC_SIZE = 32
_KEY_SIZE = 32
# A cache file larger than this is not read (a 5,000-file project's facts take about 35 MB).
_MAX_BYTES = 1024 * 1024 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FRAME = struct.Struct("<I")
_FACTS_MAGIC = b"repro-lint facts 3\n"
_RECORD = struct.Struct("<III")  # a facts record's header, outline and body sizes
_TRAILER_MARK = 0xFFFFFFFF  # in place of a header size: the trailer
_CHUNK = 1 << 20


class CorruptCache(BaseException):
    """A cached body does not match the digest its authenticated record gives. A
    `BaseException`: it must pass the handlers that turn a rule's failure into an error
    line, up to `check.run.run_check`, which drops the facts files and checks again."""


def _body_digest(body: "bytes | memoryview") -> bytes:
    return hashlib.blake2b(body, digest_size=16).digest()


class _FactsSource:
    """An open facts file: streamed once when loaded, then read at offsets (bodies, and
    records copied into a new file). Reads are positional, so a forked copy of the process
    shares the descriptor safely, and the file replaced meanwhile is still the one read."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size

    @classmethod
    def open(cls, path: Path) -> "_FactsSource":
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_BYTES:
                raise OSError("not a regular file of a cache's size")
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, st.st_size)

    def __del__(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass

    def stream(self) -> Any:
        """A buffered reader from the start, on a duplicate descriptor (not this one's offset)."""
        fd = os.dup(self.fd)
        os.lseek(fd, 0, os.SEEK_SET)
        return os.fdopen(fd, "rb", buffering=_CHUNK)

    def _read_at(self, offset: int, size: int) -> bytes:
        if hasattr(os, "pread"):
            return os.pread(self.fd, size, offset)
        os.lseek(self.fd, offset, os.SEEK_SET)  # (Windows: no forked copies share it)
        return os.read(self.fd, size)

    def chunks(self, offset: int, size: int) -> Iterator[bytes]:
        while size > 0:
            chunk = self._read_at(offset, min(size, _CHUNK))
            if not chunk:
                raise OSError("facts file cut short")
            offset += len(chunk)
            size -= len(chunk)
            yield chunk

    def read(self, offset: int, size: int, digest: bytes) -> bytes:
        """The body at `offset`, when it matches `digest`; else `CorruptCache`."""
        try:
            data = b"".join(self.chunks(offset, size))
        except OSError as exc:
            raise CorruptCache(f"cached facts cannot be read: {exc}") from None
        if _body_digest(data) != digest:
            raise CorruptCache("cached facts do not match their digest")
        return data


class FactsEntry:
    """One file's entry of a facts file: its decoded facts (body not read) and where its
    record lies, to be copied into the next facts file as it is."""

    __slots__ = ("digest", "module", "info", "main", "source", "offset", "size", "mac")

    def __init__(self, digest: str, module: str, info: Any, main: bool, source: _FactsSource, offset: int, size: int, mac: bytes) -> None:
        self.digest = digest
        self.module = module
        self.info = info
        self.main = main
        self.source = source
        self.offset = offset
        self.size = size
        self.mac = mac


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Digest of this package's Python files and the rule catalogs it reads, and of the
    Python version (its `ast` and `marshal` formats differ)."""
    from repro_lint.core import catalog

    digest = hashlib.blake2b(f"{__version__}|{sys.implementation.cache_tag}".encode(), digest_size=16)
    package = Path(__file__).resolve().parents[1]
    rules = Path(catalog.rules_dir())
    files = [(p, package) for p in sorted(package.rglob("*.py"))] + [(p, rules) for p in sorted(rules.rglob("*.toml"))]
    for path, top in files:
        # (by the path inside its folder: modules of the same name live in several packages)
        name = path.relative_to(top).as_posix().encode()
        try:
            digest.update(name + b"\0" + path.read_bytes())
        except OSError:
            digest.update(name)
    return digest.hexdigest()


# -- the user's secret ------------------------------------------------------------------
def user_cache_dir() -> Optional[Path]:
    """Where the user's own cache files live (outside every project)."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "repro-lint"
    local = os.environ.get("LOCALAPPDATA") if os.name == "nt" else None
    if local:
        return Path(local) / "repro-lint"
    try:
        return Path.home() / ".cache" / "repro-lint"
    except RuntimeError:  # no home folder
        return None


@functools.lru_cache(maxsize=1)
def _secret() -> Optional[bytes]:
    """The key cache files are authenticated with: created once per user, read back after.
    None (no cache this run) when it cannot be created or is readable by others."""
    folder = user_cache_dir()
    if folder is None:
        return None
    path = folder / "key"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not os.path.lexists(path):
            _create_secret(folder, path)
        return _read_secret(path)
    except OSError:
        return None


def forget_user_key() -> None:
    """Read the key again at the next use: it is read once per process, from the user cache
    folder of that moment (tests that change XDG_CACHE_HOME call this)."""
    _secret.cache_clear()


def _create_secret(folder: Path, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".key-")  # created 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(_KEY_SIZE))
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # never replaces a key another run created meanwhile
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: a key that loses a race only costs a rebuild
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _read_secret(path: Path) -> Optional[bytes]:
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if os.name != "nt":  # (on Windows the folder's access control list guards it)
            if st.st_mode & 0o077 or st.st_uid != os.getuid():
                return None  # others could read it, and then forge cache files
        data = os.read(fd, _KEY_SIZE + 1)
    finally:
        os.close(fd)
    return data if len(data) == _KEY_SIZE else None


def _mac(secret: bytes, kind: str) -> "hashlib._Hash":
    return hashlib.blake2b(kind.encode(), key=secret, digest_size=_MAC_SIZE, person=b"repro-lint")


# -- plain forms of findings ------------------------------------------------------------
_DATACLASS = "\0dataclass"


@functools.lru_cache(maxsize=1)
def _classes() -> dict[str, tuple[type, tuple[str, ...]]]:
    """The classes a results file may hold, by name, with their fields: findings and the
    edit operations of fixes."""
    from repro_lint.core import findings
    from repro_lint.core import edits

    out: dict[str, tuple[type, tuple[str, ...]]] = {}
    for module in (findings, edits):
        for value in vars(module).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__:
                out[f"{module.__name__}.{value.__qualname__}"] = (value, tuple(f.name for f in dataclasses.fields(value)))
    return out


def _rebuild(name: str, values: list) -> Any:
    """An instance of the class `name` with these field values, made without running its
    `__init__` (a frozen dataclass's sets each field through `object.__setattr__`, several
    times slower): the values are what `_to_plain` read from an instance."""
    cls, fields = _classes()[name]
    obj = cls.__new__(cls)
    if hasattr(obj, "__dict__"):
        obj.__dict__.update(zip(fields, values))
    else:
        for field_name, value in zip(fields, values):
            object.__setattr__(obj, field_name, value)
    return obj


_ATOMS = frozenset([str, int, float, bool, type(None)])


def _to_plain(value: Any) -> Any:
    """`value` as data `marshal` writes: a dataclass of `_classes()` becomes the tuple
    (marker, class name, *its fields in order). Raises ValueError for anything else."""
    t = type(value)
    if t in _ATOMS:
        return value
    if t is tuple:
        return tuple([_to_plain(v) for v in value])
    if t is list:
        return [_to_plain(v) for v in value]
    if t is dict:
        return {_to_plain(k): _to_plain(v) for k, v in value.items()}
    if t is frozenset and all(type(v) is str for v in value):
        return value
    name = f"{t.__module__}.{t.__qualname__}"
    known = _classes().get(name)
    if known is not None and known[0] is t:
        return (_DATACLASS, name, *[_to_plain(getattr(value, f)) for f in known[1]])
    raise ValueError(f"cannot cache a {t.__name__}")


def _from_plain(value: Any) -> Any:
    """The inverse of `_to_plain` (KeyError for a class it does not know)."""
    t = type(value)
    if t is tuple:
        if value and value[0] == _DATACLASS:
            return _rebuild(value[1], [v if type(v) in _ATOMS else _from_plain(v) for v in value[2:]])
        return tuple([v if type(v) in _ATOMS else _from_plain(v) for v in value])
    if t is list:
        return [v if type(v) in _ATOMS else _from_plain(v) for v in value]
    if t is dict:
        return {k: _from_plain(v) for k, v in value.items()}
    return value


# -- the cache folder -------------------------------------------------------------------
_KEEP_PER_KIND = 3  # files of each kind kept in the folder (other versions, other settings)


class Cache:
    def __init__(self, root: Path, key: str, enabled: bool = True, folder: Optional[Path] = None) -> None:
        # `folder`: the `cache-dir` setting (`--cache-dir`, REPRO_LINT_CACHE_DIR), which may
        # serve several projects: each gets a folder of its own in it, named by its root
        if folder is None:
            self.dir = root / CACHE_DIR
        else:
            tag = hashlib.blake2b(str(root.resolve()).encode(), digest_size=6).hexdigest()
            self.dir = folder / f"{root.name or 'root'}-{tag}"
        self.key = hashlib.blake2b(f"{code_fingerprint()}|{key}".encode(), digest_size=8).hexdigest()
        self.secret = _secret() if enabled else None
        self.enabled = self.secret is not None

    def _path(self, kind: str) -> Path:
        return self.dir / f"{kind}-{self.key}.bin"

    def _usable_dir(self, create: bool) -> bool:
        """Whether the cache folder is a real folder (not a link), creating it if asked."""
        try:
            st = os.lstat(self.dir)
        except FileNotFoundError:
            if not create:
                return False
            try:
                os.makedirs(self.dir, exist_ok=True)  # (a `cache-dir` may name folders that are not there yet)
            except FileExistsError:
                pass
            st = os.lstat(self.dir)
        return stat.S_ISDIR(st.st_mode)

    def _prune(self, kind: str) -> None:
        """Keep the newest few files of a kind: each version of the tool (and each
        configuration) has its own, and a large project's facts file is 100+ MB."""
        pattern = re.compile(rf"{re.escape(kind)}-[0-9a-f]{{16}}\.bin")
        try:
            found = []
            with os.scandir(self.dir) as entries:
                for entry in entries:
                    if pattern.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                        found.append((entry.stat(follow_symlinks=False).st_mtime, entry.name))
            for _, name in sorted(found, reverse=True)[_KEEP_PER_KIND:]:
                os.unlink(self.dir / name)
        except OSError:
            pass

    # -- authenticated files ---------------------------------------------------------
    # A file is the magic line, the keyed digest of everything after it, then frames: a
    # 4-byte length and that many bytes (mostly `marshal` output).
    def read_frames(self, kind: str) -> Optional[list[memoryview]]:
        """The frames of the `kind` file, or None when it is missing, unreadable, not a
        regular file, not authenticated by this user's key or cut short."""
        if not self.enabled:
            return None
        try:
            if not self._usable_dir(create=False):
                return None
            data = read_regular(self._path(kind), _MAX_BYTES, follow_links=False)
        except OSError:
            return None
        head = len(_MAGIC) + _MAC_SIZE
        if len(data) < head or not data.startswith(_MAGIC):
            return None
        view = memoryview(data)
        mac = _mac(self.secret, kind)  # type: ignore[arg-type]
        mac.update(view[head:])
        if not hmac.compare_digest(mac.digest(), data[len(_MAGIC):head]):
            return None
        frames = []
        pos = head
        while pos < len(data):
            if pos + 4 > len(data):
                return None
            (size,) = _FRAME.unpack_from(data, pos)
            pos += 4
            if pos + size > len(data):
                return None
            frames.append(view[pos : pos + size])
            pos += size
        return frames

    def write_frames(self, kind: str, frames: Iterable[bytes]) -> None:
        """Atomically replace the `kind` file with `frames`, written one after the other and
        authenticated with `self.secret` (tests sign with another key to play a forger)."""

        def write(fh: Any) -> None:
            mac = _mac(self.secret, kind)  # type: ignore[arg-type]
            fh.write(_MAGIC + bytes(_MAC_SIZE))
            for frame in frames:
                size = _FRAME.pack(len(frame))
                mac.update(size)
                mac.update(frame)
                fh.write(size)
                fh.write(frame)
            fh.seek(len(_MAGIC))
            fh.write(mac.digest())

        self._atomic_write(kind, write)

    def _atomic_write(self, kind: str, write: Any) -> None:
        """Replace the `kind` file with what `write(file)` writes, through a temporary file
        (a whole project's facts need not be held in one piece)."""
        if not self.enabled:
            return
        tmp = None
        try:
            if not self._usable_dir(create=True):
                return
            self._ensure_gitignore()
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=f".{kind}-", suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                write(fh)
            os.replace(tmp, self._path(kind))  # a link of that name is replaced, not followed
            tmp = None
            self._prune(kind)
        except (OSError, ValueError, struct.error):
            pass  # a read-only tree, a full disk, or data marshal cannot write: no cache this time
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def _ensure_gitignore(self) -> None:
        """The folder ignores itself in git; an emptied or replaced `.gitignore` is written again."""
        path = self.dir / ".gitignore"
        try:
            if read_regular(path, 4096, follow_links=False) == GITIGNORE.encode():
                return
        except OSError:
            pass
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".gitignore-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(GITIGNORE)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise

    # -- facts, one entry per file -------------------------------------------------------
    # A change of a few files (a pre-commit run) writes their facts to a small second file,
    # `facts-new`, whose entries take the place of the main file's: rewriting a large
    # project's main file (130 MB for 38,000 files) cost more than the rest of such a run.
    # The main file is rewritten, and the second one emptied, once that holds more than
    # `_OVERLAY_MAX` entries or a `_OVERLAY_SHARE` of the project.
    #
    # A facts file is read as a stream, never held whole: `_FACTS_MAGIC`, then per file a
    # record (`_RECORD` lengths, header, outline, the record's keyed digest, body) and last a
    # trailer (`_TRAILER_MARK`, the record count, a keyed digest of the records' digests).
    # A record's digest covers its lengths, its header (path, content digest, module name,
    # the body's own digest) and its outline, so the outline is decoded as soon as it is read;
    # the body is read at its offset when a rule first reads it, and checked against the
    # digest in the header (a mismatch raises `CorruptCache`). Any record that does not
    # verify, or a trailer that is missing or does not match, and none of the file is used.
    _OVERLAY_MAX = 2000
    _OVERLAY_SHARE = 0.05

    def has_facts(self) -> bool:
        """Whether a facts file of this code and configuration is there (not read)."""
        return self.enabled and os.path.isfile(self._path("facts"))

    def drop_facts(self) -> None:
        """Remove the facts files (one of them holds a body that does not match its digest)."""
        for kind in ("facts", "facts-new"):
            try:
                if self._usable_dir(create=False):
                    os.unlink(self._path(kind))
            except OSError:
                pass

    def load_facts(self) -> dict[str, "FactsEntry"]:
        """Resolved path -> the facts file's entry for it (see `cached_facts`)."""
        out = self._load_facts_file("facts", True)
        if out:
            out.update(self._load_facts_file("facts-new", False))
        return out

    def _entry_mac(self) -> "hashlib._Hash":
        return _mac(self.secret, f"facts-entry|{self.key}")  # type: ignore[arg-type]

    def _file_mac(self) -> "hashlib._Hash":
        return _mac(self.secret, f"facts-file|{self.key}")  # type: ignore[arg-type]

    def _load_facts_file(self, kind: str, main: bool) -> dict[str, "FactsEntry"]:
        if not self.enabled:
            return {}
        try:
            if not self._usable_dir(create=False):
                return {}
            source = _FactsSource.open(self._path(kind))
        except OSError:
            return {}
        try:
            return self._read_records(source, main)
        except (OSError, ValueError, EOFError, TypeError, KeyError, AttributeError, struct.error):
            return {}

    def _read_records(self, source: "_FactsSource", main: bool) -> dict[str, "FactsEntry"]:
        from repro_lint.facts.model import from_plain_parts

        fh = source.stream()
        if fh.read(len(_FACTS_MAGIC)) != _FACTS_MAGIC:
            return {}
        pos = len(_FACTS_MAGIC)
        entry_mac = self._entry_mac()
        file_mac = self._file_mac()
        out: dict[str, FactsEntry] = {}
        count = 0
        while True:
            lens = fh.read(_RECORD.size)
            if len(lens) != _RECORD.size:
                return {}  # cut short: no trailer
            head_size, outline_size, body_size = _RECORD.unpack(lens)
            if head_size == _TRAILER_MARK:
                file_mac.update(_RECORD.pack(count, 0, 0))
                if outline_size != count or not hmac.compare_digest(fh.read(_MAC_SIZE + 1), file_mac.digest()):
                    return {}
                return out
            if head_size + outline_size + body_size > source.size:
                return {}
            head = fh.read(head_size)
            outline = fh.read(outline_size)
            mac = fh.read(_MAC_SIZE)
            if len(head) != head_size or len(outline) != outline_size or len(mac) != _MAC_SIZE:
                return {}
            check = entry_mac.copy()
            check.update(lens)
            check.update(head)
            check.update(outline)
            if not hmac.compare_digest(check.digest(), mac):
                return {}
            file_mac.update(mac)
            count += 1
            body_at = pos + _RECORD.size + head_size + outline_size + _MAC_SIZE
            fh.seek(body_size, os.SEEK_CUR)
            key, digest, module, body_digest = marshal.loads(head)
            info = from_plain_parts(marshal.loads(outline), (source, body_at, body_size, body_digest))
            out[key] = FactsEntry(digest, module, info, main, source, pos, body_at + body_size - pos, mac)
            pos = body_at + body_size

    def store_facts(self, infos: dict[str, Any], stored: Optional[dict[str, "FactsEntry"]] = None) -> None:
        """Store the facts of every file by resolved path, each as its outline and its body
        (`model.to_plain_parts`; facts that hold something other than plain data are left
        out: that file is extracted again next time). `stored` holds the `load_facts`
        entries of files whose facts came from the cache: their records are copied as they
        are, not encoded again, and those of the main file are not written at all while the
        others are few (see `_OVERLAY_MAX`)."""
        stored = stored or {}
        others = [k for k in infos if k not in stored or not stored[k].main]
        if len(others) < len(infos) and len(others) <= min(self._OVERLAY_MAX, self._OVERLAY_SHARE * len(infos)):
            self._write_facts("facts-new", others, infos, stored)
            return
        self._write_facts("facts", list(infos), infos, stored)
        try:  # (an entry of it left behind would only miss: entries are checked by digest)
            os.unlink(self._path("facts-new"))
        except OSError:
            pass

    def _write_facts(self, kind: str, keys: list[str], infos: dict[str, Any], stored: dict[str, "FactsEntry"]) -> None:
        def write(fh: Any) -> None:
            fh.write(_FACTS_MAGIC)
            file_mac = self._file_mac()
            count = 0
            for k in keys:
                entry = stored.get(k)
                if entry is not None:
                    for chunk in entry.source.chunks(entry.offset, entry.size):
                        fh.write(chunk)
                    mac = entry.mac
                else:
                    record = self._record(k, infos[k])
                    if record is None:
                        continue
                    mac = record[-2]
                    for part in record:
                        fh.write(part)
                file_mac.update(mac)
                count += 1
            fh.write(_RECORD.pack(_TRAILER_MARK, count, 0))
            file_mac.update(_RECORD.pack(count, 0, 0))
            fh.write(file_mac.digest())

        self._atomic_write(kind, write)

    def _record(self, key: str, info: Any) -> Optional[tuple[bytes, ...]]:
        """The parts of the record of one file's facts, or None for facts that are not plain data."""
        from repro_lint.facts.model import to_plain_parts

        try:
            outline, body = to_plain_parts(info)
            if isinstance(body, tuple):  # a body not decoded: read as stored (and checked)
                body = body[0].read(*body[1:])
            else:
                body = marshal.dumps(body)
            outline = marshal.dumps(outline)
        except ValueError:
            return None
        head = marshal.dumps((key, info.digest, info.module, _body_digest(body)))
        lens = _RECORD.pack(len(head), len(outline), len(body))
        mac = self._entry_mac()
        mac.update(lens)
        mac.update(head)
        mac.update(outline)
        return lens, head, outline, mac.digest(), body

    # -- plain data of one kind (the program map) --------------------------------------------
    def load_plain(self, kind: str) -> Any:
        """The value stored by `store_plain(kind, ...)` with this code, or None."""
        frames = self.read_frames(kind)
        if not frames or len(frames) != 1:
            return None
        try:
            header, value = marshal.loads(frames[0])
        except (ValueError, EOFError, TypeError):
            return None
        return value if header == code_fingerprint() else None

    def store_plain(self, kind: str, value: Any) -> None:
        """Store plain data (what `marshal` writes: tuples, dicts, strings, numbers)."""
        if not self.enabled:
            return
        try:
            frame = marshal.dumps((code_fingerprint(), value))
        except ValueError:
            return
        self.write_frames(kind, [frame])

    # -- results of a whole run ------------------------------------------------------------
    def load_results(self, run_key: str) -> Optional[tuple[list, list[str], dict[str, Any]]]:
        """(findings, error lines, per-file suppression views by displayed path) of the run
        with `run_key`, or None."""
        frames = self.read_frames("results")
        if not frames or len(frames) != 1:
            return None
        try:
            header, key, findings, errors, views = marshal.loads(frames[0])
            if header != code_fingerprint() or key != run_key:
                return None
            return _from_plain(findings), list(errors), {path: _view(path, *state) for path, state in views.items()}
        except (ValueError, EOFError, TypeError, KeyError, AttributeError):
            return None

    def store_results(self, run_key: str, findings: list, errors: list[str], views: dict[str, Any]) -> None:
        """Store a run's findings, error lines and, per displayed path, what reporting needs
        of the file again (a `ModuleInfo` of which the module name, digest and `noqa`
        comments are kept)."""
        if not self.enabled:
            return
        try:
            plain_views = {p: (i.module, i.is_package, i.digest, i.noqa, i.file_noqa, i.file_noqa_set) for p, i in views.items()}
            frame = marshal.dumps((code_fingerprint(), run_key, _to_plain(findings), list(errors), plain_views))
        except ValueError:
            return
        self.write_frames("results", [frame])


def _view(path: str, module: str, is_package: bool, digest: str, noqa: dict, file_noqa: Any, file_noqa_set: bool) -> Any:
    from repro_lint.facts.model import ModuleInfo

    view = ModuleInfo(path, module, is_package)
    view.digest = digest
    view.noqa = noqa
    view.file_noqa = file_noqa
    view.file_noqa_set = file_noqa_set
    return view


def cached_facts(entry: Any, digest: str, module: str) -> Optional[Any]:
    """The facts of a facts-cache entry when they are for this content and module name (the
    body is read when first read, `model.ModuleInfo.__getattr__`)."""
    if type(entry) is not FactsEntry or entry.digest != digest or entry.module != module:
        return None
    return entry.info
