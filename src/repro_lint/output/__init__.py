"""Report writers: text (rich), concise, json, sarif, github."""

FORMATS = ("text", "concise", "json", "sarif", "github")
