#!/usr/bin/env bash
# Static checks as part of the suite: see scripts/lint.sh.
exec "$(dirname "$0")/../scripts/lint.sh"
