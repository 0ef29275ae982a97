/* Long-running host calls waiting for their completion (basal.md section 3,
 * "LongRunning"; docs/flows.md, "Long-running calls").
 *
 * A row per call that a module op the catalog marks long_running has accepted
 * (host/ops_module.h): its journal row stays pending, without an outcome, and this row
 * says the module has the call and will complete it later, by the call's idempotency
 * key, before deadline_at. The row goes when the completion (the module's, the
 * operator's reconcile, or the timeout's rejection) is put in the mailbox, and with its
 * journal row (ON DELETE CASCADE). While a run has only such calls left, it is
 * suspended: no worker, no thread, no process held.
 *
 * Every function runs inside the caller's transaction and prints nothing. */
#ifndef BASAL_STORE_WAITS_H
#define BASAL_STORE_WAITS_H

#include "store/journal.h"

#include <stddef.h>
#include <stdint.h>

struct store;

struct wait_row {
    int64_t run_id;
    uint32_t position;
    char key[JOURNAL_KEY_HEX + 1];
    int64_t started_at, deadline_at; /* Unix ms */
    /* The event that completes it (module, name; its id the key), or "" for none. */
    char completion_module[64];
    char completion_event[64];
};

/* Records that run_id's call at position (journaled, with key) waits until deadline_at,
 * completed also by the event (completion_module, completion_event) whose id is key
 * (both NULL: by no event). 0 or -1. */
int waits_insert(struct store *s, int64_t run_id, uint32_t position, const char *key,
                 int64_t deadline_at, const char *completion_module,
                 const char *completion_event, char *err, size_t err_cap);

/* The wait of idempotency key: 1 and *out, 0 if none, -1 on a store error. */
int waits_find_key(struct store *s, const char *key, struct wait_row *out, char *err,
                   size_t err_cap);

/* The wait of (run_id, position): 1 and *out, 0 if none, -1. */
int waits_find(struct store *s, int64_t run_id, uint32_t position, struct wait_row *out,
               char *err, size_t err_cap);

/* Removes the wait of (run_id, position). 0 or -1. */
int waits_delete(struct store *s, int64_t run_id, uint32_t position, char *err,
                 size_t err_cap);

/* Up to max waits whose deadline_at <= now, earliest first (*rows malloc'd, NULL when
 * none). 0 or -1. */
int waits_due(struct store *s, int64_t now, size_t max, struct wait_row **rows, size_t *count,
              char *err, size_t err_cap);

/* The earliest deadline_at of any wait: 1 and *at, 0 when nothing waits, -1. */
int waits_next_deadline(struct store *s, int64_t *at, char *err, size_t err_cap);

#endif
