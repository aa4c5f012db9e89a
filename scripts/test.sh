#!/usr/bin/env bash
# Installs what the tests need and runs them (the README's test command).
# torch is pinned: the pinned CPU build is what the tests run against, and an unpinned
# requirement could pull several GB of CUDA wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --disable-pip-version-check "torch==2.13.0" -e ".[test,probe]"
python -m pytest -n 2 --dist loadfile -q "$@"
