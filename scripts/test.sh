#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine: install what is missing, build the
# release, test and sanitizer variants, then run every test, lint and the fuzz smoke
# run. Ends with "N passed, N failed"; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
make -j"$(nproc)" test-build >build-test.log 2>&1 || { tail -50 build-test.log; echo "0 passed, 1 failed"; exit 1; }
exec tests/run.sh "$@"
