"""`--vary-seed`: two runs with different seeds, and the random streams that do not change.

A stream is what one line of the program draws, in one process: the values of every torch
op that draws random numbers (from the global generator or from a `torch.Generator` of the
program's own), and of every call of a global Python or numpy generator. With another seed
every stream should draw other values; one that draws the same values ignores the seed (a
DataLoader with a hard-coded generator, a `worker_init_fn` that seeds with the worker id,
an initialisation from a fixed generator).
"""

from __future__ import annotations

import shlex
from typing import Any, Optional

from repro_lint.probe.trace_format import RANDOM

# Two seeds far from the usual defaults (0, 1, 42, 1234), for a seed option or variable.
SEEDS = (101, 202)
# Added to every seed the program sets, in the varied run, when no option is named.
SHIFT = 1_000_003

_KINDS = {
    "aten::randperm": "data order",
    "aten::random_": "data order or worker seeds",
    "aten::native_dropout": "dropout",
    "aten::bernoulli": "dropout",
    "aten::bernoulli_": "dropout",
    "aten::uniform_": "initialisation",
    "aten::normal_": "initialisation",
    "aten::multinomial": "sampling",
}


def seeded_args(args: list[str], template: str, seed: int) -> list[str]:
    """The program's arguments with the seed option `template` (`--seed {seed}`,
    `--seed={seed}`, a Hydra override `seed={seed}`) set to `seed`: an existing value of the
    option is replaced, else the option is added."""
    words = shlex.split(template.replace("{seed}", str(seed)))
    option = shlex.split(template)[0].split("=", 1)[0]
    out = list(args)
    for i, word in enumerate(out):
        if word.split("=", 1)[0] == option or word.split("=", 1)[0] == "+" + option:
            if "=" in word:
                out[i] = ("+" if word.startswith("+") and not words[0].startswith("+") else "") + words[0]
            elif i + 1 < len(out) and len(words) > 1:
                out[i + 1] = words[1]
            else:
                continue
            return out
    return out + words


def streams(outcome, units: dict, names: dict, locations) -> dict[tuple, dict[str, Any]]:
    """(process, source, function, location) -> count and digest of the values drawn."""
    found: dict[tuple, dict[str, Any]] = {}
    for key, unit in units.items():
        where = locations(unit.trace)
        for row in unit.ops:
            if not row[4] & RANDOM:
                continue
            op = unit.trace["names"][row[0]]
            loc = where.get(row[1])
            entry = found.setdefault((key, "torch", op, _place(loc)), {"location": loc, "count": 0, "values": 0})
            entry["count"] += 1
            entry["values"] = hash((entry["values"], row[3]))
    for trace in [*outcome.roots.values(), *outcome.children]:
        process = names.get((trace.get("process") or {}).get("key")) or "main"
        where = locations(trace)
        for draw in trace.get("draws", []):
            if draw["source"] not in ("python", "numpy") or draw.get("kind", "draw") != "draw":
                continue
            loc = where.get(draw["location"])
            entry = found.setdefault((process, draw["source"], draw["function"], _place(loc)), {"location": loc, "count": 0, "values": 0})
            entry["count"] += draw["count"]
            entry["values"] = hash((entry["values"], draw.get("values", 0)))
    return found


def _place(loc: Optional[dict]) -> tuple:
    return (loc["path"], loc["line"], loc["column"]) if loc else ()


def compare_streams(a: dict[tuple, dict], b: dict[tuple, dict]) -> list[dict[str, Any]]:
    """Every stream both runs drew from, with whether its values changed with the seed."""
    out = []
    for key in sorted(set(a) & set(b), key=lambda k: (k[0], k[3], k[1], k[2])):
        process, source, function, _ = key
        changed = a[key]["values"] != b[key]["values"] or a[key]["count"] != b[key]["count"]
        kind = _KINDS.get(function, "random values") if source == "torch" else (
            "data loading" if "/worker" in process else "random values"
        )
        out.append({
            "process": process, "source": source, "function": function, "location": a[key]["location"],
            "kind": kind, "count": [a[key]["count"], b[key]["count"]], "changes": changed,
        })
    return out
