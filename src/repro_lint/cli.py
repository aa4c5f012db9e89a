"""Command line: `repro-lint [check] PATHS`, `rule CODE`, `rules`, `probe`, `env`."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Optional

from repro_lint import __version__

SUBCOMMANDS = ("check", "rule", "rules", "probe", "env")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one clean line and exit 2, like every other usage error
        raise UsageError(f"{self.prog}: {message}")


def _codes(value: str) -> list[str]:
    return [c.strip().upper() for c in value.split(",") if c.strip()]


def check_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="repro-lint check", description="Find what makes training runs impossible to repeat.")
    p.add_argument("paths", nargs="*", type=Path, help="files or folders (default: .)")
    p.add_argument("--fix", action="store_true", help="apply safe fixes")
    p.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes (with --fix or --diff)")
    p.add_argument("--diff", action="store_true", help="print the diff --fix would apply; write nothing")
    p.add_argument("--exit-non-zero-on-fix", action="store_true", help="with --fix: exit 1 if anything was fixed")
    p.add_argument("--select", type=_codes, action="extend", help="rule codes or prefixes to enable (replaces config)")
    p.add_argument("--extend-select", type=_codes, action="extend", default=[], help="rule codes or prefixes to add")
    p.add_argument("--ignore", type=_codes, action="extend", default=[], help="rule codes or prefixes to disable")
    p.add_argument("--format", choices=("text", "concise", "json", "sarif", "github"), default="text")
    p.add_argument("--output-file", "-o", type=Path, help="write the report to this file")
    p.add_argument("--statistics", action="store_true", help="print counts per rule")
    p.add_argument("--no-cache", action="store_true", help="do not read or write .repro_lint_cache/")
    p.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default and maximum: number of cores)")
    p.add_argument("--config", type=Path, help="configuration file (default: pyproject.toml at the project root)")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    p.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")
    p.add_argument("--verbose", "-v", action="store_true", help="show tracebacks of internal errors")
    p.add_argument("--no-color", action="store_true", help="no colours")
    return p


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class OutputError(Exception):
    """The report cannot be written: one line, exit 2."""


def _write_output(text: str, path: Optional[Path]) -> None:
    if path is None:
        sys.stdout.write(text)
        return
    shown = path
    path = path.resolve()
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"repro-lint: error: cannot write {shown}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"repro-lint: error: cannot write {shown}: {exc.strerror or exc}") from exc
        raise


def run_check_command(argv: list[str]) -> int:
    from repro_lint.config import ConfigError, find_config, load_config
    from repro_lint.engine import PathError, known_codes, run_check, select
    from repro_lint.matchers import get_matchers
    from repro_lint.output import github, json_out, sarif, text
    from repro_lint.project import find_root

    args = check_parser().parse_args(argv)
    paths = args.paths or [Path(".")]
    known = known_codes()
    for code in [*(args.select or []), *args.extend_select, *args.ignore]:
        from repro_lint.config import known_code

        if not known_code(code, known):
            raise UsageError(f"repro-lint: unknown rule code `{code}`")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("repro-lint: --jobs must be at least 1")
    for p in paths:
        if not p.exists():
            raise UsageError(f"repro-lint: {p}: no such file or directory")
    if args.output_file is not None and not args.output_file.resolve().parent.is_dir():
        raise UsageError(f"repro-lint: cannot write --output-file {args.output_file}: folder {args.output_file.parent} does not exist")
    root = find_root(paths)
    cfg_path = args.config if args.config else find_config(root)
    try:
        cfg = load_config(cfg_path, known, get_matchers().sources)
    except ConfigError as exc:
        print(f"repro-lint: error: {exc}", file=sys.stderr)
        return 2
    # more processes than cores only add memory: --jobs is capped at the cores this process may use
    jobs = min(args.jobs or usable_cores(), usable_cores())
    try:
        report = run_check(paths, cfg, root=root, jobs=jobs, use_cache=not args.no_cache, verbose=args.verbose)
    except PathError as exc:
        print(f"repro-lint: error: {exc}", file=sys.stderr)
        return 2
    findings = select(report, cfg, args.select, args.extend_select, args.ignore)

    fixed = 0
    fix_failed = False
    if args.fix or args.diff:
        from repro_lint.fix.engine import apply_fixes

        outcome = apply_fixes(
            report, findings, cfg, unsafe=args.unsafe_fixes, write=not args.diff, jobs=jobs,
            selector=lambda r: select(r, cfg, args.select, args.extend_select, args.ignore), use_cache=not args.no_cache,
        )
        if args.diff:
            sys.stdout.write(outcome.diff)
            for line in outcome.errors:
                print(f"repro-lint: error: {line}", file=sys.stderr)
            for line in report.errors:
                print(f"repro-lint: error: {line}", file=sys.stderr)
            if outcome.errors or report.errors:
                return 2
            return 1 if outcome.diff else 0
        fixed = outcome.fixed
        fix_failed = bool(outcome.errors)
        report.errors.extend(outcome.errors)
        if outcome.changed_paths:
            report = run_check(paths, cfg, root=root, jobs=jobs, use_cache=not args.no_cache, verbose=args.verbose)
            report.errors.extend(outcome.errors)
            findings = select(report, cfg, args.select, args.extend_select, args.ignore)

    out_text = None
    if args.format == "json":
        out_text = json_out.render(findings, report.errors, report.files_checked)
    elif args.format == "sarif":
        out_text = sarif.render(findings)
    elif args.format == "github":
        out_text = github.render(findings)
    elif args.format == "concise":
        out_text = text.concise(findings)
        if not args.quiet:
            out_text += text.summary_line(findings, fixed) + "\n"
    if out_text is not None:
        _write_output(out_text, args.output_file)
    else:
        import io

        buf = io.StringIO() if args.output_file else sys.stdout
        color = False if (args.no_color or args.output_file) else None
        console = text.make_console(buf, color)
        text.render(findings, console, show_source=True)
        if args.statistics:
            text.statistics(findings, console)
        if not args.quiet:
            console.print(text.summary_line(findings, fixed))
        if args.output_file:
            _write_output(buf.getvalue(), args.output_file)
    if args.statistics and args.format != "text":
        console = text.make_console(sys.stderr, False if args.no_color else None)
        text.statistics(findings, console)
    for line in report.errors:
        print(f"repro-lint: error: {line}", file=sys.stderr)
    if report.errors or fix_failed:
        return 2
    if args.exit_non_zero_on_fix and fixed:
        return 1
    if findings and not args.exit_zero:
        return 1
    return 0


def run_rule_command(argv: list[str]) -> int:
    from repro_lint import catalog

    p = _Parser(prog="repro-lint rule", description="Show a rule's documentation.")
    p.add_argument("code")
    p.add_argument("--format", choices=("text", "json"), default="text")
    args = p.parse_args(argv)
    docs = catalog.rule_docs()
    doc = docs.get(args.code.upper())
    if doc is None:
        print(f"repro-lint: error: unknown rule code `{args.code}` (see `repro-lint rules`)", file=sys.stderr)
        return 2
    if args.format == "json":
        import json

        print(json.dumps({"code": doc.code, "name": doc.name, "summary": doc.summary, "fix": doc.fix, "markdown": doc.markdown()}, indent=2))
    else:
        sys.stdout.write(doc.markdown())
    return 0


def run_rules_command(argv: list[str]) -> int:
    from repro_lint import catalog
    from repro_lint.output import text

    p = _Parser(prog="repro-lint rules", description="List all rules.")
    p.add_argument("--format", choices=("text", "json"), default="text")
    args = p.parse_args(argv)
    docs = catalog.rule_docs()
    if args.format == "json":
        import json

        print(json.dumps([{"code": d.code, "name": d.name, "summary": d.summary, "fix": d.fix} for d in docs.values()], indent=2))
        return 0
    from rich.table import Table

    console = text.make_console(sys.stdout)
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("code")
    table.add_column("name")
    table.add_column("fix")
    table.add_column("summary")
    for d in docs.values():
        table.add_row(d.code, d.name, "" if d.fix == "none" else d.fix, d.summary)
    console.print(table)
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in ("--version", "-V"):
            print(f"repro-lint {__version__}")
            return 0
        if argv and argv[0] in ("-h", "--help"):
            print(
                "usage: repro-lint [check] [PATHS...] [options]\n"
                "       repro-lint rule CODE | rules\n"
                "       repro-lint probe SCRIPT [-- ARGS] | probe -m MODULE:FUNCTION\n"
                "       repro-lint env snapshot [-o FILE] | env diff A B\n\n"
                "Run `repro-lint check --help` for the checker's options."
            )
            return 0
        cmd = argv[0] if argv and argv[0] in SUBCOMMANDS else "check"
        rest = argv[1:] if argv and argv[0] in SUBCOMMANDS else argv
        if cmd == "check":
            return run_check_command(rest)
        if cmd == "rule":
            return run_rule_command(rest)
        if cmd == "rules":
            return run_rules_command(rest)
        if cmd == "probe":
            from repro_lint.probe.cli import main as probe_main

            return probe_main(rest)
        if cmd == "env":
            from repro_lint.probe.env_cli import main as env_main

            return env_main(rest)
    except (UsageError, OutputError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("repro-lint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except SystemExit as exc:  # argparse --help
        return int(exc.code or 0) if isinstance(exc.code, int) else 2
    except Exception as exc:  # the last line of defence: one line, never a traceback
        if os.environ.get("REPRO_LINT_DEBUG") or "--verbose" in argv or "-v" in argv:
            import traceback

            traceback.print_exc()
        print(f"repro-lint: internal error: {type(exc).__name__}: {exc} (run with --verbose for details)", file=sys.stderr)
        return 2
    return 2
