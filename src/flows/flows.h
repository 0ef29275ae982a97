/* The flow registry on the store (basal.md sections 6 and 8): installed flows, their
 * versions with the exact script and manifest bytes, and approvals by code hash. Here
 * are its rules (the checks of an install, an approval, a run); its tables are
 * store/flow_registry.h's.
 *
 * Every function that writes does all of its checks and writes inside one BEGIN
 * IMMEDIATE transaction, and a refusal rolls it back: a refused call changes nothing
 * stored. Refusals are one line (no newline) in the caller's err buffer, naming the
 * problem. None of these functions prints. */
#ifndef BASAL_FLOWS_FLOWS_H
#define BASAL_FLOWS_FLOWS_H

#include "flows/code_hash.h"
#include "flows/manifest.h"
#include "store/flow_registry.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

#define FLOWS_SCRIPT_FILE "flow.js"
#define FLOWS_MANIFEST_FILE "manifest.json"

/* Releases the bytes of a struct flow_blob (store/flow_registry.h: exact bytes read from
 * a file or the store). */
void flows_blob_free(struct flow_blob *b);

/* What flows_install recorded. */
struct flow_installed {
    char id[FLOW_ID_MAX + 1];
    int64_t version;
    char code_hash[CODE_HASH_HEX_LEN + 1];
    bool new_flow; /* the flow itself was created (enabled) by this install */
};

/* Installs script and manifest (exact bytes): validates the script (script_validate)
 * and the manifest (manifest_parse, at most MANIFEST_MAX_BYTES, and
 * manifest_check_roots against the store's data home), has a confined worker compile
 * the script (flows/script_check.h; script_name: what its error calls it), computes the code
 * hash over the bytes and, in one transaction, creates the flow if it is new
 * (enabled) and records a pending version. The manifest's version must be above
 * every version of that flow already stored. Returns 0 with *out filled, or -1. */
int flows_install(struct store *s, const void *script, size_t script_len,
                  const void *manifest, size_t manifest_len, const char *script_name,
                  struct flow_installed *out, char *err, size_t err_cap);

/* Reads dir/flow.js (at most PROTO_MAX_SCRIPT_BYTES) and dir/manifest.json (at most
 * MANIFEST_MAX_BYTES), both regular files, and installs them with flows_install. */
int flows_install_dir(struct store *s, const char *dir, struct flow_installed *out,
                      char *err, size_t err_cap);

/* Reads dir/flow.js and dir/manifest.json with the bounds of flows_install_dir and
 * stores nothing (a dry run of a directory). 0 with both set (flows_blob_free), or -1
 * with both zeroed. The bytes are not validated. */
int flows_read_dir(const char *dir, struct flow_blob *script, struct flow_blob *manifest,
                   char *err, size_t err_cap);

/* The stored bytes of version of flow id, approved or pending (a dry run of an
 * installed version), refused if they no longer hash to the version's recorded code
 * hash. 0 with *script, *manifest (flows_blob_free), code_hash and *approved set, or
 * -1 ("unknown flow 'x'", "flow 'x' has no version 3"). */
int flows_load_version(struct store *s, const char *id, int64_t version,
                       struct flow_blob *script, struct flow_blob *manifest,
                       char code_hash[CODE_HASH_HEX_LEN + 1], bool *approved, char *err,
                       size_t err_cap);

/* Approves version of flow id: refused unless the version exists, is pending, is not
 * below an already approved version, code_hash is 64 lowercase hex characters equal
 * to the stored version's hash, the hash recomputed over the stored bytes is that
 * same hash, and the stored manifest still parses with roots manifest_check_roots
 * allows now. Records the approval row and marks the version approved in one
 * transaction. Returns 0 or -1. */
int flows_approve(struct store *s, const char *id, int64_t version, const char *code_hash,
                  char *err, size_t err_cap);

/* Enables or disables flow id (refused if unknown; the same state again is fine).
 * Returns 0 or -1. */
int flows_set_enabled(struct store *s, const char *id, bool enabled, char *err,
                      size_t err_cap);

/* Disables flow id on serve's own decision (an admission rate limit, docs/triggers.md):
 * enabled = 0 with reason (one line, 1..512 bytes) in disabled_reason, and an audit row
 * (kind "flow.auto_disable", refused, the reason) in the same transaction. A flow
 * already disabled is left as it is (*disabled false). Returns 0 or -1. */
int flows_disable_auto(struct store *s, const char *id, const char *reason, bool *disabled,
                       char *err, size_t err_cap);

/* Whether flow id is installed: 1 yes, 0 no (also for a text that is not a flow id),
 * -1 on a store error (reason in err). */
int flows_known(struct store *s, const char *id, char *err, size_t err_cap);

/* Every flow, by id (struct flow_summary: store/flow_registry.h). *out is malloc'd (free it; NULL with *count 0 when there are
 * none). Returns 0 or -1. */
int flows_list(struct store *s, struct flow_summary **out, size_t *count, char *err,
               size_t err_cap);

/* The check a run makes before any script runs: refused unless flow id exists, is
 * enabled, has an approved version, and the stored script and manifest of its
 * highest approved version still hash to the hash the approval recorded (and the
 * version row's). On success returns 0 with *version, *script and *manifest (owned by
 * the caller: flows_blob_free) set; on refusal -1 with them zeroed. */
int flows_runnable(struct store *s, const char *id, int64_t *version,
                   struct flow_blob *script, struct flow_blob *manifest, char *err,
                   size_t err_cap);

/* The same check for one version (want >= 1; 0 means the highest approved): a run
 * admitted at a version is resumed at that version, and only while its approval
 * still holds. code_hash (NULL: not wanted) gets the approval's hash, which the bytes
 * were just verified against. */
int flows_runnable_version(struct store *s, const char *id, int64_t want, int64_t *version,
                           struct flow_blob *script, struct flow_blob *manifest,
                           char code_hash[CODE_HASH_HEX_LEN + 1], char *err, size_t err_cap);

/* The registry half of flows_runnable_version, without reading or hashing the bytes:
 * flow id exists and is enabled, and has the approval a run uses (want as there). 0
 * with *version and code_hash (the approval's) set, or -1 with the same refusals. What a
 * run with cached, already verified bytes checks each time (flows/version_cache.h). */
int flows_run_approval(struct store *s, const char *id, int64_t want, int64_t *version,
                       char code_hash[CODE_HASH_HEX_LEN + 1], char *err, size_t err_cap);

#endif
