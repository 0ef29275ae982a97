#!/usr/bin/env bash
# The status page (serve --web, docs/web.md) in a real serve and a real headless
# Chromium, driven over the DevTools protocol: tests/tools/web_test.py says which guard
# each check proves. Needs Debian's chromium (scripts/install-deps.sh --test): without
# it the test fails, it never skips. BASAL_WEB_SCREENSHOTS=docs keeps the screenshots
# of each page (docs/web-*.png, shown by docs/web.md); else they go to the scratch dir.
set -u
cd "$(dirname "$0")/.." || exit 2
# Both builds, as the test programs run: the test build and the sanitizer build.
variants=${BASAL_WEB_VARIANTS:-test asan}
for v in $variants; do
    for b in ck-basal ck-basal-worker; do
        [ -x "build/$v/bin/$b" ] || { echo "not ok - web: build/$v/bin/$b is missing (make test-build)"; exit 1; }
    done
done
[ -x build/test/tools/test_module ] || { echo "not ok - web: build/test/tools/test_module is missing (make test-build)"; exit 1; }
chromium=$(command -v chromium || true)
if [ -z "$chromium" ]; then
    echo "not ok - web: no chromium (scripts/install-deps.sh --test installs it)"
    exit 1
fi
. tests/lib/harness.sh
scratch_dir web
status=0
for v in $variants; do
    mkdir -p "$scratch/$v"
    shots="$scratch/$v"
    [ "$v" = test ] && shots=${BASAL_WEB_SCREENSHOTS:-$shots}
    python3 tests/tools/web_test.py --bin "build/$v/bin" --label "$v" --module build/test/tools/test_module \
        --chromium "$chromium" --scratch "$scratch/$v" --docs "$shots" || status=1
done
exit $status
