#include "store/kv_store.h"

#include "base/error_line.h"
#include "base/json_js.h"
#include "store/sql.h"
#include "store/store_internal.h"
#include "store/store.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The key argument, or NULL after rejecting *out. *rc gets host_reject's result. */
static const char *key_arg(const json_t *args, const char *kind, struct host_settlement *out,
                           int *rc)
{
    const json_t *k = json_array_get(args, 0);
    if (!json_is_string(k)) {
        *rc = host_reject(out, HOST_CODE_INVALID_ARGUMENTS, "%s: the key must be a string", kind);
        return NULL;
    }
    size_t len = json_string_length(k);
    if (len == 0 || memchr(json_string_value(k), '\0', len) != NULL) {
        *rc = host_reject(out, HOST_CODE_INVALID_ARGUMENTS,
                          "%s: the key must be 1 to %u bytes without NUL", kind, KV_KEY_MAX_BYTES);
        return NULL;
    }
    if (len > KV_KEY_MAX_BYTES) {
        *rc = host_reject(out, HOST_CODE_TOO_LARGE, "%s: the key is %zu bytes, over %u", kind,
                          len, KV_KEY_MAX_BYTES);
        return NULL;
    }
    return json_string_value(k);
}

static int kv_get(struct sql_db *db, const char *flow, const char *key, struct host_settlement *out,
                  char *err, size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT value FROM kv WHERE flow_id = ?1 AND key = ?2", &st, err,
                    err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, flow);
    sql_bind_text(st, 2, key);
    int rc = sql_step(st);
    int ret;
    if (rc == SQL_ROW || rc == SQL_DONE) {
        const char *value = rc == SQL_ROW ? sql_column_text(st, 0) : "null";
        ret = host_fulfil_text(out, value) == 0 ? 0 : error_line(err, err_cap, "out of memory");
    } else {
        ret = sql_fail(db, err, err_cap);
    }
    sql_release(st);
    return ret;
}

/* Bytes flow holds now, keys and values, without key (which is being replaced). */
static int flow_bytes(struct sql_db *db, const char *flow, const char *key, long long *bytes,
                      char *err, size_t err_cap)
{
    struct sql_stmt *st;
    /* Bytes, not characters: SQLite 3.40 has no octet_length. */
    if (sql_prepare(db, sql_dialect(db, "SELECT coalesce(sum(length(CAST(key AS BLOB)) +"
                                        " length(CAST(value AS BLOB))), 0) FROM kv"
                                        " WHERE flow_id = ?1 AND key <> ?2",
                                    "SELECT coalesce(sum(octet_length(key) +"
                                        " octet_length(value)), 0) FROM kv"
                                        " WHERE flow_id = ?1 AND key <> ?2"),
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, flow);
    sql_bind_text(st, 2, key);
    int rc = sql_step(st);
    if (rc == SQL_ROW)
        *bytes = sql_column_int64(st, 0);
    sql_release(st);
    return rc == SQL_ROW ? 0 : sql_fail(db, err, err_cap);
}

/* The value's JSON as the script wrote it: the second element of the arguments' text,
 * byte for byte (a number jansson would print otherwise, 0.1 as 0.10000000000000001,
 * stays as JavaScript wrote it); NULL if there is none. */
static char *value_text(const json_t *value, const char *args_text, size_t args_len,
                        size_t *len)
{
    size_t start = 0;
    if (value == NULL || !json_js_array_element(args_text, args_len, 1, &start, len))
        return NULL;
    char *text = malloc(*len + 1);
    if (text != NULL) {
        memcpy(text, args_text + start, *len);
        text[*len] = '\0';
    }
    return text;
}

/* kv.set's limits, checked before anything changes: the value's size, and what the flow
 * would hold with it. 0 with *text (the value's JSON, malloc'd) and *len when within
 * them; else 0 with *text NULL and the rejection in *out; -1 on a store error. */
static int kv_set_check(struct sql_db *db, const char *flow, const char *key, const json_t *value,
                        const char *args_text, size_t args_len, struct host_settlement *out,
                        char **text, size_t *len, char *err, size_t err_cap)
{
    *text = NULL;
    if (value == NULL)
        return host_reject(out, HOST_CODE_INVALID_ARGUMENTS, "kv.set: missing the value") == 0
                   ? 0 : error_line(err, err_cap, "out of memory");
    char *v = value_text(value, args_text, args_len, len);
    if (v == NULL)
        return error_line(err, err_cap, "out of memory");
    long long held = 0;
    int ret = 0;
    if (*len > KV_VALUE_MAX_BYTES) {
        ret = host_reject(out, HOST_CODE_TOO_LARGE, "kv.set: the value is %zu bytes of JSON,"
                          " over %u", *len, KV_VALUE_MAX_BYTES);
    } else if (flow_bytes(db, flow, key, &held, err, err_cap) != 0) {
        free(v);
        return -1;
    } else if (held + (long long)strlen(key) + (long long)*len > KV_FLOW_MAX_BYTES) {
        ret = host_reject(out, HOST_CODE_TOO_LARGE, "kv.set: the flow would hold %lld bytes,"
                          " over %u", held + (long long)strlen(key) + (long long)*len,
                          KV_FLOW_MAX_BYTES);
    } else {
        *text = v;
        return 0;
    }
    free(v);
    return ret == 0 ? 0 : error_line(err, err_cap, "out of memory");
}

static int kv_set(struct sql_db *db, const char *flow, const char *key, const json_t *value,
                  const char *args_text, size_t args_len, struct host_settlement *out,
                  char *err, size_t err_cap)
{
    char *text;
    size_t len = 0;
    if (kv_set_check(db, flow, key, value, args_text, args_len, out, &text, &len, err,
                     err_cap) != 0)
        return -1;
    if (text == NULL)
        return 0; /* refused: *out says why */
    struct sql_stmt *st;
    if (sql_prepare(db, "INSERT INTO kv (flow_id, key, value) VALUES (?1, ?2, ?3)"
                        " ON CONFLICT (flow_id, key) DO UPDATE SET value = excluded.value",
                    &st, err, err_cap) != 0) {
        free(text);
        return -1;
    }
    sql_bind_text(st, 1, flow);
    sql_bind_text(st, 2, key);
    sql_bind_text_len(st, 3, text, len);
    int rc = sql_run(db, st, err, err_cap);
    free(text);
    if (rc != 0)
        return -1;
    return host_fulfil_text(out, "null") == 0 ? 0 : error_line(err, err_cap, "out of memory");
}

static int kv_delete(struct sql_db *db, const char *flow, const char *key,
                     struct host_settlement *out, char *err, size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(db, "DELETE FROM kv WHERE flow_id = ?1 AND key = ?2", &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, flow);
    sql_bind_text(st, 2, key);
    if (sql_run(db, st, err, err_cap) != 0)
        return -1;
    if (host_fulfil_text(out, sql_changes(db) > 0 ? "true" : "false") != 0)
        return error_line(err, err_cap, "out of memory");
    return 0;
}

int kv_store_call(struct store *s, const char *flow, const char *kind, const void *args,
                  const char *args_text, size_t args_len, struct host_settlement *out,
                  char *err, size_t err_cap)
{
    const json_t *array = args;
    struct sql_db *db = store_db(s);
    int rc = 0;
    const char *key = key_arg(array, kind, out, &rc);
    if (key == NULL)
        return rc == 0 ? 0 : error_line(err, err_cap, "out of memory");
    if (strcmp(kind, "kv.get") == 0)
        return kv_get(db, flow, key, out, err, err_cap);
    if (strcmp(kind, "kv.set") == 0)
        return kv_set(db, flow, key, json_array_get(array, 1), args_text, args_len, out, err,
                      err_cap);
    return kv_delete(db, flow, key, out, err, err_cap);
}

int kv_store_check(struct store *s, const char *flow, const char *kind, const void *args,
                   const char *args_text, size_t args_len, struct host_settlement *out,
                   bool *would_change, char *err, size_t err_cap)
{
    *would_change = false;
    int rc = 0;
    const char *key = key_arg(args, kind, out, &rc);
    if (key == NULL)
        return rc == 0 ? 0 : error_line(err, err_cap, "out of memory");
    if (strcmp(kind, "kv.set") != 0) {
        *would_change = true;
        return 0;
    }
    char *text;
    size_t len = 0;
    if (kv_set_check(store_db(s), flow, key, json_array_get(args, 1), args_text, args_len, out,
                     &text, &len, err, err_cap) != 0)
        return -1;
    *would_change = text != NULL;
    free(text);
    return 0;
}
