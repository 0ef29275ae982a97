#!/usr/bin/env bash
# Installs what basal needs on a Debian machine, only what is missing.
#   scripts/install-deps.sh          build and run (the demo)
#   scripts/install-deps.sh --test   also the test, lint and fuzz tools
set -euo pipefail

build_pkgs="gcc make patch openssl ca-certificates libseccomp-dev libsqlite3-dev
libjansson-dev libssl-dev libcurl4-openssl-dev libsystemd-dev libmicrohttpd-dev git"
# The PostgreSQL store (issue 26): libpq's headers and library.
build_pkgs="$build_pkgs libpq-dev"
test_pkgs="clang clang-tidy cppcheck libclang-rt-14-dev strace python3 curl
python3-prometheus-client systemd groff-base man-db"
# tests/t_store_locks.c reads the store with the sqlite3 shell beside a running serve.
test_pkgs="$test_pkgs sqlite3"
# tests/t_completion.sh drives the bash completion under bash-completion's own helpers.
test_pkgs="$test_pkgs bash-completion"
# tests/t_web.sh drives the status page (serve --web) in headless Chromium.
test_pkgs="$test_pkgs chromium"
# tests/t_codemode_typescript.sh checks codemode check with Debian's TypeScript compiler.
test_pkgs="$test_pkgs node-typescript"
# tests/run.sh starts a throwaway PostgreSQL cluster (tests/lib/pg_cluster.sh) for the
# PostgreSQL store's tests: the server (initdb, pg_ctl) and psql.
test_pkgs="$test_pkgs postgresql"

# The arm64 cross build (mk/aarch64.mk, part of the test build): Debian's cross
# compiler, the arm64 libraries through multiarch, and qemu-user to run the filter
# exporter and the binaries' --version.
cross_pkgs="gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
libseccomp-dev:arm64 libssl-dev:arm64 libsqlite3-dev:arm64 libjansson-dev:arm64
libcurl4-openssl-dev:arm64 libsystemd-dev:arm64 libmicrohttpd-dev:arm64"
# libpq for arm64: only the library. Debian's libpq-dev is not Multi-Arch, so
# libpq-dev:arm64 would remove the native libpq-dev; its headers are the same on both
# (LP64), so the cross build takes the native ones and links libpq.so.5 of arm64.
cross_pkgs="$cross_pkgs libpq5:arm64"

# The Windows cross build and its Wine tests (mk/windows.mk, tests/t_windows.sh):
# Debian's mingw-w64 C compiler and Wine (64-bit).
windows_pkgs="gcc-mingw-w64-x86-64 wine wine64"

pkgs="$build_pkgs"
[ "${1:-}" = "--test" ] && pkgs="$pkgs $test_pkgs $cross_pkgs $windows_pkgs"
# npm fetches QuickJS from the registry; a machine with Node.js from elsewhere keeps it.
command -v npm >/dev/null 2>&1 || pkgs="$pkgs npm"

missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "install-deps: installing$missing"
  case "$missing" in
  *:arm64*) dpkg --print-foreign-architectures | grep -qx arm64 || $sudo dpkg --add-architecture arm64 ;;
  esac
  $sudo apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# The TypeScript compiler tests/t_codemode_typescript.sh compiles the codemode
# declarations with: the version and integrity pinned in tests/tools/tsc, installed with
# npm ci into build/tsc (never committed; the test installs it itself when missing).
if [ "${1:-}" = "--test" ]; then
  here=$(cd "$(dirname "$0")/.." && pwd)
  if ! cmp -s "$here/tests/tools/tsc/package-lock.json" "$here/build/tsc/package-lock.json" ||
    [ ! -x "$here/build/tsc/node_modules/.bin/tsc" ]; then
    mkdir -p "$here/build/tsc"
    cp "$here/tests/tools/tsc/package.json" "$here/tests/tools/tsc/package-lock.json" "$here/build/tsc/"
    echo "install-deps: installing the pinned TypeScript compiler into build/tsc"
    (cd "$here/build/tsc" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null)
  fi
fi
