#!/usr/bin/env bash
# The macOS worker as far as Linux can prove it (issue 30; docs/platforms.md, "macOS"):
# `make macos-check` checks the Seatbelt profile against sandbox.md and compiles every
# macOS source for arm64-apple-macos13 against tests/macos/macos_decls.h. Nothing of it
# runs here; .github/workflows/macos.yml builds, signs and tests on a macOS runner.
set -u
cd "$(dirname "$0")/.." || exit 2

command -v clang >/dev/null 2>&1 || { echo "not ok - macos: clang is installed: missing (scripts/install-deps.sh --test)"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "not ok - macos: python3 is installed: missing"; exit 1; }
make -s --no-print-directory macos-check
