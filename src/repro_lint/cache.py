"""On-disk cache in `.repro_lint_cache/` at the project root.

Two layers, both keyed by the tool's code (version plus a digest of its source and rule
catalogs, so an edited rule never reads results of the old one) and the configuration:
- facts: the extracted `ModuleInfo` of every file, keyed by its content hash;
- results: the findings of a whole run, keyed by the digest of every file's content hash.
The cache is never trusted over the files: anything unreadable, corrupt or from another
version is ignored and rebuilt, and writes are atomic (temporary file, then rename).
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

from repro_lint import __version__

CACHE_DIR = ".repro_lint_cache"


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Digest of this package's Python files and the rule catalogs it reads."""
    from repro_lint import catalog

    digest = hashlib.blake2b(__version__.encode(), digest_size=16)
    package = Path(__file__).resolve().parent
    files = sorted(package.rglob("*.py")) + sorted(Path(catalog.rules_dir()).rglob("*.toml"))
    for path in files:
        try:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
        except OSError:
            digest.update(path.name.encode())
    return digest.hexdigest()


class Cache:
    def __init__(self, root: Path, key: str, enabled: bool = True) -> None:
        self.enabled = enabled
        self.dir = root / CACHE_DIR
        self.key = hashlib.blake2b(f"{code_fingerprint()}|{key}".encode(), digest_size=8).hexdigest()

    def _path(self, kind: str) -> Path:
        return self.dir / f"{kind}-{self.key}.pickle"

    def load(self, kind: str) -> Optional[Any]:
        if not self.enabled:
            return None
        try:
            with self._path(kind).open("rb") as fh:
                payload = pickle.load(fh)
        except Exception:  # a missing, corrupt or incompatible cache is simply rebuilt
            return None
        if not isinstance(payload, dict) or payload.get("version") != code_fingerprint():
            return None
        return payload.get("data")

    def store(self, kind: str, data: Any) -> None:
        self._write(kind, lambda fh: pickle.dump({"version": code_fingerprint(), "data": data}, fh, protocol=pickle.HIGHEST_PROTOCOL))

    def _write(self, kind: str, write: Callable[[Any], None]) -> None:
        """Atomically replace the `kind` file with what `write` writes to the open file."""
        if not self.enabled:
            return
        tmp = None
        try:
            self.dir.mkdir(exist_ok=True)
            gitignore = self.dir / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# created by repro-lint\n*\n")
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=f".{kind}-", suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                write(fh)
            os.replace(tmp, self._path(kind))
        except OSError:
            # a read-only tree still gets checked, just without a cache
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    # -- facts, one entry per file ---------------------------------------------------
    # Each file's facts are pickled on their own, and written one after the other: one
    # pickle of a whole project's facts keeps a memo entry for every object in it, and
    # all the files' pickles held at once took tens of MB more than the facts.
    def load_facts(self) -> dict[str, tuple[str, str, bytes]]:
        """Resolved path -> (content digest, module name, pickled facts)."""
        if not self.enabled:
            return {}
        out: dict[str, tuple[str, str, bytes]] = {}
        try:
            with self._path("facts").open("rb") as fh:
                header = pickle.load(fh)
                if not isinstance(header, dict) or header.get("version") != code_fingerprint():
                    return {}
                for _ in range(int(header.get("entries", 0))):
                    key, digest, module, data = pickle.load(fh)
                    out[key] = (digest, module, data)
        except Exception:  # a missing, corrupt or incompatible cache is simply rebuilt
            return {}
        return out

    def store_facts(self, infos: dict[str, Any]) -> None:
        def write(fh: Any) -> None:
            pickle.dump({"version": code_fingerprint(), "entries": len(infos)}, fh, protocol=pickle.HIGHEST_PROTOCOL)
            for k, info in infos.items():
                data = pickle.dumps(info, protocol=pickle.HIGHEST_PROTOCOL)
                pickle.dump((k, info.digest, info.module, data), fh, protocol=pickle.HIGHEST_PROTOCOL)

        self._write("facts", write)


def cached_facts(entry: Any, digest: str, module: str) -> Optional[Any]:
    """The facts of a facts-cache entry when they are for this content and module name."""
    if not isinstance(entry, tuple) or len(entry) != 3 or entry[0] != digest or entry[1] != module:
        return None
    try:
        return pickle.loads(entry[2])
    except Exception:  # a damaged entry is re-extracted
        return None
