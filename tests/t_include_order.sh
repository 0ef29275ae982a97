#!/usr/bin/env bash
# The include order of src/ (src/README.md), checked by scripts/check-includes.py: the
# tree passes, and a scratch copy with one deliberate violation of each kind fails,
# which proves the check would turn red on a real one. It also holds that only store/
# speaks SQL (issue 24): no sqlite3 or sql_ outside src/store/, no SQLite type in a
# public header of store/, and the store's connection (store_internal.h, sql.h) used
# by src/store/*.c alone.
set -u
cd "$(dirname "$0")/.." || exit 2
check=scripts/check-includes.py
. tests/lib/harness.sh
scratch_dir includes

out=$(python3 "$check" 2>&1)
if [ $? -eq 0 ]; then echo "ok - include order: the tree has no upward include, cycle, private include or SQL outside store/"
else echo "not ok - include order: the tree breaks the order: $(echo "$out" | head -3 | tr '\n' ' ')"; fi

# expect_red NAME KIND FILE LINE: a fresh copy with LINE added to FILE must fail with KIND.
expect_red() {
    rm -rf "$scratch/tree" && mkdir -p "$scratch/tree" && cp -r src tests bench fuzz "$scratch/tree/"
    printf '%s\n' "$4" >>"$scratch/tree/$3"
    out=$(python3 "$check" "$scratch/tree" 2>&1)
    status=$?
    if [ $status -eq 1 ] && echo "$out" | grep -q "^$2: "; then
        echo "ok - include order: $1 is refused ($(echo "$out" | grep -m1 "^$2: " | cut -c1-120))"
    else
        echo "not ok - include order: $1 was not refused as $2 (exit $status): $(echo "$out" | head -2 | tr '\n' ' ')"
    fi
}
expect_red "an upward include (base includes flows)" upward src/base/names.c '#include "flows/manifest.h"'
expect_red "an upward include (store includes flows)" upward src/store/runs.c '#include "flows/flow_host.h"'
expect_red "a sideways include (the worker includes the supervisor)" upward \
    src/worker/serve.c '#include "supervisor/pool.h"'
expect_red "a cycle between two modules of one folder" cycle src/store/sql.h '#include "store/runs.h"'
expect_red "a private header included from another folder" private tests/t_engine.c \
    '#include "worker/engine_internal.h"'
expect_red "an include of a folder that does not exist" unknown src/cli/main.c '#include "core/store.h"'
expect_red "SQL outside store/ (the flow registry prepares a statement)" sql src/flows/flows.c \
    'static int peek(sqlite3 *db) { return sqlite3_exec(db, "SELECT 1", 0, 0, 0); }'
expect_red "a store helper called outside store/ (the ops server reads the clock)" sql \
    src/serve/ops_runs.c 'static long long now(void) { return sql_now_ms(); }'
expect_red "an SQLite type in a public header of store/" sql src/store/runs.h \
    'typedef struct sqlite3 sqlite3;'
expect_red "the store's connection taken outside store/ (store_internal.h)" private \
    src/flows/flows.c '#include "store/store_internal.h"'
expect_red "the store's statement helpers included outside store/ (store/sql.h)" private \
    tests/t_store.c '#include "store/sql.h"'
