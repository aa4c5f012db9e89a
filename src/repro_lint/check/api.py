"""Checking edited text in memory (the fix engine and the language server): a project's
facts, a file's text extracted as the check would, and the rules over given facts."""

from __future__ import annotations


import hashlib
from pathlib import Path
from types import SimpleNamespace
from typing import Iterable, Optional

from repro_lint.check.parallel import findings_of
from repro_lint.facts import batch
from repro_lint.check.cache import Cache, CorruptCache, cached_facts
from repro_lint.discover.config import Config
from repro_lint.core.findings import Finding
from repro_lint.index.program import Program
from repro_lint.index.project_index import ProjectIndex
from repro_lint.facts.hooks import hook_set
from repro_lint.facts.matchers import get_matchers
from repro_lint.facts.model import LIGHT_HOOKS, ModuleInfo
from repro_lint.discover import notebook
from repro_lint.discover.project import FolderResolver, mark_path, module_name
from repro_lint.analysis.context import Context
from repro_lint.rules.registry import load_rules

from repro_lint.check.files import collect_files, display_path, display_rel, mark_tests, read_source


def project_facts(targets: list[Path], cfg: Config, root: Path, jobs: int = 1, use_cache: bool = True) -> dict[str, ModuleInfo]:
    """Facts of every project file and of `targets`, keyed by resolved path (cached facts reused)."""
    load_rules()
    project_files, target_files = collect_files(targets, cfg, root)
    files: dict[str, Path] = {}
    resolve = FolderResolver()
    for f in [*target_files, *project_files]:
        files.setdefault(resolve(str(f)), f)
    cached = Cache(root, cfg.fingerprint(), enabled=use_cache, folder=cfg.cache_dir).load_facts()
    infos: dict[str, ModuleInfo] = {}
    todo: list[tuple] = []
    datas: dict[str, bytes] = {}
    for k, f in files.items():
        try:
            data = read_source(f, k, root)
        except OSError:
            continue
        module, is_package = module_name(k, root, resolved=True)
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        hit = cached_facts(cached.get(k), digest, module)
        if isinstance(hit, ModuleInfo):
            try:  # facts kept for long (an editor's session): the body read now
                hit.__getstate__()
            except CorruptCache:
                hit = None
        if isinstance(hit, ModuleInfo):
            hit.path = display_path(f, k)
            infos[k] = hit
        else:
            datas[k] = data
            todo.append((k, display_path(f, k), module, is_package, digest))
    for job, info in zip(todo, batch.extract_all(todo, datas, jobs, cfg.matcher_key())):
        infos[job[0]] = info
    batch.extract_light_again(infos, cfg.matcher_key(), lambda k: read_source(Path(k), k, root))
    mark_tests(infos, root)
    return infos


def extract_source(path: Path, data: bytes, cfg: Config, root: Path, known: Optional[ModuleInfo] = None) -> ModuleInfo:
    """Facts of one file from the given content (not read from disk). `known`: the facts a
    check extracted of the file; taken as they are when they are what this would extract
    (the fix engine checks the files it fixes at their original text first)."""
    load_rules()
    module, is_package = module_name(path, root)
    if known is not None and _extracted_alike(known, path, data, module, is_package, root):
        return known
    # (in full: whether the project needs a file's gated facts is a question of all files)
    info = batch.safe_extract(display_path(path), module, is_package, data, cfg.matcher_key(), full=True)
    mark_path(info, display_rel(path, root))
    return info


def checked_alike(path: Path, data: bytes) -> bool:
    """Whether a check extracts `data` at `path` as `extract_source` does: walked with every
    hook (a check walks a file light when none of a gate's words is in it)."""
    return not notebook.is_notebook(str(path)) and not hook_set(data)[3]


def _extracted_alike(known: ModuleInfo, path: Path, data: bytes, module: str, is_package: bool, root: Path) -> bool:
    """Whether `known` are the facts `extract_source` makes of `data` at `path`: the same
    bytes, module and marks, walked with every hook (a check walks a file light when none of
    a gate's words is in it, `hooks.hook_set`, and then it misses facts taken in full)."""
    if known.error is not None or known.summary(LIGHT_HOOKS) or notebook.is_notebook(str(path)):
        return False
    if (known.module, known.is_package, known.path) != (module, is_package, display_path(path)):
        return False
    if known.digest != hashlib.blake2b(data, digest_size=16).hexdigest():
        return False
    marks = SimpleNamespace(is_package=is_package, is_test=None, never_entry=None)
    mark_path(marks, display_rel(path, root))
    return (marks.is_test, marks.never_entry) == (known.is_test, known.never_entry)


def check_facts(
    infos: dict[str, ModuleInfo], targets: set[str], cfg: Config, root: Path, entries: Optional[Iterable[str]] = None
) -> tuple[list[Finding], list[str]]:
    """Run the rules over already extracted facts and report on `targets` (resolved paths).

    `infos` holds every project file's facts by resolved path, some of them possibly from
    edited text that is not on disk: the fix engine re-checks its result this way. With
    `entries` (module names, see `programs_reaching`), only the programs of those entry
    points and of the targets themselves are built: the ones whose findings can change
    when the targets change, at a fraction of a whole-project check's cost."""
    load_rules()
    index = ProjectIndex(infos.values(), get_matchers(*cfg.matcher_key()), root)
    return check_index(index, [infos[k] for k in targets if k in infos], cfg, entries)


def check_index(
    index: ProjectIndex, targets: list[ModuleInfo], cfg: Config, entries: Optional[Iterable[str]] = None,
    programs: Optional[dict[str, Program]] = None,
) -> tuple[list[Finding], list[str]]:
    """Run the rules with a project index already built and report on `targets` (facts).
    With `entries`, as in `check_facts`. A language server keeps one index up to date and
    checks the open files against it this way. `programs`: programs of `index` built
    already, by entry point, that no check has used (`entry_programs`)."""
    load_rules()
    ctx = Context(index=index, settings=cfg.settings())
    if entries is not None:
        wanted = set(entries) | {info.module for info in targets}
        built = programs or {}
        ctx._programs = [
            built[m] if m in built else index.program(index.modules[m])
            for m in sorted(wanted) if m in index.modules and index.is_entry_point(index.modules[m])
        ]
    errors: list[str] = []
    unique = findings_of(ctx, targets, errors, False)
    ctx.release()
    return unique, errors


def programs_reaching(infos: dict[str, ModuleInfo], cfg: Config, root: Path) -> dict[str, set[str]]:
    """For each module, the entry points (module names) whose programs reach it."""
    return entry_programs(infos, cfg, root)[2]


def entry_programs(infos: dict[str, ModuleInfo], cfg: Config, root: Path) -> tuple[ProjectIndex, dict[str, Program], dict[str, set[str]]]:
    """The project index over `infos`, the program of each entry point (by module name), and
    `programs_reaching`'s answer from them: `check_index` takes the index and the programs
    (which then need not be built again)."""
    index = ProjectIndex(infos.values(), get_matchers(*cfg.matcher_key()), root)
    programs = {entry.module: index.program(entry) for entry in index.entry_points()}
    out: dict[str, set[str]] = {}
    for module, program in programs.items():
        for mod in {m for m, _ in program.scopes}:
            out.setdefault(mod, set()).add(module)
    return index, programs, out
