/* Whether a flow's script compiles, asked of a confined worker before the script is
 * stored (flow install): the worker compiles it with the engine that will run it and
 * runs none of it (Activate.compile_only), so nothing of an installed script can act
 * here, and a syntax error is refused with its file, line and column. */
#ifndef BASAL_FLOWS_SCRIPT_CHECK_H
#define BASAL_FLOWS_SCRIPT_CHECK_H

#include "supervisor/pool.h"

#include <stddef.h>

/* 0 if script[0..len) compiles; -1 with err (one line) if it does not ("the script does
 * not compile: syntax error: ... (NAME:LINE:COLUMN)") or if no confined worker could
 * compile it (the check fails closed: the script is then not installed either).
 * name: what the error calls the script (DIR/flow.js). */
int script_check_compiles(const char *script, size_t len, const char *name, char *err,
                          size_t err_cap);

/* The same check for a codemode run about to start on pool: the fresh codemode worker
 * that compiled the script is kept for the run's activation (pool_run with
 * POOL_USE_CODEMODE and the same run name), so the run starts one worker, not two. */
int script_check_compiles_for_run(struct pool *pool, const char *run, const char *script,
                                  size_t len, const char *name, char *err, size_t err_cap);

#endif
