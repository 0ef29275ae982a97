/* Completing long-running calls (basal.md section 3; docs/flows.md, "Long-running
 * calls").
 *
 * A call to a module op the catalog marks long_running that its module accepted
 * ({"accepted": true}) waits for its completion (store/waits.h); a run left with only
 * such calls is suspended, holding no worker or process. Its completion comes from:
 *   the module    `ck-basal flow complete KEY REPLY` with the call's idempotency key
 *                 (the request's "idempotency_key") and the reply the module would have
 *                 written ({"result": ...} or {"error": {...}}): long_running_complete;
 *   the operator  `ck-basal flow reconcile RUN POSITION --observed JSON | --not-applied
 *                 | --cancel` on a suspended run's waiting position (flows/reconcile.h);
 *   the timeout   the op's completion_timeout_s passed: rejected "timeout"
 *                 (long_running_expire, run by serve when the earliest deadline passes
 *                 and by recover).
 * Each is one transaction: the outcome into the mailbox, the wait removed, an audit
 * row, and a suspended run made pending, so a runner resumes it by replay and the
 * script receives the outcome; the module is never asked again. A completion that comes
 * while the run still runs waits in the mailbox; the run is resumed at once when its
 * activation ends (flows/run_driver.h). */
#ifndef BASAL_FLOWS_LONG_RUNNING_H
#define BASAL_FLOWS_LONG_RUNNING_H

#include "proto/message.h"
#include "store/runs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* The largest completion accepted (the reply's bytes). */
#define LONG_RUNNING_COMPLETION_MAX_BYTES (1u << 20)

struct long_running_settled {
    int64_t run_id;
    uint32_t position;
    char flow_id[FLOW_ID_MAX + 1];
    bool woken; /* the run was suspended and is pending now */
};

/* The module's completion of the call whose idempotency key is key, with reply (a
 * module's reply, host/ops_module.h ops_module_completion). Refused, changing nothing,
 * with a one-line reason: a reply of another form or over the bound, no call waiting
 * with that key (never accepted, already completed, timed out or settled by the
 * operator), a run that has ended. Returns 0 with *out, or -1. */
int long_running_complete(struct store *s, const char *key, const char *reply, size_t reply_len,
                          struct long_running_settled *out, char *err, size_t err_cap);

/* An event's completion (serve/event_delivery.h): when a call waits whose key is
 * event_id and whose op names this event (its module and completion_event), the payload
 * is its module's reply (one that is not is the call's rejection "module_error"): it is
 * settled as long_running_complete does and *completed is true; otherwise nothing
 * changes and *completed is false. 0, or -1 on a store error. */
int long_running_complete_by_event(struct store *s, const char *module, const char *name,
                                   const char *event_id, const char *payload,
                                   struct long_running_settled *out, bool *completed, char *err,
                                   size_t err_cap);

/* Rejects "timeout" every waiting call whose deadline has passed by now (Unix ms); a
 * wait of a run that has ended is only removed. *woken: the runs made pending (may be
 * NULL). Returns 0 with *settled calls, or -1 (what was settled before stays). */
int long_running_expire(struct store *s, int64_t now, size_t *settled, size_t *woken,
                        char *err, size_t err_cap);

/* Inside the caller's transaction: settles run_id's waiting call at position with
 * settlement and value (JSON text) as source says ("completed by the module", "observed
 * by the operator", ...), removes its wait, audits it, and wakes a suspended run.
 * flows/reconcile.c shares it. 0 or -1. */
int long_running_settle_in_txn(struct store *s, const char *flow, int64_t run_id,
                               uint32_t position, enum proto_settlement settlement,
                               const char *value,
                               const char *source, bool *woken, char *err, size_t err_cap);

#endif
