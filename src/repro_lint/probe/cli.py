"""`repro-lint probe`: run a training program several times and show where the runs part ways.

    repro-lint probe [options] SCRIPT [-- ARGS...]
    repro-lint probe [options] -m PACKAGE.MODULE[:FUNCTION] [-- ARGS...]

Exit status: 0 runs identical (or differing only where nothing reaches a result), 1 runs
diverge, 2 inconclusive (processes the probe could not record) or error (the program
failed, bad usage, PyTorch missing). This module must not import torch: the runs do, in their own processes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

from repro_lint.core.usage import Parser, UsageError

INSTALL_HINT = "repro-lint probe needs PyTorch: pip install torch (the build you train with), or install repro-lint with its `probe` extra"
DEFAULT_MAX_OPS = 200_000
_MODULE_SPEC = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*)?$")


class _Parser(Parser):
    def error(self, message: str):
        if message.startswith("unrecognized arguments"):
            message += " (the program's own arguments go after --)"
        super().error(message)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="repro-lint probe",
        usage="%(prog)s [options] SCRIPT [-- ARGS...]\n       %(prog)s [options] -m MODULE[:FUNCTION] [-- ARGS...]",
        description="Run a training program several times and show where the runs part ways.",
        epilog="Exit status: 0 runs identical, 1 runs diverge, 2 inconclusive or error.",
    )
    p.add_argument("script", nargs="?", metavar="SCRIPT", help="Python file to run as __main__")
    p.add_argument("-m", dest="module", metavar="MODULE[:FUNCTION]", help="run a module, or call a function of it")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="cpu hides GPUs from the program")
    p.add_argument("--runs", type=_positive_int, default=2, metavar="N", help="runs to compare (default 2, at least 2)")
    p.add_argument(
        "--max-ops", type=_positive_int, default=DEFAULT_MAX_OPS, metavar="N", help=f"stop each run after N ops (default {DEFAULT_MAX_OPS})"
    )
    p.add_argument("--timeout", type=_positive_float, metavar="SECONDS", help="stop each run after SECONDS, compare what was recorded")
    p.add_argument(
        "--no-deterministic-run",
        action="store_true",
        help="skip the extra run with torch.use_deterministic_algorithms(True, warn_only=True)",
    )
    p.add_argument(
        "--nproc-per-node", type=_positive_int, metavar="N",
        help="run N ranks of the program as torchrun does (rendezvous on localhost) and compare rank by rank",
    )
    p.add_argument(
        "--vary-seed", action="store_true",
        help="run twice with different seeds and report the random streams that do not change (RPP106)",
    )
    p.add_argument(
        "--seed-arg", metavar="TEMPLATE",
        help="with --vary-seed: the program's seed option, e.g. '--seed {seed}' or 'seed={seed}' (Hydra)",
    )
    p.add_argument("--seed-env", metavar="NAME", help="with --vary-seed: the environment variable the program reads its seed from")
    p.add_argument(
        "--resume-check", action="store_true",
        help="report checkpoints saved without RNG state (RPP107); with --resume-args, compare a resumed run",
    )
    p.add_argument(
        "--resume-args", metavar="ARGS",
        help="with --resume-check: the program's arguments that resume from a checkpoint the first run saves",
    )
    p.add_argument("--stdin", type=Path, metavar="FILE", help="give every run this file as standard input (default: none)")
    # both names, as `check` takes them
    p.add_argument("--output-format", "--format", dest="format", choices=("text", "json", "sarif"), default="text",
                   help="report format (default: text)")
    p.add_argument("--output-file", "-o", type=Path, metavar="FILE", help="write the report to this file")
    return p


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except UsageError as exc:
        _say(str(exc))  # argparse repeats the arguments it did not expect
        return 2
    except KeyboardInterrupt:
        print("repro-lint probe: interrupted", file=sys.stderr)
        return 2
    except Exception as exc:  # one line, never the probe's traceback
        _say(f"repro-lint probe: internal error: {type(exc).__name__}: {exc}")
        return 2


def _main(argv: list[str]) -> int:
    own, script_args = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    try:
        args = _parser().parse_args(own)
    except SystemExit as exc:  # --help
        return 0 if exc.code == 0 else 2
    if os.environ.get("TORCHELASTIC_RUN_ID") and os.environ.get("TORCHELASTIC_RUN_ID") != "repro-lint-probe":
        # every rank would run its own probe, with runs that cannot meet and one output file
        raise UsageError(
            "repro-lint probe: started by torchrun; run `repro-lint probe --nproc-per-node N SCRIPT` instead, "
            "which starts and records the ranks itself"
        )
    target = _target(args, script_args)
    if args.output_file is not None and not args.output_file.resolve().parent.is_dir():
        raise UsageError(f"repro-lint probe: cannot write --output-file {args.output_file}: folder {args.output_file.parent} does not exist")
    if args.runs < 2:
        raise UsageError("repro-lint probe: --runs must be at least 2 (runs are compared with each other)")
    if importlib.util.find_spec("torch") is None:
        print(INSTALL_HINT, file=sys.stderr)
        return 2

    from repro_lint.core import catalog
    from repro_lint.probe.launch import RunFailed, launch, plan_runs
    from repro_lint.probe.predict import prediction_table
    from repro_lint.probe.report import build_report, error_report

    nondeterministic = catalog.load("nondeterministic_ops")
    base = {
        "target": target,
        "max_ops": args.max_ops,
        "rng_catalog": catalog.load("rng"),
        "predict": prediction_table(nondeterministic),
    }
    settings = {
        "device": args.device, "runs": args.runs, "max_ops": args.max_ops, "timeout": args.timeout,
        "nproc_per_node": args.nproc_per_node,
    }
    if args.stdin is not None and not args.stdin.is_file():
        raise UsageError(f"repro-lint probe: --stdin: no such file: {args.stdin}")
    plans = plan_runs(args.runs, dict(os.environ))
    if args.no_deterministic_run:
        plans = plans[:-1]
    mode, seed_method = _mode(args, target, plans)
    if mode != "repeat":
        plans = plans[:2]
        settings["mode"] = mode
    progress = _Progress(len(plans))
    tmp = tempfile.mkdtemp(prefix="repro-lint-probe-")
    try:
        outcomes = []
        audit = audit_failure = None
        for plan in plans:
            progress.start(plan)
            compiled = plan.deterministic and bool(outcomes) and _compiles(outcomes[0])
            try:
                outcome = launch(
                    plan, base, Path(tmp), args.device, _audit_timeout(args.timeout, outcomes, compiled),
                    nproc=args.nproc_per_node or 0, stdin=args.stdin, compiled=compiled,
                )
            except RunFailed as failure:
                progress.done()
                if not plan.deterministic:
                    return _fail(failure, args, error_report(target=target, settings=settings, failure=failure))
                audit_failure = failure
                continue
            progress.done()
            if plan.deterministic:
                audit = outcome
            else:
                outcomes.append(outcome)
    finally:
        # helpers of the program (resource trackers) may still write there as they end
        shutil.rmtree(tmp, ignore_errors=True)
    report = build_report(
        target=target,
        settings=settings,
        outcomes=outcomes,
        audit=audit,
        audit_failure=audit_failure,
        catalog_ops={op["id"]: op for op in nondeterministic.get("op", [])},
        mode=mode,
        seed_method=seed_method,
        check_checkpoints=args.resume_check,
    )
    _emit(report, args)
    return report["exit_code"]


def _mode(args, target: dict[str, Any], plans: list) -> tuple[str, Optional[dict[str, Any]]]:
    """The runs --vary-seed and --resume-check ask for, set on the first two plans."""
    if (args.seed_arg or args.seed_env) and not args.vary_seed:
        raise UsageError("repro-lint probe: --seed-arg and --seed-env go with --vary-seed")
    if args.resume_args is not None and not args.resume_check:
        raise UsageError("repro-lint probe: --resume-args goes with --resume-check")
    if args.vary_seed and args.resume_check:
        raise UsageError("repro-lint probe: --vary-seed and --resume-check are separate probes; give one")
    if args.vary_seed:
        from repro_lint.probe.seed_report import SEEDS, SHIFT, seeded_args

        if args.seed_arg and args.seed_env:
            raise UsageError("repro-lint probe: give --seed-arg or --seed-env, not both")
        first, second = plans[0], plans[1]
        second.role = "seed-varied"
        if args.seed_arg:
            if "{seed}" not in args.seed_arg:
                raise UsageError("repro-lint probe: --seed-arg must hold {seed}, e.g. --seed-arg '--seed {seed}'")
            first.args, second.args = (seeded_args(target["args"], args.seed_arg, seed) for seed in SEEDS)
            return "vary-seed", {"method": "argument", "option": args.seed_arg, "seeds": [str(s) for s in SEEDS]}
        if args.seed_env:
            first.env, second.env = ({args.seed_env: str(seed)} for seed in SEEDS)
            return "vary-seed", {"method": "environment", "variable": args.seed_env, "seeds": [str(s) for s in SEEDS]}
        second.seed_shift = SHIFT
        return "vary-seed", {"method": "intercept", "seeds": ["as the program sets them", f"each moved by {SHIFT}"]}
    if args.resume_check and args.resume_args is not None:
        import shlex

        try:
            resume = shlex.split(args.resume_args)
        except ValueError as exc:
            raise UsageError(f"repro-lint probe: --resume-args: {exc}") from None
        second = plans[1]
        second.role, second.args = "resumed", resume
        # Only the checkpoint should differ: both runs start from the same hash and torch seeds.
        second.hash_seed, second.torch_seed = plans[0].hash_seed, plans[0].torch_seed
        return "resume", None
    return "repeat", None


def _compiles(outcome) -> bool:
    return any(t.get("compile_calls") for t in [*outcome.roots.values(), *outcome.children])


def _audit_timeout(timeout: Optional[float], outcomes: list, compiled: bool) -> Optional[float]:
    """The audit of a compiling program runs without the op hook that counts --max-ops: a
    recorded run that was stopped early bounds it in time instead (compiling costs more)."""
    if not compiled or not any(d.get("stop_reason") for o in outcomes for d in o.roots.values()):
        return timeout
    longest = max((d.get("seconds") or 0) for o in outcomes for d in o.roots.values())
    bound = max(60.0, 4 * longest)
    return bound if timeout is None else min(timeout, bound)


def _target(args, script_args: list[str]) -> dict[str, Any]:
    if bool(args.script) == bool(args.module):
        raise UsageError("repro-lint probe: give either SCRIPT or -m MODULE[:FUNCTION]")
    if args.module:
        if not _MODULE_SPEC.match(args.module):
            raise UsageError(f"repro-lint probe: -m {args.module!r} is not PACKAGE.MODULE or PACKAGE.MODULE:FUNCTION")
        module, _, function = args.module.partition(":")
        return {"kind": "module", "module": module, "function": function or None, "args": script_args}
    path = Path(args.script)
    if not path.is_file():
        raise UsageError(f"repro-lint probe: no such file: {args.script}")
    return {"kind": "script", "path": str(path.resolve()), "args": script_args}


_FAILURES = {
    "script-error": "the program raised {message} in run {run}; the probe compares only runs that finish.",
    "script-exit": "the program exited ({message}) in run {run}; the probe compares only runs that finish.",
    "target-error": "cannot run the target: {message}",
    "no-torch": INSTALL_HINT + " (importing torch failed: {message})",
    "no-cuda": "--device cuda was given, but torch finds no usable GPU.",
    "timeout": "{message}.",
    "crash": "{message}.",
    "probe-error": "internal error in run {run}: {message}",
}


def _fail(failure, args, report: dict[str, Any]) -> int:
    message = failure.message
    if failure.kind == "script-error" and failure.exc_type:
        # "KeyError: 'y'"; the first line that says something (torchrun's errors are tables)
        said = next((line.strip() for line in message.splitlines() if set(line.strip()) - set("=-_ ")), "")
        message = f"{failure.exc_type}: {said}" if said else failure.exc_type
    text = _FAILURES.get(failure.kind, "{message}").format(message=message, run=failure.run)
    # The program's messages and tracebacks may hold secrets (a URL with a password, a token
    # in an exception): redacted like every other output of the probe.
    _say(f"repro-lint probe: {text}")
    if failure.traceback:
        _say(failure.traceback.rstrip())
    elif failure.stderr and failure.kind in ("crash", "timeout", "script-error", "script-exit"):
        # argparse and Hydra print their usage errors there before they exit
        _say("Last lines the program wrote to stderr:\n" + failure.stderr)
    if args.format != "text":
        _emit(report, args)
    return 2


def _say(text: str) -> None:
    """A line for the user on standard error, secrets redacted."""
    from repro_lint.probe.redact import redact_text

    print(redact_text(text), file=sys.stderr)


def _emit(report: dict[str, Any], args) -> None:
    from repro_lint.probe.redact import redact_tree

    report = redact_tree(report)  # the program's arguments, messages and tracebacks may hold secrets
    if args.format == "json":
        _write(json.dumps(report, indent=2) + "\n", args.output_file)
    elif args.format == "sarif":
        from repro_lint.output.sarif import build_log
        from repro_lint.probe.findings import findings, probe_rules

        log = build_log(findings(report) if report["status"] != "error" else [], probe_rules())
        invocation: dict[str, Any] = {"executionSuccessful": report["status"] != "error"}
        reasons = report.get("inconclusive_reasons") or []
        notifications = [{"level": "warning", "message": {"text": r}} for r in reasons]  # what kept the probe from a verdict
        notifications += [
            {"level": "error", "message": {"text": f"error of the probe itself in run {e['run']} ({e['process']}, {e['where']}): {e['error']}"}}
            for e in report.get("probe_errors") or []
        ]
        if notifications:
            invocation["toolExecutionNotifications"] = notifications
        log["runs"][0]["invocations"] = [invocation]
        _write(json.dumps(log, indent=2) + "\n", args.output_file)
    else:
        from repro_lint.probe.console import make_console
        from repro_lint.probe.render import render_text

        if args.output_file is None:
            render_text(report, make_console())
        else:
            with open(args.output_file, "w", encoding="utf-8") as fh:
                render_text(report, make_console(fh))


def _write(text: str, path: Optional[Path]) -> None:
    if path is None:
        sys.stdout.write(text)
    else:
        path.write_text(text, encoding="utf-8")


class _Progress:
    """One line per run on a terminal; silent otherwise (CI logs get the report only)."""

    def __init__(self, total: int):
        self.total = total
        self.enabled = sys.stderr.isatty()

    def start(self, plan) -> None:
        if self.enabled:
            what = "with deterministic algorithms" if plan.deterministic else "recording"
            print(f"repro-lint probe: run {plan.index}/{self.total} ({what}) ...", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.enabled:
            print(" done", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
