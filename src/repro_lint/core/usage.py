"""Command-line usage errors: one clean line and exit 2, for every command of the tool.
An unknown option names the nearest known one and is followed by the usage line."""

from __future__ import annotations

import argparse

from repro_lint.core.suggest import did_you_mean


class UsageError(Exception):
    """A command line the tool cannot run (its message is what is shown)."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are a `UsageError` (no usage dump, no SystemExit)."""

    def error(self, message: str):
        if message.startswith("unrecognized arguments: "):
            unknown = message.split(": ", 1)[1].split()
            options = [u.split("=", 1)[0] for u in unknown if u.startswith("-")]
            hint = did_you_mean(options[0], self._option_string_actions) if options else ""
            usage = self.format_usage().strip()
            raise UsageError(f"{self.prog}: {message}{hint}\n{usage} (`{self.prog} --help` lists the options)")
        raise UsageError(f"{self.prog}: {message}")
