/* The host of a dry run (`ck-basal flow dry-run`; docs/operations.md): a flow version
 * that need not be approved, or a directory not installed, runs in a single-use worker
 * against the real world read-only. Nothing it does is journaled and nothing it would
 * change changes.
 *
 * Every call first meets the grant check a run makes (host_kind_decide of
 * flows/host_kinds.h: the manifest's ops, fs roots, sinks, the operator's module
 * catalog, what this build supports): a call a run would refuse is refused the same
 * way, with the same code. Then as its row's dry_run column says:
 *   now, random, kv.get, fs.read, fs.list, fs.stat   performed for real (reads only;
 *       kv.get in a read transaction that is rolled back)
 *   ops.call of a query op, net.fetch GET/HEAD, git.*  performed only with allow_queries
 *   kv.set, kv.delete, fs.write, sink.emit, ops.call of a mutate op (and a query op
 *       without allow_queries)                        never performed: answered from
 *       the fixtures (flows/dry_run_fixtures.h) when an entry answers the call, else
 *       rejected with HostError code "dry_run", which the script can catch. fs.write
 *       first makes every check a write makes (fs_builtin_check_write), so a path a
 *       run would refuse is refused here too.
 * Every call is recorded in order with what the script saw: its position, kind,
 * arguments, class, how it was answered (performed, captured or refused) and the
 * settlement. kv.set and kv.delete first make every check a run makes
 * (kv_store_check: the key, the value's size, what the flow would hold as the store
 * holds it now), so a call a run would refuse is refused here too.
 *
 * A run's per-run limits apply, counted by the same rule (flow_run_usage_admit: host
 * calls, bytes of journal) at the same points: the call that would pass one stops the
 * dry run as it stops a run; it and every later call are refused too_large with the
 * same message, and counted, not listed (dry_run_host_over_limit). What the host keeps,
 * the listed calls' arguments and outcomes, is therefore bounded by those limits. */
#ifndef BASAL_FLOWS_DRY_RUN_HOST_H
#define BASAL_FLOWS_DRY_RUN_HOST_H

#include "flows/dry_run_fixtures.h"
#include "flows/manifest.h"
#include "host/host.h"
#include "host/ops_module.h"
#include "store/journal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOST_CODE_DRY_RUN "dry_run"

struct store;

struct dry_run_config {
    struct store *store; /* kv.get only, in a transaction rolled back */
    const char *flow_id;
    const char *trigger_id; /* for the idempotency keys of performed queries */
    const struct manifest *manifest;
    const struct ops_catalog *catalog;
    const struct dry_run_fixtures *fixtures; /* may be NULL */
    bool allow_queries;
    long long deadline_at_ms; /* CLOCK_MONOTONIC ms of the wall deadline (0: none) */
    const char *home; /* the data home: fs calls check the roots against it as a run does */
};

enum dry_run_status {
    DRY_RUN_PERFORMED = 0, /* done for real: a read */
    DRY_RUN_CAPTURED,      /* not done: answered from a fixture or with dry_run */
    DRY_RUN_REFUSED,       /* a run would refuse it too (grants, arguments, limits) */
};

const char *dry_run_status_name(enum dry_run_status status);

struct dry_run_call {
    uint32_t position;
    char *kind;
    char *args; /* JSON text */
    enum journal_class cls;
    enum dry_run_status status;
    bool from_fixture;
    enum proto_settlement settlement; /* what the script saw */
    char *value;
};

struct dry_run_host;

/* NULL on no memory. The configuration's pointers must outlive the host. */
struct dry_run_host *dry_run_host_new(const struct dry_run_config *cfg);
void dry_run_host_free(struct dry_run_host *h);

struct host dry_run_host_interface(struct dry_run_host *h);

/* The calls in position order; valid until the host is freed. */
const struct dry_run_call *dry_run_host_calls(const struct dry_run_host *h, size_t *count);
/* Calls past the per-run limits (refused, not listed), each counted once. */
uint32_t dry_run_host_over_limit(const struct dry_run_host *h);

/* Why a per-run limit stopped the dry run (what a run fails with, after "limit: "),
 * or NULL if none did. */
const char *dry_run_host_stopped(const struct dry_run_host *h);

#endif
