"""Command-line usage errors: one clean line and exit 2, for every command of the tool."""

from __future__ import annotations

import argparse


class UsageError(Exception):
    """A command line the tool cannot run (its message is the one line shown)."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are a `UsageError` (no usage dump, no SystemExit)."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message}")
