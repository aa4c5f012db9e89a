"""Which PyTorch releases a project targets, for rules whose facts changed between releases.

Read from the `target-torch-version` setting, else from the torch requirement the project
declares at its root: `[project]` dependencies and optional dependencies,
`[dependency-groups]` and Poetry dependencies in pyproject.toml, and `requirements*.txt`.
Only the lower bound of a declared range matters here: the question is always "does the
range admit a release older than X" (a release that still behaves the old way).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from repro_lint.bounded_read import read_text

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")
_SPEC = re.compile(r"^\s*(~=|===|==|!=|<=|>=|<|>)\s*([A-Za-z0-9.*+!_-]+)\s*$")
_RELEASE = re.compile(r"^\s*v?(?:\d+!)?(\d+(?:\.\d+)*)")


def release(version: str) -> Optional[tuple[int, ...]]:
    """The release numbers of a version (`2.10.0rc1+cu121` -> (2, 10, 0)), padded to three."""
    m = _RELEASE.match(version)
    if m is None:
        return None
    parts = tuple(int(p) for p in m.group(1).split("."))
    return parts + (0,) * (3 - len(parts)) if len(parts) < 3 else parts


@dataclass(frozen=True)
class Target:
    """How the targeted torch releases are known, and whether one older than a release is among them."""

    source: str  # "setting", "declared" or "undeclared"
    where: str  # e.g. "torch>=2.1 in pyproject.toml"; "" when undeclared
    lower: Optional[tuple[int, ...]]  # lowest admitted release; None: no lower bound

    def admits_before(self, version: str) -> bool:
        limit = release(version)
        if self.lower is None or limit is None:
            return True
        return self.lower < limit


_VERSION = re.compile(r"v?\d+(?:\.\d+)*(?:\.\*)?(?:(?:a|b|rc|\.post|\.dev)\d+)*(?:\+[A-Za-z0-9.]+)?")


def setting_error(text: str) -> Optional[str]:
    """Why `text` is not a torch release (`2.5`, `2.5.*`) or PEP 440 specifier set
    (`>=2.1,<3`), or None when it is one."""
    text = text.strip()
    if not text:
        return "it is empty"
    if text[0] not in "<>=!~":
        return None if _VERSION.fullmatch(text) else f"`{text}` is not a release (such as 2.5) or a specifier set (such as >=2.1)"
    for part in text.split(","):
        m = _SPEC.match(part)
        if m is None or not _VERSION.fullmatch(m.group(2)):
            return f"`{part.strip()}` is not a version specifier (such as >=2.1)"
    return None


def lower_bound(specifiers: str) -> Optional[tuple[int, ...]]:
    """The lowest release a PEP 440 specifier set admits (None: unbounded below or unreadable).

    Exclusive bounds are treated as inclusive: `>2.9.1` still admits a later 2.9 patch."""
    best: Optional[tuple[int, ...]] = None
    for part in specifiers.split(","):
        if not part.strip():
            continue
        m = _SPEC.match(part)
        if m is None:
            return None
        op, version = m.groups()
        if op in ("!=", "<", "<="):
            continue
        rel = release(version.replace(".*", ""))
        if rel is None:
            return None
        if op == "~=" and len(version.split(".")) < 2:
            return None
        if best is None or rel > best:
            best = rel
    return best


def _poetry_lower(constraint: str) -> Optional[tuple[int, ...]]:
    """Poetry constraints: `^2.1`, `~2.1`, `2.1.*`, `2.1.0` (exact), PEP 440 specifiers, `*`."""
    c = constraint.strip()
    if c in ("", "*"):
        return None
    if c[0] in "^~" and not c.startswith("~="):
        return release(c[1:])
    if c[0].isdigit():
        return release(c.replace(".*", ""))
    lowest: Optional[tuple[int, ...]] = None
    for alternative in c.split("||"):  # any alternative may be installed: take the lowest
        rel = lower_bound(alternative)
        if rel is None:
            return None
        lowest = rel if lowest is None or rel < lowest else lowest
    return lowest


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirement(line: str, package: str = "torch") -> Optional[str]:
    """The specifier set of a PEP 508 requirement on `package` ("" for any version), else None."""
    m = _NAME.match(line.split(";", 1)[0])
    if m is None or _normalise(m.group(1)) != package:
        return None
    rest = m.group(3).strip()
    if rest.startswith("@"):
        return ""  # a direct URL: the version is not known
    return rest.strip("()").strip()


def _requirement_lines(text: str) -> Iterator[str]:
    joined = re.sub(r"\\\r?\n", " ", text)
    for raw in joined.splitlines():
        line = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].strip()
        if not line or line.startswith("-"):
            continue
        yield re.split(r"\s+--?[A-Za-z]", line, maxsplit=1)[0]


def declared(root: Path, package: str = "torch") -> list[tuple[str, Optional[tuple[int, ...]]]]:
    """Every declaration of `package` at the project root: (where, lowest admitted release)."""
    out: list[tuple[str, Optional[tuple[int, ...]]]] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(read_text(pyproject))
        except (OSError, tomllib.TOMLDecodeError):
            data = {}
        project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
        lists = [project.get("dependencies", [])]
        optional = project.get("optional-dependencies", {})
        if isinstance(optional, dict):
            lists.extend(optional.values())
        groups = data.get("dependency-groups", {})
        if isinstance(groups, dict):
            lists.extend(groups.values())
        for items in lists:
            for item in items if isinstance(items, list) else ():
                if isinstance(item, str):
                    spec = parse_requirement(item, package)
                    if spec is not None:
                        out.append((f"{item.strip()} in pyproject.toml", lower_bound(spec) if spec else None))
        poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
        tables = [poetry.get("dependencies", {})]
        for group in (poetry.get("group", {}) or {}).values():
            if isinstance(group, dict):
                tables.append(group.get("dependencies", {}))
        for table in tables:
            if not isinstance(table, dict):
                continue
            for name, value in table.items():
                if _normalise(name) != package:
                    continue
                constraint = value.get("version", "") if isinstance(value, dict) else value
                if isinstance(constraint, str):
                    out.append((f'{name} = "{constraint}" in pyproject.toml', _poetry_lower(constraint)))
    for req in sorted(root.glob("requirements*.txt")):
        try:
            text = read_text(req)
        except OSError:
            continue
        for line in _requirement_lines(text):
            spec = parse_requirement(line, package)
            if spec is not None:
                out.append((f"{line} in {req.name}", lower_bound(spec) if spec else None))
    return out


def torch_target(setting: Optional[str], root: Optional[Path]) -> Target:
    """The targeted torch releases: the setting, else the lowest declared, else undeclared."""
    if setting:
        text = setting.strip()
        lower = lower_bound(text) if text[0] in "<>=!~" else release(text.replace(".*", ""))
        return Target("setting", f"target-torch-version = {text!r}", lower)
    if root is not None:
        found = declared(root)
        if found:
            # the declaration admitting the oldest release decides
            where, lower = min(found, key=lambda d: d[1] or ())
            return Target("declared", where, lower)
    return Target("undeclared", "", None)
