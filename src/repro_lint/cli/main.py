"""Command line: `repro-lint [check] PATHS`, `rule CODE`, `rules`, `probe`, `env`."""

from __future__ import annotations

import argparse
import json
import itertools
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterable, Optional

from repro_lint.core.usage import Parser, UsageError
from repro_lint import __version__

SUBCOMMANDS = ("check", "rule", "rules", "clean", "probe", "env", "server")


def _codes(value: str) -> list[str]:
    return [c.strip().upper() for c in value.split(",") if c.strip()]


FORMAT_ENV = "REPRO_LINT_OUTPUT_FORMAT"


def _patterns(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip()]


CACHE_ENV = "REPRO_LINT_CACHE_DIR"
NO_CACHE_ENV = "REPRO_LINT_NO_CACHE"


def check_parser() -> argparse.ArgumentParser:
    from repro_lint.output import FORMATS

    p = Parser(
        prog="repro-lint check", usage="%(prog)s [options] [PATHS...]",
        description="Find what makes training runs impossible to repeat.",
    )
    p.add_argument("paths", nargs="*", help="files, folders or notebooks (default: .); `-` reads the source from stdin")
    p.add_argument("--fix", action="store_true", help="apply safe fixes")
    p.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes (with --fix or --diff)")
    p.add_argument("--fix-only", action="store_true",
                   help="apply fixes and report only what was fixed: remaining findings do not fail the run")
    p.add_argument("--diff", action="store_true", help="print the diff --fix would apply; write nothing")
    p.add_argument("--show-fixes", action="store_true", help="with --fix: list the findings that were fixed")
    p.add_argument("--exit-non-zero-on-fix", action="store_true", help="with --fix: exit 1 if anything was fixed")
    p.add_argument("--add-noqa", action="store_true",
                   help="add `# noqa: CODE` to the lines of every finding (accept them); `--add-noqa=REASON` "
                   "writes REASON after the codes")
    p.add_argument("--add-noqa-reason", help=argparse.SUPPRESS)
    p.add_argument("--ignore-noqa", action="store_true", help="report findings that `# noqa` comments suppress")
    p.add_argument("--select", type=_codes, action="extend", help="rule codes or prefixes to enable (replaces config)")
    p.add_argument("--extend-select", type=_codes, action="extend", default=[], help="rule codes or prefixes to add")
    p.add_argument("--ignore", type=_codes, action="extend", default=[], help="rule codes or prefixes to disable")
    p.add_argument("--exclude", type=_patterns, action="extend", default=None, metavar="PATTERNS",
                   help="paths to leave out (gitignore patterns, comma-separated; replaces the configuration's `exclude`)")
    p.add_argument("--extend-exclude", type=_patterns, action="extend", default=[], metavar="PATTERNS",
                   help="more paths to leave out, besides those excluded already")
    p.add_argument(
        "--output-format", "--format", dest="format", choices=FORMATS, default=None, metavar="FORMAT",
        help=f"report format: {', '.join(FORMATS)} (default: ${FORMAT_ENV}, else text; `full` is `text`)",
    )
    p.add_argument("--output-file", "-o", type=Path, help="write the report to this file")
    p.add_argument("--statistics", action="store_true", help="print only the number of findings per rule")
    p.add_argument("--show-settings", action="store_true", help="print the settings the check would use, and exit")
    p.add_argument("--show-files", action="store_true", help="print the files the check would report on, and exit")
    p.add_argument("--whole-program", action="store_true",
                   help="report wherever the named files can change findings: in them, in the modules that import them "
                   "and in the programs that reach them (a named configuration file: the whole project)")
    p.add_argument("--check-tests", action="store_true",
                   help="also report findings in test files (`tests/`, `test_*.py`, `*_test.py`, `conftest.py`)")
    p.add_argument("--stdin-filename", type=Path, help="the path of the source read from stdin (with `-`)")
    p.add_argument("--watch", "-w", action="store_true", help="check again whenever a file changes")
    p.add_argument("--no-cache", "-n", action="store_true", help=f"do not read or write the cache (also: ${NO_CACHE_ENV})")
    p.add_argument("--cache-dir", type=Path, metavar="PATH",
                   help=f"where to keep the cache (default: ${CACHE_ENV}, else `cache-dir` in the configuration, else "
                   ".repro_lint_cache/ at the project root; none outside a project)")
    p.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default and maximum: number of cores)")
    p.add_argument("--config", action="append", default=[], metavar="PATH | KEY=VALUE",
                   help="configuration file (default: pyproject.toml at the project root), or a setting in TOML that "
                   "overrides the file's (`--config \"seed = 1\"`); may be repeated")
    p.add_argument("--exit-zero", "-e", action="store_true", help="exit 0 even when findings remain")
    p.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")
    p.add_argument("--silent", "-s", action="store_true",
                   help="print nothing but errors (the exit status still says whether findings remain)")
    p.add_argument("--verbose", "-v", action="store_true", help="show tracebacks of internal errors")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the text output (auto: on a terminal, unless NO_COLOR is set and not empty; "
                   "FORCE_COLOR set and not empty colours a pipe too)")
    p.add_argument("--no-color", action="store_true", help="same as --color never")
    return p


def _split_add_noqa(argv: list[str]) -> list[str]:
    """`--add-noqa=REASON` (ruff's form: the reason only after `=`, so that `--add-noqa .`
    still names a path) as `--add-noqa --add-noqa-reason REASON`."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + argv[i:]
        if arg.startswith("--add-noqa="):
            out += ["--add-noqa", "--add-noqa-reason", arg.split("=", 1)[1]]
        else:
            out.append(arg)
    return out


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class OutputError(Exception):
    """The report cannot be written: one line, exit 2."""


def _write_output(text: "str | Iterable[str]", path: Optional[Path]) -> None:
    """Write the report (a string, or chunks) to stdout, or to `path` whole: a temporary file
    replaces it only once everything is written."""
    chunks = [text] if isinstance(text, str) else text
    if path is None:
        for chunk in chunks:
            sys.stdout.write(chunk)
        return
    shown = path
    path = path.resolve()
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"repro-lint: error: cannot write {shown}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for chunk in chunks:
                fh.write(chunk)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"repro-lint: error: cannot write {shown}: {exc.strerror or exc}") from exc
        raise


def _output_format(args) -> str:
    from repro_lint.output import FORMATS

    if args.format:
        return args.format
    env = os.environ.get(FORMAT_ENV, "").strip()
    if not env:
        return "text"
    if env not in FORMATS:
        raise UsageError(f"repro-lint: {FORMAT_ENV}={env!r} is not an output format (choose from {', '.join(FORMATS)})")
    return env


def _load_config(args, root: Path, known: list[str]):
    """The configuration: a file (`--config PATH`, else found at the root) and then the
    `--config KEY=VALUE` settings over it, then the options that stand for settings."""
    from repro_lint.discover.config import apply_overrides, find_config, load_config
    from repro_lint.facts.matchers import get_matchers

    settings = [c for c in args.config if "=" in c and not Path(c).is_file()]
    files = [Path(c) for c in args.config if c not in settings]
    if len(files) > 1:
        raise UsageError("repro-lint: --config: give at most one configuration file")
    sources = get_matchers().sources
    cfg = load_config(files[0] if files else find_config(root), known, sources)
    apply_overrides(cfg, settings, known, sources)
    if args.exclude is not None:
        cfg.exclude = list(args.exclude)
    cfg.extend_exclude = [*cfg.extend_exclude, *args.extend_exclude]
    if args.check_tests:
        cfg.check_tests = True
    cache_dir = args.cache_dir or (Path(os.environ[CACHE_ENV]) if os.environ.get(CACHE_ENV) else None)
    if cache_dir is not None:
        cfg.cache_dir = cache_dir.expanduser().absolute()
    return cfg


def _no_cache(args, cfg, root: Path) -> bool:
    """No cache when asked, and outside a project (no pyproject.toml or .git above the
    files): a check of a lone script leaves no folder beside it unless `cache-dir` says where."""
    from repro_lint.discover.project import is_project_root

    if args.no_cache or os.environ.get(NO_CACHE_ENV, "").strip().lower() not in ("", "0", "false"):
        return True
    return cfg.cache_dir is None and not is_project_root(root)


def run_check_command(argv: list[str]) -> int:
    args = check_parser().parse_args(_split_add_noqa(argv))
    if args.watch:
        from repro_lint.cli.watch import watch

        if "-" in args.paths or args.stdin_filename is not None:
            raise UsageError("repro-lint: --watch does not work on stdin")
        again = [a for a in argv if a not in ("--watch", "-w")]
        return watch(lambda: run_check_command(again), [Path(p) for p in args.paths] or [Path(".")])
    return _check(args)


def _check(args) -> int:
    from repro_lint.discover.config import ConfigError, known_code
    from repro_lint.check.files import PathError
    from repro_lint.check.run import run_check
    from repro_lint.check.select import known_codes, select
    from repro_lint.cli import progress
    from repro_lint.output.locations import Locator
    from repro_lint.discover.project import find_root

    fmt = _output_format(args)
    color = "never" if args.no_color else args.color
    known = known_codes()
    for code in [*(args.select or []), *args.extend_select, *args.ignore]:
        if not known_code(code, known):
            raise UsageError(f"repro-lint: unknown rule code `{code}`")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("repro-lint: --jobs must be at least 1")
    if args.fix_only:
        args.fix = True
    overrides: dict[Path, bytes] = {}
    stdin = "-" in args.paths or (args.stdin_filename is not None and not args.paths)
    if stdin:
        if args.paths not in ([], ["-"]):
            raise UsageError("repro-lint: `-` (stdin) cannot be combined with other paths")
        if args.add_noqa or args.diff:
            raise UsageError("repro-lint: --add-noqa and --diff do not work on stdin")
        name = args.stdin_filename or Path("stdin.py")
        overrides[name] = sys.stdin.buffer.read()
        paths: list[Path] = []
    else:
        paths = [Path(p) for p in args.paths] or [Path(".")]
    for p in paths:
        if not p.exists():
            raise UsageError(f"repro-lint: {_log(str(p))}: no such file or directory")
    if args.output_file is not None and not args.output_file.resolve().parent.is_dir():
        raise UsageError(f"repro-lint: cannot write --output-file {args.output_file}: folder {args.output_file.parent} does not exist")
    root = find_root(paths or list(overrides))
    try:
        cfg = _load_config(args, root, known)
    except ConfigError as exc:
        _say("error", exc)
        return 2
    no_cache = _no_cache(args, cfg, root)
    if args.show_settings:
        from repro_lint.cli.show import settings_text

        _emit(settings_text(cfg, root, args, no_cache), args.output_file)
        return 0
    if args.show_files:
        from repro_lint.cli.show import files_text

        try:
            _emit(files_text(paths, cfg, root), args.output_file)
        except PathError as exc:
            print(f"repro-lint: error: {exc}", file=sys.stderr)
            return 2
        return 0
    # more processes than cores only add memory: --jobs is capped at the cores this process may use
    jobs = min(args.jobs or usable_cores(), usable_cores())
    quiet = args.quiet or args.silent

    def check(overrides=overrides, known=None):
        with progress.shown(progress.wanted(quiet)):
            return run_check(
                paths, cfg, root=root, jobs=jobs, use_cache=not no_cache, verbose=args.verbose,
                overrides=overrides, dependents=args.whole_program, known=known,
            )

    def selected(report):
        return select(report, cfg, args.select, args.extend_select, args.ignore, ignore_noqa=args.ignore_noqa)

    try:
        report = check()
    except PathError as exc:
        _say("error", exc)
        return 2
    for line in report.warnings:  # (once: a check again after fixes finds the same)
        _say("warning", line)
    if args.add_noqa or (args.fix and not args.diff and not stdin):
        from repro_lint.core.leftovers import remove_stale

        remove_stale(sorted(set(report.leftovers)))  # what a --fix killed while writing left
    findings = selected(report)
    locator = Locator({_shown(p): data for p, data in overrides.items()})
    if report.files_checked == 0 and not report.errors and not args.silent:
        print("repro-lint: warning: No Python files found under the given path(s)", file=sys.stderr)

    if args.add_noqa:
        from repro_lint.fix.add_noqa import add_noqa

        noqa = add_noqa(findings, report.root, args.add_noqa_reason)
        for line in noqa.warnings if not args.silent else ():
            _say("warning", line)
        for line in [*report.errors, *noqa.errors]:
            _say("error", line)
        if not args.silent:
            print(f"Added {noqa.added} noqa directive{'s' if noqa.added != 1 else ''}.", file=sys.stderr)
        return 2 if report.errors or noqa.errors else 0

    fixed = 0
    fix_failed = False
    fixed_findings: list = []
    if args.fix or args.diff:
        from repro_lint.fix.rounds import apply_fixes

        resolved = {str(p.resolve()): data for p, data in overrides.items()}
        outcome = apply_fixes(
            report, findings, cfg, unsafe=args.unsafe_fixes, write=not args.diff, jobs=jobs,
            selector=selected, use_cache=not no_cache, overrides=resolved,
        )
        if args.diff:
            if not args.silent:
                sys.stdout.write(outcome.diff)
                if outcome.fixed and not args.quiet:
                    # (on stderr, as ruff says it: stdout holds the diff alone)
                    print(f"Would fix {_fixed_count(outcome.fixed, len(outcome.follow_on))}.", file=sys.stderr)
            for line in outcome.errors:
                _say("error", line)
            for line in report.errors:
                _say("error", line)
            if outcome.errors or report.errors:
                return 2
            return 1 if outcome.diff else 0
        fixed = outcome.fixed
        fix_failed = bool(outcome.errors)
        report.errors.extend(outcome.errors)
        fixed_findings = [(f, id(f) in outcome.follow_on) for f in outcome.applied]
        if outcome.changed_paths:
            if stdin:
                overrides = {p: outcome.texts.get(_shown(p), data) for p, data in overrides.items()}
                locator = Locator({_shown(p): data for p, data in overrides.items()})
            import dataclasses

            # (the files not fixed are not extracted again, nor the fixed ones the fixes extracted as a check does)
            report = check(overrides, known=dataclasses.replace(report, facts={**report.facts, **outcome.facts}))
            report.errors.extend(outcome.errors)
            findings = selected(report)
        if stdin:  # the fixed source goes to stdout, as editors expect; the report to stderr
            sys.stdout.buffer.write(next(iter(overrides.values())))
            sys.stdout.flush()

    out = sys.stderr if stdin and args.fix and args.output_file is None else None
    if args.fix_only:
        # what was fixed, nothing of what remains (ruff's `--fix-only`)
        if not args.silent and not args.quiet:
            tail = _fixes_text(fixed_findings) if args.show_fixes and fixed_findings else ""
            if fixed:
                tail += f"Fixed {_fixed_count(fixed, sum(1 for _, on in fixed_findings if on))}.\n"
            _emit(tail, args.output_file, out)
    elif not args.silent or args.output_file is not None:
        _write_report(args, fmt, color, report, findings, locator, fixed, fixed_findings, out)
    for line in report.errors:
        _say("error", line)
    if report.errors or fix_failed:
        return 2
    if args.exit_non_zero_on_fix and fixed:
        return 1
    if findings and not args.exit_zero and not args.fix_only:
        return 1
    return 0


def _log(text: str) -> str:
    from repro_lint.output.log_safe import neutral

    return neutral(text)


def _say(kind: str, line: "str | Exception") -> None:
    """An error or warning line on stderr; the names of files in it as a CI log can show
    them (`output.log_safe`: a name can hold a newline and a workflow command)."""
    print(f"repro-lint: {kind}: {_log(str(line))}", file=sys.stderr)


def _write_report(args, fmt: str, color: str, report, findings: list, locator, fixed: int, fixed_findings: list, out) -> None:
    """The report in the chosen format, to `--output-file`, else to `out` or stdout."""
    from repro_lint.output import text

    if args.statistics:
        if fmt == "json":
            rows = text.statistics_rows(findings, args.unsafe_fixes)
            _emit(json.dumps(rows, indent=2) + "\n", args.output_file, out)
        else:
            _emit(text.statistics(findings, args.unsafe_fixes), args.output_file, out)
        return
    if fmt not in ("text", "full", "concise"):
        _emit(_machine_report(fmt, report, findings, locator), args.output_file, out)
        return
    tail = ""
    if args.show_fixes and fixed_findings:
        tail += _fixes_text(fixed_findings)
    if not args.quiet and report.files_checked:
        tail += text.summary_line(findings, fixed, sum(1 for _, on in fixed_findings if on)) + "\n"
    if fmt == "concise":
        _emit(itertools.chain(text.concise_lines(findings, locator), [tail]), args.output_file, out)
        return
    stream = out or sys.stdout
    # a file is never coloured unless asked for; a stream when it is a terminal (or FORCE_COLOR)
    wanted = text.color_wanted(stream, color) if not args.output_file else color == "always"
    chunks = text.render_chunks(findings, wanted, show_source=True, locator=locator)
    _emit(itertools.chain(chunks, [tail]), args.output_file, out)


def _machine_report(fmt: str, report, findings: list, locator) -> "str | Iterable[str]":
    """The report in a format for programs and CI services."""
    from repro_lint.output import azure, github, gitlab, json_lines, json_out, junit, pylint, rdjson, sarif

    if fmt == "json":
        return json_out.render_chunks(findings, report.errors, report.files_checked, locator)
    if fmt == "sarif":
        return sarif.render(findings, report.root, locator)
    if fmt == "github":
        return github.render(findings, locator)
    if fmt == "gitlab":
        return gitlab.render(findings, report.root, locator)
    if fmt == "junit":
        return junit.render(findings, locator)
    if fmt == "rdjson":
        return rdjson.render(findings, locator)
    lines = {"json-lines": json_lines, "pylint": pylint, "azure": azure}[fmt]
    return lines.render_lines(findings, locator)


def _shown(path: Path) -> str:
    from repro_lint.check.files import display_path

    return display_path(path)


def _emit(body: "str | Iterable[str]", path: Optional[Path], stream=None) -> None:
    """Write the report: a string, or chunks written as they are made."""
    if path is None and stream is not None:
        for chunk in [body] if isinstance(body, str) else body:
            stream.write(chunk)
    else:
        _write_output(body, path)


def _fixed_count(fixed: int, follow_ons: int) -> str:
    """"3 findings (1 follow-on)": what --fix fixed or --diff would, follow-ons counted apart."""
    out = f"{fixed} finding{'s' if fixed != 1 else ''}"
    return out + (f" ({follow_ons} follow-on)" if follow_ons else "")


def _fixes_text(fixed: list) -> str:
    """`--show-fixes`: what was fixed, per file and rule; the follow-ons (findings that
    earlier fixes revealed and that were fixed in turn) named as such."""
    from collections import Counter

    lines = [f"Fixed {_fixed_count(len(fixed), sum(1 for _, on in fixed if on))}:"]
    by_file: dict[str, Counter] = {}
    for f, on in fixed:
        by_file.setdefault(f.location.path, Counter())[(f.code, f.name, on)] += 1
    for path in sorted(by_file):
        lines.append(f"-- {_log(path)}:")
        lines += [
            f"    {n} × {code} ({name}){', follow-on' if on else ''}" for (code, name, on), n in sorted(by_file[path].items())
        ]
    return "\n".join(lines) + "\n"


def run_rule_command(argv: list[str]) -> int:
    from repro_lint.core import catalog

    p = Parser(prog="repro-lint rule", description="Show a rule's documentation (the check's RPL and the probe's RPP codes).")
    p.add_argument("code", nargs="?", help="a rule code")
    p.add_argument("--all", action="store_true", help="every rule's documentation")
    p.add_argument("--output-format", "--format", dest="format", choices=("text", "json"), default="text")
    args = p.parse_args(argv)
    docs = catalog.all_docs()
    if args.all == (args.code is not None):
        raise UsageError("repro-lint rule: give a rule code or --all")
    if args.all:
        chosen = list(docs.values())
    else:
        doc = docs.get(args.code.upper())
        if doc is None:
            print(f"repro-lint: error: unknown rule code `{args.code}` (see `repro-lint rules`)", file=sys.stderr)
            return 2
        chosen = [doc]
    if args.format == "json":
        items = [
            {"code": d.code, "name": d.name, "summary": d.summary, "fix": d.fix, "help": d.help or None, "markdown": d.markdown()}
            for d in chosen
        ]
        print(json.dumps(items if args.all else items[0], indent=2))
    else:
        sys.stdout.write("\n".join(d.markdown() for d in chosen))
    return 0


def run_rules_command(argv: list[str]) -> int:
    from repro_lint.core import catalog
    from repro_lint.output import text

    p = Parser(prog="repro-lint rules", description="List all rules.")
    p.add_argument("--output-format", "--format", dest="format", choices=("text", "json"), default="text")
    args = p.parse_args(argv)
    docs = catalog.all_docs()
    if args.format == "json":
        print(json.dumps([{"code": d.code, "name": d.name, "summary": d.summary, "fix": d.fix} for d in docs.values()], indent=2))
        return 0
    rows = [[d.code, d.name, "" if d.fix == "none" else d.fix, d.summary] for d in docs.values()]
    # plain columns: a pipe or a file gets whole lines, never a table cut to 80 columns
    sys.stdout.write(text.plain_table(rows, ["code", "name", "fix", "summary"]))
    return 0


def run_clean_command(argv: list[str]) -> int:
    from repro_lint.cli.clean import remove_caches

    p = Parser(prog="repro-lint clean", description="Remove the cache folders (.repro_lint_cache/) under the given folders.")
    p.add_argument("paths", nargs="*", type=Path, help="folders (default: .)")
    args = p.parse_args(argv)
    removed, errors = remove_caches(args.paths or [Path(".")])
    for path in removed:
        print(f"Removed cache at: {path}")
    for line in errors:
        print(f"repro-lint: error: {line}", file=sys.stderr)
    return 2 if errors else 0


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in ("--version", "-V"):
            print(f"repro-lint {__version__}")
            return 0
        if argv and argv[0] in ("-h", "--help"):
            print(
                "usage: repro-lint [check] [PATHS...] [options]\n"
                "       repro-lint rule CODE | rule --all | rules\n"
                "       repro-lint clean [FOLDERS...]\n"
                "       repro-lint probe SCRIPT [-- ARGS] | probe -m MODULE:FUNCTION\n"
                "       repro-lint env snapshot [-o FILE] | env diff A B\n"
                "       repro-lint server   (a language server for editors: LSP over stdio)\n\n"
                "Run `repro-lint check --help` for the checker's options."
            )
            return 0
        if argv and not argv[0].startswith("-") and argv[0] not in SUBCOMMANDS and not Path(argv[0]).exists():
            from repro_lint.core.suggest import nearest

            near = nearest(argv[0], SUBCOMMANDS)
            if near:  # `repro-lint chek .`: a command misspelt, not a path
                raise UsageError(f"repro-lint: `{argv[0]}` is neither a command nor a path (did you mean `{near}`?)\n"
                                 "usage: repro-lint [check] [PATHS...] [options] (`repro-lint --help` lists the commands)")
        cmd = argv[0] if argv and argv[0] in SUBCOMMANDS else "check"
        rest = argv[1:] if argv and argv[0] in SUBCOMMANDS else argv
        if cmd == "check":
            return run_check_command(rest)
        if cmd == "rule":
            return run_rule_command(rest)
        if cmd == "rules":
            return run_rules_command(rest)
        if cmd == "clean":
            return run_clean_command(rest)
        if cmd == "probe":
            from repro_lint.probe.cli import main as probe_main

            return probe_main(rest)
        if cmd == "env":
            from repro_lint.probe.env_cli import main as env_main

            return env_main(rest)
        if cmd == "server":
            from repro_lint.server import main as server_main

            return server_main(rest)
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
        print(f"repro-lint: internal error: {type(exc).__name__}: {_log(str(exc))} (run with --verbose for details)", file=sys.stderr)
        return 2
    return 2
