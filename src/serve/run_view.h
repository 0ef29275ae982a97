/* How a run ended, as data: what `ck-basal run --json` prints, whether this process
 * drove the run or a serve did (then it travels over the ops socket). */
#ifndef BASAL_SERVE_RUN_VIEW_H
#define BASAL_SERVE_RUN_VIEW_H

#include "flows/run_driver.h"

/* {"run": {run, flow, state, result, error, host_calls, replayed, wall_ms},
 *  "result_text": the result's JSON text exactly as the script made it, or null}
 * (a json_t *). "run" is what --json prints; the human lines use "result_text", so
 * they show the script's bytes, not a re-encoding of them. NULL on no memory. */
void *run_view_json(const struct run_report *rep);

#endif
