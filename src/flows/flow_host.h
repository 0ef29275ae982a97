/* The host of a flow run: every host call is checked against the approved manifest,
 * journaled in the store before it leaves, performed, and its outcome recorded
 * (basal.md sections 6 and 7; docs/flows.md has the script's view).
 *
 * Each kind's class, grant check, parser and effect are its row in flows/host_kinds.h;
 * this host journals around them. Classes and how a call is carried out:
 *   now, random              sync      one transaction: journal row, outcome, audit
 *   kv.get/set/delete        local     one transaction: journal row, the kv change,
 *                                      outcome, audit (store/kv_store.h)
 *   fs.read/list/stat        query     the path authorized with the grants (a path
 *                                      outside them refused "denied" like any
 *                                      refusal); transaction 1: journal row; the
 *                                      operation (its open refuses a path changed
 *                                      since: "denied")
 *   fs.write                 keyed_mutation: an idempotent whole-file replace, resent
 *                            as is, its temporary file named by the call's key
 *                            (host/fs_builtin.h); transaction 2:
 *                                      outcome and audit (refused if "denied")
 *   ops.call                 query, keyed_mutation or mutation, as the catalog marks
 *                            the op (host/ops_module.h); transaction 1: journal row
 *                            and audit; the module's process is recorded (its own
 *                            transaction, store/call_processes.h) before the program
 *                            runs; the module runs; its record goes once it was
 *                            reaped; transaction 2: outcome
 *   sink.emit                keyed_mutation (host/sink.h), like ops.call
 *   net.fetch                GET/HEAD query; other methods keyed_mutation when the
 *                            grant marks the host idempotent, else mutation
 *                            (host/net_fetch.h); like ops.call
 *   git.*                    query (host/git_builtin.h), like ops.call
 *   anything else            refused "unsupported"
 * A call the manifest does not grant is refused "denied" in one transaction (journal
 * row, rejection, audit "refused"); the script catches it as HostError with that
 * data.code. Arguments that are not a JSON array are refused "invalid_arguments" the
 * same way. A call the driver refused without asking the host (arguments over
 * max_value_bytes) is journaled with its delivery and audited "refused" then. Every
 * journaled row, refusals included, counts against the per-run limits below. Every transaction first checks the run's generation (fencing) and writes
 * the delivery orders of the outcomes delivered since the previous one: a delivery
 * becomes durable before anything the script did after seeing it can leave.
 *
 * Resume: the host is given the run's journal rows that were not delivered. When the
 * script calls such a position again, kind and argument digest must match (else the
 * run is failed as nondeterminism and every further call is refused); an outcome
 * already in the mailbox is returned without performing anything; otherwise the call
 * is performed again by class: sync asked again, queries and keyed mutations resent
 * with the same idempotency key (a sink first looks for the key in its file). An
 * unkeyed mutation in doubt never reaches the host: the run driver puts the run in
 * needs_reconcile before it starts a worker. */
#ifndef BASAL_FLOWS_FLOW_HOST_H
#define BASAL_FLOWS_FLOW_HOST_H

#include "flows/host_kinds.h"
#include "flows/manifest.h"
#include "host/host.h"
#include "host/ops_module.h"
#include "store/journal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOST_CODE_NONDETERMINISM "nondeterminism"

/* Per run, across its activations: a script cannot grow the store without bound. The
 * call that would pass either ends the run as failed ("limit: ..."), whether a host
 * was asked or the driver refused it. */
#define FLOW_RUN_MAX_HOST_CALLS 10000u
#define FLOW_RUN_MAX_JOURNAL_BYTES (64u << 20) /* arguments and outcomes */

/* What a run has used of those limits: its journal rows and their bytes. The one rule
 * both a run's host and a dry run's (flows/dry_run_host.h) count by. */
struct flow_run_usage {
    uint64_t calls;
    uint64_t journal_bytes;
};

/* Counts one new journal row of `bytes` (its arguments; with the outcome too for a row
 * made at delivery): true, or false with nothing counted and why a run stops into why
 * ("the run reached its limit of ... (at position P, KIND)") when the row would pass a
 * limit. An outcome is added to journal_bytes once known, unchecked: the next row
 * meets it. */
bool flow_run_usage_admit(struct flow_run_usage *u, uint64_t bytes, const struct host_call *call,
                          char *why, size_t why_cap);

struct store;

struct flow_host_config {
    struct store *store;
    const char *home; /* data home (sinks) */
    const char *flow_id;
    int64_t run_id;
    const char *trigger_id;
    int64_t generation;
    const struct manifest *manifest;
    const struct ops_catalog *catalog;
    const struct journal_entry *journal; /* every row of the run (the host copies what it needs) */
    size_t journal_count;
    /* CLOCK_MONOTONIC ms at which the activation's wall deadline passes (0: none): a
     * module program gets at most the time left, and none once it has passed. */
    long long deadline_at_ms;
};

struct flow_host;

/* NULL on no memory. The configuration's pointers must outlive the host. */
struct flow_host *flow_host_new(const struct flow_host_config *cfg);
void flow_host_free(struct flow_host *fh);

struct host flow_host_interface(struct flow_host *fh);

/* Inside the caller's (fenced) transaction: writes the delivery orders not yet
 * written. Returns 0 or -1 (reason in err). */
int flow_host_flush(struct flow_host *fh, char *err, size_t err_cap);

enum flow_host_stop {
    FLOW_HOST_RUNNING = 0,
    FLOW_HOST_NONDETERMINISM, /* the script diverged from the journal: the run fails */
    FLOW_HOST_LIMIT,          /* a per-run limit above: the run fails */
    FLOW_HOST_BROKEN,         /* a lost claim or a store error: the run is left as it is */
    FLOW_HOST_UNRECORDED,     /* the store refused what the worker sent: the run fails */
};

/* Why the host stopped serving the run (NULL and *kind FLOW_HOST_RUNNING if it did
 * not). After a stop every further call is refused and nothing more is journaled;
 * deliveries after it are not recorded. */
const char *flow_host_stopped(const struct flow_host *fh, enum flow_host_stop *kind);

/* Before a resume (flows/run_driver.h): the first row that would be sent again (journaled,
 * no outcome, not waiting, a query or a keyed mutation) whose decision against cfg's
 * manifest and catalog is no longer the one it was journaled with: its grant now refuses
 * it, its class changed (an op's kind or "idempotent"), or it goes elsewhere (a sink now
 * a module op, or its file again: journal_entry.destination). Sent again it could reach
 * what it never reached, or be repeated where it had taken effect; the driver puts it in
 * doubt instead (needs_reconcile). why says what changed. NULL when none did. */
const struct journal_entry *flow_host_changed_since(const struct flow_host_config *cfg,
                                                    const struct journal_entry *rows,
                                                    size_t count, char *why, size_t cap);

/* For a run whose script ended by itself: the first journaled, undelivered position
 * the script never called again, described as a nondeterminism detail into buf;
 * false if there is none. */
bool flow_host_unreached(const struct flow_host *fh, char *buf, size_t cap);

#endif
