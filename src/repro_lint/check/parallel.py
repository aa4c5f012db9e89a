"""Running every rule over its units: in this process, and with --jobs above 1 the rules
registered `apart` in a forked copy of it."""

from __future__ import annotations


import os
import pickle
import sys
import traceback
from typing import Optional

from repro_lint.core import progress
from repro_lint.discover import requirements
from repro_lint.facts.model import ModuleInfo
from repro_lint.core.findings import Location
from repro_lint.core.findings import Finding
from repro_lint.analysis.context import Context, let_go_of
from repro_lint.check import across, cascade
from repro_lint.rules.registry import RULES



# With --jobs above 1, once the programs are built a forked copy of this process runs the
# rules registered `apart` while this one runs the others: the seeding family (RPL103 works
# out what every function seeds, RPL101's fixes place seeding calls), about half of the
# rules' work. (The copy once built the programs again itself: run after they are built,
# the rules take 0.92 s instead of 1.03 s on the 5,106-file corpus of bench/, counting the build.)
# Below this many files to report on, forking costs more than it saves.
FORK_RULES_MIN_FILES = 200


def run_rules(ctx: Context, target_paths: set[str], errors: list[str], verbose: bool, jobs: int = 1) -> list[Finding]:
    """Every rule over its units. The rules share what they work out about the project
    (programs, effects of functions, resolved calls), which is most of their time, so they
    are not spread over workers unit by unit (measured in bench/: slower than one process);
    with --jobs above 1 one forked copy of this process runs the rules registered `apart`.

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
        forked = fork_rules(ctx, target_paths, verbose, [c for c in codes if RULES[c].apart])
        if forked is not None:
            codes = [c for c in codes if not RULES[c].apart]
    per_code = rules_here(ctx, target_paths, errors, verbose, codes)
    if forked is not None:
        # this process's rules have run: what the index worked out for them makes room for
        # the copy's findings (the peak of a large project's check was here)
        ctx.index.let_go_of_calls()
        theirs = forked_result(forked)
        if theirs is None:  # the copy failed: its rules run here
            theirs = rules_here(ctx, target_paths, errors, verbose, [c for c in RULES if RULES[c].apart])
        else:
            errors.extend(theirs.pop(None, []))
        per_code.update(theirs)
    out = [f for code in RULES for f in per_code.get(code, ())]
    try:
        across.announce_across(ctx, out, target_paths)
    except Exception as exc:
        errors.append(f"internal error while working out follow-on fixes across programs: {type(exc).__name__}: {exc}")
        if verbose:
            errors.append(traceback.format_exc().rstrip())
    cascade.settle(out)
    return out


def rules_here(ctx: Context, target_paths: set[str], errors: list[str], verbose: bool, codes: list[str]) -> dict:
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
    progress.stage("Checking files and programs", len(modules) + len(programs))
    for per_module, units in ((True, [(info, info) for info in modules]), (False, [(p, p.entry) for p in programs])):
        specs = [RULES[code] for code in codes if (RULES[code].per == "module") == per_module]
        if not specs:
            progress.advance(len(units))
        for unit, info in units if specs else ():
            progress.advance()
            found = []
            for spec in specs:
                code = spec.code
                try:
                    for finding in spec.check(ctx, unit):
                        if finding.location.path in target_paths:
                            sig = (finding.location, finding.message)
                            if sig not in seen[code]:
                                seen[code].add(sig)
                                out[code].append(shared_texts(finding, texts))
                                found.append(finding)
                except Exception as exc:
                    failed[code].append(f"{info.path}: internal error in rule {code}: {type(exc).__name__}: {exc}")
                    if verbose:
                        failed[code].append(traceback.format_exc().rstrip())
            if not per_module:
                try:
                    cascade.announce(ctx, unit, found, target_paths)
                except Exception as exc:
                    errors.append(f"{info.path}: internal error while working out follow-on fixes: {type(exc).__name__}: {exc}")
                let_go_of(unit)  # its rules have run (see `analysis.context.program_cache`)
    for code in codes:
        errors.extend(failed[code])
    return out


def shared_texts(finding: Finding, texts: dict[str, str]) -> Finding:
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


def fork_rules(ctx: Context, target_paths: set[str], verbose: bool, codes: list[str]) -> Optional[tuple[int, int]]:
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
        result: dict = rules_here(ctx, target_paths, errors, verbose, codes)
        result[None] = errors
        with os.fdopen(write, "wb") as fh:
            fh.write(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        status = 0
    finally:
        os._exit(status)


def forked_result(forked: tuple[int, int]) -> Optional[dict]:
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


def findings_of(ctx: Context, targets: list[ModuleInfo], errors: list[str], verbose: bool, jobs: int = 1) -> list[Finding]:
    """The sorted findings on `targets` (RPL001 for files that do not parse, then every
    rule); files that could not be read add a line to `errors`."""
    findings: list[Finding] = []
    floor = requirements.python_floor(ctx.index.root)
    for info in targets:
        findings.extend(error_findings(info, errors, verbose, floor))
    findings.extend(run_rules(ctx, {info.path for info in targets}, errors, verbose, jobs))
    findings.sort(key=lambda f: f.sort_key())
    return findings


def error_findings(info: ModuleInfo, errors: list[str], verbose: bool = False, python_floor: Optional[tuple] = None) -> list[Finding]:
    """RPL001 for a file that does not parse (saying so where the project requires a newer
    Python than the one running the check: its syntax may be that Python's, `type` aliases or
    PEP 701 f-strings); a file that could not be read adds a line to `errors`."""
    if info.error is None:
        return []
    kind, message, line, col = info.error
    if kind == "syntax-error":
        if python_floor is not None and tuple(python_floor[:2]) > sys.version_info[:2]:
            wanted = ".".join(map(str, python_floor[:2]))
            message = (
                f"Python {sys.version_info[0]}.{sys.version_info[1]} cannot parse this file ({message}); the project "
                f"requires Python >= {wanted}: run repro-lint with Python {wanted} to check it"
            )
        return [Finding("RPL001", "syntax-error", message, Location(info.path, line, col + 1, line, col + 1), severity="error")]
    errors.append(f"{info.path}: {message}")
    if verbose and "traceback" in info.extra:
        errors.append(info.extra["traceback"].rstrip())
    return []
