"""SARIF 2.1.0 output, for code scanning in CI (check and probe write it).

- URIs are relative to the project root, declared in `originalUriBaseIds` as `%SRCROOT%`,
  so they are right whatever folder the tool ran in;
- every result has `partialFingerprints`: `primaryLocationLineHash` (the rule and the text of
  the line, with its occurrence in the file, so a result keeps its identity when lines move)
  and `reproLintFinding/v1` (rule, file and message without numbers), so uploads through the
  API do not duplicate alerts;
- rules carry `help.text` (plain text), `help.markdown` (the rule's document) and, where
  the installed version has a public location, `helpUri`; results and rules are `warning`s
  (a file that does not parse, RPL001, an `error`), as in every other format; a finding's
  own `help` line is in the result's `properties.help`;
- a notebook's result points at the line of the `.ipynb` file holding the code (what code
  scanning can show), its message starts with `cell N:LINE:COL`, and `properties.notebookCell`
  gives the cell, line and column.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Optional
from urllib.parse import quote

from repro_lint import __version__
from repro_lint.core.findings import Finding, Location
from repro_lint.output.locations import Locator

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
ROOT_ID = "%SRCROOT%"
LEVEL = "warning"


def help_uri(code: str) -> Optional[str]:
    """The rule's document on the web at the installed commit, when that is known
    (`core.doc_links`); else None, and the rule's `help.markdown` carries the document."""
    from repro_lint.core.doc_links import rule_doc_url

    return rule_doc_url(code)


def rule_metadata() -> dict[str, dict]:
    """code -> SARIF metadata of every documented rule, the check's and the probe's."""
    from repro_lint.core import catalog

    out = {}
    for code, doc in {**catalog.rule_docs(), **catalog.probe_docs()}.items():
        out[code] = {"name": doc.name, "summary": doc.summary, "help": doc.plain_text(), "markdown": doc.markdown()}
    return out


class _Paths:
    """URIs relative to the project root (the findings' paths are relative to the working
    folder, or absolute outside it)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.cwd = Path.cwd().resolve()

    def artifact(self, path: str) -> dict:
        full = Path(os.path.normpath(self.cwd / path))
        try:
            rel = full.relative_to(self.root).as_posix()
        except ValueError:
            return {"uri": full.as_uri()}
        return {"uri": quote(rel, safe="/"), "uriBaseId": ROOT_ID}


def _region(loc: Location, locator: Locator) -> dict:
    in_file = locator.file_lines(loc)
    if in_file is not None:  # a notebook: the lines of the .ipynb file
        return {"startLine": in_file[0], "endLine": max(in_file)}
    return {"startLine": loc.line, "startColumn": loc.col, "endLine": loc.end_line, "endColumn": max(loc.end_col, 1)}


def _line_hash(f: Finding, locator: Locator) -> str:
    text = re.sub(r"\s+", "", locator.source_line(f.location.path, f.location.line) or "")
    return hashlib.blake2b(f"{f.code}\0{text}".encode(), digest_size=8).hexdigest()


def _finding_id(f: Finding, uri: str) -> str:
    message = re.sub(r"\d+", "#", f.message)  # line numbers in messages move with edits
    return hashlib.blake2b(f"{f.code}\0{uri}\0{message}".encode(), digest_size=16).hexdigest()


def build_log(
    findings: list[Finding],
    rules: dict[str, dict],
    root: Optional[Path] = None,
    locator: Optional[Locator] = None,
) -> dict:
    """A SARIF log. `rules` maps code -> {"name", "summary", "help" (plain text)}, optionally
    "markdown"; the documented rules' own metadata (`rule_metadata`) is used where it exists."""
    from repro_lint.discover.project import find_root

    locator = locator or Locator()
    paths = _Paths(root or find_root([Path.cwd()]))
    documented = rule_metadata()
    meta = {code: {**given, **documented.get(code, {})} for code, given in rules.items()}
    codes = sorted(meta)
    rule_index = {c: i for i, c in enumerate(codes)}
    results = []
    occurrences: dict[tuple, int] = {}
    for f in findings:
        artifact = paths.artifact(f.location.path)
        line_hash = _line_hash(f, locator)
        seen = occurrences[(artifact["uri"], line_hash)] = occurrences.get((artifact["uri"], line_hash), 0) + 1
        shown = locator.shown(f.location)
        prefix = f"cell {shown.cell}:{shown.line}:{shown.col}: " if shown.cell is not None else ""
        result: dict = {
            "ruleId": f.code,
            "level": f.severity if f.severity in ("error", "warning", "note") else LEVEL,
            "message": {"text": prefix + f.message},
            "locations": [{"physicalLocation": {"artifactLocation": artifact, "region": _region(f.location, locator)}}],
            "partialFingerprints": {
                "primaryLocationLineHash": f"{line_hash}:{seen}",
                "reproLintFinding/v1": _finding_id(f, artifact["uri"]),
            },
        }
        if f.code in rule_index:
            result["ruleIndex"] = rule_index[f.code]
        if f.related:
            result["relatedLocations"] = [
                {
                    "id": i,
                    "physicalLocation": {"artifactLocation": paths.artifact(r.location.path), "region": _region(r.location, locator)},
                    "message": {"text": r.message},
                }
                for i, r in enumerate(f.related)
            ]
        props: dict = {}
        if f.fix is not None:
            props.update(fixable=f.fixable, fixSafety=f.fix.safety, fixDescription=f.fix.description)
        if f.help:
            props["help"] = f.help
        if shown.cell is not None:
            props["notebookCell"] = {"cell": shown.cell, "line": shown.line, "column": shown.col}
        if props:
            result["properties"] = props
        results.append(result)
    driver_rules = []
    for code in codes:
        m = meta[code]
        rule = {
            "id": code,
            "name": m["name"],
            "shortDescription": {"text": m["summary"]},
            "fullDescription": {"text": m["summary"]},
            "help": {"text": m["help"], "markdown": m.get("markdown") or m["help"]},
            "defaultConfiguration": {"level": "error" if code == "RPL001" else LEVEL},
        }
        uri = help_uri(code)
        if uri:
            rule["helpUri"] = uri
        driver_rules.append(rule)
    from repro_lint.core.doc_links import repository_url

    driver: dict = {"name": "repro-lint", "version": __version__}
    if repository_url():
        driver["informationUri"] = repository_url()
    driver["rules"] = driver_rules
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "originalUriBaseIds": {ROOT_ID: {"uri": paths.root.as_uri().rstrip("/") + "/"}},
                "results": results,
                "columnKind": "unicodeCodePoints",
            }
        ],
    }


def render(findings: list[Finding], root: Optional[Path] = None, locator: Optional[Locator] = None) -> str:
    from repro_lint.core import catalog

    rules = {code: meta for code, meta in rule_metadata().items() if code in catalog.rule_docs()}
    return json.dumps(build_log(findings, rules, root, locator), indent=2, ensure_ascii=False) + "\n"
