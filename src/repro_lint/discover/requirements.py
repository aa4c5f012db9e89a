"""Which PyTorch releases a project targets, for rules whose facts changed between releases.

Read from the `target-torch-version` setting, else from the torch requirement the project
declares: `[project]` dependencies and optional dependencies, `[dependency-groups]` and Poetry
dependencies in pyproject.toml, setup.py (read, not run), setup.cfg, requirements files and
conda environment files; in the program's own folder or the nearest folder above it (up to
the project root) that declares one.
Only the lower bound of a declared range matters here: the question is always "does the
range admit a release older than X" (a release that still behaves the old way).
Requirements, specifiers and versions are read by `packaging` (PEP 508 and PEP 440 exactly);
what those do not cover (requirement files' options and comments, Poetry's `^2.1`, conda's
match specs) is read here.
"""

from __future__ import annotations

import ast
import configparser
import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from repro_lint.core.bounded_read import TEXT_MAX_BYTES, read_regular, read_text

def release(version: str) -> Optional[tuple[int, ...]]:
    """The release numbers of a version (`2.10.0rc1+cu121` -> (2, 10, 0)), padded to three;
    None for what is not a PEP 440 version."""
    try:
        parts = Version(version.strip()).release
    except InvalidVersion:
        return None
    return parts + (0,) * (3 - len(parts)) if len(parts) < 3 else parts


@dataclass(frozen=True)
class Target:
    """How the targeted torch releases are known, and whether one older than a release is among them."""

    source: str  # "setting", "declared" or "undeclared"
    where: str  # e.g. "torch>=2.1 in pyproject.toml"; "" when undeclared
    lower: Optional[tuple[int, ...]]  # lowest admitted release; None: no lower bound
    # highest admitted release and whether it is admitted itself (`<=`, `==`) or only those
    # below it (`<`, `~=`, `==2.1.*`); None: no upper bound known
    upper: Optional[tuple[tuple[int, ...], bool]] = None

    def admits_before(self, version: str) -> bool:
        limit = release(version)
        if self.lower is None or limit is None:
            return True
        return self.lower < limit

    def admits_from(self, version: str) -> bool:
        """Whether a release at or after `version` is among the targeted ones."""
        limit = release(version)
        if self.upper is None or limit is None:
            return True
        top, inclusive = self.upper
        return top >= limit if inclusive else top > limit


def setting_error(text: str) -> Optional[str]:
    """Why `text` is not a torch release (`2.5`, `2.5.*`) or PEP 440 specifier set
    (`>=2.1,<3`), or None when it is one."""
    text = text.strip()
    if not text:
        return "it is empty"
    if text[0] not in "<>=!~":
        return None if _specifiers("==" + text) is not None else f"`{text}` is not a release (such as 2.5) or a specifier set (such as >=2.1)"
    for part in text.split(","):
        if _specifiers(part) is None:
            return f"`{part.strip()}` is not a version specifier (such as >=2.1)"
    return None


def _specifiers(text: str) -> Optional[SpecifierSet]:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None


def lower_bound(specifiers: str) -> Optional[tuple[int, ...]]:
    """The lowest release a PEP 440 specifier set admits (None: unbounded below or unreadable).

    Exclusive bounds are treated as inclusive: `>2.9.1` still admits a later 2.9 patch."""
    parsed = _specifiers(specifiers)
    if parsed is None:
        return None
    best: Optional[tuple[int, ...]] = None
    for spec in parsed:
        if spec.operator in ("!=", "<", "<="):
            continue
        rel = release(spec.version.replace(".*", ""))
        if rel is None:
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
    return canonicalize_name(name)


def parse_requirement(line: str, package: str = "torch") -> Optional[str]:
    """The specifier set of a PEP 508 requirement on `package` ("" for any version), else
    None (another package, or not a requirement)."""
    parsed = _parsed_requirement(line.strip())
    if parsed is None or parsed[0] != package:
        return None
    _, url, specs = parsed
    if url:
        return ""  # a direct URL: the version is not known
    # in the order written (a specifier set keeps none)
    written = "".join(line.split())
    return ",".join(sorted(specs, key=written.find))


@functools.lru_cache(maxsize=1 << 14)
def _parsed_requirement(line: str) -> Optional[tuple[str, bool, tuple[str, ...]]]:
    """(canonical name, whether it is a direct URL, its specifiers) of a requirement line, or
    None. Kept: every program's rules ask for the requirements of its folders, and a fix
    checks again several times; a project's lock files hold thousands of lines."""
    try:
        req = Requirement(line)
    except InvalidRequirement:
        return None
    return canonicalize_name(req.name), bool(req.url), tuple(str(spec) for spec in req.specifier)


@functools.lru_cache(maxsize=256)
def _requirement_lines(text: str) -> tuple[str, ...]:
    """The requirements of a requirements file's text, one a line (kept per text, as
    `_parsed_requirement`)."""
    return tuple(_lines_of(text))


def _lines_of(text: str) -> Iterator[str]:
    joined = re.sub(r"\\\r?\n", " ", text)
    for raw in joined.splitlines():
        line = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].strip()
        if not line or line.startswith("-"):
            continue
        yield re.split(r"\s+--?[A-Za-z]", line, maxsplit=1)[0]


def declared(root: Path, package: str = "torch") -> list[tuple[str, Optional[tuple[int, ...]]]]:
    """Every declaration of `package` in a folder: (where, lowest admitted release). Read from
    pyproject.toml, setup.py (without running it), setup.cfg, requirements files (`-r`
    includes followed) and conda environment files."""
    out: list[tuple[str, Optional[tuple[int, ...]]]] = []
    out.extend(_pyproject(root / "pyproject.toml", package))
    for name, items in (("setup.py", _setup_py(root / "setup.py")), ("setup.cfg", _setup_cfg(root / "setup.cfg"))):
        for item in items:
            spec = parse_requirement(item, package)
            if spec is not None:
                out.append((f"{item.strip()} in {name}", lower_bound(spec) if spec else None))
    seen: set[Path] = set()
    for req in requirement_files(root):
        if req.suffix == ".txt":
            out.extend(_requirements_txt(req, root, package, seen))
        else:
            out.extend(_conda_environment(req, root, package))
    return out


def python_floor(root: Optional[Path]) -> Optional[tuple[int, ...]]:
    """The oldest Python the project's pyproject.toml lets it run on (`requires-python`),
    or None where it declares none."""
    if root is None or not (root / "pyproject.toml").is_file():
        return None
    try:
        data = tomllib.loads(read_text(root / "pyproject.toml"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    project = data.get("project")
    spec = project.get("requires-python") if isinstance(project, dict) else None
    return lower_bound(spec) if isinstance(spec, str) else None


def requirement_files(root: Path) -> list[Path]:
    """The files besides pyproject.toml and setup.py that `declared` reads in a folder."""
    found = [
        *sorted(root.glob("requirements*.txt")), *sorted(root.glob("requirements/*.txt")),
        *sorted(root.glob("environment*.yml")), *sorted(root.glob("environment*.yaml")),
    ]
    # conda environments under other names (`env.yml`), told by their content
    found += [p for p in sorted([*root.glob("*.yml"), *root.glob("*.yaml")]) if p not in found and _is_conda_environment(p)]
    if (root / "setup.cfg").is_file():
        found.append(root / "setup.cfg")
    return [p for p in found if p.is_file()]


def _pyproject(pyproject: Path, package: str) -> list[tuple[str, Optional[tuple[int, ...]]]]:
    if not pyproject.is_file():
        return []
    try:
        text = read_text(pyproject)
    except OSError:
        return []
    return list(_pyproject_text(text, package))


@functools.lru_cache(maxsize=64)
def _pyproject_text(text: str, package: str) -> tuple[tuple[str, Optional[tuple[int, ...]]], ...]:
    """The declarations of `package` in a pyproject.toml's text (kept per text: the rules
    of every program ask for those of its folders)."""
    out: list[tuple[str, Optional[tuple[int, ...]]]] = []
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
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
    tables = [poetry.get("dependencies", {}), poetry.get("dev-dependencies", {})]
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
    return tuple(out)


_SETUP_KEYWORDS = ("install_requires", "extras_require", "tests_require", "requires")


def _setup_py(path: Path) -> list[str]:
    """Requirement strings of a setup.py, read from its syntax tree (it is never run): the
    string literals in `install_requires=`/`extras_require=` values, including those of
    module-level names such values use (`install_requires=REQUIRED`)."""
    if not path.is_file():
        return []
    try:
        tree = ast.parse(read_regular(path, TEXT_MAX_BYTES))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return []
    assigned: dict[str, ast.AST] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            assigned[stmt.targets[0].id] = stmt.value
    values: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            values.extend(kw.value for kw in node.keywords if kw.arg in _SETUP_KEYWORDS)
        elif isinstance(node, ast.Dict):  # `setup(**{"install_requires": [...]})`
            values.extend(v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant) and k.value in _SETUP_KEYWORDS)
    out: list[str] = []
    for value in values:
        for node in ast.walk(value):
            if isinstance(node, ast.Name) and node.id in assigned:
                node = assigned[node.id]
            for sub in ast.walk(node):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    out.append(sub.value)
    return out


def _setup_cfg(path: Path) -> list[str]:
    """Requirement lines of setup.cfg's `[options] install_requires` and `[options.extras_require]`."""
    if not path.is_file():
        return []
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(read_text(path))
    except (OSError, configparser.Error):
        return []
    values: list[str] = []
    if parser.has_option("options", "install_requires"):
        values.append(parser.get("options", "install_requires"))
    if parser.has_section("options.extras_require"):
        values.extend(v for _, v in parser.items("options.extras_require"))
    return [line for value in values for line in _requirement_lines(value)]


def _requirements_txt(req: Path, root: Path, package: str, seen: set, depth: int = 0) -> list[tuple[str, Optional[tuple[int, ...]]]]:
    out: list[tuple[str, Optional[tuple[int, ...]]]] = []
    if req in seen or depth > 5:
        return out
    seen.add(req)
    try:
        text = read_text(req)
    except OSError:
        return out
    where = req.relative_to(root).as_posix() if req.is_relative_to(root) else req.name
    for line in _requirement_lines(text):
        spec = parse_requirement(line, package)
        if spec is not None:
            out.append((f"{line} in {where}", lower_bound(spec) if spec else None))
            continue
        # a conda package list (`conda list --export`): `pytorch=1.4.0=py3.7_cuda10.1_0`
        m = _CONDA_EXPORT.match(line)
        if m is not None and _normalise(m.group(1)) in (package, "py" + package):
            out.append((f"{line} in {where}", _conda_lower(m.group(2))))
    for include in re.findall(r"^\s*(?:-r|--requirement|-c|--constraint)[\s=]+(\S+)", text, re.MULTILINE):
        path = (req.parent / include).resolve()
        if path.is_file() and path.is_relative_to(root.resolve()):
            out.extend(_requirements_txt(path, root.resolve(), package, seen, depth + 1))
    return out


_CONDA_ITEM = re.compile(r"^\s*-\s+(?:[\w.-]+::)?([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*?)\s*(?:#.*)?$")


def _conda_environment(path: Path, root: Path, package: str) -> list[tuple[str, Optional[tuple[int, ...]]]]:
    """`- pytorch=1.13.1` / `- pytorch>=1.12` among the conda dependencies, `- torch==1.13` under
    `pip:`. A conda match spec `=1.13` means any 1.13 release; `1.13.*` likewise."""
    out: list[tuple[str, Optional[tuple[int, ...]]]] = []
    try:
        text = read_text(path)
    except OSError:
        return out
    names = {package, "py" + package}
    section = ""
    for raw in text.splitlines():
        if raw[:1].isalpha():  # a top-level key: only the `dependencies:` list names packages
            section = raw.split(":", 1)[0].strip()  # (`channels:` lists `- pytorch` too)
            continue
        if section != "dependencies":
            continue
        m = _CONDA_ITEM.match(raw)
        if m is None or _normalise(m.group(1)) not in names:
            continue
        out.append((f"{m.group(0).strip().lstrip('- ').split('#', 1)[0].strip()} in {path.name}", _conda_lower(m.group(2))))
    return out


_CONDA_EXPORT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(=\d[^=\s]*(?:=\S+)?)$")


def _conda_lower(spec: str) -> Optional[tuple[int, ...]]:
    """The lowest release a conda match spec admits: `=1.13.1` or `=1.13.1=build` (the release
    is the second part), `>=1.12`, `1.13.*`."""
    if spec.startswith("=") and not spec.startswith("=="):
        return release(spec.split("=", 2)[1].replace("*", ""))
    constraint = spec.replace(" ", "")
    if constraint and constraint[0].isdigit():
        constraint = "==" + constraint  # `pytorch 1.13.*`
    return lower_bound(constraint) if constraint else None


_CONDA_DEPENDENCIES = re.compile(r"^dependencies\s*:", re.MULTILINE)


def _is_conda_environment(path: Path) -> bool:
    """A YAML file with a top-level `dependencies:` list (`env.yml`, `conda.yaml`)."""
    try:
        return _CONDA_DEPENDENCIES.search(read_text(path)) is not None
    except OSError:
        return False


def torch_target(setting: Optional[str], root: Optional[Path], start: Optional[Path] = None) -> Target:
    """The targeted torch releases: the setting, else the lowest declared in the nearest
    folder from `start` (a program's folder) up to `root` that declares torch, else undeclared."""
    if setting:
        text = setting.strip()
        lower = lower_bound(text) if text[0] in "<>=!~" else release(text.replace(".*", ""))
        return Target("setting", f"target-torch-version = {text!r}", lower)
    if root is not None:
        for folder in declaring_folders(root, start):
            found = declared(folder)
            if found:
                # the declaration admitting the oldest release decides
                where, lower = min(found, key=lambda d: d[1] or ())
                if folder != root:
                    where += f" ({folder.relative_to(root).as_posix()})"
                return Target("declared", where, lower)
    return Target("undeclared", "", None)


def declaring_folders(root: Path, start: Optional[Path]) -> list[Path]:
    """`start` and its parents up to `root` (just `root` when `start` is not inside it)."""
    folders = [root]
    if start is not None and start != root and start.is_relative_to(root):
        folders = [start, *(p for p in start.parents if p.is_relative_to(root) and p != root), root]
    return folders


# -- packages other than torch, with upper bounds --------------------------------------------
def upper_bound(specifiers: str) -> Optional[tuple[tuple[int, ...], bool]]:
    """The highest release a PEP 440 specifier set admits and whether that release is admitted
    itself (`<=2.1`, `==2.1.0`) or only releases below it (`<2.2`, `~=2.1` and `==2.1.*`
    admit up to 3 and 2.2, not including them); None when unbounded above or unreadable.
    Pre-releases below a bound count as the bound's release (`<2.2` gives (2, 2) exclusive)."""
    parsed = _specifiers(specifiers)
    if parsed is None:
        return None
    best: Optional[tuple[tuple[int, ...], bool]] = None
    for spec in parsed:
        op, text = spec.operator, spec.version
        if op in ("<", "<="):
            bound = (release(text), op == "<=")
        elif op in ("==", "==="):
            if text.endswith(".*"):
                parts = Version(text[:-2]).release
                bound = (_padded(parts[:-1] + (parts[-1] + 1,)), False)
            else:
                bound = (release(text), True)
        elif op == "~=":
            parts = Version(text).release
            bound = (_padded(parts[:-2] + (parts[-2] + 1,)), False)
        else:
            continue
        if bound[0] is None:
            return None
        if best is None or bound[0] < best[0] or bound[0] == best[0] and not bound[1]:
            best = bound  # type: ignore[assignment]
    return best


def _padded(parts: tuple[int, ...]) -> tuple[int, ...]:
    return parts + (0,) * (3 - len(parts)) if len(parts) < 3 else parts


def package_target(package: str, root: Optional[Path], start: Optional[Path] = None, setting: Optional[str] = None) -> Target:
    """The releases of `package` a program targets: `setting` (a release or specifier set),
    else what the nearest folder from `start` up to `root` that declares the package admits
    (every declaration there: the lowest lower bound, the highest upper bound), else undeclared.
    Upper bounds are read from PEP 508 requirements (pyproject.toml, setup.py, setup.cfg,
    requirement files); other forms (conda, Poetry) are taken as unbounded above."""
    name = canonicalize_name(package)
    if setting:
        text = setting.strip()
        # a plain release names its series: "2.5" is any 2.5.x
        specs = text if text[0] in "<>=!~" else "==" + text.removesuffix(".*") + ".*"
        lower = lower_bound(specs) if text[0] in "<>=!~" else release(text.replace(".*", ""))
        return Target("setting", text, lower, upper_bound(specs))
    if root is None:
        return Target("undeclared", "", None)
    for folder in declaring_folders(root, start):
        found = declared(folder, name)
        if not found:
            continue
        where, lower = min(found, key=lambda d: d[1] or ())
        uppers = [_declared_upper(w, name) for w, _ in found]
        upper = None if any(u is None for u in uppers) else max(uppers, key=lambda u: (u[0], u[1]))  # type: ignore[index]
        if folder != root:
            where += f" ({folder.relative_to(root).as_posix()})"
        return Target("declared", where, lower, upper)
    return Target("undeclared", "", None)


def _declared_upper(where: str, package: str) -> Optional[tuple[tuple[int, ...], bool]]:
    """The upper bound of one declaration `declared` found: its requirement is the text before
    " in <file>" (a PEP 508 line; conda and Poetry forms do not parse and are unbounded)."""
    spec = parse_requirement(where.rpartition(" in ")[0], package)
    return upper_bound(spec) if spec else None
