"""Extraction plug-ins of the rule families, found by discovery (`facts.hooks.registry`).

Each module declares `FAMILY = Family(...)`: the hooks the walk calls and the summaries its
facts answer. A new module here is picked up without being listed anywhere."""
