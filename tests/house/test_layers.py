"""The package tree is the pipeline: a layer imports only layers below it, and no import
cycle joins modules of different rooms (read from the sources, every import counted: at
module level, in functions, and under TYPE_CHECKING)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "repro_lint"
# lower layers first; rooms of the same rank do not import each other
LAYERS = [
    ("core",),
    ("discover",),
    ("facts",),
    ("index",),
    ("analysis",),
    ("rules",),
    ("check",),
    ("fix",),
    ("output",),
    ("server", "probe"),
    ("cli",),
]
RANK = {room: rank for rank, rooms in enumerate(LAYERS) for room in rooms}
TOP = {"repro_lint": -1, "repro_lint.__main__": len(LAYERS)}  # the version; `python -m`


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: dict) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for target in targets:
            # the module itself, else the package that holds the name
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def room(name: str) -> str:
    parts = name.split(".")
    return name if len(parts) == 1 or name in TOP else parts[1]


def rank(name: str) -> int:
    return TOP[name] if name in TOP else RANK[room(name)]


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def test_every_module_is_in_a_room():
    lost = sorted(n for n in modules() if n not in TOP and room(n) not in RANK)
    assert not lost, f"modules outside the layers: {lost}"


def test_no_layer_imports_a_higher_one():
    upward = sorted(
        f"{a} -> {b}"
        for a, targets in graph().items()
        for b in targets
        if rank(b) > rank(a) or (rank(b) == rank(a) and room(a) != room(b))
    )
    assert not upward, "imports that run back up (or sideways between rooms):\n" + "\n".join(upward)


def test_no_cycle_joins_rooms():
    g = graph()
    # strongly connected components (Tarjan), iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on, stack, comps = set(), [], []
    counter = 0
    for start in g:
        if start in index:
            continue
        work = [(start, iter(sorted(g[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    comps.append(comp)
            elif nxt not in index:
                index[nxt] = low[nxt] = counter
                counter += 1
                stack.append(nxt)
                on.add(nxt)
                work.append((nxt, iter(sorted(g[nxt]))))
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
    crossing = [sorted(c) for c in comps if len({room(m) for m in c}) > 1]
    assert not crossing, f"import cycles across rooms: {crossing}"
