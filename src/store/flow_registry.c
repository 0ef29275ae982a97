/* The flow registry's tables: see store/flow_registry.h. */
#include "store/flow_registry.h"

#include "base/error_line.h"
#include "store/sql.h"
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void flow_version_row_free(struct flow_version_row *v)
{
    if (v == NULL)
        return;
    free(v->script.bytes);
    free(v->manifest.bytes);
    memset(v, 0, sizeof *v);
}

static int column_blob(struct sql_stmt *st, int col, struct flow_blob *b)
{
    size_t len = 0;
    const void *p = sql_column_blob(st, col, &len);
    b->bytes = malloc(len + 1);
    if (b->bytes == NULL)
        return -1;
    if (len > 0)
        memcpy(b->bytes, p, len);
    b->bytes[len] = '\0';
    b->len = len;
    return 0;
}

int flow_registry_lookup(struct store *s, const char *id, bool *enabled, char *err,
                         size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(store_db(s), "SELECT enabled FROM flows WHERE id = ?1", &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, id);
    int found = sql_step_row(store_db(s), st, err, err_cap);
    if (found == 1 && enabled != NULL)
        *enabled = (int)sql_column_int64(st, 0) != 0;
    sql_release(st);
    return found;
}

int flow_registry_top_version(struct store *s, const char *id, bool approved_only,
                              int64_t *version, char *err, size_t err_cap)
{
    struct sql_stmt *st;
    const char *sql = approved_only
                          ? "SELECT coalesce(max(version), 0) FROM flow_versions"
                            " WHERE flow_id = ?1 AND state = 'approved'"
                          : "SELECT coalesce(max(version), 0) FROM flow_versions WHERE flow_id = ?1";
    if (sql_prepare(store_db(s), sql, &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, id);
    int rc = -1;
    if (sql_step(st) == SQL_ROW) {
        *version = sql_column_int64(st, 0);
        rc = 0;
    } else {
        sql_fail(store_db(s), err, err_cap);
    }
    sql_release(st);
    return rc;
}

int flow_registry_version(struct store *s, const char *id, int64_t version,
                          struct flow_version_row *out, char *err, size_t err_cap)
{
    memset(out, 0, sizeof *out);
    struct sql_stmt *st;
    if (sql_prepare(store_db(s), "SELECT script, manifest, code_hash, state FROM flow_versions"
                    " WHERE flow_id = ?1 AND version = ?2", &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, id);
    sql_bind_int64(st, 2, version);
    int found = sql_step_row(store_db(s), st, err, err_cap);
    if (found == 1) {
        const char *state = sql_column_text(st, 3);
        sql_column_copy(st, 2, out->code_hash, sizeof out->code_hash);
        out->approved = state != NULL && strcmp(state, "approved") == 0;
        if (column_blob(st, 0, &out->script) != 0 || column_blob(st, 1, &out->manifest) != 0) {
            flow_version_row_free(out);
            found = error_line(err, err_cap, "out of memory");
        }
    }
    sql_release(st);
    return found;
}

int flow_registry_add_flow(struct store *s, const char *id, char *err, size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(store_db(s), "INSERT INTO flows (id, created_at, enabled) VALUES (?1, ?2, 1)",
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, id);
    sql_bind_int64(st, 2, sql_now_ms());
    return sql_run(store_db(s), st, err, err_cap);
}

int flow_registry_add_version(struct store *s, const char *id, int64_t version,
                              const void *script, size_t script_len, const void *manifest,
                              size_t manifest_len, const char *code_hash, char *err,
                              size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(store_db(s), "INSERT INTO flow_versions (flow_id, version, script, manifest,"
                    " code_hash, state, created_at) VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6)",
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, id);
    sql_bind_int64(st, 2, version);
    sql_bind_blob(st, 3, script, script_len);
    /* A zero-length blob bound from NULL would be stored as NULL: the column is NOT NULL. */
    sql_bind_blob(st, 4, manifest_len > 0 ? manifest : "", manifest_len);
    sql_bind_text(st, 5, code_hash);
    sql_bind_int64(st, 6, sql_now_ms());
    return sql_run(store_db(s), st, err, err_cap);
}

int flow_registry_approve(struct store *s, const char *id, int64_t version,
                          const char *code_hash, char *err, size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(store_db(s), "INSERT INTO approvals (flow_id, version, code_hash, approved_at)"
                    " VALUES (?1, ?2, ?3, ?4)", &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, id);
    sql_bind_int64(st, 2, version);
    sql_bind_text(st, 3, code_hash);
    sql_bind_int64(st, 4, sql_now_ms());
    if (sql_run(store_db(s), st, err, err_cap) != 0)
        return -1;
    if (sql_prepare(store_db(s), "UPDATE flow_versions SET state = 'approved'"
                    " WHERE flow_id = ?1 AND version = ?2 AND state = 'pending'",
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, id);
    sql_bind_int64(st, 2, version);
    if (sql_run(store_db(s), st, err, err_cap) != 0)
        return -1;
    if (sql_changes(store_db(s)) != 1)
        return error_line(err, err_cap, "flow '%s' version %lld changed while approving", id,
                          (long long)version);
    return 0;
}

int flow_registry_approval(struct store *s, const char *id, int64_t want, int64_t *version,
                           char code_hash[FLOW_HASH_HEX_LEN + 1], char *err, size_t err_cap)
{
    *version = 0;
    code_hash[0] = '\0';
    struct sql_stmt *st;
    if (sql_prepare(store_db(s), "SELECT version, code_hash FROM approvals WHERE flow_id = ?1"
                    " AND (?2 = 0 OR version = ?2) ORDER BY version DESC LIMIT 1", &st, err,
                    err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, id);
    sql_bind_int64(st, 2, want);
    int found = sql_step_row(store_db(s), st, err, err_cap);
    if (found == 1) {
        *version = sql_column_int64(st, 0);
        sql_column_copy(st, 1, code_hash, FLOW_HASH_HEX_LEN + 1);
    }
    sql_release(st);
    return found;
}

int flow_registry_set_enabled(struct store *s, const char *id, bool enabled, char *err,
                              size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(store_db(s),
                    "UPDATE flows SET enabled = ?2, disabled_reason = NULL,"
                    " enabled_at = CASE WHEN ?2 = 1 AND enabled = 0 THEN ?3"
                    " ELSE enabled_at END WHERE id = ?1",
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, id);
    sql_bind_int64(st, 2, enabled ? 1 : 0);
    sql_bind_int64(st, 3, sql_now_ms());
    return sql_run(store_db(s), st, err, err_cap);
}

int flow_registry_disable_with_reason(struct store *s, const char *id, const char *reason,
                                      bool *disabled, char *err, size_t err_cap)
{
    *disabled = false;
    struct sql_stmt *st;
    if (sql_prepare(store_db(s),
                    "UPDATE flows SET enabled = 0, disabled_reason = ?2"
                    " WHERE id = ?1 AND enabled = 1",
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, id);
    sql_bind_text(st, 2, reason);
    if (sql_run(store_db(s), st, err, err_cap) != 0)
        return -1;
    *disabled = sql_changes(store_db(s)) == 1;
    return 0;
}

static int summary_read(struct sql_stmt *st, void *elem)
{
    struct flow_summary *r = elem;
    memset(r, 0, sizeof *r);
    sql_column_copy(st, 0, r->id, sizeof r->id);
    r->enabled = (int)sql_column_int64(st, 1) != 0;
    r->latest_version = sql_column_int64(st, 2);
    const char *text = sql_column_text(st, 3);
    r->latest_approved = text != NULL && strcmp(text, "approved") == 0;
    sql_column_copy(st, 4, r->latest_hash, sizeof r->latest_hash);
    r->approved_version = sql_column_int64(st, 5);
    sql_column_copy(st, 6, r->approved_hash, sizeof r->approved_hash);
    sql_column_copy(st, 7, r->disabled_reason, sizeof r->disabled_reason);
    return 0;
}

int flow_registry_list(struct store *s, struct flow_summary **out, size_t *count, char *err,
                       size_t err_cap)
{
    return sql_select_all(store_db(s),
                          "SELECT f.id, f.enabled, l.version, l.state, l.code_hash, a.version,"
                          " a.code_hash, f.disabled_reason"
                          " FROM flows f"
                          " LEFT JOIN flow_versions l ON l.flow_id = f.id AND l.version ="
                          "   (SELECT max(version) FROM flow_versions WHERE flow_id = f.id)"
                          " LEFT JOIN approvals a ON a.flow_id = f.id AND a.version ="
                          "   (SELECT max(version) FROM approvals WHERE flow_id = f.id)"
                          " ORDER BY f.id",
                          sizeof **out, summary_read, NULL, (void **)out, count, err, err_cap);
}

/* ---- flows at their approved version ---------------------------------------------- */

#define SELECT_APPROVED                                                                        \
    "SELECT f.id, a.version, a.approved_at, coalesce(f.enabled_at, 0), v.manifest, f.enabled"  \
    " FROM flows f"                                                                            \
    " JOIN approvals a ON a.flow_id = f.id"                                                    \
    "  AND a.version = (SELECT max(version) FROM approvals WHERE flow_id = f.id)"              \
    " JOIN flow_versions v ON v.flow_id = a.flow_id AND v.version = a.version"

typedef int (*approved_visit)(void *ctx, const struct flow_approved *flow, char *err,
                              size_t err_cap);

static int visit_row(struct sql_stmt *st, approved_visit visit, void *ctx, char *err,
                     size_t err_cap)
{
    size_t len = 0;
    const void *manifest = sql_column_blob(st, 4, &len);
    struct flow_approved f = {
        .id = sql_column_text(st, 0),
        .version = sql_column_int64(st, 1),
        .approved_at_ms = sql_column_int64(st, 2),
        .enabled_at_ms = sql_column_int64(st, 3),
        .manifest = manifest,
        .manifest_len = len,
        .enabled = (int)sql_column_int64(st, 5) != 0,
    };
    if (f.id == NULL)
        f.id = "";
    return visit(ctx, &f, err, err_cap);
}

int flow_registry_each_approved(struct store *s, approved_visit visit, void *ctx, char *err,
                                size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(store_db(s), SELECT_APPROVED " WHERE f.enabled = 1 ORDER BY f.id", &st, err,
                    err_cap) != 0)
        return -1;
    int rc, ret = 0;
    while ((rc = sql_step(st)) == SQL_ROW)
        if ((ret = visit_row(st, visit, ctx, err, err_cap)) != 0)
            break;
    if (ret == 0 && rc != SQL_DONE)
        ret = sql_fail(store_db(s), err, err_cap);
    sql_release(st);
    return ret != 0 ? -1 : 0;
}

int flow_registry_approved_of(struct store *s, const char *id, approved_visit visit, void *ctx,
                              char *err, size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(store_db(s), SELECT_APPROVED " WHERE f.id = ?1", &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, id);
    int got = sql_step_row(store_db(s), st, err, err_cap);
    if (got == 1 && visit_row(st, visit, ctx, err, err_cap) != 0)
        got = -1;
    sql_release(st);
    return got;
}
