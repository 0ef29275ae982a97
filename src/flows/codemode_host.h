/* The host of a codemode run (`ck-basal codemode run`; docs/codemode.md).
 *
 * A codemode script reaches the world only through tools.call(name, input) (kind
 * "tool.call", arguments [name, input]; an omitted input is null). For each call the
 * parent, before anything runs:
 *   1. counts it: the run's first max_tool_calls calls (CODEMODE_MAX_HOST_CALLS, 200)
 *      are served; every later one is refused "denied" without a row of its own (the
 *      run row counts them, and the first one has an audit row);
 *   2. finds the tool in the operator's catalog (tools.json), else "denied";
 *   3. validates the input against the tool's schema (host/tool_schema.h), else
 *      "invalid_arguments" naming the failing path ("tool find: $.limit: must be at
 *      most 50, got 80");
 *   4. records the call: a codemode_calls row and an audit row (store/codemode_store.h)
 *      in one transaction, pending for an allowed call, settled for a refusal;
 *   5. runs the tool's module op (host/ops_module.h) with an idempotency key of its
 *      own, its timeout cut to what is left of the activation's wall deadline, and
 *      records the outcome in a second transaction.
 * now and random (Date, Math.random) are answered at once and not recorded. Any other
 * kind is refused "denied" (the codemode API has no flow calls) and recorded like a
 * call. A call the activation driver refused without asking (arguments over
 * max_value_bytes) is recorded as refused when it is delivered.
 *
 * If the store cannot record a call, the host stops: that call and every later one is
 * refused "io_error" and never performed (codemode_host_broken says why). */
#ifndef BASAL_FLOWS_CODEMODE_HOST_H
#define BASAL_FLOWS_CODEMODE_HOST_H

#include "host/host.h"
#include "host/ops_module.h"
#include "host/tools_catalog.h"

#include <stdint.h>

struct store;

struct codemode_host_config {
    struct store *store;
    int64_t run_id;
    const struct tools_catalog *tools;
    const struct ops_catalog *modules;
    unsigned max_tool_calls;  /* CODEMODE_MAX_HOST_CALLS */
    long long deadline_at_ms; /* CLOCK_MONOTONIC ms of the wall deadline (0: none) */
};

struct codemode_host;

/* NULL on no memory. The configuration's pointers must outlive the host. */
struct codemode_host *codemode_host_new(const struct codemode_host_config *cfg);
void codemode_host_free(struct codemode_host *h);

struct host codemode_host_interface(struct codemode_host *h);

/* Calls within the limit (each has a row) and calls refused for passing it. */
uint32_t codemode_host_tool_calls(const struct codemode_host *h);
uint32_t codemode_host_over_limit(const struct codemode_host *h);

/* Why the host stopped (a store error), or NULL. */
const char *codemode_host_broken(const struct codemode_host *h);

#endif
