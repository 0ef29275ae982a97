/* Completing long-running calls (see long_running.h). */
#include "flows/long_running.h"

#include "base/error_line.h"
#include "host/ops_module.h"
#include "store/audit.h"
#include "store/journal.h"
#include "store/store.h"
#include "store/waits.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many expired waits one transaction settles. */
#define EXPIRE_BATCH 64u

int long_running_settle_in_txn(struct store *s, const char *flow, int64_t run_id,
                               uint32_t position, enum proto_settlement settlement,
                               const char *value, const char *source, bool *woken, char *err,
                               size_t err_cap)
{
    *woken = false;
    char reason[160];
    snprintf(reason, sizeof reason, "long-running call %s", source);
    if (journal_mailbox_put(s, run_id, position, settlement, value, err, err_cap) != 0 ||
        waits_delete(s, run_id, position, err, err_cap) != 0 ||
        audit_record(s, flow, run_id, position, "complete", true, reason, err, err_cap) != 0)
        return -1;
    return runs_wake(s, run_id, woken, err, err_cap);
}

/* The run of a wait, which must not have ended: 0 with its flow, or -1. */
static int waiting_run(struct store *s, const struct wait_row *w, char *flow, size_t flow_cap,
                       enum run_state *state, char *err, size_t err_cap)
{
    struct run_row run;
    int found = runs_get(s, w->run_id, &run, err, err_cap);
    if (found <= 0)
        return found == 0 ? error_line(err, err_cap, "run %" PRId64 " is gone", w->run_id) : -1;
    snprintf(flow, flow_cap, "%s", run.flow_id);
    *state = run.state;
    run_row_free(&run);
    return 0;
}

static int complete_in_txn(struct store *s, const char *key, const struct host_settlement *st,
                           struct long_running_settled *out, char *err, size_t err_cap)
{
    struct wait_row w;
    int found = waits_find_key(s, key, &w, err, err_cap);
    if (found <= 0)
        return found < 0 ? -1
                         : error_line(err, err_cap, "no long-running call waits with key %.64s"
                                      " (never accepted, already completed, timed out, or"
                                      " settled by the operator)", key);
    enum run_state state = RUN_PENDING;
    if (waiting_run(s, &w, out->flow_id, sizeof out->flow_id, &state, err, err_cap) != 0)
        return -1;
    if (run_state_is_end(state))
        return error_line(err, err_cap, "run %" PRId64 " has ended (%s): nothing waits for"
                          " its position %" PRIu32, w.run_id, run_state_name(state), w.position);
    out->run_id = w.run_id;
    out->position = w.position;
    return long_running_settle_in_txn(s, out->flow_id, w.run_id, w.position, st->settlement,
                                      st->value, "completed by its module", &out->woken, err,
                                      err_cap);
}

int long_running_complete(struct store *s, const char *key, const char *reply, size_t reply_len,
                          struct long_running_settled *out, char *err, size_t err_cap)
{
    memset(out, 0, sizeof *out);
    if (reply_len > LONG_RUNNING_COMPLETION_MAX_BYTES)
        return error_line(err, err_cap, "the completion is %zu bytes, over %u", reply_len,
                          LONG_RUNNING_COMPLETION_MAX_BYTES);
    bool key_ok = strlen(key) == JOURNAL_KEY_HEX;
    for (size_t i = 0; key_ok && i < JOURNAL_KEY_HEX; i++)
        key_ok = (key[i] >= '0' && key[i] <= '9') || (key[i] >= 'a' && key[i] <= 'f');
    if (!key_ok)
        return error_line(err, err_cap, "the key must be a call's idempotency key (64 lowercase"
                          " hex digits)");
    struct host_settlement st = {PROTO_SETTLEMENT_REJECTED, NULL};
    if (ops_module_completion(reply, reply_len, &st, err, err_cap) != 0)
        return -1;
    int rc = store_begin_txn(s, err, err_cap);
    if (rc == 0)
        rc = store_end_txn(s, complete_in_txn(s, key, &st, out, err, err_cap), err, err_cap);
    host_settlement_free(&st);
    return rc;
}

static int event_in_txn(struct store *s, const char *module, const char *name,
                        const char *event_id, const char *payload,
                        struct long_running_settled *out, bool *completed, char *err,
                        size_t err_cap)
{
    struct wait_row w;
    int found = strlen(event_id) == JOURNAL_KEY_HEX ? waits_find_key(s, event_id, &w, err, err_cap)
                                                    : 0;
    if (found <= 0)
        return found;
    if (strcmp(w.completion_module, module) != 0 || strcmp(w.completion_event, name) != 0)
        return 0; /* another module's event, or one this op is not completed by */
    enum run_state state = RUN_PENDING;
    if (waiting_run(s, &w, out->flow_id, sizeof out->flow_id, &state, err, err_cap) != 0)
        return -1;
    if (run_state_is_end(state))
        return waits_delete(s, w.run_id, w.position, err, err_cap);
    struct host_settlement st = {PROTO_SETTLEMENT_REJECTED, NULL};
    char why[256];
    int rc = ops_module_completion(payload, strlen(payload), &st, why, sizeof why);
    if (rc != 0)
        rc = host_reject(&st, HOST_CODE_MODULE_ERROR, "the completion event %.63s/%.63s: %s",
                         module, name, why);
    if (rc != 0)
        return error_line(err, err_cap, "out of memory");
    out->run_id = w.run_id;
    out->position = w.position;
    rc = long_running_settle_in_txn(s, out->flow_id, w.run_id, w.position, st.settlement,
                                    st.value, "completed by its module's event", &out->woken,
                                    err, err_cap);
    host_settlement_free(&st);
    *completed = rc == 0;
    return rc;
}

int long_running_complete_by_event(struct store *s, const char *module, const char *name,
                                   const char *event_id, const char *payload,
                                   struct long_running_settled *out, bool *completed, char *err,
                                   size_t err_cap)
{
    memset(out, 0, sizeof *out);
    *completed = false;
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    int rc = event_in_txn(s, module, name, event_id, payload, out, completed, err, err_cap);
    if (store_end_txn(s, rc, err, err_cap) != 0) {
        *completed = false;
        return -1;
    }
    return 0;
}

/* One transaction over up to EXPIRE_BATCH expired waits: 0 with *n of them, or -1. */
static int expire_batch(struct store *s, int64_t now, size_t *n, size_t *woken, char *err,
                        size_t err_cap)
{
    struct wait_row *rows = NULL;
    *n = 0;
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    int rc = waits_due(s, now, EXPIRE_BATCH, &rows, n, err, err_cap);
    for (size_t i = 0; rc == 0 && i < *n; i++) {
        const struct wait_row *w = &rows[i];
        char flow[FLOW_ID_MAX + 1];
        enum run_state state = RUN_PENDING;
        rc = waiting_run(s, w, flow, sizeof flow, &state, err, err_cap);
        if (rc == 0 && run_state_is_end(state)) {
            rc = waits_delete(s, w->run_id, w->position, err, err_cap);
            continue;
        }
        char value[200];
        snprintf(value, sizeof value, "{\"code\":\"timeout\",\"message\":\"no completion within"
                 " its completion_timeout_s (%" PRId64 " s)\"}",
                 (w->deadline_at - w->started_at) / 1000);
        bool was_woken = false;
        if (rc == 0)
            rc = long_running_settle_in_txn(s, flow, w->run_id, w->position,
                                            PROTO_SETTLEMENT_REJECTED, value, "timed out",
                                            &was_woken, err, err_cap);
        if (rc == 0 && was_woken && woken != NULL)
            (*woken)++;
    }
    free(rows);
    return store_end_txn(s, rc, err, err_cap);
}

int long_running_expire(struct store *s, int64_t now, size_t *settled, size_t *woken,
                        char *err, size_t err_cap)
{
    *settled = 0;
    if (woken != NULL)
        *woken = 0;
    for (;;) {
        size_t n = 0;
        if (expire_batch(s, now, &n, woken, err, err_cap) != 0)
            return -1;
        *settled += n;
        if (n < EXPIRE_BATCH)
            return 0;
    }
}
