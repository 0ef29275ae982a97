#include "flows/reconcile.h"

#include "store/audit.h"
#include "store/call_processes.h"
#include "base/error_line.h"
#include "store/journal.h"
#include "store/runs.h"
#include "store/store.h"
#include "store/waits.h"
#include "flows/long_running.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const DECISION_NAMES[] = {
    [RECONCILE_OBSERVED] = "observed",
    [RECONCILE_NOT_APPLIED] = "not applied",
    [RECONCILE_CANCEL] = "cancelled",
};

/* The state of position in run id's journal: 1 and *state if found, 0 if not. */
static int position_state(struct store *s, int64_t run_id, uint32_t position,
                          enum journal_state *state, char *kind, size_t kind_cap, char *err,
                          size_t err_cap)
{
    struct journal_entry *rows;
    size_t n;
    if (journal_load(s, run_id, &rows, &n, err, err_cap) != 0)
        return -1;
    int found = 0;
    for (size_t i = 0; i < n && !found; i++) {
        if (rows[i].position == position) {
            *state = rows[i].state;
            snprintf(kind, kind_cap, "%s", rows[i].kind);
            found = 1;
        }
    }
    journal_entries_free(rows, n);
    return found;
}

static int settle_in_txn(struct store *s, int64_t run_id, uint32_t position,
                         enum reconcile_decision decision, const char *observed, char *err,
                         size_t err_cap)
{
    struct run_row run;
    int found = runs_get(s, run_id, &run, err, err_cap);
    if (found <= 0)
        return found == 0 ? error_line(err, err_cap, "unknown run %" PRId64, run_id) : -1;
    enum run_state state = run.state;
    int64_t generation = run.generation;
    char flow[sizeof run.flow_id];
    snprintf(flow, sizeof flow, "%s", run.flow_id);
    run_row_free(&run);
    struct wait_row wait;
    int waiting = state == RUN_SUSPENDED ? waits_find(s, run_id, position, &wait, err, err_cap) : 0;
    if (waiting < 0)
        return -1;
    if (state != RUN_NEEDS_RECONCILE && waiting == 0)
        return error_line(err, err_cap, "run %" PRId64 " is %s, not needs_reconcile%s", run_id,
                          run_state_name(state),
                          state == RUN_SUSPENDED ? ", and no long-running call waits there" : "");
    enum journal_state at = JOURNAL_PENDING;
    char kind[128] = "";
    found = position_state(s, run_id, position, &at, kind, sizeof kind, err, err_cap);
    if (found <= 0)
        return found == 0 ? error_line(err, err_cap, "run %" PRId64 " has no position %" PRIu32,
                                       run_id, position)
                          : -1;
    if (at != JOURNAL_UNKNOWN && waiting == 0)
        return error_line(err, err_cap, "run %" PRId64 " position %" PRIu32 " is %s, not in"
                          " doubt", run_id, position, journal_state_name(at));
    /* A long-running call the operator settles for its module (flows/long_running.h):
     * observed is its completion; not applied makes the call afresh on resume. */
    if (waiting > 0 && decision == RECONCILE_OBSERVED) {
        bool woken;
        return long_running_settle_in_txn(s, flow, run_id, position, PROTO_SETTLEMENT_FULFILLED,
                                          observed, "observed by the operator", &woken, err,
                                          err_cap);
    }
    /* Nothing is decided while a process of the run's calls may still run: its effect
     * may still come after the operator looked. */
    struct call_process p;
    found = call_process_running(s, run_id, false, &p, err, err_cap);
    if (found != 0) {
        char what[200];
        if (found > 0)
            call_process_describe(&p, what, sizeof what);
        return found < 0 ? -1
                         : error_line(err, err_cap, "run %" PRId64 ": %s: decide once it has"
                                      " ended", run_id, what);
    }
    int rc = 0;
    if (decision == RECONCILE_OBSERVED)
        rc = journal_mailbox_put(s, run_id, position, PROTO_SETTLEMENT_FULFILLED, observed, err,
                                 err_cap) != 0 ||
             journal_mark_pending(s, run_id, position, err, err_cap) != 0;
    else if (decision == RECONCILE_NOT_APPLIED)
        rc = journal_forget(s, run_id, position, err, err_cap);
    if (rc != 0)
        return -1;
    char reason[160];
    snprintf(reason, sizeof reason, "operator reconciled %s: %s", kind, DECISION_NAMES[decision]);
    if (audit_record(s, flow, run_id, position, "reconcile", true, reason, err, err_cap) != 0)
        return -1;
    if (decision == RECONCILE_CANCEL) {
        char why[200];
        snprintf(why, sizeof why, "cancelled by the operator at position %" PRIu32 " (%s)",
                 position, kind);
        return runs_set_state(s, run_id, generation, RUN_CANCELLED, NULL, why, err, err_cap);
    }
    if (waiting > 0)
        return runs_wake(s, run_id, NULL, err, err_cap); /* not applied: its wait went too */
    return runs_set_state(s, run_id, generation, RUN_PENDING, NULL, NULL, err, err_cap);
}

int reconcile_settle(struct store *s, int64_t run_id, uint32_t position,
                     enum reconcile_decision decision, const char *observed, char *err,
                     size_t err_cap)
{
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    return store_end_txn(s, settle_in_txn(s, run_id, position, decision, observed, err, err_cap),
                         err, err_cap);
}
