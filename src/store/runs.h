/* Runs of flows on the store (basal.md section 6).
 *
 * States: pending (admitted, not started), running (one owner drives it; its
 * generation fences every write), suspended, needs_reconcile (a mutation is in
 * doubt; the operator settles it with flow reconcile), and the ends succeeded,
 * failed, cancelled.
 *
 * A flow's runs execute one at a time in admission order: a run is admitted only
 * when no earlier run of its flow is unfinished. Admission deduplicates on
 * (flow, trigger id).
 *
 * The owner is "pid:<pid>:<start time in clock ticks>" of the process driving the
 * run; a run left running by an owner that no longer exists (the same pid with the
 * same start time) is the recover command's to resume. Claiming a run increments
 * its generation; every later write of the run checks that the generation is still
 * the claimer's (runs_fence), so a process that lost its claim writes nothing.
 *
 * No state is a dead end: recover drives pending and orphaned running runs, flow
 * reconcile settles needs_reconcile, and runs_cancel ends any of them (and a
 * suspended one) for the operator. */
#ifndef BASAL_STORE_RUNS_H
#define BASAL_STORE_RUNS_H

#include "base/names.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

enum run_state {
    RUN_PENDING = 0,
    RUN_RUNNING,
    RUN_SUSPENDED,
    RUN_NEEDS_RECONCILE,
    RUN_SUCCEEDED,
    RUN_FAILED,
    RUN_CANCELLED,
};

#define RUN_OWNER_MAX 64u
#define RUN_TRIGGER_ID_MAX 128u

struct run_row {
    int64_t id;
    char flow_id[FLOW_ID_MAX + 1];
    int64_t version;
    char trigger_id[RUN_TRIGGER_ID_MAX + 1];
    char *trigger; /* JSON text */
    enum run_state state;
    char owner[RUN_OWNER_MAX + 1]; /* "" if none */
    int64_t generation;
    char *result; /* JSON text or NULL */
    char *error;  /* one line or NULL */
    int64_t created_at, updated_at; /* Unix ms */
    int64_t suspended_ms; /* time spent suspended, which the run's deadline does not count */
};

void run_row_free(struct run_row *r);

/* "pending", "running", ... Static storage. */
const char *run_state_name(enum run_state state);
/* True for succeeded, failed and cancelled. */
bool run_state_is_end(enum run_state state);

/* Admits a manual run of flow at version with trigger (JSON text, NULL: {}) and
 * trigger_id (NULL: "manual-" and 32 random hex digits). Refused, with nothing
 * stored, if an earlier run of the flow is unfinished or (flow, trigger_id) was
 * already admitted. Returns 0 with *run_id, or -1 with a one-line reason. */
int runs_admit(struct store *s, const char *flow, int64_t version, const char *trigger,
               const char *trigger_id, int64_t *run_id, char *err, size_t err_cap);

/* The first unfinished run of flow as "run N is STATE" in what ("" when none). 0 or -1. */
int runs_unfinished(struct store *s, const char *flow, char *what, size_t what_cap, char *err,
                    size_t err_cap);

/* runs_admit for a serve: the new run waits (pending) behind the flow's unfinished
 * runs, and is refused (-1) only when max_waiting runs of the flow already wait.
 * Returns 1 when (flow, trigger_id) was admitted before, whatever the backlog: *run_id
 * is that run, nothing is stored, err says so. */
int runs_admit_queued(struct store *s, const char *flow, int64_t version, const char *trigger,
                      const char *trigger_id, unsigned max_waiting, int64_t *run_id, char *err,
                      size_t err_cap);

/* One admission of a batch (runs_admit_batch): what runs_admit_queued takes, and its
 * outcome. */
struct run_admission {
    const char *flow;
    int64_t version;
    const char *trigger;    /* NULL: "{}" */
    const char *trigger_id; /* NULL: a new random one */
    unsigned max_waiting;
    int rc;         /* as runs_admit_queued returns: 0, 1 (admitted before) or -1 */
    int64_t run_id; /* rc 0 or 1 */
    char err[512];  /* rc != 0 */
};

/* runs_admit_queued of each item, in order, in one transaction and one commit: every
 * item's outcome is durable once this returns 0 (an item refused changed nothing).
 * -1 (with the store's reason in err) when the transaction could not be made durable:
 * then no item was admitted, and every item says so (rc -1). */
int runs_admit_batch(struct store *s, struct run_admission *const *items, size_t count,
                     char *err, size_t err_cap);

/* The first unfinished run of each flow, the one a flow's next activation belongs to
 * (runs of a flow execute one at a time in admission order), by id. */
struct run_head {
    int64_t id;
    char flow_id[FLOW_ID_MAX + 1];
    enum run_state state;
    char owner[RUN_OWNER_MAX + 1];
};
int runs_heads(struct store *s, struct run_head **heads, size_t *count, char *err,
               size_t err_cap);

/* A claim on a run: the generation that fences its writes and the activation row. */
struct run_claim {
    int64_t generation;
    int64_t activation_seq;
};

/* runs_admit and runs_claim in one transaction (one commit instead of two): the new
 * run is running, owned by this process, at generation 1. 0 or -1 (nothing stored). */
int runs_admit_claimed(struct store *s, const char *flow, int64_t version, const char *trigger,
                       const char *trigger_id, int64_t *run_id, struct run_claim *claim,
                       char *err, size_t err_cap);

/* Reads run id. Returns 1 (found, *out filled), 0 (no such run), -1 (store error). */
int runs_get(struct store *s, int64_t id, struct run_row *out, char *err, size_t err_cap);

/* Runs by id, all or of one flow. *rows malloc'd (free each with run_row_free, then
 * the array). Returns 0 or -1. */
int runs_list(struct store *s, const char *flow, struct run_row **rows, size_t *count,
              char *err, size_t err_cap);

/* The ids of runs a recover drives, in admission order: pending ones, and running
 * ones whose owner is gone. Returns 0 or -1. */
int runs_recoverable(struct store *s, int64_t **ids, size_t *count, char *err, size_t err_cap);

/* This process as an owner string. */
void runs_owner_self(char out[RUN_OWNER_MAX + 1]);
/* True if the process an owner string names may still run: same pid and start time,
 * not a zombie, or /proc cannot tell (base/process_identity.h). */
bool runs_owner_alive(const char *owner);

/* Claims run id for this process: the run must be pending, or running with an owner
 * that is gone. Sets it running with this owner and generation + 1, and records a new
 * activation row (seq, started_at), in one transaction. Returns 0 with *generation and
 * *activation_seq, or -1 (refused or store error; nothing changed). */
int runs_claim(struct store *s, int64_t id, int64_t *generation, int64_t *activation_seq,
               char *err, size_t err_cap);

/* Inside the caller's transaction: 0 if run id still has generation, else -1 with
 * "run N was taken over by another process" (or a store error) in err. */
int runs_fence(struct store *s, int64_t id, int64_t generation, char *err, size_t err_cap);

/* Inside the caller's transaction, fenced: sets the state, result and error (either
 * may be NULL) and updated_at. Returns 0 or -1. */
int runs_set_state(struct store *s, int64_t id, int64_t generation, enum run_state state,
                   const char *result, const char *error, char *err, size_t err_cap);

/* Inside the caller's transaction: a suspended run id becomes pending (its owner
 * cleared, the time it spent suspended added to suspended_ms), for a runner to resume;
 * a run in any other state is left as it is. *woken (if not NULL) says which. 0 or -1. */
int runs_wake(struct store *s, int64_t id, bool *woken, char *err, size_t err_cap);

#define RUN_CANCEL_REASON_MAX 512u

/* The operator ends run id as cancelled, from any state that is not an end: pending,
 * running with an owner that is gone, suspended or needs_reconcile. One transaction:
 * the state, the error "cancelled by the operator (was STATE)[: reason]", the owner
 * cleared and the generation moved on (fencing any process that still thinks it owns
 * the run), and an audit row (kind "cancel"). The journal stays as it is, for the
 * record. Refused, changing nothing, if the run is unknown, has ended, or is running
 * with an owner that is alive (that process ends it; stop it first). reason may be
 * NULL. *was is the state the run had. Returns 0 or -1 with a one-line reason. */
int runs_cancel(struct store *s, int64_t id, const char *reason, enum run_state *was,
                char *err, size_t err_cap);

/* Inside the caller's transaction: ends activation (run id, seq) with outcome and the
 * worker's pid (0 if none). Returns 0 or -1. */
int runs_end_activation(struct store *s, int64_t id, int64_t seq, const char *outcome,
                        long pid, char *err, size_t err_cap);

#endif
