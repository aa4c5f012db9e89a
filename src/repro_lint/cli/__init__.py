"""The command line: `repro-lint` and its subcommands."""
