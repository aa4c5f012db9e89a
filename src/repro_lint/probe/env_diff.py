"""Differences between two environment snapshots, most relevant first."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Optional

from repro_lint.probe.redact import REDACTED, redact_text, secret_name

# Sections in the order a reader should see them: what changes results first (determinism
# settings; torch and its GPU stack, GPU model and variables; the CPU's vector units and the
# BLAS/OpenMP libraries with their thread counts, which set the order of float reductions;
# library versions), then context (Python, platform, the project's and editable installs'
# checkouts, environment variables).
_SECTION_ORDER = [
    "determinism", "torch", "gpu_settings", "cpu", "threads", "packages", "conda", "python", "platform", "project",
    "editable", "environment",
]
# Sections keyed by environment variable names: secrets are redacted by name there.
_VARIABLE_SECTIONS = ("environment", "gpu_settings")
_IGNORED = {"schema", "created"}
# Packages whose versions change numerics directly; listed before the other packages.
_NUMERIC_PACKAGES = ("torch", "nvidia-", "triton", "numpy", "cuda-", "scipy", "jax", "tensorflow", "xformers", "flash-attn")


@dataclass(frozen=True)
class Difference:
    section: str
    name: str
    a: Optional[str]  # None: absent in A
    b: Optional[str]

    def to_dict(self) -> dict[str, Any]:
        return {"section": self.section, "name": self.name, "a": self.a, "b": self.b}


def diff_snapshots(a: dict[str, Any], b: dict[str, Any]) -> list[Difference]:
    """The differences, with secrets redacted from the values shown (a snapshot written by
    another tool or an older release may hold them): they are compared as they are, so a
    changed secret still shows as a difference."""
    flat_a, flat_b = _flatten(a), _flatten(b)
    found = [
        Difference(section, name, _shown(section, name, flat_a.get((section, name))), _shown(section, name, flat_b.get((section, name))))
        for section, name in set(flat_a) | set(flat_b)
        if flat_a.get((section, name)) != flat_b.get((section, name))
    ]
    return sorted(found, key=_relevance)


def _shown(section: str, name: str, value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    if (section in _VARIABLE_SECTIONS or name.startswith("variables.")) and secret_name(name.rsplit(".", 1)[-1]):
        return REDACTED
    return redact_text(value)


def _relevance(d: Difference) -> tuple:
    section = _SECTION_ORDER.index(d.section) if d.section in _SECTION_ORDER else len(_SECTION_ORDER)
    numeric = 0 if d.section in ("packages", "conda") and d.name.startswith(_NUMERIC_PACKAGES) else 1
    return (section, numeric, d.name)


def _flatten(snapshot: dict[str, Any]) -> dict[tuple[str, str], str]:
    flat: dict[tuple[str, str], str] = {}
    for section, value in snapshot.items():
        if section in _IGNORED:
            continue
        if isinstance(value, dict):
            for name, inner in _leaves(value, ""):
                flat[(section, name)] = inner
        else:
            flat[(section, "")] = _text(value)
    return flat


def _leaves(value: dict[str, Any], prefix: str):
    for key, inner in value.items():
        name = f"{prefix}{key}"
        if isinstance(inner, dict) and inner:
            yield from _leaves(inner, name + ".")
        elif name.endswith(".diff"):
            # Diffs are long; whether they changed is what belongs in a table.
            yield name, f"{len(inner.splitlines())} lines, sha256 {hashlib.sha256(inner.encode()).hexdigest()[:12]}"
        else:
            yield name, _text(inner)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
