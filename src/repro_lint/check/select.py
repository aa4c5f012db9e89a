"""Which findings a check shows: `--select`/`--ignore` and the configuration's, per-file
ignores, and `# noqa` comments."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

from repro_lint.core import catalog
from repro_lint.discover.config import Config
from repro_lint.core.findings import Finding
from repro_lint.facts.model import ModuleInfo
from repro_lint.discover.project import FolderResolver

from repro_lint.check.files import display_rel
from repro_lint.check.report import Report


def noqa_view(info: ModuleInfo) -> ModuleInfo:
    view = ModuleInfo(info.path, info.module, info.is_package)
    view.digest = info.digest
    view.noqa = info.noqa
    view.file_noqa = info.file_noqa
    view.file_noqa_set = info.file_noqa_set
    return view


def suppressed(finding: Finding, info: Optional[ModuleInfo]) -> bool:
    """`# noqa`, `# noqa: CODES` on the line, or `# repro-lint: noqa[: CODES]` for the file."""
    return _suppressed(finding.code, finding.location.line, info)


def _suppressed(code: str, line: int, info: Optional[ModuleInfo]) -> bool:
    if info is None:
        return False
    if info.file_noqa_set:
        if not info.file_noqa or any(code.startswith(c) for c in info.file_noqa):
            return True
    if line in info.noqa:
        codes = info.noqa[line]
        if codes is None or any(code.startswith(c) for c in codes):
            return True
    return False


def select(report: Report, cfg: Config, cli_select=None, cli_extend=None, cli_ignore=None, ignore_noqa: bool = False) -> list[Finding]:
    """Findings after selection, per-file ignores and suppression comments (unless
    `ignore_noqa`); findings in test files only with `check-tests`. A finding of a rule
    that `unfixable` (or a `fixable` without it) names carries no fix."""
    eff = Config(
        select=list(cli_select) if cli_select else cfg.select,
        extend_select=list(cfg.extend_select) + list(cli_extend or []),
        ignore=list(cfg.ignore) + list(cli_ignore or []),
        per_file_ignores=cfg.per_file_ignores,
        extend_per_file_ignores=cfg.extend_per_file_ignores,
    )
    out = []
    rels: dict[str, str] = {}
    resolve = FolderResolver()
    for f in report.findings:
        rel = rels.get(f.location.path)
        if rel is None:
            rel = rels[f.location.path] = display_rel(Path(f.location.path), report.root, resolve)
        info = report.infos.get(f.location.path)
        if not cfg.check_tests and info is not None and info.is_test:
            continue
        if f.code != "RPL001" and not eff.enabled(f.code, rel):
            continue
        if f.code != "RPL001" and not ignore_noqa and suppressed(f, info):
            continue
        if f.fix is not None and not cfg.fix_allowed(f.code, _opt_in(f.code)):
            f = dataclasses.replace(f, fix=None)
        elif f.fix is not None and f.fix.follow_ons:
            # a follow-on counts where the same selection would show and fix its finding
            kept = tuple(
                o for o in f.fix.follow_ons
                if eff.enabled(o.code, rels.get(o.path) or display_rel(Path(o.path), report.root, resolve))
                and cfg.fix_allowed(o.code, _opt_in(o.code)) and (ignore_noqa or not _suppressed(o.code, o.line, report.infos.get(o.path)))
            )
            if kept != f.fix.follow_ons:
                f = dataclasses.replace(f, fix=dataclasses.replace(f.fix, follow_ons=kept))
        out.append(f)
    return out


def _opt_in(code: str) -> bool:
    doc = catalog.rule_docs().get(code)
    return doc is not None and doc.fix_opt_in


def known_codes() -> list[str]:
    return list(catalog.rule_docs())
