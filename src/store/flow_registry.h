/* The flow registry's tables (basal.md sections 6 and 8): installed flows (enabled or
 * not, and why serve disabled one), their versions with the exact script and manifest
 * bytes, code hash and state (pending, approved), and the approvals by code hash.
 *
 * Reads and single writes, each one statement: the checks a registry change needs (the
 * hashes recomputed, the manifest parsed, the version order) and the transaction
 * around them belong to flows/flows.h, which calls these inside store_begin_txn (or a
 * read transaction, store_begin_read). Errors are one line in err. */
#ifndef BASAL_STORE_FLOW_REGISTRY_H
#define BASAL_STORE_FLOW_REGISTRY_H

#include "base/names.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* A code hash as stored: 64 lowercase hex characters (flows/code_hash.h's
 * CODE_HASH_HEX_LEN; flows/flows.c asserts the two agree). */
#define FLOW_HASH_HEX_LEN 64u

/* Exact bytes read from a file or the store; bytes[len] is a NUL not counted in len.
 * Release with flows_blob_free (flows/flows.h) or free(bytes). */
struct flow_blob {
    char *bytes;
    size_t len;
};

/* One stored version: its bytes, its recorded hash and its state. */
struct flow_version_row {
    struct flow_blob script, manifest;
    char code_hash[FLOW_HASH_HEX_LEN + 1];
    bool approved; /* else pending */
};

void flow_version_row_free(struct flow_version_row *v);

/* Whether flow id is installed: 1 (with *enabled, if not NULL), 0 no, -1 on error. */
int flow_registry_lookup(struct store *s, const char *id, bool *enabled, char *err,
                         size_t err_cap);

/* The highest version of id (only approved ones with approved_only), 0 if none, into
 * *version. 0 or -1. */
int flow_registry_top_version(struct store *s, const char *id, bool approved_only,
                              int64_t *version, char *err, size_t err_cap);

/* Version of id: 1 with *out filled (flow_version_row_free), 0 when there is no such
 * version, -1 on error (*out zeroed unless 1). */
int flow_registry_version(struct store *s, const char *id, int64_t version,
                          struct flow_version_row *out, char *err, size_t err_cap);

/* A new flow, enabled, created now. 0 or -1 (an existing id is an error). */
int flow_registry_add_flow(struct store *s, const char *id, char *err, size_t err_cap);

/* A new pending version of flow id with exactly these bytes and their code hash. 0 or -1
 * (an existing version is an error). */
int flow_registry_add_version(struct store *s, const char *id, int64_t version,
                              const void *script, size_t script_len, const void *manifest,
                              size_t manifest_len, const char *code_hash, char *err,
                              size_t err_cap);

/* Records the approval of version of id by code_hash (stamped now) and marks that
 * version approved; refused ("changed while approving") unless the version was
 * pending. Call it inside a transaction: on -1 the caller rolls back. */
int flow_registry_approve(struct store *s, const char *id, int64_t version,
                          const char *code_hash, char *err, size_t err_cap);

/* The approval a run would use: the highest of id, or the one of version want (want
 * >= 1; 0 means the highest). 1 with *version and code_hash set, 0 when there is none,
 * -1 on error. */
int flow_registry_approval(struct store *s, const char *id, int64_t want, int64_t *version,
                           char code_hash[FLOW_HASH_HEX_LEN + 1], char *err, size_t err_cap);

/* Enables or disables the existing flow id. Enabling a disabled flow stamps its
 * enabled_at (a schedule counts from it); either clears the reason serve gave when it
 * disabled it by itself. 0 or -1. */
int flow_registry_set_enabled(struct store *s, const char *id, bool enabled, char *err,
                              size_t err_cap);

/* Disables flow id with reason, if it is enabled: *disabled says whether it was. 0 or
 * -1. */
int flow_registry_disable_with_reason(struct store *s, const char *id, const char *reason,
                                      bool *disabled, char *err, size_t err_cap);

/* One row of flow_registry_list. */
struct flow_summary {
    char id[FLOW_ID_MAX + 1];
    bool enabled;
    int64_t latest_version;                       /* the highest installed */
    bool latest_approved;                         /* its state */
    char latest_hash[FLOW_HASH_HEX_LEN + 1];
    int64_t approved_version;                     /* the highest approved, 0 if none */
    char approved_hash[FLOW_HASH_HEX_LEN + 1];    /* "" if none */
    char disabled_reason[513];                    /* why serve disabled it; "" if not */
};

/* Every flow, by id. *out is malloc'd (free it; NULL with *count 0 when there are
 * none). Returns 0 or -1. */
int flow_registry_list(struct store *s, struct flow_summary **out, size_t *count, char *err,
                       size_t err_cap);

/* A flow at its highest approved version, as the triggers read it. manifest points
 * into the store's row and is valid only during the visit. */
struct flow_approved {
    const char *id;
    int64_t version;       /* the highest approved */
    int64_t approved_at_ms;
    int64_t enabled_at_ms; /* 0: enabled since created */
    bool enabled;
    const void *manifest;
    size_t manifest_len;
};

/* Visits every ENABLED flow that has an approved version, by id. visit returns 0 to go
 * on, or -1 to stop with its reason in err (then this returns -1). 0 or -1. */
int flow_registry_each_approved(struct store *s,
                                int (*visit)(void *ctx, const struct flow_approved *flow,
                                             char *err, size_t err_cap),
                                void *ctx, char *err, size_t err_cap);

/* Visits flow id at its highest approved version, enabled or not: 1 when visited (visit's
 * own -1 is returned as -1), 0 when id is unknown or has no approved version, -1 on
 * error. */
int flow_registry_approved_of(struct store *s, const char *id,
                              int (*visit)(void *ctx, const struct flow_approved *flow,
                                           char *err, size_t err_cap),
                              void *ctx, char *err, size_t err_cap);

#endif
