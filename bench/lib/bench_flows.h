/* Flows for the benchmark programs that drive runs in-process (flow_bench,
 * contender_flows). */
#ifndef BASAL_BENCH_FLOWS_H
#define BASAL_BENCH_FLOWS_H

#include <stddef.h>

struct store;

/* Installs and approves flow id (manual trigger, no grants) running script. Returns 0,
 * or -1 with the reason in err. */
int bench_flow_add(struct store *st, const char *id, const char *script, char *err,
                   size_t err_cap);

#endif
