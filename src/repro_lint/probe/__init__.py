"""The runtime probe (`repro-lint probe`) and environment snapshots (`repro-lint env`).

The parent process (`cli`, `launch`, `units`, `compare`, `report`, `findings`, `render`)
never imports torch; each run is a child process (`runner`) that records ops (`recorder`,
`fingerprint`, `frames`, `predict`) and draws from global generators (`rng_audit`), and so
does every process the program starts (`session`, `processes`, `site/sitecustomize.py`,
`ending`).
"""

from pathlib import Path

# The JSON Schema of `repro-lint probe --format json` (shipped with the package).
REPORT_SCHEMA = Path(__file__).with_name("report.schema.json")
