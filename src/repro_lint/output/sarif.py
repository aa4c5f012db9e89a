"""SARIF 2.1.0 output, for code scanning in CI."""

from __future__ import annotations

import json
from pathlib import Path

from repro_lint import __version__
from repro_lint.findings import Finding

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/repro-lint/repro-lint"


def _uri(path: str) -> str:
    return Path(path).as_posix()


def _region(loc) -> dict:
    return {"startLine": loc.line, "startColumn": loc.col, "endLine": loc.end_line, "endColumn": max(loc.end_col, 1)}


def build_log(findings: list[Finding], rules: dict[str, dict]) -> dict:
    """A SARIF log. `rules` maps code -> {"name", "summary", "help" (markdown)}."""
    codes = sorted(rules)
    rule_index = {c: i for i, c in enumerate(codes)}
    results = []
    for f in findings:
        result: dict = {
            "ruleId": f.code,
            "level": "warning" if f.severity == "warning" else "error",
            "message": {"text": f.message},
            "locations": [
                {"physicalLocation": {"artifactLocation": {"uri": _uri(f.location.path)}, "region": _region(f.location)}}
            ],
        }
        if f.code in rule_index:
            result["ruleIndex"] = rule_index[f.code]
        if f.related:
            result["relatedLocations"] = [
                {
                    "id": i,
                    "physicalLocation": {"artifactLocation": {"uri": _uri(r.location.path)}, "region": _region(r.location)},
                    "message": {"text": r.message},
                }
                for i, r in enumerate(f.related)
            ]
        if f.fix is not None:
            result["properties"] = {"fixable": f.fixable, "fixSafety": f.fix.safety, "fixDescription": f.fix.description}
        results.append(result)
    driver_rules = []
    for code in codes:
        meta = rules[code]
        driver_rules.append(
            {
                "id": code,
                "name": meta["name"],
                "shortDescription": {"text": meta["summary"]},
                "fullDescription": {"text": meta["summary"]},
                "help": {"text": meta["help"], "markdown": meta["help"]},
                "defaultConfiguration": {"level": "error"},
            }
        )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "repro-lint",
                        "version": __version__,
                        "informationUri": INFO_URI,
                        "rules": driver_rules,
                    }
                },
                "results": results,
                "columnKind": "unicodeCodePoints",
            }
        ],
    }


def render(findings: list[Finding]) -> str:
    from repro_lint import catalog

    rules = {
        code: {"name": doc.name, "summary": doc.summary, "help": doc.markdown()} for code, doc in catalog.rule_docs().items()
    }
    return json.dumps(build_log(findings, rules), indent=2, ensure_ascii=False) + "\n"
