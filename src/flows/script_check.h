/* Whether a flow's script compiles, asked of a confined worker before the script is
 * stored (flow install): the worker compiles it with the engine that will run it and
 * runs none of it (Activate.compile_only), so nothing of an installed script can act
 * here, and a syntax error is refused with its file, line and column. */
#ifndef BASAL_FLOWS_SCRIPT_CHECK_H
#define BASAL_FLOWS_SCRIPT_CHECK_H

#include <stddef.h>

/* 0 if script[0..len) compiles; -1 with err (one line) if it does not ("the script does
 * not compile: syntax error: ... (NAME:LINE:COLUMN)") or if no confined worker could
 * compile it (the check fails closed: the script is then not installed either).
 * name: what the error calls the script (DIR/flow.js). */
int script_check_compiles(const char *script, size_t len, const char *name, char *err,
                          size_t err_cap);

#endif
