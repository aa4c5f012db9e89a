"""The one pass over a file's syntax tree that every rule shares (`extractor`), in parts:
calls, assignments, callables kept in dicts, the module body, and name resolution."""
