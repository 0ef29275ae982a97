/* Drives one run of a flow to its end (basal.md sections 6 and 8): the run, recover
 * and flow reconcile commands all come here.
 *
 *   1. The flow must still be runnable at the run's version (enabled, approved, the
 *      stored bytes still hash to the approval: flows_runnable_version), its
 *      manifest must parse (roots still exist) and the operator's catalog must load.
 *      Any refusal returns before anything is stored. The verified bytes and the
 *      parsed manifest are kept in the process's version cache (flows/version_cache.h,
 *      64 entries) under the approval's code hash: a later run of that approval asks
 *      the registry only whether the flow is enabled and which version and hash its
 *      approval names (flows_run_approval), and runs the cached bytes, which are the
 *      approved ones even if the stored copy was changed since. A manifest naming fs
 *      or git roots is parsed again from them at each run (its roots are resolved
 *      then); the catalog is kept while modules.json stays the same file
 *      (flows/catalog_cache.h).
 *   2. While a module program of one of the run's calls may still run (one that
 *      outlived its ck-basal: store/call_processes.h) the run is refused, nothing
 *      changed, unless that call is an unkeyed mutation in doubt (it only goes to
 *      needs_reconcile, step 3). Else the run is claimed (pending, or running with a
 *      dead owner): generation + 1.
 *   3. The journal is read. The temporary files of its fs.write calls without an
 *      outcome, left by a crash, are removed (flows/run_cleanup.h). A mutation
 *      without a key whose outcome is unknown puts the run in needs_reconcile; no
 *      worker starts.
 *      A run older than its manifest's deadline (from admission) ends failed
 *      "deadline" here, without a worker.
 *   4. A worker from the pool re-runs the script with the delivered journal as its
 *      prefix, through the flow host (flows/flow_host.h). The activation's wall
 *      deadline is the flow profile's (60 s), cut to what is left of the run's.
 *   5. One transaction ends it: the last delivery orders, the run's state (succeeded
 *      with its result; failed with a one-line error; suspended), the activation row
 *      and the health counters.
 * A process that loses its claim, or cannot write the store, stops without ending
 * the run: it stays running, for recover. A store that refuses what the worker sent
 * (a statement failing inside the open, fenced transaction) fails the run instead
 * ("protocol error: ..."), so a worker cannot leave it running for a recover that
 * would fail the same way. */
#ifndef BASAL_FLOWS_RUN_DRIVER_H
#define BASAL_FLOWS_RUN_DRIVER_H

#include "store/health_store.h"
#include "supervisor/pool.h"
#include "store/runs.h"

#include <stddef.h>
#include <stdint.h>

struct store;

struct run_driver {
    struct store *store;
    const char *home;
    struct pool *pool;
    struct health_mark mark; /* zero it before the first drive */
    /* Drivers on threads sharing one pool share one mark (NULL: mark above). */
    struct health_mark *shared_mark;
};

struct run_report {
    int64_t run_id;
    char flow_id[FLOW_ID_MAX + 1];
    enum run_state state;
    char *result;  /* JSON text (succeeded) or NULL */
    char *error;   /* one line or NULL */
    uint32_t host_calls;  /* made live by this activation (replayed calls not counted) */
    uint32_t replayed;    /* prefix entries */
    long long wall_ms;
    char *console;
};

void run_report_free(struct run_report *r);

/* The checks of step 1 for a new run of flow at its highest approved version (into
 * *version): 0, or -1 with the reason. Nothing is stored. */
int run_preflight(struct run_driver *d, const char *flow, int64_t *version, char *err,
                  size_t err_cap);

/* Drives run id. Returns 0 when the run was driven (rep says how it ended), -1 when
 * it could not be (the reason in err; rep->state tells the run's state if known). */
int run_drive(struct run_driver *d, int64_t id, struct run_report *rep, char *err,
              size_t err_cap);

/* run_drive of a run this process already claimed (runs_admit_claimed): step 2 is
 * skipped and claim's generation and activation row are used. */
int run_drive_claimed(struct run_driver *d, int64_t id, const struct run_claim *claim,
                      struct run_report *rep, char *err, size_t err_cap);

#endif
