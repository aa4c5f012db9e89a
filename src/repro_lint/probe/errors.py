"""Failures of the probe's own code inside a recorded process.

The hooks the probe installs run in the program's process, in the middle of the program's
calls. A failure there is the probe's, never the program's: it is counted here (and said in
the report as the probe's error) and the program's call goes on as it would without the
probe. Stdlib only: imported in every process of a run.
"""

from __future__ import annotations

from typing import Any

# Where a failure happened. Failures in FINGERPRINT make a comparison incomplete; the others
# only make a table of the report incomplete.
FINGERPRINT = "fingerprint"
LOCATION = "location"
PREDICTION = "prediction"
RNG_AUDIT = "rng-audit"
RESULTS = "results"  # values leaving torch, written state
OTHER = "hook"

_COUNTS: dict[tuple[str, str], int] = {}


def record(where: str, exc: BaseException, what: str = "") -> None:
    """Count one failure of the probe's code at `where` (`what`: the op or call it was about)."""
    text = f"{type(exc).__name__}: {exc}".strip()
    if what:
        text = f"{what}: {text}"
    key = (where, text[:300])
    _COUNTS[key] = _COUNTS.get(key, 0) + 1


def recorded() -> list[dict[str, Any]]:
    return [{"where": where, "error": text, "count": n} for (where, text), n in _COUNTS.items()]


def clear() -> None:
    """A forked child counts its own."""
    _COUNTS.clear()
