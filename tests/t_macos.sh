#!/usr/bin/env bash
# The macOS worker as far as Linux can prove it (issue 30; docs/platforms.md, "macOS"):
# `make macos-check` checks the Seatbelt profile against sandbox.md, compiles every
# source of the macOS worker, its launcher and the macOS probes for arm64-apple-macos13
# against tests/macos/macos_decls.h, and checks the worker's objects would link; `make
# macos-logic` runs the CPU timer's and the parent watch's probes over a Linux
# stand-in for kqueue and thread_info. Nothing else of it runs here;
# .github/workflows/macos.yml builds, signs and runs the worker on a macOS runner.
set -u
cd "$(dirname "$0")/.." || exit 2

command -v clang >/dev/null 2>&1 || { echo "not ok - macos: clang is installed: missing (scripts/install-deps.sh --test)"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "not ok - macos: python3 is installed: missing"; exit 1; }
status=0
make -s --no-print-directory macos-check || status=1
make -s --no-print-directory macos-logic || status=1
exit $status
