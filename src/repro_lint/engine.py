"""Running a check: discover files, extract facts (cached, in parallel), index, run rules."""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import hashlib
import os
import pickle
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from repro_lint import catalog, extraction, model, program_map
from repro_lint.bounded_read import TEXT_MAX_BYTES, is_inside, read_regular
from repro_lint.cache import Cache, CorruptCache, cached_facts
from repro_lint.config import Config
from repro_lint.findings import Finding, Location
from repro_lint.index import ProjectIndex
from repro_lint.matchers import get_matchers
from repro_lint.model import ModuleInfo
from repro_lint.project import SOURCE_SUFFIXES, Discovery, FolderResolver, find_root, mark_path, module_name
from repro_lint.rules import RULES, Context, let_go_of, load_rules

@dataclass
class Report:
    root: Path
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # one line each; they make the exit code 2
    files_checked: int = 0
    sources: dict[str, list[str]] = field(default_factory=dict)  # path -> lines, for display
    infos: dict[str, ModuleInfo] = field(default_factory=dict, repr=False)
    # every project file's facts by resolved path (not kept when the result came from the cache)
    facts: dict[str, ModuleInfo] = field(default_factory=dict, repr=False)


@functools.lru_cache(maxsize=4)
def _resolved_cwd(cwd: str) -> str:
    return Path(cwd).resolve().as_posix().rstrip("/") + "/"


def display_path(path: Path, resolved: Optional[str] = None) -> str:
    """The path as shown to the user: relative to the working folder when inside it.
    `resolved` is `str(path.resolve())` when the caller has it already (resolving is slow)."""
    if resolved is None:
        full = path.resolve().as_posix()
    else:
        full = resolved if os.sep == "/" else Path(resolved).as_posix()
    cwd = _resolved_cwd(os.getcwd())
    if full.startswith(cwd):
        return full[len(cwd):]
    return "." if full + "/" == cwd else full


# -- the check ------------------------------------------------------------------------
class PathError(Exception):
    """A path given on the command line does not exist."""


def collect_files(paths: list[Path], cfg: Config, root: Path, side: Optional[list] = None) -> tuple[list[Path], list[Path]]:
    """(every project file for the index, the files to report on); `side` receives the
    project's other files that rules read (`project.is_side_file`)."""
    disc = Discovery(root, list(cfg.exclude) + list(cfg.extend_exclude))
    project = list(disc.walk(root, explicit=False)) if root.is_dir() else []
    if side is not None:
        side.extend(disc.side_files)
    targets: list[Path] = []
    for p in paths:
        if not p.exists():
            raise PathError(f"{p}: no such file or directory")
        if p.is_dir() and p.resolve() == root:
            targets.extend(project)  # the whole project: walked once
            continue
        for f in disc.walk(p, explicit=True):
            if p.is_file() and disc.excluded(display_rel(f, root)):
                continue  # excluded files stay excluded when named (pre-commit names them)
            targets.append(f)
    return project, targets


def read_source(path: Path, resolved: str, root: Path) -> bytes:
    """The bytes of a project's Python file (`resolved`: its resolved path). A link to a
    file outside the project is not read: a cloned repository could point one at any file
    its user can read, and a report shows the source lines of its findings."""
    if not is_inside(resolved, str(root)) and os.path.islink(path):
        raise OSError(errno.EACCES, "it is a link to a file outside the project", str(path))
    return read_regular(path)


def display_rel(path: Path, root: Path, resolve: Optional[FolderResolver] = None) -> str:
    """`path` relative to the (resolved) root, with `/`; its name when it is outside.
    `resolve`: a resolver that has resolved the path's folder already (many files)."""
    resolved = resolve(str(path.absolute())) if resolve is not None else str(path.resolve())
    top = str(root)
    if not is_inside(resolved, top) or resolved == top:
        return path.name
    rel = resolved[len(top.rstrip(os.sep)) + 1:]
    return rel if os.sep == "/" else rel.replace(os.sep, "/")


def _mark_tests(infos: dict[str, ModuleInfo], root: Path) -> None:
    """Set what each file's path (a resolved-path key) relative to the root says of it."""
    prefix = root.as_posix().rstrip("/") + "/"
    for k, info in infos.items():
        rel = k if os.sep == "/" else Path(k).as_posix()
        mark_path(info, rel[len(prefix):] if rel.startswith(prefix) else rel.rpartition("/")[2])


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
        model._DECODED.clear()


def run_check(
    paths: list[Path],
    cfg: Config,
    root: Optional[Path] = None,
    jobs: int = 1,
    use_cache: bool = True,
    verbose: bool = False,
    overrides: Optional[dict[Path, bytes]] = None,
    dependents: bool = False,
) -> Report:
    """Check `paths` against the whole project.

    `overrides` gives files' contents that are not on disk (an editor's unsaved buffer read
    from stdin): they are checked, and reported on, with that content. With `dependents`,
    findings are reported wherever the named files can change them (`dependent_files`)."""
    with without_cyclic_gc(), _decoded_released():
        try:
            return _run_check(paths, cfg, root, jobs, use_cache, verbose, overrides or {}, dependents)
        except CorruptCache:  # a cached body that does not match its record: rebuilt, not trusted
            found = (root or find_root([*paths, *(overrides or {})])).resolve()
            Cache(found, cfg.fingerprint(), enabled=use_cache).drop_facts()
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
) -> Report:
    root = (root or find_root([*paths, *overrides])).resolve()
    report = Report(root=root)
    load_rules()
    key = cfg.matcher_key()
    matchers = get_matchers(*key)
    sources = [p for p in paths if not (p.is_file() and not p.name.endswith(SOURCE_SUFFIXES))]
    everything = dependents and len(sources) < len(paths)  # a configuration file changed
    side_files: list[str] = []
    project_files, target_files = collect_files(sources, cfg, root, side_files)

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
    cache = Cache(root, cfg.fingerprint(), enabled=use_cache)
    # with facts in the cache, the files' bytes are not kept: most files' facts come from
    # it, and the others are read again (a large project's sources are 70 MB and more)
    keep = not cache.has_facts()
    datas: dict[str, bytes] = {}
    digests: dict[str, str] = {}
    for k, f in all_files.items():
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
    for k, f in all_files.items():
        if k not in digests:
            continue
        module, is_package = module_name(k, root, resolved=True)
        entry = facts_cache.get(k)
        hit = cached_facts(entry, digests[k], module)
        shown = display_path(f, k)
        if isinstance(hit, ModuleInfo):
            hit.path = shown
            infos[k] = hit
            stored[k] = entry
        else:
            jobs_todo.append((k, shown, module, is_package, digests[k]))
    stable = _read_again(jobs_todo, datas, digests, all_files, root)
    packing = extraction.packing_for(jobs_todo, datas)
    for job, info in zip(jobs_todo, extraction.extract_all(jobs_todo, datas, jobs, key, packing)):
        infos[job[0]] = info
        # (a file read again meanwhile, `extraction._extract_parallel`, that changed or went)
        stable = stable and info.digest == job[4]
    datas.clear()
    # what found and read the files is not needed past here: a large project's paths
    # (`Path` objects) and jobs were kept to the end of the check (15 MB on 38,000 files)
    extracted = bool(jobs_todo)
    del project_files, target_files, all_files, jobs_todo, digests
    buffers = {k: overrides[given[k]] for k in given}
    redone, same = extraction.extract_light_again(infos, key, lambda k: buffers[k] if k in buffers else read_source(Path(k), k, root))
    stable = stable and same  # (a file changed while the check read it: its results are not kept)
    if redone:
        extracted = True
        for k in redone:
            stored.pop(k, None)
    _mark_tests(infos, root)

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
    unique = _findings(ctx, list(target_infos.values()), errors, verbose, jobs)
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
        slim = {path: _noqa_view(info) for path, info in report.infos.items()}
        cache.store_results(run_key, unique, errors, slim)
    return report


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


def _findings(ctx: Context, targets: list[ModuleInfo], errors: list[str], verbose: bool, jobs: int = 1) -> list[Finding]:
    """The sorted findings on `targets` (RPL001 for files that do not parse, then every
    rule); files that could not be read add a line to `errors`."""
    findings: list[Finding] = []
    for info in targets:
        findings.extend(error_findings(info, errors, verbose))
    findings.extend(_run_rules(ctx, {info.path for info in targets}, errors, verbose, jobs))
    findings.sort(key=lambda f: f.sort_key())
    return findings


def error_findings(info: ModuleInfo, errors: list[str], verbose: bool = False) -> list[Finding]:
    """RPL001 for a file that does not parse; a file that could not be read adds a line to `errors`."""
    if info.error is None:
        return []
    kind, message, line, col = info.error
    if kind == "syntax-error":
        return [Finding("RPL001", "syntax-error", message, Location(info.path, line, col + 1, line, col + 1))]
    errors.append(f"{info.path}: {message}")
    if verbose and "traceback" in info.extra:
        errors.append(info.extra["traceback"].rstrip())
    return []


# With --jobs above 1, once the programs are built a forked copy of this process runs
# these rules while this one runs the others: the seeding family (RPL103 works out what
# every function seeds, RPL101's fixes place seeding calls), about half of the rules' work.
# (The copy once built the programs again itself: run after they are built, the rules
# take 0.92 s instead of 1.03 s on the 5,106-file corpus of bench/, counting the build.)
FORKED_RULES = ("RPL101", "RPL102", "RPL103", "RPL104", "RPL202")
# Below this many files to report on, forking costs more than it saves.
FORK_RULES_MIN_FILES = 200


def _run_rules(ctx: Context, target_paths: set[str], errors: list[str], verbose: bool, jobs: int = 1) -> list[Finding]:
    """Every rule over its units. The rules share what they work out about the project
    (programs, effects of functions, resolved calls), which is most of their time, so they
    are not spread over workers unit by unit (measured in bench/: slower than one process);
    with --jobs above 1 one forked copy of this process runs `FORKED_RULES`.

    A finding reached through many programs is kept once, the first time: the engine's
    de-duplication keeps the first of equal findings too (equal findings sort equal), and
    a large project can otherwise hold hundreds of thousands of copies at once."""
    codes = list(RULES)
    forked = None
    if jobs > 1 and len(target_paths) >= FORK_RULES_MIN_FILES and hasattr(os, "fork"):
        try:
            ctx.programs  # built once, before the copy: both halves read them
        except Exception:  # (reported by the rules that ask for them)
            pass
        forked = _fork_rules(ctx, target_paths, verbose, [c for c in codes if c in FORKED_RULES])
        if forked is not None:
            codes = [c for c in codes if c not in FORKED_RULES]
    per_code = _rules_here(ctx, target_paths, errors, verbose, codes)
    if forked is not None:
        # this process's rules have run: what the index worked out for them makes room for
        # the copy's findings (the peak of a large project's check was here)
        ctx.index.let_go_of_calls()
        theirs = _forked_result(forked)
        if theirs is None:  # the copy failed: its rules run here
            theirs = _rules_here(ctx, target_paths, errors, verbose, [c for c in RULES if c in FORKED_RULES])
        else:
            errors.extend(theirs.pop(None, []))
        per_code.update(theirs)
    return [f for code in RULES for f in per_code.get(code, ())]


def _rules_here(ctx: Context, target_paths: set[str], errors: list[str], verbose: bool, codes: list[str]) -> dict:
    """The findings of the rules `codes`, by code, worked out in this process."""
    out: dict = {}
    programs: list = []
    if any(RULES[code].per == "program" for code in codes):
        try:
            programs = ctx.programs
        except Exception as exc:  # pragma: no cover - a bug in the index
            errors.append(f"internal error while building the project index: {type(exc).__name__}: {exc}")
            if verbose:
                errors.append(traceback.format_exc().rstrip())
    modules = [info for info in ctx.index.modules.values() if info.path in target_paths]
    ctx.checked = len(modules)
    seen: dict[str, set] = {code: set() for code in codes}
    texts: dict[str, str] = {}
    failed: dict[str, list[str]] = {code: [] for code in codes}
    for code in codes:
        out[code] = []
    # unit by unit, each unit's rules one after the other: a unit's facts are read while
    # they are decoded (a large project's bodies are let go again, `model.pack`). Each
    # rule still meets the units in the same order, and its errors are kept in that order.
    for per_module, units in ((True, [(info, info) for info in modules]), (False, [(p, p.entry) for p in programs])):
        specs = [RULES[code] for code in codes if (RULES[code].per == "module") == per_module]
        for unit, info in units if specs else ():
            for spec in specs:
                code = spec.code
                try:
                    for finding in spec.check(ctx, unit):
                        if finding.location.path in target_paths:
                            sig = (finding.location, finding.message)
                            if sig not in seen[code]:
                                seen[code].add(sig)
                                out[code].append(_shared_texts(finding, texts))
                except Exception as exc:
                    failed[code].append(f"{info.path}: internal error in rule {code}: {type(exc).__name__}: {exc}")
                    if verbose:
                        failed[code].append(traceback.format_exc().rstrip())
            if not per_module:
                let_go_of(unit)  # its rules have run (see `rules.program_cache`)
    for code in codes:
        errors.extend(failed[code])
    return out


def _shared_texts(finding: Finding, texts: dict[str, str]) -> Finding:
    """`finding` with its message and its fix's texts replaced by equal ones kept before
    (`texts`): findings repeat a few texts (on a 38,308-file tree 148,000 strings of the
    findings held 19,000 values, 12 MB more than one copy of each). Frozen parts are set
    in place: an equal string changes neither their equality nor their hash."""
    finding.message = texts.setdefault(finding.message, finding.message)
    setter = object.__setattr__
    for rel in finding.related:
        setter(rel, "message", texts.setdefault(rel.message, rel.message))
    fix = finding.fix
    if fix is not None:
        setter(fix, "description", texts.setdefault(fix.description, fix.description))
        for edit in fix.edits:
            for name in getattr(type(edit), "__slots__", ()):
                value = getattr(edit, name)
                if type(value) is str and value:
                    setter(edit, name, texts.setdefault(value, value))
    return finding


def _fork_rules(ctx: Context, target_paths: set[str], verbose: bool, codes: list[str]) -> Optional[tuple[int, int]]:
    """Start a forked copy of this process running the rules `codes`: (its pid, the read
    end of the pipe its findings come back through), or None when it cannot start."""
    try:
        read, write = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return None
    if pid:
        os.close(write)
        return pid, read
    status = 1
    try:  # the copy: never returns into the caller's code, nor runs its exit handlers
        os.close(read)
        errors: list[str] = []
        result: dict = _rules_here(ctx, target_paths, errors, verbose, codes)
        result[None] = errors
        with os.fdopen(write, "wb") as fh:
            fh.write(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        status = 0
    finally:
        os._exit(status)


def _forked_result(forked: tuple[int, int]) -> Optional[dict]:
    """The findings by code (and error lines under None) of a forked copy, or None when
    it failed."""
    pid, read = forked
    result = None
    with os.fdopen(read, "rb") as fh:
        try:
            # read as it is decoded: a large project's findings are megabytes of pickle,
            # held only while they become objects otherwise
            result = pickle.load(fh)
        except Exception:
            result = None
        fh.read()  # (what is left: the copy ends only once its output is read)
    try:
        _, status = os.waitpid(pid, 0)
    except OSError:
        return None
    if status != 0:
        return None
    return result if isinstance(result, dict) else None


def _noqa_view(info: ModuleInfo) -> ModuleInfo:
    view = ModuleInfo(info.path, info.module, info.is_package)
    view.digest = info.digest
    view.noqa = info.noqa
    view.file_noqa = info.file_noqa
    view.file_noqa_set = info.file_noqa_set
    return view


def suppressed(finding: Finding, info: Optional[ModuleInfo]) -> bool:
    """`# noqa`, `# noqa: CODES` on the line, or `# repro-lint: noqa[: CODES]` for the file."""
    if info is None:
        return False
    code = finding.code
    if info.file_noqa_set:
        if not info.file_noqa or any(code.startswith(c) for c in info.file_noqa):
            return True
    if finding.location.line in info.noqa:
        codes = info.noqa[finding.location.line]
        if codes is None or any(code.startswith(c) for c in codes):
            return True
    return False


def select(report: Report, cfg: Config, cli_select=None, cli_extend=None, cli_ignore=None) -> list[Finding]:
    """Findings after selection, per-file ignores and suppression comments."""
    eff = Config(
        select=list(cli_select) if cli_select else cfg.select,
        extend_select=list(cfg.extend_select) + list(cli_extend or []),
        ignore=list(cfg.ignore) + list(cli_ignore or []),
        per_file_ignores=cfg.per_file_ignores,
    )
    out = []
    rels: dict[str, str] = {}
    resolve = FolderResolver()
    for f in report.findings:
        rel = rels.get(f.location.path)
        if rel is None:
            rel = rels[f.location.path] = display_rel(Path(f.location.path), report.root, resolve)
        if f.code != "RPL001" and not eff.enabled(f.code, rel):
            continue
        if f.code != "RPL001" and suppressed(f, report.infos.get(f.location.path)):
            continue
        out.append(f)
    return out


def known_codes() -> list[str]:
    return list(catalog.rule_docs())


# -- checking edited text in memory (used by the fix engine) ----------------------------
def project_facts(targets: list[Path], cfg: Config, root: Path, jobs: int = 1, use_cache: bool = True) -> dict[str, ModuleInfo]:
    """Facts of every project file and of `targets`, keyed by resolved path (cached facts reused)."""
    load_rules()
    project_files, target_files = collect_files(targets, cfg, root)
    files: dict[str, Path] = {}
    resolve = FolderResolver()
    for f in [*target_files, *project_files]:
        files.setdefault(resolve(str(f)), f)
    cached = Cache(root, cfg.fingerprint(), enabled=use_cache).load_facts()
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
    for job, info in zip(todo, extraction.extract_all(todo, datas, jobs, cfg.matcher_key())):
        infos[job[0]] = info
    extraction.extract_light_again(infos, cfg.matcher_key(), lambda k: read_source(Path(k), k, root))
    _mark_tests(infos, root)
    return infos


def extract_source(path: Path, data: bytes, cfg: Config, root: Path) -> ModuleInfo:
    """Facts of one file from the given content (not read from disk)."""
    load_rules()
    module, is_package = module_name(path, root)
    # (in full: whether the project needs a file's gated facts is a question of all files)
    info = extraction.safe_extract(display_path(path), module, is_package, data, cfg.matcher_key(), full=True)
    mark_path(info, display_rel(path, root))
    return info


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
    index: ProjectIndex, targets: list[ModuleInfo], cfg: Config, entries: Optional[Iterable[str]] = None
) -> tuple[list[Finding], list[str]]:
    """Run the rules with a project index already built and report on `targets` (facts).
    With `entries`, as in `check_facts`. A language server keeps one index up to date and
    checks the open files against it this way."""
    load_rules()
    ctx = Context(index=index, settings=cfg.settings())
    if entries is not None:
        wanted = set(entries) | {info.module for info in targets}
        ctx._programs = [
            index.program(index.modules[m]) for m in sorted(wanted) if m in index.modules and index.is_entry_point(index.modules[m])
        ]
    errors: list[str] = []
    unique = _findings(ctx, targets, errors, False)
    ctx.release()
    return unique, errors


def programs_reaching(infos: dict[str, ModuleInfo], cfg: Config, root: Path) -> dict[str, set[str]]:
    """For each module, the entry points (module names) whose programs reach it."""
    index = ProjectIndex(infos.values(), get_matchers(*cfg.matcher_key()), root)
    out: dict[str, set[str]] = {}
    for entry in index.entry_points():
        for mod in {m for m, _ in index.program(entry).scopes}:
            out.setdefault(mod, set()).add(entry.module)
    return out
