/* The audit trail: every authorization decision a flow's host call met, allowed or
 * refused, appended to the store's audit table (append-only: triggers refuse updates
 * and deletes). Written inside the caller's transaction, with the journal row it
 * explains, so the two never disagree. */
#ifndef BASAL_STORE_AUDIT_H
#define BASAL_STORE_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* flow may be NULL; run_id and position < 0 mean none. reason may be NULL. 0 or -1. */
int audit_record(struct store *s, const char *flow, int64_t run_id, int64_t position,
                 const char *kind, bool allowed, const char *reason, char *err,
                 size_t err_cap);

#endif
