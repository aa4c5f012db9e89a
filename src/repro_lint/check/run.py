"""Running a check: discover files, extract facts (cached, in parallel), index, run rules."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
from pathlib import Path
from typing import Optional

from repro_lint.check.parallel import findings_of
from repro_lint.check.select import noqa_view
from repro_lint.check.report import Report
from repro_lint.facts import batch
from repro_lint.facts import model
from repro_lint.index import program_map
from repro_lint.core import progress
from repro_lint.core.bounded_read import TEXT_MAX_BYTES, read_regular
from repro_lint.check.cache import Cache, CorruptCache, cached_facts
from repro_lint.discover.config import Config
from repro_lint.index.project_index import ProjectIndex
from repro_lint.facts.matchers import get_matchers
from repro_lint.facts.model import ModuleInfo
from repro_lint.discover.project import SOURCE_SUFFIXES, FolderResolver, find_root, module_name
from repro_lint.analysis.context import Context
from repro_lint.rules.registry import load_rules

from repro_lint.check.files import collect_files, display_path, mark_tests, read_source


@contextlib.contextmanager
def without_cyclic_gc():
    """Pause the cycle collector during a check. Extraction builds hundreds of thousands of
    long-lived fact objects; each automatic collection rescans all of them, which more than
    doubled the time of a 5,000-file check (bench/). Syntax trees hold no cycles and are
    freed by reference counting; what is cyclic is collected when the check ends."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # what the check built and still holds is left out of later collections
            # (re-enabling alone starts a full one over all of it); reference counting
            # still frees it
            gc.freeze()
            gc.enable()


@contextlib.contextmanager
def _decoded_released():
    """The table of decoded body fields (`model.pack`) emptied when a check ends."""
    try:
        yield
    finally:
        model.release_decoded()


def run_check(
    paths: list[Path],
    cfg: Config,
    root: Optional[Path] = None,
    jobs: int = 1,
    use_cache: bool = True,
    verbose: bool = False,
    overrides: Optional[dict[Path, bytes]] = None,
    dependents: bool = False,
    known: Optional[Report] = None,
) -> Report:
    """Check `paths` against the whole project.

    `overrides` gives files' contents that are not on disk (an editor's unsaved buffer read
    from stdin): they are checked, and reported on, with that content. With `dependents`,
    findings are reported wherever the named files can change them (`dependent_files`).
    `known`: an earlier check's report in this process; the facts it extracted of files
    whose content is the same are taken as they are (a check after --fix extracts only the
    fixed files again, also without a cache)."""
    with without_cyclic_gc(), _decoded_released():
        try:
            return _run_check(paths, cfg, root, jobs, use_cache, verbose, overrides or {}, dependents, known)
        except CorruptCache:  # a cached body that does not match its record: rebuilt, not trusted
            found = (root or find_root([*paths, *(overrides or {})])).resolve()
            Cache(found, cfg.fingerprint(), enabled=use_cache, folder=cfg.cache_dir).drop_facts()
        try:
            return _run_check(paths, cfg, root, jobs, use_cache, verbose, overrides or {}, dependents)
        except CorruptCache:  # (the files could not be removed)
            return _run_check(paths, cfg, root, jobs, False, verbose, overrides or {}, dependents)


def _run_check(
    paths: list[Path],
    cfg: Config,
    root: Optional[Path],
    jobs: int,
    use_cache: bool,
    verbose: bool,
    overrides: dict[Path, bytes],
    dependents: bool,
    known: Optional[Report] = None,
) -> Report:
    root = (root or find_root([*paths, *overrides])).resolve()
    report = Report(root=root)
    load_rules()
    key = cfg.matcher_key()
    matchers = get_matchers(*key)
    sources = [p for p in paths if not (p.is_file() and not p.name.endswith(SOURCE_SUFFIXES))]
    everything = dependents and len(sources) < len(paths)  # a configuration file changed
    side_files: list[str] = []
    project_files, target_files = collect_files(sources, cfg, root, side_files, report.warnings, report.leftovers)

    # read everything once: content hashes decide what the cache can answer
    all_files: dict[str, Path] = {}
    target_keys: set[str] = set()
    resolve = FolderResolver()
    given = {resolve(str(p.absolute())): p for p in overrides}
    for f in [*target_files, *given.values()]:
        k = resolve(str(f))
        all_files.setdefault(k, f)
        target_keys.add(k)
    for f in project_files:
        all_files.setdefault(resolve(str(f)), f)
    if everything:
        target_keys |= {resolve(str(f)) for f in project_files}
    cache = Cache(root, cfg.fingerprint(), enabled=use_cache, folder=cfg.cache_dir)
    # with facts in the cache, the files' bytes are not kept: most files' facts come from
    # it, and the others are read again (a large project's sources are 70 MB and more)
    keep = not cache.has_facts()
    datas: dict[str, bytes] = {}
    digests: dict[str, str] = {}
    progress.stage("Reading files", len(all_files))
    for k, f in all_files.items():
        progress.advance()
        try:
            data = overrides[given[k]] if k in given else read_source(f, k, root)
        except OSError as exc:
            if k in target_keys:  # named as the project names it (a link, not what it leads to)
                shown = display_path(f, os.path.join(resolve.folder(os.path.dirname(str(f))), f.name))
                report.errors.append(f"{shown}: cannot read file: {exc.strerror or exc}")
            continue
        if keep or k in given:
            datas[k] = data
        digests[k] = hashlib.blake2b(data, digest_size=16).hexdigest()

    side_inputs = _side_inputs(root, side_files)
    run_key = ""
    if cache.enabled:  # (the key of this run's stored results: only a cache needs it)
        run_key = hashlib.blake2b(
            repr((sorted(digests.items()), sorted(target_keys & set(digests)), str(Path.cwd().resolve()), side_inputs, dependents)).encode(),
            digest_size=16,
        ).hexdigest()
    cached_results = cache.load_results(run_key) if not given and cache.enabled else None  # a buffer's results are not kept
    infos: dict[str, ModuleInfo] = {}
    if cached_results is not None:
        findings, errors, target_infos = cached_results
        report.findings = findings
        report.errors.extend(errors)
        report.infos = target_infos
        report.files_checked = len(target_infos)  # the targets as reported (with --whole-program, the dependents too)
        return report

    facts_cache = cache.load_facts()
    jobs_todo = []
    stored: dict[str, tuple] = {}  # the cache entries of the files whose facts came from it
    reused = False
    for k, f in all_files.items():
        if k not in digests:
            continue
        module, is_package = module_name(k, root, resolved=True)
        entry = facts_cache.get(k)
        hit = cached_facts(entry, digests[k], module)
        from_cache = isinstance(hit, ModuleInfo)
        if not from_cache and known is not None:
            hit = _known_facts(known, k, digests[k], module)
            reused = reused or hit is not None  # (not in the cache: stored as if extracted)
        shown = display_path(f, k)
        if isinstance(hit, ModuleInfo):
            hit.path = shown
            infos[k] = hit
            if from_cache:
                stored[k] = entry
        else:
            jobs_todo.append((k, shown, module, is_package, digests[k]))
    stable = _read_again(jobs_todo, datas, digests, all_files, root)
    packing = batch.packing_for(jobs_todo, datas)
    progress.stage("Analysing files", len(jobs_todo))
    for job, info in zip(jobs_todo, batch.extract_all(jobs_todo, datas, jobs, key, packing)):
        infos[job[0]] = info
        # (a file read again meanwhile, `batch.extract_all`, that changed or went)
        stable = stable and info.digest == job[4]
    datas.clear()
    # what found and read the files is not needed past here: a large project's paths
    # (`Path` objects) and jobs were kept to the end of the check (15 MB on 38,000 files)
    extracted = bool(jobs_todo) or reused
    del project_files, target_files, all_files, jobs_todo, digests
    buffers = {k: overrides[given[k]] for k in given}
    redone, same = batch.extract_light_again(infos, key, lambda k: buffers[k] if k in buffers else read_source(Path(k), k, root))
    stable = stable and same  # (a file changed while the check read it: its results are not kept)
    report.redone = set(redone)
    if redone:
        extracted = True
        for k in redone:
            stored.pop(k, None)
    mark_tests(infos, root)

    index = ProjectIndex(infos.values(), matchers, root)
    ctx = Context(index=index, settings=cfg.settings())
    side = program_map.side_digest(side_inputs)
    new_map = None
    if cache.enabled and not given and not dependents and len(target_keys) < len(infos):
        # a few files named: only the programs that can have findings in them are built
        # when the last run's map of programs still answers for these files
        old_map = program_map.ProgramMap.from_plain(cache.load_plain("programs"))
        changed = program_map.changed_modules(old_map, infos, side) if old_map is not None else None
        if changed is not None:
            wanted = {infos[k].module for k in target_keys if k in infos}
            ctx._programs, new_map = program_map.programs_for(index, old_map, changed, wanted, infos)  # type: ignore[arg-type]
    if dependents:
        target_keys |= dependent_files(ctx, infos, target_keys)
    target_infos = {k: infos[k] for k in target_keys if k in infos}
    errors: list[str] = []
    unique = findings_of(ctx, list(target_infos.values()), errors, verbose, jobs)
    # The context refers to itself: with the cycle collector paused during the check and
    # what it built frozen after (`without_cyclic_gc`), the index and the rules' state are
    # not freed object by object when the check returns (0.1 s of a 5,000-file check), and
    # the command ends soon after. (A cycle through RPL302's table of loaders did this
    # before, for any project with such a loader.)
    ctx.__dict__["_itself"] = ctx
    report.findings = unique
    report.errors.extend(errors)
    report.infos = {info.path: info for info in target_infos.values()}
    report.facts = infos
    report.files_checked = len(target_infos)
    if given:
        return report  # facts and results of a buffer are not the files'
    if extracted or len(stored) != len(facts_cache):
        cache.store_facts(infos, stored)
    if new_map is None and ctx._programs is not None and cache.enabled:
        new_map = program_map.build_map(index, ctx._programs, infos, side)
    if new_map is not None:
        cache.store_plain("programs", new_map.to_plain())
    # what reporting needs of each file again: its path and its noqa comments
    # (not results keyed by contents that changed while the check read them; the views
    # are made only to be stored: 25 MB at the end of a 38,000-file check)
    if stable and cache.enabled:
        slim = {path: noqa_view(info) for path, info in report.infos.items()}
        cache.store_results(run_key, unique, errors, slim)
    return report


def _known_facts(known: Report, key: str, digest: str, module: str) -> Optional[ModuleInfo]:
    """The facts an earlier check extracted of this content, as this check would extract
    them: not those it extracted again in full (`batch.extract_light_again`), which a check
    of the files as they are now may walk light."""
    info = known.facts.get(key)
    if info is None or key in known.redone or info.digest != digest or info.module != module or info.error is not None:
        return None
    return info


def _read_again(jobs: list[tuple], datas: dict[str, bytes], digests: dict[str, str], files: dict[str, Path], root: Path) -> bool:
    """Read the files of `jobs` whose bytes were not kept (`jobs`' digests follow the bytes
    read now); whether every file still has the content it had at first."""
    stable = True
    for i, job in enumerate(jobs):
        k = job[0]
        if k in datas:
            continue
        try:
            data = read_source(files[k], k, root)
        except OSError:
            data = b""  # (gone meanwhile: an empty module this time)
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        if digest != digests[k]:
            stable = False
            digests[k] = digest
            jobs[i] = (*job[:4], digest)
        datas[k] = data
    return stable


def dependent_files(ctx: Context, infos: dict[str, ModuleInfo], keys: set[str]) -> set[str]:
    """The files (resolved paths) whose findings can change when the files `keys` change:
    the modules that import them, directly or not (their functions' effects include those
    of the functions they call), and every module of each program that reaches them (a
    program's findings are located in its entry point, or in what it reaches)."""
    index = ctx.index
    changed = {infos[k].module for k in keys if k in infos and infos[k].module in index.modules}
    out = set(changed)
    stack = list(changed)
    while stack:
        for importer in index.importers.get(stack.pop(), ()):
            if importer not in out:
                out.add(importer)
                stack.append(importer)
    for program in ctx.programs:
        reached = {mod for mod, _ in program.scopes}
        if reached & changed:
            out |= reached
    by_module = {info.module: k for k, info in infos.items()}
    return {by_module[m] for m in out if m in by_module}


def _side_inputs(root: Path, side_files: list[str]) -> list:
    """Digests of the non-Python files rules read (the torch requirement RPL404 is keyed on,
    the Hydra configs that programs reach through): cached results must not outlive a change
    to them. `side_files` are those discovery saw; the root's pyproject.toml always counts."""
    out = []
    for path in sorted({str(root / "pyproject.toml"), *side_files}):
        try:
            out.append((path, hashlib.blake2b(read_regular(path, TEXT_MAX_BYTES), digest_size=16).hexdigest()))
        except OSError:
            continue
    return out


