"""The fix engine: rules describe edits as data (`edits`), one engine applies them.

`apply_fixes` fixes each file that has fixable findings, one file at a time:
1. the fixes of its findings (safe ones; unsafe ones too with `unsafe=True`) are applied
   (`apply.Planner`);
2. the new text is checked again in memory, against the same project, and the fixes of
   what is still fixable are applied, for a few rounds, until nothing changes;
3. the result must parse and must not have findings the original did not have. Otherwise
   the file is left as it was and the failure is reported with the rule codes to blame;
4. the file is written atomically (`writer`), in its own encoding and line endings, unless
   it changed on disk meanwhile. With `write=False` only the diff is produced.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from repro_lint import catalog
from repro_lint.config import Config
from repro_lint.engine import Report, check_facts, extract_source, project_facts, select
from repro_lint.findings import Finding
from repro_lint.fix.apply import FixError, Planner
from repro_lint.fix.source import SourceError, SourceFile
from repro_lint.fix.writer import ChangedOnDisk, write_atomic
from repro_lint.model import ModuleInfo

Selector = Callable[[Report], list]


@dataclass
class FixOutcome:
    fixed: int = 0
    diff: str = ""
    errors: list = field(default_factory=list)  # one line each; the CLI exits 2 on any
    changed_paths: list = field(default_factory=list)


class _Failed(Exception):
    def __init__(self, codes: list, reason: str) -> None:
        super().__init__(reason)
        self.codes = codes
        self.reason = reason


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


def unified_diff(path: str, old: str, new: str) -> str:
    a, b = (path, path) if path.startswith("/") else (f"a/{path}", f"b/{path}")
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), a, b)
    out = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


class _FileFixer:
    """Fixes one file against the project's facts."""

    def __init__(self, engine: "_Engine", display: str, findings: list) -> None:
        self.e = engine
        self.display = display
        self.path = Path(display)
        self.key = str(self.path.resolve())
        self.findings = findings

    def _check(self, text_bytes: bytes) -> tuple[ModuleInfo, list, list]:
        info = extract_source(self.path, text_bytes, self.e.cfg, self.e.root)
        facts = dict(self.e.facts)
        facts[self.key] = info
        found, errors = check_facts(facts, {self.key}, self.e.cfg, self.e.root)
        report = Report(root=self.e.root, findings=found, infos={info.path: info})
        return info, self.e.selector(report), errors

    def run(self) -> Optional[tuple[SourceFile, "_Result"]]:
        try:
            src = SourceFile.read(self.path)
        except (OSError, SourceError) as exc:
            raise _Failed(_codes(self.findings), f"cannot read it: {exc}")
        known = self.e.facts.get(self.key)
        if known is not None and known.digest != hashlib.blake2b(src.raw, digest_size=16).hexdigest():
            raise _Failed(_codes(self.findings), "it changed on disk while it was being checked")
        try:
            _, baseline, base_errors = self._check(src.raw)
            result = self._rounds(src, self.findings, baseline)
            if result.text == src.text:
                return None
            self._verify(src, result, baseline, base_errors)
        except SourceError as exc:
            raise _Failed(_codes(self.findings), str(exc))
        return src, result

    def _rounds(self, src: SourceFile, todo: list, baseline: list, only: Optional[str] = None) -> "_Result":
        """Apply fixes until nothing changes; `only`: the fixes of that rule alone."""
        result = _Result(src.text, None, 0, baseline, [], set())
        for _ in range(self.e.settings["rounds"]):
            todo = [f for f in todo if self.e.allowed(f) and (only is None or f.code == only)]
            if not todo:
                return result
            new = self._apply(result.text, todo)
            if new == result.text:
                return result
            self._parses(new, todo)
            info, after, errors = self._check(src.encode(new))
            if info.error is not None:
                raise _Failed(_codes(todo), f"the fixed file cannot be analysed: {info.error[1]}")
            result.fixed += _count_fixed(todo, result.findings, after)
            result.codes.update(f.code for f in todo)
            result.text, result.info, result.findings, result.errors = new, info, after, errors
            todo = [f for f in after if f.location.path == info.path]
        todo = [f for f in todo if self.e.allowed(f) and (only is None or f.code == only)]
        if todo and self._apply(result.text, todo) != result.text:
            raise _Failed(_codes(todo), f"fixes did not settle after {self.e.settings['rounds']} rounds")
        return result

    def _apply(self, text: str, findings: list) -> str:
        planner = Planner(text, str(self.e.cfg.seed), self.e.project_roots, self.e.settings["aliases"])
        for f in findings:
            try:
                planner.add(f.fix, f.code)
            except FixError as exc:
                raise _Failed([exc.code], exc.message)
        try:
            return planner.build()
        except FixError as exc:
            raise _Failed([exc.code], exc.message)

    def _parses(self, text: str, todo: list) -> None:
        try:
            compile(text, self.display, "exec", dont_inherit=True)  # the parser's and the compiler's checks
        except (SyntaxError, ValueError) as exc:
            where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) else ""
            raise _Failed(_codes(todo), f"the fixed file does not compile: {getattr(exc, 'msg', exc)}{where}")

    def _verify(self, src: SourceFile, result: "_Result", baseline: list, base_errors: list) -> None:
        """No new errors, and no finding the original did not have (`revealed-by-intent` aside)."""
        new_errors = [e for e in result.errors if e not in base_errors]
        if new_errors:
            raise _Failed(sorted(result.codes), f"checking the fixed file fails: {new_errors[0]}")
        added = Counter(finding_key(f) for f in result.findings if not f.code.startswith(self.e.settings["exempt"]))
        added.subtract(Counter(finding_key(f) for f in baseline))
        new = [f for f in result.findings if added[finding_key(f)] > 0]
        if new:
            first = new[0]
            raise _Failed(
                self._blame(src, baseline, sorted(result.codes)),
                f"the fixed file would have a new finding {first.code} at line {first.location.line} ({first.message})",
            )

    def _blame(self, src: SourceFile, baseline: list, codes: list) -> list:
        """The rule codes whose fixes alone already give a new finding (all codes if none does alone)."""
        if len(codes) == 1:
            return codes
        guilty = []
        for code in codes:
            try:
                alone = self._rounds(src, self.findings, baseline, only=code)
                if alone.text != src.text:
                    self._verify(src, alone, baseline, [])
            except _Failed:
                guilty.append(code)
        return guilty or codes


@dataclass
class _Result:
    """Where the rounds of fixing a file got to."""

    text: str
    info: Optional[ModuleInfo]
    fixed: int
    findings: list  # selected findings of the file with `text`
    errors: list
    codes: set  # rules whose fixes were applied


def _codes(findings: list) -> list:
    return sorted({f.code for f in findings})


def _count_fixed(todo: list, before: list, after: list) -> int:
    """How many of the findings whose fixes were applied are gone afterwards."""
    b = Counter(finding_key(f) for f in before)
    a = Counter(finding_key(f) for f in after)
    t = Counter(finding_key(f) for f in todo)
    return sum(min(n, max(0, b[k] - a[k])) for k, n in t.items())


class _Engine:
    def __init__(self, report: Report, cfg: Config, unsafe: bool, jobs: int, selector: Selector, use_cache: bool) -> None:
        self.report = report
        self.cfg = cfg
        self.unsafe = unsafe
        self.root = report.root
        self.selector = selector
        self.settings = _settings()
        self.facts = project_facts([Path(p) for p in report.infos], cfg, report.root, jobs=jobs, use_cache=use_cache)
        self.project_roots = frozenset(i.module.split(".", 1)[0] for i in self.facts.values() if i.module)

    def allowed(self, f: Finding) -> bool:
        return f.fixable and (f.fix.safety == "safe" or self.unsafe)  # type: ignore[union-attr]


def apply_fixes(
    report: Report,
    findings: list,
    cfg: Config,
    unsafe: bool = False,
    write: bool = True,
    jobs: int = 1,
    selector: Optional[Selector] = None,
    use_cache: bool = True,
) -> FixOutcome:
    """Fix the fixable `findings` (already selected: `# noqa` and disabled rules are out).

    `selector` turns a re-check's report into selected findings the same way `findings`
    were selected (default: the configuration's selection)."""
    outcome = FixOutcome()
    by_file: dict[str, list] = {}
    for f in findings:
        if f.fixable and (f.fix.safety == "safe" or unsafe):  # type: ignore[union-attr]
            by_file.setdefault(f.location.path, []).append(f)
    if not by_file:
        return outcome
    engine = _Engine(report, cfg, unsafe, jobs, selector or (lambda r: select(r, cfg)), use_cache)
    for display in sorted(by_file):
        fixer = _FileFixer(engine, display, by_file[display])
        try:
            result = fixer.run()
        except _Failed as exc:
            outcome.errors.append(f"{display}: {', '.join(exc.codes)}: fix not applied: {exc.reason}")
            continue
        if result is None:
            continue
        src, res = result
        text, info, fixed = res.text, res.info, res.fixed
        if write:
            try:
                write_atomic(src.path, src.encode(text), src.raw)
            except ChangedOnDisk as exc:
                outcome.errors.append(f"{display}: fix not written: {exc}")
                continue
            except (OSError, SourceError) as exc:
                outcome.errors.append(f"{display}: fix not written: {exc}")
                continue
        if info is not None:
            engine.facts[fixer.key] = info  # later files are checked against the fixed one
        outcome.fixed += fixed
        outcome.diff += unified_diff(display, src.text, text)
        outcome.changed_paths.append(display)
    return outcome
