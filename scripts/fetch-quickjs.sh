#!/usr/bin/env bash
# Fetches the QuickJS 2021-03-27 engine sources from the npm registry package
# qjsc@0.3.0, verifies the tarball against the pinned integrity, and extracts only the
# engine files (plus the engine's own test suites) into the build tree. Nothing of it is
# ever committed. Our own fixes live in patches/quickjs/*.patch and are applied in order.
set -euo pipefail

PACKAGE="qjsc@0.3.0"
INTEGRITY="sha512-a7+cU6/IVcZbIejffdt/wZVMX6LL2MDL3HQ9Zb5Gm23G9DvBMS/z9GHFxz39bAvp2PvMOM+ypSOAyokt2DdZ2w=="
TARBALL="qjsc-0.3.0.tgz"
INNER="package/deps/quickjs_2021_03_27"
FILES="quickjs.c quickjs.h quickjs-atom.h quickjs-opcode.h libregexp.c libregexp.h
libregexp-opcode.h libunicode.c libunicode.h libunicode-table.h cutils.c cutils.h libbf.c
libbf.h list.h VERSION LICENSE quickjs-libc.c quickjs-libc.h qjs.c
tests/test_builtin.js tests/test_language.js tests/test_closure.js tests/test_loop.js
tests/test_bignum.js"

top=$(cd "$(dirname "$0")/.." && pwd)
out="${1:-$top/build/quickjs}"
cache="$top/build/dl"
stamp="$out/.fetched"
patches=$(ls "$top"/patches/quickjs/*.patch 2>/dev/null || true)
want="$INTEGRITY $(cat $patches /dev/null | sha256sum | cut -c1-16)"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

mkdir -p "$cache"
if [ ! -f "$cache/$TARBALL" ]; then
  command -v npm >/dev/null || { echo "fetch-quickjs: npm is required (apt-get install npm)" >&2; exit 1; }
  (cd "$cache" && npm pack --silent "$PACKAGE" >/dev/null)
fi

got="sha512-$(openssl dgst -sha512 -binary "$cache/$TARBALL" | base64 -w0)"
if [ "$got" != "$INTEGRITY" ]; then
  echo "fetch-quickjs: integrity mismatch for $TARBALL" >&2
  echo "  expected $INTEGRITY" >&2
  echo "  got      $got" >&2
  rm -f "$cache/$TARBALL"
  exit 1
fi

rm -rf "$out.tmp"
mkdir -p "$out.tmp/x"
members=""
for f in $FILES; do members="$members $INNER/$f"; done
# shellcheck disable=SC2086
tar -xzf "$cache/$TARBALL" -C "$out.tmp/x" $members
mv "$out.tmp/x/$INNER"/* "$out.tmp/"
rm -rf "$out.tmp/x"
for p in $patches; do
  patch -s -d "$out.tmp" -p1 < "$p"
done
echo "$want" > "$out.tmp/.fetched"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "fetch-quickjs: QuickJS $(cat "$out/VERSION") extracted to $out (integrity verified)"
