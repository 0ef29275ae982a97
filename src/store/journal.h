/* The journal of a run's host calls, and its mailbox (basal.md section 6).
 *
 * One row per call position: kind, the exact argument bytes and their SHA-256, the
 * idempotency key, the class, and a state:
 *   pending   journaled; the call may have left. Its outcome, once one came back, waits
 *             in the mailbox.
 *   settled   released to the worker: settlement, value and delivery order are the
 *             ones the worker saw.
 *   unknown   a mutation in doubt after a crash, until the operator reconciles it.
 * ("dispatched" is admitted by the schema and not written: a call is in doubt from the
 * commit of its row until its outcome's, whether or not it had left.)
 *
 * Every function that writes runs inside the caller's transaction; the caller fences
 * it (runs_fence). None prints. */
#ifndef BASAL_STORE_JOURNAL_H
#define BASAL_STORE_JOURNAL_H

#include "proto/message.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

enum journal_class {
    JOURNAL_SYNC = 0,       /* now, random: asked again after a crash */
    JOURNAL_LOCAL,          /* kv: applied in the row's own transaction */
    JOURNAL_QUERY,          /* no effect: resent after a crash */
    JOURNAL_MUTATION,       /* an effect without a key: in doubt -> needs_reconcile */
    JOURNAL_KEYED_MUTATION, /* an effect the target deduplicates by key: resent */
};

enum journal_state {
    JOURNAL_PENDING = 0,
    JOURNAL_SETTLED,
    JOURNAL_UNKNOWN,
};

#define JOURNAL_DIGEST_HEX 64u
#define JOURNAL_KEY_HEX 64u
#define JOURNAL_DESTINATION_MAX 201u /* with its NUL */

struct journal_entry {
    uint32_t position;
    char *kind;
    char *args; /* JSON text, NUL-terminated */
    size_t args_len;
    char digest[JOURNAL_DIGEST_HEX + 1];
    char key[JOURNAL_KEY_HEX + 1];
    enum journal_class cls;
    enum journal_state state;
    bool has_outcome;              /* settled, or an outcome in the mailbox */
    enum proto_settlement settlement;
    char *value;                   /* JSON text of the outcome, or NULL */
    int64_t delivery_order;        /* -1 if not delivered */
    bool waiting; /* a long-running call its module accepted, completion not yet come
                     (store/waits.h) */
    char *destination; /* where the catalog sent it, if its args do not say (or NULL) */
};

void journal_entry_free(struct journal_entry *e);
void journal_entries_free(struct journal_entry *list, size_t count);

const char *journal_class_name(enum journal_class cls);
/* True for the classes whose calls are made again after a crash that lost their rows
 * (sync, query): those rows need not be on disk before the call leaves or its outcome
 * is delivered, only before anything not made again, whose own synced commit (the
 * next mutation's row, the run's end) takes them to disk with it (docs/flows.md,
 * "Durability"). */
bool journal_class_made_again(enum journal_class cls);
const char *journal_state_name(enum journal_state state);

/* SHA-256 of bytes as lowercase hex. Returns 0, or -1 (libcrypto failed). */
int journal_digest(const void *bytes, size_t len, char out[JOURNAL_DIGEST_HEX + 1]);

/* The idempotency key of a call: SHA-256 hex over a domain tag, the flow id, the
 * run's id and trigger id, and the position. The same call of the same run always
 * gets the same key; no two calls of a store share one. */
int journal_idempotency_key(const char *flow, int64_t run_id, const char *trigger_id,
                            uint32_t position, char out[JOURNAL_KEY_HEX + 1]);

/* Every row of run id, by position, with mailbox outcomes. Returns 0 or -1. */
int journal_load(struct store *s, int64_t run_id, struct journal_entry **rows,
                 size_t *count, char *err, size_t err_cap);

/* True (1) if run id has an outcome in the mailbox that was never delivered (a
 * long-running call's completion that came while the run was not suspended yet), 0 if
 * not, -1 on a store error. */
int journal_has_undelivered(struct store *s, int64_t run_id, char *err, size_t err_cap);

/* Inserts e as a pending row (its outcome fields are ignored). 0 or -1. */
int journal_insert(struct store *s, int64_t run_id, const struct journal_entry *e, char *err,
                   size_t err_cap);

/* Puts an outcome for position in the mailbox (replacing any). 0 or -1. */
int journal_mailbox_put(struct store *s, int64_t run_id, uint32_t position,
                        enum proto_settlement settlement, const char *value, char *err,
                        size_t err_cap);

/* Records a delivery: the row becomes settled with what the worker saw and its order;
 * the mailbox entry goes. 0 or -1 (also if the row does not exist). */
int journal_deliver(struct store *s, int64_t run_id, uint32_t position,
                    enum proto_settlement settlement, const char *value, int64_t order,
                    char *err, size_t err_cap);

/* Marks position unknown (in doubt). 0 or -1. */
int journal_mark_unknown(struct store *s, int64_t run_id, uint32_t position, char *err,
                         size_t err_cap);

/* Marks an unknown position pending again (its outcome is now in the mailbox). */
int journal_mark_pending(struct store *s, int64_t run_id, uint32_t position, char *err,
                         size_t err_cap);

/* Removes position's row and mailbox entry (the operator says it was not applied: the
 * call is made afresh when the run resumes). 0 or -1. */
int journal_forget(struct store *s, int64_t run_id, uint32_t position, char *err,
                   size_t err_cap);

/* The recorded prefix for a resume: the delivered rows, ascending by delivery order.
 * Entries point into rows (keep rows alive); *prefix malloc'd. Returns 0 or -1 (a
 * digest that is not 64 hex digits, no memory). */
int journal_prefix(const struct journal_entry *rows, size_t count,
                   struct proto_recorded_entry **prefix, size_t *prefix_count);

#endif
