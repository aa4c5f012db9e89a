#!/usr/bin/env bash
# Smoke run of the oldest and newest supported Pythons (3.9 and 3.13) where pyenv has them:
# install the package into a fresh virtual environment and run `repro-lint check` and
# `repro-lint check --diff` on the example. A Python that is not installed is skipped with
# a message, so this never fails on a machine without pyenv.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
versions_dir="${PYENV_ROOT:-$HOME/.pyenv}/versions"
for minor in 3.9 3.13; do
    python=""
    for candidate in "$versions_dir/$minor".*/bin/python; do
        [ -x "$candidate" ] && python="$candidate"
    done
    if [ -z "$python" ]; then
        echo "smoke: no Python $minor under $versions_dir; skipped"
        continue
    fi
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    "$python" -m venv "$work/venv"
    "$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$repo"
    cp "$repo/examples/train.py" "$work/train.py"
    status=0
    (cd "$work" && "$work/venv/bin/repro-lint" check --format concise train.py) > "$work/out.txt" 2>&1 || status=$?
    if [ "$status" -ne 1 ] || ! grep -q "train.py:.*RPL101" "$work/out.txt"; then
        echo "smoke: repro-lint check on $("$python" --version) exited $status:"
        cat "$work/out.txt"
        exit 1
    fi
    status=0
    (cd "$work" && "$work/venv/bin/repro-lint" check --diff train.py) > "$work/diff.txt" 2>&1 || status=$?
    if [ "$status" -ne 1 ] || ! grep -q "^+.*manual_seed\|^+.*random.seed" "$work/diff.txt"; then
        echo "smoke: repro-lint check --diff on $("$python" --version) exited $status:"
        cat "$work/diff.txt"
        exit 1
    fi
    echo "smoke: $("$python" --version): check and --diff ok"
    rm -rf "$work"
    trap - EXIT
done
