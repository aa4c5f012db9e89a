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
from repro_lint.bounded_read import read_regular

CACHE_DIR = ".repro_lint_cache"
GITIGNORE = "# created by repro-lint\n*\n"
_MAGIC = b"repro-lint cache 2\n"
_MAC_SIZE = 32
_KEY_SIZE = 32
# A cache file larger than this is not read (a 5,000-file project's facts take about 35 MB).
_MAX_BYTES = 1024 * 1024 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FRAME = struct.Struct("<I")


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Digest of this package's Python files and the rule catalogs it reads, and of the
    Python version (its `ast` and `marshal` formats differ)."""
    from repro_lint import catalog

    digest = hashlib.blake2b(f"{__version__}|{sys.implementation.cache_tag}".encode(), digest_size=16)
    package = Path(__file__).resolve().parent
    files = sorted(package.rglob("*.py")) + sorted(Path(catalog.rules_dir()).rglob("*.toml"))
    for path in files:
        try:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
        except OSError:
            digest.update(path.name.encode())
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
    from repro_lint import findings
    from repro_lint.fix import edits

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
    def __init__(self, root: Path, key: str, enabled: bool = True) -> None:
        self.dir = root / CACHE_DIR
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
                os.mkdir(self.dir)
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
    def _read(self, kind: str) -> Optional[list[memoryview]]:
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

    def _write(self, kind: str, frames: Iterable[bytes]) -> None:
        """Atomically replace the `kind` file with `frames`, written one after the other
        (a whole project's facts need not be held in one piece)."""
        if not self.enabled:
            return
        tmp = None
        try:
            if not self._usable_dir(create=True):
                return
            self._ensure_gitignore()
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=f".{kind}-", suffix=".tmp")
            mac = _mac(self.secret, kind)  # type: ignore[arg-type]
            with os.fdopen(fd, "wb") as fh:
                fh.write(_MAGIC + bytes(_MAC_SIZE))
                for frame in frames:
                    size = _FRAME.pack(len(frame))
                    mac.update(size)
                    mac.update(frame)
                    fh.write(size)
                    fh.write(frame)
                fh.seek(len(_MAGIC))
                fh.write(mac.digest())
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
    _OVERLAY_MAX = 2000
    _OVERLAY_SHARE = 0.05

    def has_facts(self) -> bool:
        """Whether a facts file of this code and configuration is there (not read)."""
        return self.enabled and os.path.isfile(self._path("facts"))

    def load_facts(self) -> dict[str, tuple]:
        """Resolved path -> (content digest, module name, marshalled outline, marshalled
        body, whether it is the main file's); see `cached_facts`."""
        out = self._load_facts_file("facts", True)
        if out:
            out.update(self._load_facts_file("facts-new", False))
        return out

    def _load_facts_file(self, kind: str, main: bool) -> dict[str, tuple]:
        frames = self._read(kind)
        if not frames or len(frames) % 3 != 1:
            return {}
        out = {}
        try:
            if marshal.loads(frames[0]) != code_fingerprint():
                return {}
            for i in range(1, len(frames), 3):
                key, digest, module = marshal.loads(frames[i])
                out[key] = (digest, module, frames[i + 1], frames[i + 2], main)
        except (ValueError, EOFError, TypeError):
            return {}
        return out

    def store_facts(self, infos: dict[str, Any], stored: Optional[dict[str, tuple]] = None) -> None:
        """Store the facts of every file by resolved path, each as its outline and its body
        (`model.to_plain_parts`; facts that hold something other than plain data are left
        out: that file is extracted again next time). `stored` holds the `load_facts`
        entries of files whose facts came from the cache: they are written back as they
        were read, not encoded again, and those of the main file are not written at all
        while the others are few (see `_OVERLAY_MAX`)."""
        stored = stored or {}
        others = [k for k in infos if k not in stored or not stored[k][4]]
        if len(others) < len(infos) and len(others) <= min(self._OVERLAY_MAX, self._OVERLAY_SHARE * len(infos)):
            self._write("facts-new", self._facts_frames(others, infos, stored))
            return
        self._write("facts", self._facts_frames(list(infos), infos, stored))
        try:  # (an entry of it left behind would only miss: entries are checked by digest)
            os.unlink(self._path("facts-new"))
        except OSError:
            pass

    def _facts_frames(self, keys: list[str], infos: dict[str, Any], stored: dict[str, tuple]) -> Iterator[bytes]:
        from repro_lint.model import to_plain_parts

        yield marshal.dumps(code_fingerprint())
        for k in keys:
            info = infos[k]
            entry = stored.get(k)
            if entry is not None:
                yield marshal.dumps((k, entry[0], entry[1]))
                yield entry[2]
                yield entry[3]
                continue
            try:
                outline, body = to_plain_parts(info)
                parts = (marshal.dumps(outline), body if isinstance(body, memoryview) else marshal.dumps(body))
            except ValueError:
                continue
            yield marshal.dumps((k, info.digest, info.module))
            yield from parts

    # -- plain data of one kind (the program map) --------------------------------------------
    def load_plain(self, kind: str) -> Any:
        """The value stored by `store_plain(kind, ...)` with this code, or None."""
        frames = self._read(kind)
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
        self._write(kind, [frame])

    # -- results of a whole run ------------------------------------------------------------
    def load_results(self, run_key: str) -> Optional[tuple[list, list[str], dict[str, Any]]]:
        """(findings, error lines, per-file suppression views by displayed path) of the run
        with `run_key`, or None."""
        frames = self._read("results")
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
        self._write("results", [frame])


def _view(path: str, module: str, is_package: bool, digest: str, noqa: dict, file_noqa: Any, file_noqa_set: bool) -> Any:
    from repro_lint.model import ModuleInfo

    view = ModuleInfo(path, module, is_package)
    view.digest = digest
    view.noqa = noqa
    view.file_noqa = file_noqa
    view.file_noqa_set = file_noqa_set
    return view


def cached_facts(entry: Any, digest: str, module: str) -> Optional[Any]:
    """The facts of a facts-cache entry when they are for this content and module name: the
    outline decoded, the body when first read (`model.from_plain_parts`)."""
    if type(entry) is not tuple or len(entry) != 5 or entry[0] != digest or entry[1] != module:
        return None
    from repro_lint.model import from_plain_parts

    try:
        return from_plain_parts(marshal.loads(entry[2]), entry[3])
    except (ValueError, EOFError, TypeError, KeyError, AttributeError):  # a damaged entry is re-extracted
        return None
