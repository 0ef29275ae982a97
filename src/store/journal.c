#include "store/journal.h"

#include "base/error_line.h"
#include "base/hex_text.h"
#include "base/sha256.h"
#include "store/sql.h"
#include "store/store_internal.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_TAG "basal idempotency key v1"

static const char *const CLASS_NAMES[] = {
    [JOURNAL_SYNC] = "sync",         [JOURNAL_LOCAL] = "local",
    [JOURNAL_QUERY] = "query",       [JOURNAL_MUTATION] = "mutation",
    [JOURNAL_KEYED_MUTATION] = "keyed_mutation",
};
static const char *const STATE_NAMES[] = {
    [JOURNAL_PENDING] = "pending", [JOURNAL_SETTLED] = "settled", [JOURNAL_UNKNOWN] = "unknown"};

const char *journal_class_name(enum journal_class cls)
{
    return (unsigned)cls < 5 ? CLASS_NAMES[cls] : "query";
}

bool journal_class_made_again(enum journal_class cls)
{
    return cls == JOURNAL_SYNC || cls == JOURNAL_QUERY;
}

const char *journal_state_name(enum journal_state state)
{
    return (unsigned)state < 3 ? STATE_NAMES[state] : "pending";
}

static enum journal_class class_parse(const char *name)
{
    for (unsigned i = 0; i < 5; i++)
        if (name != NULL && strcmp(name, CLASS_NAMES[i]) == 0)
            return (enum journal_class)i;
    return JOURNAL_MUTATION; /* the schema admits no other name; the safest reading */
}

static enum journal_state state_parse(const char *name)
{
    if (name != NULL && strcmp(name, "settled") == 0)
        return JOURNAL_SETTLED;
    if (name != NULL && strcmp(name, "unknown") == 0)
        return JOURNAL_UNKNOWN;
    return JOURNAL_PENDING; /* pending, or the unused dispatched */
}

void journal_entry_free(struct journal_entry *e)
{
    if (e == NULL)
        return;
    free(e->kind);
    free(e->args);
    free(e->value);
    free(e->destination);
    e->kind = e->args = e->value = e->destination = NULL;
}

void journal_entries_free(struct journal_entry *list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        journal_entry_free(&list[i]);
    free(list);
}

/* ---- digests and keys ------------------------------------------------------------- */

/* SHA-256 over parts, each given as (bytes, len), in hex. */
static int sha256_hex(const void *const *parts, const size_t *lens, size_t n, char *out)
{
    uint8_t digest[SHA256_BYTES];
    sha256_parts(parts, lens, n, digest);
    hex_text(digest, sizeof digest, out);
    return 0;
}

int journal_digest(const void *bytes, size_t len, char out[JOURNAL_DIGEST_HEX + 1])
{
    const void *parts[1] = {bytes};
    size_t lens[1] = {len};
    return sha256_hex(parts, lens, 1, out);
}

int journal_idempotency_key(const char *flow, int64_t run_id, const char *trigger_id,
                            uint32_t position, char out[JOURNAL_KEY_HEX + 1])
{
    char numbers[64];
    int n = snprintf(numbers, sizeof numbers, "%" PRId64 "\n%" PRIu32, run_id, position);
    /* Each part ends in a byte no part contains ('\n' after the numbers, NUL after
     * the strings), so different tuples never hash the same bytes. */
    const void *parts[4] = {KEY_TAG, flow, trigger_id, numbers};
    size_t lens[4] = {sizeof KEY_TAG, strlen(flow) + 1, strlen(trigger_id) + 1, (size_t)n};
    return sha256_hex(parts, lens, 4, out);
}

/* ---- reading ---------------------------------------------------------------------- */

static int entry_read(struct sql_stmt *st, struct journal_entry *e)
{
    memset(e, 0, sizeof *e);
    e->position = (uint32_t)sql_column_int64(st, 0);
    sql_column_copy(st, 3, e->digest, sizeof e->digest);
    sql_column_copy(st, 4, e->key, sizeof e->key);
    e->cls = class_parse(sql_column_text(st, 5));
    e->state = state_parse(sql_column_text(st, 6));
    const char *settlement = sql_column_text(st, 7);
    int value_col = 8;
    if (settlement == NULL) { /* not delivered: the mailbox's, if any */
        settlement = sql_column_text(st, 10);
        value_col = 11;
    }
    e->has_outcome = settlement != NULL;
    e->settlement = sql_settlement_parse(settlement);
    e->delivery_order =
        sql_column_is_null(st, 9) ? -1 : sql_column_int64(st, 9);
    e->waiting = !sql_column_is_null(st, 12);
    if (sql_column_dup(st, 1, &e->kind, NULL) != 0 ||
        sql_column_dup(st, 2, &e->args, &e->args_len) != 0 ||
        (e->has_outcome && sql_column_dup(st, value_col, &e->value, NULL) != 0) ||
        sql_column_dup(st, 13, &e->destination, NULL) != 0 ||
        e->kind == NULL || e->args == NULL) {
        journal_entry_free(e);
        return -1;
    }
    return 0;
}

static int entry_read_row(struct sql_stmt *st, void *elem)
{
    return entry_read(st, elem);
}

static void entry_drop(void *elem)
{
    journal_entry_free(elem);
}

int journal_load(struct store *s, int64_t run_id, struct journal_entry **rows,
                 size_t *count, char *err, size_t err_cap)
{
    void *list;
    int rc = sql_select_by_id(store_db(s),
                              "SELECT j.position, j.kind, j.args, j.args_digest,"
                              " j.idempotency_key, j.class, j.state, j.settlement, j.value,"
                              " j.delivery_order, m.settlement, m.value, w.run_id,"
                              " j.destination FROM journal j"
                              " LEFT JOIN mailbox m ON m.run_id = j.run_id"
                              " AND m.position = j.position"
                              " LEFT JOIN waits w ON w.run_id = j.run_id"
                              " AND w.position = j.position"
                              " WHERE j.run_id = ?1 ORDER BY j.position",
                              run_id, sizeof **rows, entry_read_row, entry_drop, &list, count,
                              err, err_cap);
    *rows = list; /* NULL when rc is -1 */
    return rc;
}

int journal_has_undelivered(struct store *s, int64_t run_id, char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT EXISTS (SELECT 1 FROM mailbox m JOIN journal j ON"
                        " j.run_id = m.run_id AND j.position = m.position WHERE m.run_id = ?1"
                        " AND j.state = 'pending')", &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, run_id);
    int found = sql_step_row(db, st, err, err_cap);
    if (found == 1)
        found = (int)sql_column_int64(st, 0) != 0;
    sql_release(st);
    return found;
}

/* ---- writing ---------------------------------------------------------------------- */

int journal_insert(struct store *s, int64_t run_id, const struct journal_entry *e, char *err,
                   size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "INSERT INTO journal (run_id, position, kind, args, args_digest,"
                        " idempotency_key, class, state, created_at, destination)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8, ?9)",
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, run_id);
    sql_bind_int64(st, 2, e->position);
    sql_bind_text(st, 3, e->kind);
    sql_bind_blob(st, 4, e->args, e->args_len);
    sql_bind_text(st, 5, e->digest);
    sql_bind_text(st, 6, e->key);
    sql_bind_text(st, 7, journal_class_name(e->cls));
    sql_bind_int64(st, 8, sql_now_ms());
    sql_bind_text(st, 9, e->destination);
    return sql_run(db, st, err, err_cap);
}

int journal_mailbox_put(struct store *s, int64_t run_id, uint32_t position,
                        enum proto_settlement settlement, const char *value, char *err,
                        size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "INSERT INTO mailbox (run_id, position, settlement, value, arrived_at)"
                        " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (run_id, position) DO UPDATE"
                        " SET settlement = excluded.settlement, value = excluded.value,"
                        " arrived_at = excluded.arrived_at", &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, run_id);
    sql_bind_int64(st, 2, position);
    sql_bind_text(st, 3, sql_settlement_name(settlement));
    sql_bind_blob(st, 4, value, strlen(value));
    sql_bind_int64(st, 5, sql_now_ms());
    return sql_run(db, st, err, err_cap);
}

static int delete_mailbox(struct sql_db *db, int64_t run_id, uint32_t position, char *err,
                          size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(db, "DELETE FROM mailbox WHERE run_id = ?1 AND position = ?2", &st, err,
                    err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, run_id);
    sql_bind_int64(st, 2, position);
    return sql_run(db, st, err, err_cap);
}

int journal_deliver(struct store *s, int64_t run_id, uint32_t position,
                    enum proto_settlement settlement, const char *value, int64_t order,
                    char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    if (delete_mailbox(db, run_id, position, err, err_cap) != 0)
        return -1;
    struct sql_stmt *st;
    if (sql_prepare(db, "UPDATE journal SET state = 'settled', settlement = ?3, value = ?4,"
                        " delivery_order = ?5, settled_at = ?6"
                        " WHERE run_id = ?1 AND position = ?2", &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, run_id);
    sql_bind_int64(st, 2, position);
    sql_bind_text(st, 3, sql_settlement_name(settlement));
    sql_bind_blob(st, 4, value, strlen(value));
    sql_bind_int64(st, 5, order);
    sql_bind_int64(st, 6, sql_now_ms());
    if (sql_run(db, st, err, err_cap) != 0)
        return -1;
    if (sql_changes(db) != 1)
        return error_line(err, err_cap, "journal: run %" PRId64 " has no position %" PRIu32,
                          run_id, position);
    return 0;
}

static int exec_position(struct sql_db *db, const char *sql, int64_t run_id, uint32_t position,
                         char *err, size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(db, sql, &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, run_id);
    sql_bind_int64(st, 2, position);
    return sql_run(db, st, err, err_cap);
}

int journal_mark_unknown(struct store *s, int64_t run_id, uint32_t position, char *err,
                         size_t err_cap)
{
    return exec_position(store_db(s),
                         "UPDATE journal SET state = 'unknown' WHERE run_id = ?1 AND position = ?2",
                         run_id, position, err, err_cap);
}

int journal_mark_pending(struct store *s, int64_t run_id, uint32_t position, char *err,
                         size_t err_cap)
{
    return exec_position(store_db(s),
                         "UPDATE journal SET state = 'pending' WHERE run_id = ?1 AND position = ?2",
                         run_id, position, err, err_cap);
}

int journal_forget(struct store *s, int64_t run_id, uint32_t position, char *err,
                   size_t err_cap)
{
    struct sql_db *db = store_db(s);
    if (delete_mailbox(db, run_id, position, err, err_cap) != 0)
        return -1;
    return exec_position(db, "DELETE FROM journal WHERE run_id = ?1 AND position = ?2", run_id,
                         position, err, err_cap);
}

/* ---- the prefix ------------------------------------------------------------------- */

static int unhex(const char *text, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char c = text[2 * i + (size_t)k];
            unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                         : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16u;
            if (d == 16)
                return -1;
            v = v * 16 + d;
        }
        out[i] = (uint8_t)v;
    }
    return text[2 * n] == '\0' ? 0 : -1;
}

static int by_order(const void *a, const void *b)
{
    uint32_t x = ((const struct proto_recorded_entry *)a)->delivery_order;
    uint32_t y = ((const struct proto_recorded_entry *)b)->delivery_order;
    return x < y ? -1 : x > y;
}

int journal_prefix(const struct journal_entry *rows, size_t count,
                   struct proto_recorded_entry **prefix, size_t *prefix_count)
{
    *prefix = NULL;
    *prefix_count = 0;
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (rows[i].state == JOURNAL_SETTLED && rows[i].delivery_order >= 0)
            n++;
    if (n == 0)
        return 0;
    struct proto_recorded_entry *list = calloc(n, sizeof *list);
    if (list == NULL)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < count; i++) {
        const struct journal_entry *e = &rows[i];
        if (e->state != JOURNAL_SETTLED || e->delivery_order < 0)
            continue;
        struct proto_recorded_entry *p = &list[k++];
        p->position = e->position;
        p->kind = proto_text_of(e->kind);
        p->settlement = e->settlement;
        p->value = proto_text_of(e->value != NULL ? e->value : "null");
        p->delivery_order = (uint32_t)e->delivery_order;
        if (unhex(e->digest, p->args_digest, PROTO_DIGEST_BYTES) != 0) {
            free(list);
            return -1;
        }
    }
    qsort(list, n, sizeof *list, by_order);
    *prefix = list;
    *prefix_count = n;
    return 0;
}
