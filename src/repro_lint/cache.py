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
from typing import Any, Optional

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
        if not self.enabled:
            return
        try:
            self.dir.mkdir(exist_ok=True)
            gitignore = self.dir / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# created by repro-lint\n*\n")
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=f".{kind}-", suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump({"version": code_fingerprint(), "data": data}, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self._path(kind))
        except OSError:
            # a read-only tree still gets checked, just without a cache
            try:
                os.unlink(tmp)  # type: ignore[possibly-undefined]
            except (OSError, UnboundLocalError):
                pass

    # -- facts, one entry per file ---------------------------------------------------
    # Each file's facts are pickled on their own: one pickle of a whole project's facts
    # keeps a memo entry for every object in it, which took more memory than the facts.
    def load_facts(self) -> dict[str, tuple[str, str, bytes]]:
        """Resolved path -> (content digest, module name, pickled facts)."""
        data = self.load("facts")
        return data if isinstance(data, dict) else {}

    def store_facts(self, infos: dict[str, Any]) -> None:
        if not self.enabled:
            return
        self.store("facts", {k: (i.digest, i.module, pickle.dumps(i, protocol=pickle.HIGHEST_PROTOCOL)) for k, i in infos.items()})


def cached_facts(entry: Any, digest: str, module: str) -> Optional[Any]:
    """The facts of a facts-cache entry when they are for this content and module name."""
    if not isinstance(entry, tuple) or len(entry) != 3 or entry[0] != digest or entry[1] != module:
        return None
    try:
        return pickle.loads(entry[2])
    except Exception:  # a damaged entry is re-extracted
        return None

