"""Links to a rule's document that exist for the installed version.

No package index entry or release tag is assumed. When pip installed the package from a git
URL (`pip install git+https://github.com/ORG/repro-lint@SHA`), it recorded the repository
and the commit (PEP 610, `direct_url.json`): the document is then linked at that commit on
the host's web view (GitHub, GitLab). Otherwise no public link is known, and editors are
given the document the installed package carries (a `file:` URI on the same machine).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Optional
from urllib.parse import urlsplit, urlunsplit

# how each host shows a file at a commit
_BLOB = {"github.com": "{repo}/blob/{commit}/{path}", "gitlab.com": "{repo}/-/blob/{commit}/{path}"}


def _doc_path(code: str) -> str:
    return f"rules/probe/{code}.toml" if code.startswith("RPP") else f"rules/{code}.toml"


@functools.lru_cache(maxsize=1)
def installed_from() -> Optional[tuple[str, str, str]]:
    """(repository web URL, commit, subdirectory) when pip installed this package from a git
    URL on a known host; None otherwise (a checkout, a wheel, an editable install)."""
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        dist = distribution("repro-lint")
        text = dist.read_text("direct_url.json")
    except (ImportError, PackageNotFoundError, OSError):
        return None
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    vcs = data.get("vcs_info") if isinstance(data, dict) else None
    if not isinstance(vcs, dict) or vcs.get("vcs") != "git" or not isinstance(vcs.get("commit_id"), str):
        return None
    parts = urlsplit(str(data.get("url", "")))
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("https", "http", "ssh", "git") or host not in _BLOB:
        return None
    # never the credentials a URL may carry; the web view of the repository over https
    path = parts.path[:-4] if parts.path.endswith(".git") else parts.path
    repo = urlunsplit(("https", host, path.rstrip("/"), "", ""))
    sub = str(data.get("subdirectory") or "").strip("/")
    return repo, vcs["commit_id"], sub


def repository_url() -> Optional[str]:
    """The repository this installation came from, when known (see `installed_from`)."""
    found = installed_from()
    return found[0] if found else None


def rule_doc_url(code: str) -> Optional[str]:
    """The rule's document on the web at the installed commit, or None when not known."""
    found = installed_from()
    if found is None:
        return None
    repo, commit, sub = found
    host = urlsplit(repo).hostname or ""
    path = f"{sub}/{_doc_path(code)}" if sub else _doc_path(code)
    return _BLOB[host].format(repo=repo, commit=commit, path=path)


def rule_doc_file(code: str) -> Optional[Path]:
    """The rule's document in the installed package (None when it has no document)."""
    from repro_lint.core.catalog import CatalogError, rules_dir

    try:
        folder = rules_dir()
    except CatalogError:
        return None
    path = folder / ("probe" if code.startswith("RPP") else "") / f"{code}.toml"
    return path if path.is_file() else None


def rule_doc_link(code: str) -> Optional[str]:
    """A link that opens the rule's document: on the web when known, else the installed file."""
    url = rule_doc_url(code)
    if url:
        return url
    path = rule_doc_file(code)
    return path.as_uri() if path else None
