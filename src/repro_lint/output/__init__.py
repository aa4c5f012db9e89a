"""Report writers: text, concise, json, sarif, github, and the formats of other CI services
(json-lines, junit, gitlab, pylint, rdjson, azure)."""

# `full` is ruff's name for its default report, the one called `text` here
FORMATS = ("text", "full", "concise", "json", "json-lines", "sarif", "github", "gitlab", "junit", "pylint", "rdjson", "azure")
