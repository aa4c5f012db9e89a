"""`repro-lint env`: snapshot the environment of a training run, and compare two snapshots.

    repro-lint env snapshot [-o FILE] [--with-diffs]
    repro-lint env diff A B [--format text|json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

from rich.markup import escape
from rich.table import Table

from repro_lint.probe.console import make_console
from repro_lint.probe.env_diff import diff_snapshots
from repro_lint.probe.env_snapshot import take_snapshot
from repro_lint.probe.redact import redact_text

_CELL = 70  # longer values are cut in the table; --format json keeps them whole


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="repro-lint env", description="Snapshot the environment of a training run, and compare two snapshots."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot", help="write a JSON snapshot of this environment")
    snap.add_argument("-o", "--output", "--output-file", dest="output", metavar="FILE", help="write to FILE instead of standard output")
    snap.add_argument("--with-diffs", action="store_true", help="include uncommitted diffs of editable installs")
    diff = sub.add_parser("diff", help="show how two snapshots differ (exit 1 when they do)")
    diff.add_argument("a", metavar="A", help="a snapshot, or a probe report (its embedded snapshot)")
    diff.add_argument("b", metavar="B")
    diff.add_argument("--output-format", "--format", dest="format", choices=["text", "json"], default="text")
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    try:
        return _snapshot(args) if args.command == "snapshot" else _diff(args)
    except Exception as exc:  # the user gets a message, never the tool's traceback
        print(redact_text(f"repro-lint env: internal error: {type(exc).__name__}: {exc}"), file=sys.stderr)
        return 2


def _snapshot(args) -> int:
    text = json.dumps(take_snapshot(with_diffs=args.with_diffs), indent=2) + "\n"
    if args.output:
        try:
            Path(args.output).write_text(text)
        except OSError as exc:
            print(f"repro-lint env: cannot write {args.output}: {exc.strerror}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    return 0


def _load(path: str) -> Optional[dict]:
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        print(f"repro-lint env: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return None
    except ValueError as exc:
        print(f"repro-lint env: {path} is not JSON: {exc}", file=sys.stderr)
        return None
    if not isinstance(data, dict):
        print(f"repro-lint env: {path} is not an environment snapshot", file=sys.stderr)
        return None
    # A probe report carries its snapshot under "environment".
    return data.get("environment") if "packages" not in data and isinstance(data.get("environment"), dict) else data


def _diff(args) -> int:
    a, b = _load(args.a), _load(args.b)
    if a is None or b is None:
        return 2
    differences = diff_snapshots(a, b)
    if args.format == "json":
        json.dump([d.to_dict() for d in differences], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 1 if differences else 0
    console = make_console()
    if not differences:
        console.print("The environments are the same.")
        return 0
    table = Table(title=f"{len(differences)} differences", title_justify="left")
    table.add_column("Section")
    table.add_column("Name", overflow="fold")
    table.add_column(escape(args.a), overflow="fold")
    table.add_column(escape(args.b), overflow="fold")
    for d in differences:
        table.add_row(d.section, escape(d.name), _cell(d.a), _cell(d.b))
    console.print(table)
    return 1


def _cell(value: Optional[str]) -> str:
    if value is None:
        return "(absent)"
    return escape(value if len(value) <= _CELL else value[: _CELL - 1] + "…")


if __name__ == "__main__":
    sys.exit(main())
