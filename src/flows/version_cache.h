/* A flow version's verified inputs, loaded once and shared (issue 25): the script and
 * manifest bytes of (flow id, version, code hash) and the manifest parsed from them.
 *
 * The contract, which the caller (flows/run_driver.c) keeps and this file relies on:
 *   - an entry is put only with bytes that were just verified against the approval's
 *     code hash (flows_runnable_version), and under that hash: the key names exactly
 *     the bytes, so a hit is the approved bytes whatever the store holds now;
 *   - a hit is no permission: before each use the caller checks what can change and is
 *     cheap to ask (the flow enabled, the approval's version and hash:
 *     flows_run_approval) and looks up with the hash the approval names now, so a
 *     revoked, disabled or re-approved flow never reaches a cached entry.
 * What this file guarantees: one lock around the table, so any thread may call it; an
 * entry handed out is held (a reference) until version_cache_release, and is never
 * changed or freed while held; the table keeps at most capacity entries of at most
 * max_bytes of script and manifest bytes in all, the least recently used leaving first
 * (one still held is freed on its last release; one larger than max_bytes alone is
 * handed out but not kept). */
#ifndef BASAL_FLOWS_VERSION_CACHE_H
#define BASAL_FLOWS_VERSION_CACHE_H

#include "flows/code_hash.h"
#include "flows/manifest.h"
#include "store/flow_registry.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct version_cache;

/* Read-only for holders. */
struct version_entry {
    char flow_id[FLOW_ID_MAX + 1];
    int64_t version;
    char code_hash[CODE_HASH_HEX_LEN + 1];
    struct flow_blob script, manifest_bytes;
    struct manifest manifest;
    /* The cache's own. */
    unsigned refs;
    bool listed; /* still in the table (else freed on its last release) */
    struct version_entry *newer, *older;
};

/* A cache of at most capacity (>= 1) entries and max_bytes; NULL when out of memory. */
struct version_cache *version_cache_new(size_t capacity, size_t max_bytes);
/* Frees the cache and its entries; none may be held. c may be NULL. */
void version_cache_free(struct version_cache *c);

/* The entry of (flow, version, code_hash), held, or NULL. */
struct version_entry *version_cache_get(struct version_cache *c, const char *flow,
                                        int64_t version, const char *code_hash);

/* Adds the entry of (flow, version, code_hash), taking *script, *manifest_bytes and
 * *parsed (zeroed here, whatever the outcome), and returns it held. If another thread
 * put that key first, what was passed is freed and that entry is returned (the same
 * bytes: the hash names them). NULL when out of memory (everything passed freed). */
struct version_entry *version_cache_put(struct version_cache *c, const char *flow,
                                        int64_t version, const char *code_hash,
                                        struct flow_blob *script,
                                        struct flow_blob *manifest_bytes,
                                        struct manifest *parsed);

/* Ends a hold of e (from get or put). e may be NULL. */
void version_cache_release(struct version_cache *c, struct version_entry *e);

/* How many entries the table keeps now (held or not). */
size_t version_cache_count(struct version_cache *c);

#endif
