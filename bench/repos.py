"""Lists of public repositories pinned at a commit, and their extraction from fetched mirrors.

A list has one repository a line: name, GitHub owner/repository, full commit, and optionally
a folder of it; `#` starts a comment. A checkout is a plain tree under `REPOS/NAME`; a
missing one is written from a bare mirror `MIRRORS/OWNER+REPO/repo` at the listed commit
(nothing is fetched over the network). Used by `review_fixes.py` and `ecosystem.py`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

KEEP_SUFFIXES = (".py", ".toml", ".cfg", ".ini", ".flake8", ".yaml", ".yml", ".txt")
KEEP_MAX_BYTES = 2_000_000  # data files are not needed to read code


@dataclass
class Entry:
    name: str
    repo: str
    commit: str
    subdir: str = ""


def read_list(path: Path) -> list[Entry]:
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].split()
        if len(line) >= 3:
            out.append(Entry(line[0], line[1], line[2], line[3] if len(line) > 3 else ""))
    return out


def select(entries: list[Entry], only: str) -> list[Entry]:
    """The entries named in a comma-separated `only` (all of them when it is empty)."""
    if not only:
        return entries
    wanted = set(only.split(","))
    unknown = wanted - {e.name for e in entries}
    if unknown:
        print(f"not in the list: {', '.join(sorted(unknown))}", file=sys.stderr)
    return [e for e in entries if e.name in wanted]


def extract(entry: Entry, mirrors: Path, dest: Path) -> str:
    """Write the source and configuration files of the listed commit under `dest`; an
    empty string, or why not."""
    git = mirrors / entry.repo.replace("/", "+") / "repo"
    if not git.is_dir():
        return f"no mirror at {git}"
    base = ["git", f"--git-dir={git}"]
    listing = subprocess.run([*base, "ls-tree", "-r", "-l", entry.commit], capture_output=True, text=True, check=False)
    if listing.returncode != 0:
        return f"commit {entry.commit[:12]} not in the mirror"
    wanted = []
    links = set()
    for row in listing.stdout.splitlines():
        meta, _, path = row.partition("\t")
        parts = meta.split()
        if len(parts) == 4 and parts[1] == "blob" and path.endswith(KEEP_SUFFIXES) and parts[3].isdigit() and int(parts[3]) <= KEEP_MAX_BYTES:
            wanted.append(path)
            if parts[0] == "120000":  # a symbolic link: its blob is the target path
                links.add(path)
    batch = subprocess.run(
        [*base, "cat-file", "--batch"], input="".join(f"{entry.commit}:{p}\n" for p in wanted).encode(), capture_output=True, check=False,
    )
    data = batch.stdout
    pos = 0
    for path in wanted:
        end = data.index(b"\n", pos)
        header = data[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[-1] == b"missing":  # a blob the snapshot lacks (too large, LFS)
            continue
        size = int(header[2])
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        content = data[pos:pos + size]
        if path in links:
            # a checkout has the link, not a file holding its target (which would not parse)
            os.symlink(os.fsdecode(content), target)
        else:
            target.write_bytes(content)
        pos += size + 1
    return ""


def ensure(entry: Entry, repos: Path, mirrors: Path | None) -> Path | None:
    """The checkout of `entry` under `repos`, extracted from `mirrors` when missing; None
    when there is none."""
    tree = repos / entry.name
    if not tree.is_dir() and mirrors is not None:
        problem = extract(entry, mirrors, tree)
        if problem:
            print(f"{entry.name}: not extracted: {problem}", file=sys.stderr)
    return tree if tree.is_dir() else None
