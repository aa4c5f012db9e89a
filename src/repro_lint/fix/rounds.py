"""The fix engine: rules describe edits as data (`edits`), one engine applies them.

`apply_fixes` fixes every file that has fixable findings, in rounds:
1. each file gets the fixes of its findings (safe ones; unsafe ones too with `unsafe=True`),
   applied by `apply.Planner`; the result must compile;
2. the new texts are checked again, in memory, against the same project: the files changed
   in the round and every other file of the programs that reach them (one check, building
   only those programs), because a fix in one file can reveal a finding in another (a
   seed gives the whole program determinism intent, and then a `cudnn.benchmark = True`
   elsewhere in it is reported). The fixes of what is still fixable, in the changed files
   and in the files where findings appeared, are applied in the next round, until nothing
   changes: one run reaches the state that a second run would leave alone;
3. each file's result must not have findings or errors its original did not have.
   Otherwise that file is left as it was and the failure is reported with the rule codes
   to blame (found by applying each rule's fixes alone);
4. the file is written atomically (`writer`), in its own encoding and line endings, unless
   it changed on disk meanwhile. With `write=False` only the diff is produced.
"""

from __future__ import annotations

import dataclasses
import hashlib
import multiprocessing
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from repro_lint.core import catalog
from repro_lint.check.cache import CorruptCache
from repro_lint.discover.config import Config
from repro_lint.check.api import check_facts, check_index, checked_alike, entry_programs, extract_source, project_facts
from repro_lint.check.report import Report
from repro_lint.check.select import select
from repro_lint.core.findings import Finding
from repro_lint.fix import line_inserts
from repro_lint.fix.planning import FixError
from repro_lint.core.edits import SeedSpec
from repro_lint.fix.source import SourceError, SourceFile
from repro_lint.fix.style import Style, style_for
from repro_lint.fix.writer import NotWritten, write_atomic
from repro_lint.facts.model import ModuleInfo
from repro_lint.facts.families.frameworks import BY_NAME

Selector = Callable[[Report], list]
# How re-checks are done: `check_facts` over a fresh index by default; a language server
# passes its own (same signature) that checks against the index it keeps up to date.
CheckFacts = Callable[..., tuple]


@dataclass
class FixOutcome:
    fixed: int = 0
    diff: str = ""
    # every finding whose fix was applied and is gone, in the order applied: those of the
    # check first, then the follow-ons (findings the earlier fixes revealed, `follow_on`)
    applied: list = field(default_factory=list)
    follow_on: set = field(default_factory=set)  # ids of the follow-ons in `applied`
    errors: list = field(default_factory=list)  # one line each; the CLI exits 2 on any
    changed_paths: list = field(default_factory=list)
    texts: dict = field(default_factory=dict)  # display path -> the fixed file's bytes
    # resolved path -> the facts of a fixed file's text where a check extracts them alike
    # (`check.api.checked_alike`): the check after --fix takes them as they are
    facts: dict = field(default_factory=dict)


class _Failed(Exception):
    def __init__(self, codes: list, reason: str) -> None:
        super().__init__(reason)
        self.codes = codes
        self.reason = reason

    def __reduce__(self):  # (sent back from a round's worker process)
        return (_Failed, (self.codes, self.reason))


def _settings() -> dict:
    data = catalog.load("fixes")
    return {
        "aliases": dict(data.get("import-aliases", {})),
        "exempt": tuple(data.get("recheck", {}).get("revealed-by-intent", ())),
        "rounds": int(data.get("recheck", {}).get("max-rounds", 4)),
    }


def finding_key(f: Finding) -> tuple:
    """What identifies a finding across edits that move lines: its rule and message."""
    return (f.code, re.sub(r"\d+", "#", f.message))


def _error_key(error: str) -> str:
    """An error line without the details that vary from run to run (a recursion depth)."""
    return re.sub(r"(internal error in rule \w+): .*", r"\1", error)


def _codes(findings) -> list:
    return sorted({f.code for f in findings})


def _gone(todo: list, before: list, after: list, path: str) -> list:
    """The findings whose fixes were applied (`todo`) that are gone afterwards from the file
    at `path`: its own findings first (a fix of another file's finding with the same message
    may have made the same edit here: that finding is counted where it is reported)."""
    left = Counter(finding_key(f) for f in before)
    left.subtract(Counter(finding_key(f) for f in after))
    out = []
    for f in sorted(todo, key=lambda x: x.location.path != path):
        k = finding_key(f)
        if left[k] > 0:
            left[k] -= 1
            out.append(f)
    return out


@dataclass(eq=False)
class _File:
    """One file on its way through the rounds."""

    display: str
    key: str  # resolved path
    src: SourceFile
    todo: list  # findings whose fixes the next round applies
    baseline: list = field(default_factory=list)  # selected findings of the original
    base_errors: list = field(default_factory=list)
    text: str = ""
    info: Optional[ModuleInfo] = None
    findings: list = field(default_factory=list)  # selected findings of `text`
    errors: list = field(default_factory=list)
    applied: list = field(default_factory=list)  # findings whose fixes were applied and are gone
    codes: set = field(default_factory=set)  # rules whose fixes were applied
    failure: Optional[_Failed] = None
    start: list = field(default_factory=list)  # the findings it started with
    revealed: bool = False  # joined the rounds because other files' fixes revealed its findings
    # (text, the fixes applied) that applying left unchanged: applying them again would too
    settled: Optional[tuple] = None

    def fresh(self) -> "_File":
        """The same file back at its start."""
        return _File(
            self.display, self.key, self.src, list(self.start), self.baseline, self.base_errors, self.src.text,
            findings=self.baseline, errors=self.base_errors, start=self.start, revealed=self.revealed,
        )


def _bodies_read(facts: dict) -> dict:
    """`facts` with every cached body read now (the re-checks reach any of them), or {}
    when one does not match its digest (then they are worked out again)."""
    try:
        for info in facts.values():
            info.__getstate__()
    except CorruptCache:
        return {}
    return facts


class _Engine:
    def __init__(
        self, report: Report, cfg: Config, unsafe: bool, jobs: int, selector: Selector, use_cache: bool,
        checker: Optional[CheckFacts] = None, reaching: Optional[dict] = None,
    ) -> None:
        self.cfg = cfg
        self.unsafe = unsafe
        self.jobs = jobs
        self.root = report.root
        self.selector = selector
        self.settings = _settings()
        self.facts = _bodies_read(dict(report.facts)) or project_facts([Path(p) for p in report.infos], cfg, report.root, jobs=jobs, use_cache=use_cache)
        roots = {i.module.split(".", 1)[0] for i in self.facts.values() if i.module}
        # a top-level `src/` folder is a layout root and a package (the index resolves
        # `src.models.x` as `models.x`): `from src.utils import x` is the project's own import
        if "src" not in roots and (Path(self.root) / "src").is_dir():
            roots.add("src")
        self.project_roots = frozenset(roots)
        self.check_facts = checker or check_facts
        self.scope = {k for k, i in self.facts.items() if i.path in report.infos}  # the files the user asked to check
        self.original: dict[str, list] = {}  # display path -> selected findings of the original (files outside the rounds)
        self.original_errors = list(report.errors)
        self.excluded: set = set()  # rules whose fixes a file is fixed again without (`without`)
        self._extracted: dict = {}  # (resolved path, fixed text) -> its facts (`current_facts`)
        self._built: Optional[tuple] = None  # (facts, index, programs) that `_members` built
        self._members(self.facts, reaching)

    def _members(self, facts: dict, reaching: Optional[dict] = None) -> None:
        """Which entry points' programs reach each module, and which files each program holds:
        re-checks build only the programs that reach the files changed, and check all their files.
        `reaching`: the answer for `facts` when the caller holds it already (an editor's index)."""
        self._built = None
        if reaching is None:
            index, programs, reaching = entry_programs(facts, self.cfg, self.root)
            if self.check_facts is check_facts:  # (a check of the same facts takes them: `_check_facts`)
                self._built = (facts, index, programs)
        self.reaching = reaching
        self.members: dict[str, set] = {}
        for key, info in facts.items():
            for entry in self.reaching.get(info.module, ()):
                self.members.setdefault(entry, set()).add(key)

    def allowed(self, f: Finding, only: Optional[str] = None) -> bool:
        return (
            f.fixable and (f.fix.safety == "safe" or self.unsafe)  # type: ignore[union-attr]
            and (only is None or f.code == only) and f.code not in self.excluded
        )

    # -- checking texts in memory --------------------------------------------------------
    def current_facts(self, files: list, wanted: Optional[set] = None) -> tuple[dict, dict]:
        """(every project file's facts with `files` at their current text, the facts of those
        of `files` that were extracted again: the changed ones and the `wanted` ones (ids))."""
        facts = dict(self.facts)
        infos = {}
        for f in files:
            if f.text != f.src.text or (wanted is not None and id(f) in wanted):
                info = self._extracted.get((f.key, f.text))
                if info is None:
                    known = self.facts.get(f.key) if f.text == f.src.text else None
                    info = extract_source(f.src.path, f.src.encode(f.text), self.cfg, self.root, known)
                    if f.text != f.src.text:  # (a fixed text: a later round may check it again unchanged)
                        self._extracted[(f.key, f.text)] = info
                facts[f.key] = info
                infos[f.key] = info
        return facts, infos

    def check(self, files: list, targets: list, others: Iterable[str] = (), facts: Optional[tuple] = None) -> dict:
        """Check `targets` (files) and `others` (resolved paths of files that are not among
        `files`, at their text on disk) with every file of `files` at its current text.

        Returns display -> (facts, selected findings, errors) for the targets, and resolved
        path -> the same for `others`."""
        facts, infos = facts or self.current_facts(files, {id(f) for f in targets})
        for key in others:
            infos[key] = facts[key]
        keys = {f.key for f in targets} | set(others)
        entries: set = set()
        for key in keys:
            entries |= self.reaching.get(infos[key].module, set())
        # programs that build what they run by name bear on where other programs' fixes may
        # go (`analysis.by_name.bypassing_entry`): they are built too
        for module in self._by_name_modules():
            entries |= self.reaching.get(module, set())
        found, errors = self._check_facts(facts, keys, entries)
        shown = {infos[k].path: infos[k] for k in keys}
        selected = self.selector(Report(root=self.root, findings=found, infos=shown))
        by_path: dict[str, list] = {}
        for x in selected:
            by_path.setdefault(x.location.path, []).append(x)
        out = {}
        for name, key in [*((f.display, f.key) for f in targets), *((k, k) for k in others)]:
            info = infos[key]
            out[name] = (info, by_path.get(info.path, []), [e for e in errors if e.startswith(f"{info.path}: ")])
        return out

    def _check_facts(self, facts: dict, keys: set, entries: set) -> tuple:
        """`self.check_facts`; `check_facts` with the index and programs `_members` built of
        the same facts, where it did (each program serves one check: rules let go of it)."""
        built, self._built = self._built, None
        if built is None or not _same_facts(built[0], facts):
            return self.check_facts(facts, keys, self.cfg, self.root, entries=entries)
        _, index, programs = built
        return check_index(index, [facts[k] for k in keys if k in facts], self.cfg, entries, programs)

    def _by_name_modules(self) -> set:
        hit = self.__dict__.get("_by_name")
        if hit is None:
            hit = self.__dict__["_by_name"] = {info.module for info in self.facts.values() if info.summary(BY_NAME)}
        return hit

    # -- rounds ----------------------------------------------------------------------------
    def apply(self, f: _File, text: str, findings: list) -> str:
        placed = self._placed(f, text, findings)
        return placed if placed is not None else self._planned(f, text, findings)

    def _edits(self, f: _File, findings: list) -> tuple[list, Style, str]:
        """(the findings with this file's edits, the file's style, the seed)."""
        # (of a fix that edits several files, only this file's edits: a finding that a
        # round's re-check reveals can carry edits of another file, which are not made here)
        parts = [p for p in (dict(_parts(x)).get(f.display) for x in findings) if p is not None]
        return parts, style_for(f.src.path, self.root), str(self.cfg.seed)

    def _placed(self, f: _File, text: str, findings: list) -> Optional[str]:
        """The text with the fixes applied where `line_inserts` places all their edits on the
        text; None where they need libcst's tree (`_planned`)."""
        parts, style, seed = self._edits(f, findings)
        return line_inserts.plan(text, seed, self.project_roots, self.settings["aliases"], style, [(p.fix, p.code) for p in parts])

    def _planned(self, f: _File, text: str, findings: list) -> str:
        """The text with the fixes applied on libcst's tree."""
        from repro_lint.fix.apply import Planner  # (libcst: imported only when a file needs it)

        parts, style, seed = self._edits(f, findings)
        planner = Planner(text, seed, self.project_roots, self.settings["aliases"], style)
        for part in parts:
            try:
                planner.add(part.fix, part.code)
            except FixError as exc:
                raise _Failed([exc.code], exc.message)
        try:
            return planner.build()
        except FixError as exc:
            raise _Failed([exc.code], exc.message)

    def rounds(self, files: list, only: Optional[str] = None, spread: bool = True) -> None:
        """Fix `files` until nothing changes (`only`: the fixes of that rule alone); a file
        that fails gets its `failure` and goes back to its original text. With `spread`, a
        file outside `files` where a round's changes reveal fixable findings joins them."""
        for _ in range(self.settings["rounds"]):
            self._route(files, only)
            changed: dict = {}
            work = []
            for f in files:
                todo = [x for x in f.todo if self.allowed(x, only)]
                if f.failure is not None or not todo or self._settled(f, todo):
                    continue
                work.append((f, todo))
            for (f, todo), (new, failure) in zip(work, self._apply_all(work)):
                if failure is not None:
                    self._fail(f, failure, todo)
                elif new != f.text:
                    changed[f.display] = (new, todo)
                else:
                    f.settled = (f.text, _fix_keys(todo))
            if not changed:
                break
            old = {f.display: f.text for f in files}
            targets = [f for f in files if f.display in changed]
            for f in targets:
                f.text = changed[f.display][0]
            try:
                facts, infos = self.current_facts(files, {id(f) for f in targets})
                if spread:
                    self._members(facts)
                others = self._revealed_scope(files, targets, facts) if spread else set()
                watched = [f for f in files if f.key in others and f.failure is None and f not in targets]
                others -= {f.key for f in files}
                results = self.check(files, targets + watched, others, facts=(facts, infos))
            except SourceError as exc:
                for f in targets:
                    f.text = old[f.display]
                    self._fail(f, exc, changed[f.display][1])
                continue
            for f in targets:
                info, after, errors = results[f.display]
                todo = changed[f.display][1]
                if info.error is not None:
                    f.text = old[f.display]
                    self._fail(f, _Failed(_codes(todo), f"the fixed file cannot be analysed: {info.error[1]}"), todo)
                    continue
                f.applied += _gone(todo, f.findings, after, f.display)
                f.codes.update(x.code for x in todo)
                f.info, f.findings, f.errors, f.todo = info, after, errors, after
            for f in watched:
                _, f.findings, f.errors = results[f.display]
                f.todo = f.findings
            for key in sorted(others):
                self._join(files, key, results[key], only)
        for f in files:
            todo = [x for x in f.todo if self.allowed(x, only)]
            if f.failure is None and todo and not self._settled(f, todo):
                try:
                    settled = f.src.as_written(self.apply(f, f.text, todo)) == f.text
                except _Failed as exc:
                    self._fail(f, exc, todo)
                    continue
                if not settled:
                    self._fail(f, _Failed(_codes(todo), f"fixes did not settle after {self.settings['rounds']} rounds"), todo)

    def _apply_one(self, f: _File, todo: list, planned: bool = False, placed: Optional[str] = None) -> tuple[str, Optional[_Failed]]:
        """(the file's text with `todo` fixed, as it would be written, or the failure).
        `placed`: what `_placed` made of it; with `planned`, it answered None (libcst's tree)."""
        try:
            if placed is not None:
                new = placed
            else:
                new = self._planned(f, f.text, todo) if planned else self.apply(f, f.text, todo)
            if new != f.text:
                new = f.src.as_written(new)
            if new != f.text:
                self._compiles(f, new, todo)
            return new, None
        except _Failed as exc:
            return f.text, exc
        except SourceError as exc:
            return f.text, _Failed(_codes(todo), str(exc))

    def _apply_all(self, work: list) -> list:
        """`_apply_one` of each (file, todo). The fixes placed on the text are applied here;
        those that need libcst's tree, in worker processes when there are several such files
        and cores (parsing and laying out a file with libcst is most of its fix's time; a
        fix placed on the text costs less than a worker process)."""
        out: list = [None] * len(work)
        heavy = []
        for i, (f, todo) in enumerate(work):
            placed = self._placed(f, f.text, todo)
            if placed is None:
                heavy.append(i)
            else:
                out[i] = self._apply_one(f, todo, placed=placed)
        for i, result in zip(heavy, self._planned_all([work[i] for i in heavy])):
            out[i] = result
        return out

    def _planned_all(self, work: list) -> list:
        """`_apply_one` of each (file, todo) on libcst's tree, in worker processes when there
        are several files and cores."""
        jobs = min(self.jobs, len(work))
        if jobs < 2 or len(work) < PARALLEL_MIN_FILES or "fork" not in multiprocessing.get_all_start_methods():
            return [self._apply_one(f, todo, planned=True) for f, todo in work]
        import repro_lint.fix.apply  # noqa: F401  (libcst, imported once here rather than in each worker)

        global _ROUND
        _ROUND = (self, work)
        try:
            with multiprocessing.get_context("fork").Pool(jobs) as pool:
                return pool.map(_apply_in_worker, range(len(work)), chunksize=1)
        except (OSError, multiprocessing.ProcessError):
            return [self._apply_one(f, todo, planned=True) for f, todo in work]
        finally:
            _ROUND = None

    @staticmethod
    def _settled(f: _File, todo: list) -> bool:
        """Whether applying `todo` to the file's text was seen to change nothing (parsing and
        laying out a file again is most of a fix's cost)."""
        return f.settled is not None and f.settled[0] == f.text and f.settled[1] == _fix_keys(todo)

    def _route(self, files: list, only: Optional[str]) -> None:
        """Edits of another file than their finding's (the flags or environment of a program,
        in its own entry module, for a finding located in a module it reaches) made in that
        file: it joins the rounds when it is not in them. `apply` makes each file's own."""
        by_display = {g.display: g for g in files}
        for f in list(files):
            if f.failure is not None:
                continue
            for x in f.todo:
                if not x.fixable or not self.allowed(x, only):
                    continue
                for path, part in _parts(x):
                    if path == f.display:
                        continue
                    g = by_display.get(path)
                    if g is None:
                        g = by_display[path] = self._open(files, path)
                    if g is not None and g.failure is None and not any(
                        y.location == x.location and y.code == x.code and y.message == x.message for y in g.todo
                    ):
                        g.todo.append(x)

    def _open(self, files: list, display: str) -> Optional["_File"]:
        """A file joining the rounds to take another file's finding's edits (None: it cannot)."""
        path = Path(display)
        key = str(path.resolve())
        try:
            src = SourceFile.read(path)
        except (OSError, SourceError):
            return None
        known = self.facts.get(key)
        if known is None or known.digest != hashlib.blake2b(src.raw, digest_size=16).hexdigest():
            return None
        baseline = self.original.get(display, [])
        base_errors = [e for e in self.original_errors if e.startswith(f"{display}: ")]
        g = _File(display, key, src, [], baseline, base_errors, src.text, findings=list(baseline), errors=base_errors)
        g.revealed = True
        files.append(g)
        return g

    def _revealed_scope(self, files: list, targets: list, facts: dict) -> set:
        """Resolved paths of the files, among those the user asked to check, that the
        programs reaching this round's changed files hold: where findings can appear."""
        entries: set = set()
        for f in targets:
            entries |= self.reaching.get(facts[f.key].module, set())
        out: set = set()
        for entry in entries:
            out |= self.members.get(entry, set())
        return (out & self.scope) - {f.key for f in targets}

    def _join(self, files: list, key: str, result: tuple, only: Optional[str]) -> None:
        """A file where fixable findings appeared after other files' fixes joins the rounds."""
        info, found, errors = result
        todo = [x for x in found if self.allowed(x, only)]
        if not todo or info.error is not None:
            return
        display = info.path
        try:
            src = SourceFile.read(Path(display))
        except (OSError, SourceError):
            return  # it stays as it is; a later run reports it
        if hashlib.blake2b(src.raw, digest_size=16).hexdigest() != self.facts[key].digest:
            return
        baseline = self.original.get(display, [])
        base_errors = [e for e in self.original_errors if e.startswith(f"{display}: ")]
        joined = _File(display, key, src, todo, baseline, base_errors, src.text, info, found, errors, start=todo)
        joined.revealed = True
        files.append(joined)

    @staticmethod
    def _fail(f: _File, exc: Exception, todo: list) -> None:
        f.failure = exc if isinstance(exc, _Failed) else _Failed(_codes(todo), str(exc))
        f.text = f.src.text

    def _compiles(self, f: _File, text: str, todo: list) -> None:
        try:
            compile(text, f.display, "exec", dont_inherit=True)  # the parser's and the compiler's checks
        except (SyntaxError, ValueError) as exc:
            where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) else ""
            raise _Failed(_codes(todo), f"the fixed file does not compile: {getattr(exc, 'msg', exc)}{where}")

    def problem(self, f: _File) -> Optional[str]:
        """What is wrong with a fixed file's result: an error or a finding its original lacks."""
        base = {_error_key(e) for e in f.base_errors}
        new_errors = [e for e in f.errors if _error_key(e) not in base]
        if new_errors:
            return f"checking the fixed file fails: {new_errors[0]}"
        added = Counter(finding_key(x) for x in f.findings if not x.code.startswith(self.settings["exempt"]))
        added.subtract(Counter(finding_key(x) for x in f.baseline))
        new = [x for x in f.findings if added[finding_key(x)] > 0]
        if new:
            return f"the fixed file would have a new finding {new[0].code} at line {new[0].location.line} ({new[0].message})"
        return None

    def without(self, f: _File, codes: list) -> Optional[_File]:
        """The file fixed again from its start without the fixes of rules `codes` (those that
        made it fail): what the other rules' fixes make of it, or None when they fail too or
        change nothing. A refused fix does not take the file's other fixes with it."""
        rest = f.fresh()
        rest.todo = [x for x in rest.todo if x.code not in codes]
        if not rest.todo:
            return None
        self.excluded = set(codes)
        try:
            self.rounds([rest], spread=False)
        finally:
            self.excluded = set()
        if rest.failure is not None or rest.text == rest.src.text or self.problem(rest) is not None:
            return None
        return rest

    def blame(self, f: _File) -> list:
        """The rule codes whose fixes alone already make the file fail (all if none does alone)."""
        codes = sorted(f.codes)
        if len(codes) <= 1:
            return codes
        guilty = []
        for code in codes:
            alone = f.fresh()
            self.rounds([alone], only=code, spread=False)
            if alone.failure is not None or (alone.text != f.src.text and self.problem(alone)):
                guilty.append(code)
        return guilty or codes


def apply_fixes(
    report: Report,
    findings: list,
    cfg: Config,
    unsafe: bool = False,
    write: bool = True,
    jobs: int = 1,
    selector: Optional[Selector] = None,
    use_cache: bool = True,
    overrides: Optional[dict] = None,
    checker: Optional[CheckFacts] = None,
    reaching: Optional[dict] = None,
) -> FixOutcome:
    """Fix the fixable `findings` (already selected: `# noqa` and disabled rules are out).

    `selector` turns a re-check's report into selected findings the same way `findings`
    were selected (default: the configuration's selection). `overrides` maps resolved paths
    to contents that are not on disk (stdin); those are never written. `checker` and
    `reaching` replace `check_facts` and `programs_reaching` (a language server answers both
    from the index it keeps)."""
    overrides = overrides or {}
    outcome = FixOutcome()
    by_file: dict[str, list] = {}
    elsewhere: list = []  # findings whose fix edits another file than theirs
    for f in findings:
        if f.fixable and (f.fix.safety == "safe" or unsafe):  # type: ignore[union-attr]
            for path, part in _parts(f):
                by_file.setdefault(path, []).append(part)
                if path != f.location.path and f not in elsewhere:
                    elsewhere.append(f)
    if not by_file:
        return outcome
    engine = _Engine(report, cfg, unsafe, jobs, selector or (lambda r: select(r, cfg)), use_cache, checker, reaching)
    for f in findings:
        engine.original.setdefault(f.location.path, []).append(f)
    files: list[_File] = []
    for display in sorted(by_file):
        path = Path(display)
        try:
            key = str(path.resolve())
            src = SourceFile.from_bytes(path, overrides[key]) if key in overrides else SourceFile.read(path)
        except (OSError, SourceError) as exc:
            outcome.errors.append(f"{display}: {', '.join(_codes(by_file[display]))}: fix not applied: cannot read it: {exc}")
            continue
        known = engine.facts.get(str(path.resolve()))
        if known is not None and known.digest != hashlib.blake2b(src.raw, digest_size=16).hexdigest():
            outcome.errors.append(f"{display}: fix not applied: it changed on disk while it was being checked")
            continue
        files.append(_File(display, str(path.resolve()), src, by_file[display], text=src.text, start=by_file[display]))
    if not files:
        return outcome
    base = engine.check(files, files)
    for f in files:
        _, f.baseline, f.base_errors = base[f.display]
        f.findings, f.errors = f.baseline, f.base_errors
    engine.rounds(files)
    for i, f in enumerate(files):
        if f.failure is None and f.text != f.src.text:
            reason = engine.problem(f)
            if reason is not None:
                f.failure = _Failed(engine.blame(f), reason)
                rest = engine.without(f, f.failure.codes)
                if rest is not None:  # the other rules' fixes of the file stand
                    outcome.errors.append(f"{f.display}: {', '.join(f.failure.codes)}: fix not applied: {f.failure.reason}")
                    f = files[i] = rest
        if f.failure is not None:
            outcome.errors.append(f"{f.display}: {', '.join(f.failure.codes)}: fix not applied: {f.failure.reason}")
            continue
        if f.text == f.src.text:
            continue
        if write and f.key not in overrides:
            try:
                write_atomic(f.src.path, f.src.encode(f.text), f.src.raw, report.root)
            except (NotWritten, OSError, SourceError) as exc:
                outcome.errors.append(f"{f.display}: fix not written: {exc}")
                continue
        outcome.applied += f.applied
        outcome.diff += f.src.diff(f.display, f.text)
        outcome.changed_paths.append(f.display)
        outcome.texts[f.display] = data = f.src.encode(f.text)
        info = engine._extracted.get((f.key, f.text))
        if info is not None and checked_alike(f.src.path, data):
            outcome.facts[f.key] = info
    if elsewhere and outcome.changed_paths:
        # (a fix split over files is counted once: its own file's part may have counted it)
        counted = Counter((f.location.path, finding_key(f)) for f in outcome.applied)
        for f in _fixed_elsewhere(engine, files, elsewhere, outcome.changed_paths):
            k = (f.location.path, finding_key(f))
            if counted[k] > 0:
                counted[k] -= 1
            else:
                outcome.applied.append(f)
    # a follow-on: a finding the check did not report fixable, which an earlier round's fixes
    # revealed or made fixable (a seeding call gives the program determinism intent; then its
    # flags are fixed too; once every program that reaches a shared loader seeds torch, the
    # loader can follow that seed): `check` announces the same (`check.cascade`)
    reported = Counter((f.location.path, finding_key(f)) for f in findings if f.fixable)
    for f in outcome.applied:
        k = (f.location.path, finding_key(f))
        if reported[k] > 0:
            reported[k] -= 1
        else:
            outcome.follow_on.add(id(f))
    outcome.fixed = len(outcome.applied)
    return outcome


# Below this many files to fix in a round, worker processes cost more than they save.
PARALLEL_MIN_FILES = 4
# What the worker processes of a round read (set before they are forked).
_ROUND: Optional[tuple] = None


def _apply_in_worker(i: int) -> tuple[str, Optional[_Failed]]:
    engine, work = _ROUND  # type: ignore[misc]
    f, todo = work[i]
    return engine._apply_one(f, todo, planned=True)


def _same_facts(a: dict, b: dict) -> bool:
    """Whether two projects' facts are the same objects, file by file."""
    return a is b or (len(a) == len(b) and all(b.get(k) is info for k, info in a.items()))


def _fix_keys(todo: list) -> tuple:
    """What a round applies, comparable between rounds: each finding and its fix's edits."""
    return tuple((finding_key(x), repr(x.fix)) for x in todo)


def _parts(f: Finding) -> list:
    """The finding's fix split by the file each edit changes: (display path, the finding with
    the edits of that file). A fix may change another file than the finding's: the flags of a
    program whose training a launcher starts go into the function the launcher runs."""
    groups: dict[str, list] = {}
    seeds = tuple(e for e in f.fix.edits if isinstance(e, SeedSpec))  # type: ignore[union-attr]
    for e in f.fix.edits:  # type: ignore[union-attr]
        if not isinstance(e, SeedSpec):
            groups.setdefault(getattr(e, "path", "") or f.location.path, []).append(e)
    if list(groups) == [f.location.path]:
        return [(f.location.path, f)]
    return [(path, dataclasses.replace(f, fix=dataclasses.replace(f.fix, edits=tuple(edits) + seeds))) for path, edits in groups.items()]


def _fixed_elsewhere(engine: "_Engine", files: list, findings: list, changed: list) -> list:
    """How many findings whose fixes edited other files are gone, checked in their own files
    against the fixed texts."""
    known = {f.display: f for f in files}
    origins: list = []
    for display in dict.fromkeys(f.location.path for f in findings):
        if display in known:
            origins.append(known[display])
            continue
        try:
            src = SourceFile.read(Path(display))
        except (OSError, SourceError):
            continue
        origins.append(_File(display, str(Path(display).resolve()), src, [], text=src.text))
    if not origins:
        return []
    results = engine.check([*files, *(o for o in origins if o.display not in known)], origins)
    fixed = []
    for f in findings:
        if f.location.path in results and all(p in changed for p, _ in _parts(f) if p != f.location.path):
            after = {finding_key(x) for x in results[f.location.path][1]}
            if finding_key(f) not in after:
                fixed.append(f)
    return fixed
