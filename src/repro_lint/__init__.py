"""repro-lint: find, fix and prove what makes training runs impossible to repeat."""

__version__ = "0.1.0"
