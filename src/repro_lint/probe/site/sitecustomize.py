"""Found first on PYTHONPATH by the Python programs a `repro-lint probe` run starts (spawned
workers, loky and Hydra launcher jobs, subprocesses): they record too. Outside a probe run
(the variable unset) it does nothing but hand on to the next `sitecustomize`, if any."""

import importlib.machinery
import importlib.util
import os
import sys

if os.environ.get("REPRO_LINT_PROBE_RUN"):
    try:
        from repro_lint.probe import session as _session

        _session.start_exec_child()
    except Exception:  # never break the program: an unrecorded child makes the run inconclusive
        pass


def _next_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    entries = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", entries)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_next_sitecustomize()
