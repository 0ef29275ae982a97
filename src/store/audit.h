/* The audit trail: every authorization decision a flow's host call or a codemode run's
 * tool call met, allowed or refused, appended to the store's audit table (append-only:
 * triggers refuse updates and deletes). Written inside the caller's transaction, with
 * the journal row it explains, so the two never disagree. */
#ifndef BASAL_STORE_AUDIT_H
#define BASAL_STORE_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* One decision: a flow's (and its run's) or a codemode run's. */
struct audit_row {
    const char *flow;        /* NULL: none */
    int64_t run_id;          /* a flow's run; < 0: none */
    int64_t codemode_run_id; /* < 0: none */
    int64_t position;        /* < 0: none */
    const char *kind;
    bool allowed;
    const char *reason; /* may be NULL */
};

/* Appends row. 0 or -1. */
int audit_append(struct store *s, const struct audit_row *row, char *err, size_t err_cap);

/* A flow's decision (no codemode run): flow may be NULL; run_id and position < 0 mean
 * none. reason may be NULL. 0 or -1. */
int audit_record(struct store *s, const char *flow, int64_t run_id, int64_t position,
                 const char *kind, bool allowed, const char *reason, char *err,
                 size_t err_cap);

#endif
