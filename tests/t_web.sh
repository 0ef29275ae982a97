#!/usr/bin/env bash
# The status page (serve --web, docs/web.md) in a real serve and a real headless
# Chromium, driven over the DevTools protocol: tests/tools/web_test.py says which guard
# each check proves. Needs Debian's chromium (scripts/install-deps.sh --test): without
# it the test fails, it never skips. BASAL_WEB_SCREENSHOTS=docs keeps the screenshots
# of each page (docs/web-*.png, shown by docs/web.md); else they go to the scratch dir.
set -u
cd "$(dirname "$0")/.." || exit 2
bin=${BASAL_WEB_BIN:-build/test/bin}
for b in ck-basal ck-basal-worker; do
    [ -x "$bin/$b" ] || { echo "not ok - web: $bin/$b is missing (make test-build)"; exit 1; }
done
[ -x build/test/tools/test_module ] || { echo "not ok - web: build/test/tools/test_module is missing (make test-build)"; exit 1; }
chromium=$(command -v chromium || true)
if [ -z "$chromium" ]; then
    echo "not ok - web: no chromium (scripts/install-deps.sh --test installs it)"
    exit 1
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/basal-web.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT
python3 tests/tools/web_test.py --bin "$bin" --module build/test/tools/test_module \
    --chromium "$chromium" --scratch "$scratch" --docs "${BASAL_WEB_SCREENSHOTS:-$scratch}"
exit $?
