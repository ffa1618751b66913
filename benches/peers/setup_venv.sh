#!/usr/bin/env bash
# Creates benches/.venv (git-ignored) with the peer implementations of `leiden-compare`, from PyPI.
# Each peer is installed on its own, so one that cannot be installed is skipped, not fatal.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/../.venv"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv" || { echo "cannot create $venv" >&2; exit 1; }
fi
"$venv/bin/pip" install -q --upgrade pip >/dev/null 2>&1 || true
"$venv/bin/pip" install -q numpy || { echo "numpy is required" >&2; exit 1; }
for pkg in igraph leidenalg graspologic-native networkit; do
    if "$venv/bin/pip" install -q "$pkg"; then
        echo "installed $pkg"
    else
        echo "could not install $pkg: its rows will be skipped" >&2
    fi
done
