#!/usr/bin/env bash
# The main job on a fresh Debian machine: install what is missing, build, and show a
# confined worker being started and checked exactly as ck-basal does before it runs
# any flow code.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
make -j"$(nproc)" all >/dev/null
echo "== ck-basal worker-check: start ck-basal-worker, confine it, check its Welcome =="
build/bin/ck-basal worker-check
echo
echo "== ck-basal exec examples/demo.js: a script in a confined, pooled worker =="
build/bin/ck-basal exec examples/demo.js
