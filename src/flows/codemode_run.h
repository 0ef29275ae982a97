/* One codemode run from its start to its stored end (docs/codemode.md): the operator's
 * catalogs loaded, codemode runs of dead processes abandoned, the run row begun, the
 * script run once in a fresh single-use worker with the codemode budgets through the
 * codemode host (flows/codemode_host.h), and its end stored. `ck-basal codemode run`
 * does this itself when no serve runs on the home, and a serve does it for the
 * command (ops command "codemode.run") when one does: the same code, the same report. */
#ifndef BASAL_FLOWS_CODEMODE_RUN_H
#define BASAL_FLOWS_CODEMODE_RUN_H

#include "proto/confinement.h"

#include <stdbool.h>
#include <stddef.h>

struct store;

/* Every host call of a codemode run, now and random included: a loop of Date.now()
 * cannot keep the parent busy until the wall deadline. Tool calls have their own,
 * smaller limit (CODEMODE_MAX_HOST_CALLS). */
#define CODEMODE_RUN_MAX_HOST_CALLS 10000u

struct codemode_run_request {
    const char *script_name; /* as the operator named it ("-": stdin), stored */
    const char *script;      /* checked already (script_validate) */
    size_t script_len;
    const char *input; /* compact JSON text */
    enum landlock_policy policy;
};

/* Runs req on st, the store of the data home home. Returns the report (a json_t *):
 * {"run": what `codemode run --json` prints, "result_text": the result's JSON text as
 * the script made it, or null}; or NULL with the reason in err, nothing stored when
 * the run was refused before its row (a catalog that does not load), else the run's
 * row was stored and err says why its end could not be. */
void *codemode_run_execute(struct store *st, const char *home,
                           const struct codemode_run_request *req, char *err, size_t err_cap);

#endif
