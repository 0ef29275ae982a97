/* The flow registry: see flows/flows.h. */
#include "flows/flows.h"
#include "base/bounded_file.h"
#include "base/error_line.h"
#include "flows/script_check.h"

#include "store/audit.h"
#include "store/flow_registry.h"
#include "store/store.h"
#include "proto/message.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void flows_blob_free(struct flow_blob *b)
{
    if (b == NULL)
        return;
    free(b->bytes);
    b->bytes = NULL;
    b->len = 0;
}

/* Reads a regular file of at most cap bytes into *out (see bounded_file.h). */
static int read_bounded(const char *path, const char *label, size_t cap, struct flow_blob *out,
                        char *err, size_t err_cap)
{
    memset(out, 0, sizeof *out);
    return read_bounded_file(path, label, cap, &out->bytes, &out->len, err, err_cap);
}

_Static_assert(CODE_HASH_HEX_LEN == FLOW_HASH_HEX_LEN, "the store keeps code hashes whole");

/* ---- roots that are never granted ------------------------------------------------- */

/* The data home the store was opened in (store_home: the same on either engine). 0, or
 * -1 (err set). */
static int data_home(struct store *s, char *out, size_t cap, char *err, size_t err_cap)
{
    const char *home = store_home(s);
    int n = home != NULL ? snprintf(out, cap, "%s", home) : -1;
    if (n <= 0 || (size_t)n >= cap)
        return error_line(err, err_cap, "cannot tell the data home of the store %s",
                          store_path(s));
    return 0;
}

/* m's fs and git roots against the data home (manifest_check_roots): 0 or -1. */
static int roots_allowed(struct store *s, const struct manifest *m, char *err, size_t err_cap)
{
    char home[PATH_MAX];
    if (data_home(s, home, sizeof home, err, err_cap) != 0)
        return -1;
    return manifest_check_roots(m, home, err, err_cap);
}

/* The same for stored manifest bytes, as approve sees them now. */
static int stored_roots_allowed(struct store *s, const struct flow_blob *manifest, char *err,
                                size_t err_cap)
{
    struct manifest m;
    if (manifest_parse(manifest->bytes, manifest->len, &m, err, err_cap) != 0)
        return -1;
    int rc = roots_allowed(s, &m, err, err_cap);
    manifest_free(&m);
    return rc;
}

/* ---- install ------------------------------------------------------------------- */

static int install_locked(struct store *s, const char *id, int64_t version, const void *script,
                          size_t script_len, const void *manifest, size_t manifest_len,
                          const char *hash, bool *new_flow, char *err, size_t err_cap)
{
    int exists = flow_registry_lookup(s, id, NULL, err, err_cap);
    if (exists < 0)
        return -1;
    int64_t top = 0;
    if (flow_registry_top_version(s, id, false, &top, err, err_cap) != 0)
        return -1;
    if (version <= top)
        return error_line(err, err_cap,
                          "manifest.version: %" PRId64 " is not above version %" PRId64
                          " already installed for flow '%s'",
                          version, top, id);
    if (!exists && flow_registry_add_flow(s, id, err, err_cap) != 0)
        return -1;
    *new_flow = !exists;
    return flow_registry_add_version(s, id, version, script, script_len, manifest, manifest_len,
                                     hash, err, err_cap);
}

int flows_install(struct store *s, const void *script, size_t script_len,
                  const void *manifest, size_t manifest_len, const char *script_name,
                  struct flow_installed *out, char *err, size_t err_cap)
{
    memset(out, 0, sizeof *out);
    if (script_validate(script, script_len, err, err_cap) != 0)
        return -1;
    if (manifest_len > MANIFEST_MAX_BYTES)
        return error_line(err, err_cap, "manifest: more than the %u bytes allowed",
                          MANIFEST_MAX_BYTES);
    struct manifest m;
    if (manifest_parse(manifest, manifest_len, &m, err, err_cap) != 0)
        return -1;
    if (roots_allowed(s, &m, err, err_cap) != 0) {
        manifest_free(&m);
        return -1;
    }
    snprintf(out->id, sizeof out->id, "%s", m.id);
    out->version = m.version;
    manifest_free(&m);
    if (script_check_compiles(script, script_len, script_name, err, err_cap) != 0)
        return -1;
    if (code_hash_hex(script, script_len, manifest, manifest_len, out->code_hash) != 0)
        return error_line(err, err_cap, "code hash: libcrypto failed");
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    return store_end_txn(s, install_locked(s, out->id, out->version, script, script_len, manifest,
                                           manifest_len, out->code_hash, &out->new_flow, err,
                                           err_cap),
                         err, err_cap);
}

int flows_read_dir(const char *dir, struct flow_blob *script, struct flow_blob *manifest,
                   char *err, size_t err_cap)
{
    memset(script, 0, sizeof *script);
    memset(manifest, 0, sizeof *manifest);
    char path[4096];
    struct stat st;
    if (stat(dir, &st) != 0)
        return error_line(err, err_cap, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return error_line(err, err_cap, "%s: not a directory", dir);
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, FLOWS_SCRIPT_FILE) >= sizeof path)
        return error_line(err, err_cap, "%s: path too long", dir);
    if (read_bounded(path, FLOWS_SCRIPT_FILE, PROTO_MAX_SCRIPT_BYTES, script, err, err_cap) != 0)
        return -1;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, FLOWS_MANIFEST_FILE) >= sizeof path) {
        flows_blob_free(script);
        return error_line(err, err_cap, "%s: path too long", dir);
    }
    if (read_bounded(path, "manifest", MANIFEST_MAX_BYTES, manifest, err, err_cap) != 0) {
        flows_blob_free(script);
        return -1;
    }
    return 0;
}

int flows_install_dir(struct store *s, const char *dir, struct flow_installed *out,
                      char *err, size_t err_cap)
{
    memset(out, 0, sizeof *out);
    struct flow_blob script, manifest;
    if (flows_read_dir(dir, &script, &manifest, err, err_cap) != 0)
        return -1;
    char name[4096 + 16];
    snprintf(name, sizeof name, "%s/%s", dir, FLOWS_SCRIPT_FILE);
    int rc = flows_install(s, script.bytes, script.len, manifest.bytes, manifest.len, name, out,
                           err, err_cap);
    flows_blob_free(&script);
    flows_blob_free(&manifest);
    return rc;
}

int flows_load_version(struct store *s, const char *id, int64_t version,
                       struct flow_blob *script, struct flow_blob *manifest,
                       char code_hash[CODE_HASH_HEX_LEN + 1], bool *approved, char *err,
                       size_t err_cap)
{
    memset(script, 0, sizeof *script);
    memset(manifest, 0, sizeof *manifest);
    code_hash[0] = '\0';
    *approved = false;
    if (!flow_id_valid(id))
        return error_line(err, err_cap, "unknown flow '%.80s' (not a flow id)", id);
    int exists = flow_registry_lookup(s, id, NULL, err, err_cap);
    if (exists <= 0)
        return exists == 0 ? error_line(err, err_cap, "unknown flow '%s'", id) : -1;
    struct flow_version_row sv;
    int found = flow_registry_version(s, id, version, &sv, err, err_cap);
    if (found <= 0)
        return found == 0 ? error_line(err, err_cap, "flow '%s' has no version %" PRId64, id,
                                       version)
                          : -1;
    char again[CODE_HASH_HEX_LEN + 1];
    if (code_hash_hex(sv.script.bytes, sv.script.len, sv.manifest.bytes, sv.manifest.len,
                      again) != 0 ||
        strcmp(again, sv.code_hash) != 0) {
        flow_version_row_free(&sv);
        return error_line(err, err_cap, "flow '%s' version %" PRId64 ": the stored script and"
                          " manifest no longer hash to its recorded code hash", id, version);
    }
    snprintf(code_hash, CODE_HASH_HEX_LEN + 1, "%s", sv.code_hash);
    *approved = sv.approved;
    *script = sv.script;
    *manifest = sv.manifest;
    return 0;
}

/* ---- approve, enable ------------------------------------------------------------ */

static int approve_locked(struct store *s, const char *id, int64_t version, const char *hash,
                          char *err, size_t err_cap)
{
    int exists = flow_registry_lookup(s, id, NULL, err, err_cap);
    if (exists < 0)
        return -1;
    if (!exists)
        return error_line(err, err_cap, "unknown flow '%s'", id);
    struct flow_version_row v;
    int found = flow_registry_version(s, id, version, &v, err, err_cap);
    if (found < 0)
        return -1;
    if (!found)
        return error_line(err, err_cap, "flow '%s' has no version %" PRId64, id, version);
    int rc = -1;
    char again[CODE_HASH_HEX_LEN + 1];
    int64_t approved_top = 0;
    if (v.approved) {
        error_line(err, err_cap, "flow '%s' version %" PRId64 " is already approved", id, version);
    } else if (strcmp(hash, v.code_hash) != 0) {
        error_line(err, err_cap,
                   "--code-hash %s does not match the code hash of flow '%s' version %" PRId64,
                   hash, id, version);
    } else if (code_hash_hex(v.script.bytes, v.script.len, v.manifest.bytes, v.manifest.len,
                             again) != 0) {
        error_line(err, err_cap, "code hash: libcrypto failed");
    } else if (strcmp(again, v.code_hash) != 0) {
        error_line(err, err_cap,
               "flow '%s' version %" PRId64 ": the stored script and manifest no longer hash to "
                   "its recorded code hash (altered in the store)",
                   id, version);
    } else if (flow_registry_top_version(s, id, true, &approved_top, err, err_cap) != 0) {
        /* err set */
    } else if (approved_top > version) {
        error_line(err, err_cap,
                   "flow '%s' version %" PRId64 " is below the approved version %" PRId64, id,
                   version, approved_top);
    } else {
        /* The roots as they resolve now: one may have become a link to the data home. */
        rc = stored_roots_allowed(s, &v.manifest, err, err_cap);
    }
    flow_version_row_free(&v);
    if (rc != 0)
        return -1;
    return flow_registry_approve(s, id, version, hash, err, err_cap);
}

int flows_approve(struct store *s, const char *id, int64_t version, const char *code_hash,
                  char *err, size_t err_cap)
{
    if (!flow_id_valid(id))
        return error_line(err, err_cap, "unknown flow '%.80s' (not a flow id)", id);
    if (version < 1)
        return error_line(err, err_cap, "--version: %" PRId64 " is not a version (>= 1)", version);
    if (!code_hash_hex_valid(code_hash))
        return error_line(err, err_cap,
                          "--code-hash: '%.80s' is not 64 lowercase hexadecimal characters",
                          code_hash);
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    return store_end_txn(s, approve_locked(s, id, version, code_hash, err, err_cap), err, err_cap);
}

int flows_set_enabled(struct store *s, const char *id, bool enabled, char *err,
                      size_t err_cap)
{
    if (!flow_id_valid(id))
        return error_line(err, err_cap, "unknown flow '%.80s' (not a flow id)", id);
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    int exists = flow_registry_lookup(s, id, NULL, err, err_cap);
    if (exists == 0)
        error_line(err, err_cap, "unknown flow '%s'", id);
    /* Enabling stamps enabled_at (a schedule counts from it) and clears the reason serve
     * gave when it disabled the flow by itself; disabling by the operator has none. */
    int rc = exists == 1 ? flow_registry_set_enabled(s, id, enabled, err, err_cap) : -1;
    return store_end_txn(s, rc, err, err_cap);
}

int flows_disable_auto(struct store *s, const char *id, const char *reason, bool *disabled,
                       char *err, size_t err_cap)
{
    *disabled = false;
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    int rc = flow_registry_disable_with_reason(s, id, reason, disabled, err, err_cap);
    if (rc == 0 && *disabled)
        rc = audit_record(s, id, -1, -1, "flow.auto_disable", false, reason, err, err_cap);
    rc = store_end_txn(s, rc, err, err_cap);
    if (rc != 0)
        *disabled = false;
    return rc;
}

/* ---- list ------------------------------------------------------------------------ */

int flows_known(struct store *s, const char *id, char *err, size_t err_cap)
{
    if (!flow_id_valid(id))
        return 0;
    return flow_registry_lookup(s, id, NULL, err, err_cap);
}

int flows_list(struct store *s, struct flow_summary **out, size_t *count, char *err,
               size_t err_cap)
{
    return flow_registry_list(s, out, count, err, err_cap);
}

/* ---- runnable --------------------------------------------------------------------- */

/* The registry half of the check: the flow exists and is enabled, and the approval a
 * run uses (its version and hash). Inside the caller's read transaction. */
static int approval_check(struct store *s, const char *id, int64_t want, int64_t *version,
                          char approved[CODE_HASH_HEX_LEN + 1], char *err, size_t err_cap)
{
    bool enabled = false;
    int exists = flow_registry_lookup(s, id, &enabled, err, err_cap);
    if (exists < 0)
        return -1;
    if (!exists)
        return error_line(err, err_cap, "unknown flow '%s'", id);
    if (!enabled)
        return error_line(err, err_cap, "flow '%s' is disabled (ck-basal flow enable %s)", id, id);
    approved[0] = '\0';
    int found_approval = flow_registry_approval(s, id, want, version, approved, err, err_cap);
    if (found_approval < 0)
        return -1;
    if (found_approval == 0 && want != 0)
        return error_line(err, err_cap, "flow '%s' version %" PRId64 " is not approved", id, want);
    if (found_approval == 0)
        return error_line(err, err_cap, "flow '%s' has no approved version", id);
    return 0;
}

static int runnable_check(struct store *s, const char *id, int64_t want, int64_t *version,
                          struct flow_blob *script, struct flow_blob *manifest,
                          char approved[CODE_HASH_HEX_LEN + 1], char *err, size_t err_cap)
{
    int64_t v = 0;
    if (approval_check(s, id, want, &v, approved, err, err_cap) != 0)
        return -1;
    struct flow_version_row sv;
    int found = flow_registry_version(s, id, v, &sv, err, err_cap);
    if (found < 0)
        return -1;
    if (!found)
        return error_line(err, err_cap, "flow '%s': approved version %" PRId64 " is missing", id, v);
    char again[CODE_HASH_HEX_LEN + 1];
    int ok = -1;
    if (!sv.approved || strcmp(sv.code_hash, approved) != 0)
        error_line(err, err_cap,
                   "flow '%s' version %" PRId64 ": its recorded code hash is not the approved one",
                   id, v);
    else if (code_hash_hex(sv.script.bytes, sv.script.len, sv.manifest.bytes, sv.manifest.len,
                           again) != 0)
        error_line(err, err_cap, "code hash: libcrypto failed");
    else if (strcmp(again, approved) != 0)
        error_line(err, err_cap,
                   "flow '%s' version %" PRId64 ": the stored script and manifest hash to %s, "
                   "not the approved %s",
                   id, v, again, approved);
    else
        ok = 0;
    if (ok != 0) {
        flow_version_row_free(&sv);
        return -1;
    }
    *version = v;
    *script = sv.script;
    *manifest = sv.manifest;
    return 0;
}

int flows_runnable(struct store *s, const char *id, int64_t *version,
                   struct flow_blob *script, struct flow_blob *manifest, char *err,
                   size_t err_cap)
{
    return flows_runnable_version(s, id, 0, version, script, manifest, NULL, err, err_cap);
}

int flows_runnable_version(struct store *s, const char *id, int64_t want, int64_t *version,
                           struct flow_blob *script, struct flow_blob *manifest,
                           char code_hash[CODE_HASH_HEX_LEN + 1], char *err, size_t err_cap)
{
    char approved[CODE_HASH_HEX_LEN + 1];
    *version = 0;
    memset(script, 0, sizeof *script);
    memset(manifest, 0, sizeof *manifest);
    if (!flow_id_valid(id))
        return error_line(err, err_cap, "unknown flow '%.80s' (not a flow id)", id);
    /* One read transaction, so every check sees the same state. */
    if (store_begin_read(s, err, err_cap) != 0)
        return -1;
    int rc = runnable_check(s, id, want, version, script, manifest, approved, err, err_cap);
    store_end_read(s);
    if (rc == 0 && code_hash != NULL)
        memcpy(code_hash, approved, sizeof approved);
    return rc;
}

int flows_run_approval(struct store *s, const char *id, int64_t want, int64_t *version,
                       char code_hash[CODE_HASH_HEX_LEN + 1], char *err, size_t err_cap)
{
    *version = 0;
    code_hash[0] = '\0';
    if (!flow_id_valid(id))
        return error_line(err, err_cap, "unknown flow '%.80s' (not a flow id)", id);
    if (store_begin_read(s, err, err_cap) != 0)
        return -1;
    int rc = approval_check(s, id, want, version, code_hash, err, err_cap);
    store_end_read(s);
    if (rc != 0) {
        *version = 0;
        code_hash[0] = '\0';
    }
    return rc;
}
