#include "store/sql_postgres.h"

#include "base/error_line.h"
#include "base/shared_library.h"
#include "store/sql_backend.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- libpq, loaded at the first connection ------------------------------------------ */

/* libpq's ABI has kept this name since PostgreSQL 8.2; Debian's libpq5 provides it. */
#define LIBPQ_SONAME "libpq.so.5"

static struct {
    __typeof__(PQclear) *clear;
    __typeof__(PQcmdStatus) *cmd_status;
    __typeof__(PQcmdTuples) *cmd_tuples;
    __typeof__(PQconnectdbParams) *connectdb_params;
    __typeof__(PQerrorMessage) *error_message;
    __typeof__(PQexec) *exec;
    __typeof__(PQexecPrepared) *exec_prepared;
    __typeof__(PQfinish) *finish;
    __typeof__(PQftype) *ftype;
    __typeof__(PQgetisnull) *getisnull;
    __typeof__(PQgetlength) *getlength;
    __typeof__(PQgetvalue) *getvalue;
    __typeof__(PQnfields) *nfields;
    __typeof__(PQntuples) *ntuples;
    __typeof__(PQprepare) *prepare;
    __typeof__(PQresultErrorField) *result_error_field;
    __typeof__(PQresultStatus) *result_status;
    __typeof__(PQsetNoticeProcessor) *set_notice_processor;
    __typeof__(PQstatus) *status;
    __typeof__(PQtransactionStatus) *transaction_status;
} pq;

static const struct shared_symbol symbols[] = {
    SHARED_SYMBOL(pq, clear, PQclear),
    SHARED_SYMBOL(pq, cmd_status, PQcmdStatus),
    SHARED_SYMBOL(pq, cmd_tuples, PQcmdTuples),
    SHARED_SYMBOL(pq, connectdb_params, PQconnectdbParams),
    SHARED_SYMBOL(pq, error_message, PQerrorMessage),
    SHARED_SYMBOL(pq, exec, PQexec),
    SHARED_SYMBOL(pq, exec_prepared, PQexecPrepared),
    SHARED_SYMBOL(pq, finish, PQfinish),
    SHARED_SYMBOL(pq, ftype, PQftype),
    SHARED_SYMBOL(pq, getisnull, PQgetisnull),
    SHARED_SYMBOL(pq, getlength, PQgetlength),
    SHARED_SYMBOL(pq, getvalue, PQgetvalue),
    SHARED_SYMBOL(pq, nfields, PQnfields),
    SHARED_SYMBOL(pq, ntuples, PQntuples),
    SHARED_SYMBOL(pq, prepare, PQprepare),
    SHARED_SYMBOL(pq, result_error_field, PQresultErrorField),
    SHARED_SYMBOL(pq, result_status, PQresultStatus),
    SHARED_SYMBOL(pq, set_notice_processor, PQsetNoticeProcessor),
    SHARED_SYMBOL(pq, status, PQstatus),
    SHARED_SYMBOL(pq, transaction_status, PQtransactionStatus),
};

static struct lazy_library library = LAZY_LIBRARY(LIBPQ_SONAME, symbols);

/* The type OIDs of pg_type.h (fixed since PostgreSQL 7). */
#define OID_BOOL 16
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_TEXT 25

/* ---- connections and statements ------------------------------------------------------ */

/* One server-side prepared statement of an SQL text: the types it was prepared with. */
struct variant {
    struct variant *next;
    Oid *types; /* nparams of them */
    char name[24];
};

struct pg_stmt;

/* One SQL text of a connection, by address (the callers pass string literals), with
 * its translation and the statements the server holds for it. */
struct entry {
    struct entry *next; /* in its bucket */
    const char *sql;
    char *text; /* ?N as $N */
    int nparams;
    struct variant *variants;
    struct pg_stmt *kept; /* reused between uses; a nested use gets its own */
    bool busy;
};

#define BUCKETS 256

struct pg_db {
    struct sql_db base;
    PGconn *conn;
    struct entry *buckets[BUCKETS];
    unsigned long prepared; /* names the next server-side statement */
    int64_t changes;
    bool disk_full;
    char error[384];
};

struct decoded {
    char *bytes; /* NUL-terminated */
    size_t len;
    bool done;
};

struct pg_stmt {
    struct sql_stmt base;
    struct entry *entry;
    bool kept;
    /* parameters, nparams of each */
    const char **values;
    int *lengths;
    int *formats;
    Oid *types;
    char (*ints)[24];
    /* the result, once stepped */
    bool executed;
    bool failed;
    PGresult *res;
    int row;
    int nrows;
    int nfields;
    struct decoded *cols; /* the current row's decoded bytea columns, nfields */
};

static struct pg_db *pg(struct sql_db *db) { return (struct pg_db *)db; }
static struct pg_stmt *pst(struct sql_stmt *st) { return (struct pg_stmt *)st; }

/* ---- errors --------------------------------------------------------------------------- */

/* text's first line into out, control bytes as spaces. */
static void first_line(char *out, size_t cap, const char *text)
{
    size_t n = 0;
    for (const char *p = text; *p != '\0' && *p != '\n' && n + 1 < cap; p++) {
        char c = *p;
        if ((unsigned char)c < 0x20 || c == 0x7f)
            c = ' ';
        out[n++] = c;
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

/* The one-line reason of a failed command: the primary message only (its DETAIL and
 * CONTEXT can hold the rows' values), or libpq's own first line; a connection that
 * broke says so. */
static void record_failure(struct pg_db *db, const PGresult *res)
{
    const char *state = res != NULL ? pq.result_error_field(res, PG_DIAG_SQLSTATE) : NULL;
    const char *primary = res != NULL ? pq.result_error_field(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    /* Class 53 is "insufficient resources"; of it only 53100 is a full disk. */
    db->disk_full = state != NULL && strcmp(state, "53100") == 0;
    char why[320];
    first_line(why, sizeof why, primary != NULL ? primary : pq.error_message(db->conn));
    if (pq.status(db->conn) == CONNECTION_BAD)
        snprintf(db->error, sizeof db->error, "the connection to PostgreSQL was lost (%s)",
                 why[0] != '\0' ? why : "no reason given");
    else
        snprintf(db->error, sizeof db->error, "%s", why[0] != '\0' ? why : "PostgreSQL gave no reason");
}

static void record_text(struct pg_db *db, const char *text)
{
    db->disk_full = false;
    first_line(db->error, sizeof db->error, text);
}

void sql_postgres_set_error(struct sql_db *db, const char *text) { record_text(pg(db), text); }

/* ---- the dialect ---------------------------------------------------------------------- */

static bool ident_char(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* sql with every ?N outside quotes and comments written $N, and the largest N; with
 * types (may be NULL), a parameter whose type is 0 (bound NULL or not bound) written
 * NULL instead. NULL when out of memory. */
static char *translate(const char *sql, int *nparams, const Oid *types)
{
    size_t len = strlen(sql);
    char *out = malloc(2 * len + 1); /* "NULL" for "?1" at most doubles it */
    if (out == NULL)
        return NULL;
    int most = 0;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        char c = sql[i];
        if (c == '\'' || c == '"') {
            /* A literal or a quoted name, to its closing quote (doubled quotes stay
             * inside); E'...' also escapes with backslashes. */
            bool backslash = c == '\'' && i > 0 && (sql[i - 1] == 'E' || sql[i - 1] == 'e') &&
                             (i == 1 || !ident_char(sql[i - 2]));
            out[o++] = sql[i++];
            while (i < len) {
                if (backslash && sql[i] == '\\' && i + 1 < len) {
                    out[o++] = sql[i++];
                    out[o++] = sql[i++];
                    continue;
                }
                out[o++] = sql[i];
                if (sql[i++] == c) {
                    if (i < len && sql[i] == c) {
                        out[o++] = sql[i++];
                        continue;
                    }
                    break;
                }
            }
        } else if (c == '-' && i + 1 < len && sql[i + 1] == '-') {
            while (i < len && sql[i] != '\n')
                out[o++] = sql[i++];
        } else if (c == '/' && i + 1 < len && sql[i + 1] == '*') {
            out[o++] = sql[i++];
            out[o++] = sql[i++];
            while (i < len && !(sql[i] == '*' && i + 1 < len && sql[i + 1] == '/'))
                out[o++] = sql[i++];
            for (int end = 0; end < 2 && i < len; end++)
                out[o++] = sql[i++];
        } else if (c == '?' && i + 1 < len && sql[i + 1] >= '0' && sql[i + 1] <= '9') {
            size_t at = o;
            out[o++] = '$';
            i++;
            long n = 0;
            while (i < len && sql[i] >= '0' && sql[i] <= '9') {
                if (n < 100000)
                    n = n * 10 + (sql[i] - '0');
                out[o++] = sql[i++];
            }
            if (n > most && n <= 65535)
                most = (int)n;
            if (types != NULL && n >= 1 && n <= 65535 && types[n - 1] == 0) {
                memcpy(out + at, "NULL", 4);
                o = at + 4;
            }
        } else {
            out[o++] = sql[i++];
        }
    }
    out[o] = '\0';
    *nparams = most;
    return out;
}

/* ---- statements ----------------------------------------------------------------------- */

static void clear_row(struct pg_stmt *st)
{
    for (int i = 0; st->cols != NULL && i < st->nfields; i++) {
        free(st->cols[i].bytes);
        st->cols[i] = (struct decoded){NULL, 0, false};
    }
}

static void clear_result(struct pg_stmt *st)
{
    clear_row(st);
    free(st->cols);
    st->cols = NULL;
    if (st->res != NULL)
        pq.clear(st->res);
    st->res = NULL;
    st->row = -1;
    st->nrows = 0;
    st->nfields = 0;
}

static void reset_params(struct pg_stmt *st)
{
    int n = st->entry->nparams;
    for (int i = 0; i < n; i++) {
        st->values[i] = NULL;
        st->lengths[i] = 0;
        st->formats[i] = 0;
        st->types[i] = 0;
    }
    st->executed = false;
    st->failed = false;
}

static void stmt_free(struct pg_stmt *st)
{
    if (st == NULL)
        return;
    clear_result(st);
    free(st->values);
    free(st->lengths);
    free(st->formats);
    free(st->types);
    free(st->ints);
    free(st);
}

static struct pg_stmt *stmt_new(struct pg_db *db, struct entry *e, bool kept)
{
    struct pg_stmt *st = calloc(1, sizeof *st);
    if (st == NULL)
        return NULL;
    size_t n = e->nparams > 0 ? (size_t)e->nparams : 1;
    st->base.db = &db->base;
    st->entry = e;
    st->kept = kept;
    st->row = -1;
    st->values = calloc(n, sizeof *st->values);
    st->lengths = calloc(n, sizeof *st->lengths);
    st->formats = calloc(n, sizeof *st->formats);
    st->types = calloc(n, sizeof *st->types);
    st->ints = calloc(n, sizeof *st->ints);
    if (st->values == NULL || st->lengths == NULL || st->formats == NULL || st->types == NULL ||
        st->ints == NULL) {
        stmt_free(st);
        return NULL;
    }
    return st;
}

static size_t bucket_of(const char *sql) { return ((uintptr_t)sql >> 4) % BUCKETS; }

static void entry_free(struct entry *e)
{
    for (struct variant *v = e->variants, *next; v != NULL; v = next) {
        next = v->next;
        free(v->types);
        free(v);
    }
    stmt_free(e->kept);
    free(e->text);
    free(e);
}

static struct entry *entry_for(struct pg_db *db, const char *sql)
{
    size_t b = bucket_of(sql);
    for (struct entry *e = db->buckets[b]; e != NULL; e = e->next)
        if (e->sql == sql)
            return e;
    struct entry *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    e->sql = sql;
    e->text = translate(sql, &e->nparams, NULL);
    if (e->text == NULL || (e->kept = stmt_new(db, e, true)) == NULL) {
        entry_free(e);
        return NULL;
    }
    e->next = db->buckets[b];
    db->buckets[b] = e;
    return e;
}

static int pg_prepare(struct sql_db *base, const char *sql, struct sql_stmt **out)
{
    struct pg_db *db = pg(base);
    struct entry *e = entry_for(db, sql);
    if (e == NULL) {
        record_text(db, "out of memory");
        return -1;
    }
    if (!e->busy) {
        e->busy = true;
        *out = &e->kept->base;
        return 0;
    }
    struct pg_stmt *own = stmt_new(db, e, false); /* the same SQL, in use further up */
    if (own == NULL) {
        record_text(db, "out of memory");
        return -1;
    }
    *out = &own->base;
    return 0;
}

static void pg_release(struct sql_stmt *base)
{
    struct pg_stmt *st = pst(base);
    if (!st->kept) {
        stmt_free(st);
        return;
    }
    clear_result(st);
    reset_params(st);
    st->entry->busy = false;
}

static void pg_cache_drop(struct sql_db *base)
{
    /* The server's statements go with the connection (store_close closes it next); a
     * connection kept open would only hold ones no name reaches again. */
    struct pg_db *db = pg(base);
    for (size_t b = 0; b < BUCKETS; b++) {
        for (struct entry *e = db->buckets[b], *next; e != NULL; e = next) {
            next = e->next;
            entry_free(e);
        }
        db->buckets[b] = NULL;
    }
}

/* Parameter i (from 1) of st, or NULL outside the statement's (SQLite ignores those
 * binds too: SQLITE_RANGE, which no caller reads). */
static bool param_ok(const struct pg_stmt *st, int i) { return i >= 1 && i <= st->entry->nparams; }

/* Text goes in binary format with its type said: text's binary form is its bytes, so
 * a length without a terminating NUL is sent as it is (libpq reads text-format values
 * up to their NUL). */
static void pg_bind_text(struct sql_stmt *base, int i, const char *text, size_t len)
{
    struct pg_stmt *st = pst(base);
    if (!param_ok(st, i))
        return;
    st->values[i - 1] = text;
    st->lengths[i - 1] = len > INT32_MAX ? INT32_MAX : (int)len;
    st->formats[i - 1] = 1;
    st->types[i - 1] = OID_TEXT;
}

static void pg_bind_blob(struct sql_stmt *base, int i, const void *bytes, size_t len)
{
    struct pg_stmt *st = pst(base);
    if (!param_ok(st, i))
        return;
    st->values[i - 1] = bytes;
    st->lengths[i - 1] = len > INT32_MAX ? INT32_MAX : (int)len;
    st->formats[i - 1] = 1;
    st->types[i - 1] = OID_BYTEA;
}

static void pg_bind_int64(struct sql_stmt *base, int i, int64_t value)
{
    struct pg_stmt *st = pst(base);
    if (!param_ok(st, i))
        return;
    snprintf(st->ints[i - 1], sizeof st->ints[i - 1], "%lld", (long long)value);
    st->values[i - 1] = st->ints[i - 1];
    st->lengths[i - 1] = 0;
    st->formats[i - 1] = 0;
    st->types[i - 1] = OID_INT8;
}

/* A NULL has no type (0): its statement is prepared with the literal NULL in its
 * place (variant_for says why). */
static void pg_bind_null(struct sql_stmt *base, int i)
{
    struct pg_stmt *st = pst(base);
    if (!param_ok(st, i))
        return;
    st->values[i - 1] = NULL;
    st->lengths[i - 1] = 0;
    st->formats[i - 1] = 0;
    st->types[i - 1] = 0;
}

/* The server's statement for st's SQL with st's bound types, prepared now if this
 * connection has none yet. NULL on failure (recorded).
 *
 * A parameter bound NULL is written as the literal NULL in its variant's text (and
 * declared text, unused): a NULL parameter has no type of its own, and where nothing
 * around it gives one (?1 IS NULL OR flow_id = ?1) PostgreSQL refuses the statement
 * ("could not determine data type of parameter"), which would abort the transaction
 * it runs in. The literal is valid wherever the parameter was, with the same
 * meaning. */
static struct variant *variant_for(struct pg_db *db, struct pg_stmt *st)
{
    struct entry *e = st->entry;
    int n = e->nparams;
    size_t bytes = (size_t)n * sizeof(Oid);
    for (struct variant *v = e->variants; v != NULL; v = v->next)
        if (bytes == 0 || memcmp(v->types, st->types, bytes) == 0)
            return v;
    struct variant *v = calloc(1, sizeof *v);
    Oid *declared = malloc(bytes > 0 ? bytes : 1);
    if (v == NULL || declared == NULL || (v->types = malloc(bytes > 0 ? bytes : 1)) == NULL) {
        free(declared);
        free(v);
        record_text(db, "out of memory");
        return NULL;
    }
    bool nulls = false;
    for (int i = 0; i < n; i++) {
        v->types[i] = st->types[i];
        declared[i] = st->types[i] != 0 ? st->types[i] : OID_TEXT;
        nulls = nulls || st->types[i] == 0;
    }
    int count = n;
    char *text = nulls ? translate(e->sql, &count, st->types) : e->text;
    PGresult *res = NULL;
    bool translated = text != NULL;
    if (translated) {
        snprintf(v->name, sizeof v->name, "basal_%lu", ++db->prepared);
        res = pq.prepare(db->conn, v->name, text, n, declared);
        if (text != e->text)
            free(text);
    }
    free(declared);
    if (!translated || pq.result_status(res) != PGRES_COMMAND_OK) {
        if (!translated)
            record_text(db, "out of memory");
        else
            record_failure(db, res);
        pq.clear(res);
        free(v->types);
        free(v);
        return NULL;
    }
    pq.clear(res);
    v->next = e->variants;
    e->variants = v;
    return v;
}

/* changes() counts what the last INSERT, UPDATE, DELETE or MERGE did, as SQLite's. */
static void note_changes(struct pg_db *db, PGresult *res)
{
    const char *tag = pq.cmd_status(res);
    if (tag == NULL)
        return;
    if (strncmp(tag, "INSERT ", 7) == 0 || strncmp(tag, "UPDATE ", 7) == 0 ||
        strncmp(tag, "DELETE ", 7) == 0 || strncmp(tag, "MERGE ", 6) == 0) {
        const char *n = pq.cmd_tuples(res);
        db->changes = n != NULL ? strtoll(n, NULL, 10) : 0;
    }
}

static enum sql_step pg_step(struct sql_stmt *base)
{
    struct pg_stmt *st = pst(base);
    struct pg_db *db = pg(base->db);
    if (st->failed)
        return SQL_ERROR;
    if (!st->executed) {
        st->executed = true;
        struct variant *v = variant_for(db, st);
        if (v == NULL) {
            st->failed = true;
            return SQL_ERROR;
        }
        PGresult *res = pq.exec_prepared(db->conn, v->name, st->entry->nparams, st->values,
                                         st->lengths, st->formats, 0);
        ExecStatusType status = pq.result_status(res);
        if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
            record_failure(db, res);
            pq.clear(res);
            st->failed = true;
            return SQL_ERROR;
        }
        note_changes(db, res);
        st->res = res;
        st->nrows = pq.ntuples(res);
        st->nfields = pq.nfields(res);
        st->row = -1;
        if (st->nfields > 0 && (st->cols = calloc((size_t)st->nfields, sizeof *st->cols)) == NULL) {
            record_text(db, "out of memory");
            st->failed = true;
            return SQL_ERROR;
        }
    }
    clear_row(st);
    if (st->row < st->nrows)
        st->row++;
    return st->row < st->nrows ? SQL_ROW : SQL_DONE;
}

static bool on_column(const struct pg_stmt *st, int i)
{
    return st->res != NULL && st->row >= 0 && st->row < st->nrows && i >= 0 && i < st->nfields;
}

static bool pg_column_is_null(struct sql_stmt *base, int i)
{
    struct pg_stmt *st = pst(base);
    return !on_column(st, i) || pq.getisnull(st->res, st->row, i) != 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* bytea's text form back to its bytes: hex ("\x4142", the default since PostgreSQL
 * 9.0), or escape (bytea_output = escape: \\, \ooo, the rest as it is). Into a malloc'd,
 * NUL-terminated buffer; -1 on no memory or a malformed text. */
static int decode_bytea(const char *text, size_t len, struct decoded *out)
{
    char *bytes = malloc(len + 1); /* never longer than its text */
    if (bytes == NULL)
        return -1;
    size_t n = 0;
    if (len >= 2 && text[0] == '\\' && text[1] == 'x') {
        if (len % 2 != 0) {
            free(bytes);
            return -1;
        }
        for (size_t i = 2; i + 1 < len; i += 2) {
            int hi = hex_digit(text[i]), lo = hex_digit(text[i + 1]);
            if (hi < 0 || lo < 0) {
                free(bytes);
                return -1;
            }
            bytes[n++] = (char)(hi << 4 | lo);
        }
    } else {
        for (size_t i = 0; i < len;) {
            if (text[i] != '\\') {
                bytes[n++] = text[i++];
            } else if (i + 1 < len && text[i + 1] == '\\') {
                bytes[n++] = '\\';
                i += 2;
            } else if (i + 3 < len && text[i + 1] >= '0' &&
                       text[i + 1] <= '3' && text[i + 2] >= '0' && text[i + 2] <= '7' &&
                       text[i + 3] >= '0' && text[i + 3] <= '7') {
                bytes[n++] = (char)((text[i + 1] - '0') << 6 | (text[i + 2] - '0') << 3 |
                                    (text[i + 3] - '0'));
                i += 4;
            } else {
                free(bytes);
                return -1;
            }
        }
    }
    bytes[n] = '\0';
    out->bytes = bytes;
    out->len = n;
    return 0;
}

/* Column i's bytes as the store reads them: a bytea's decoded, a boolean's as 1 or
 * 0 (SQLite's integers), anything else its text. NULL for SQL NULL or no such
 * column. */
static const char *column_bytes(struct pg_stmt *st, int i, size_t *len)
{
    *len = 0;
    if (!on_column(st, i) || pq.getisnull(st->res, st->row, i) != 0)
        return NULL;
    const char *text = pq.getvalue(st->res, st->row, i);
    size_t n = (size_t)pq.getlength(st->res, st->row, i);
    switch (pq.ftype(st->res, i)) {
    case OID_BYTEA: {
        struct decoded *d = &st->cols[i];
        if (!d->done) {
            if (decode_bytea(text, n, d) != 0) {
                record_text(pg(st->base.db), "a bytea value PostgreSQL sent could not be read");
                return NULL;
            }
            d->done = true;
        }
        *len = d->len;
        return d->bytes;
    }
    case OID_BOOL:
        *len = 1;
        return text[0] == 't' ? "1" : "0";
    default:
        *len = n;
        return text;
    }
}

static const char *pg_column_text(struct sql_stmt *base, int i)
{
    size_t len;
    return column_bytes(pst(base), i, &len);
}

static const void *pg_column_blob(struct sql_stmt *base, int i, size_t *len)
{
    return column_bytes(pst(base), i, len);
}

static int64_t pg_column_int64(struct sql_stmt *base, int i)
{
    size_t len;
    const char *text = column_bytes(pst(base), i, &len);
    return text != NULL ? strtoll(text, NULL, 10) : 0;
}

static int64_t pg_changes(struct sql_db *db) { return pg(db)->changes; }

static int pg_exec(struct sql_db *base, const char *sql)
{
    struct pg_db *db = pg(base);
    PGresult *res = pq.exec(db->conn, sql);
    ExecStatusType status = pq.result_status(res);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_EMPTY_QUERY) {
        record_failure(db, res);
        pq.clear(res);
        return -1;
    }
    note_changes(db, res);
    pq.clear(res);
    return 0;
}

static bool pg_disk_full(struct sql_db *db) { return pg(db)->disk_full; }

static const char *pg_error_text(struct sql_db *base, char *buf, size_t cap)
{
    struct pg_db *db = pg(base);
    if (db->disk_full)
        snprintf(buf, cap, "the disk is full (PostgreSQL: %s)", db->error);
    else
        snprintf(buf, cap, "%s", db->error[0] != '\0' ? db->error : "no error");
    return buf;
}

static const struct sql_backend POSTGRES_BACKEND = {
    .name = "postgresql",
    .prepare = pg_prepare,
    .release = pg_release,
    .bind_text = pg_bind_text,
    .bind_blob = pg_bind_blob,
    .bind_int64 = pg_bind_int64,
    .bind_null = pg_bind_null,
    .step = pg_step,
    .column_is_null = pg_column_is_null,
    .column_int64 = pg_column_int64,
    .column_text = pg_column_text,
    .column_blob = pg_column_blob,
    .changes = pg_changes,
    .exec = pg_exec,
    .error_text = pg_error_text,
    .disk_full = pg_disk_full,
    .cache_drop = pg_cache_drop,
};

/* ---- connecting ----------------------------------------------------------------------- */

/* Notices (and warnings) would go to stderr by default: they are dropped, since they
 * can quote the rows' values and nothing reads them. */
static void no_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

struct sql_db *sql_postgres_connect(const char *uri, char *err, size_t err_cap)
{
    char why[256];
    if (lazy_library_load(&library, why, sizeof why) != 0) {
        error_line(err, err_cap, "store: cannot connect to PostgreSQL: %s", why);
        return NULL;
    }
    /* In order: what the URI may override (its own application_name, options or
     * connect_timeout win), the URI, then what it may not (the store's text is
     * UTF-8). */
    static const char *const keys[] = {"fallback_application_name", "connect_timeout", "options",
                                       "dbname", "client_encoding", NULL};
    const char *const values[] = {"ck-basal", "10", "-c client_min_messages=warning", uri, "UTF8",
                                  NULL};
    PGconn *conn = pq.connectdb_params(keys, values, 1);
    if (conn == NULL) {
        error_line(err, err_cap, "store: cannot connect to PostgreSQL: out of memory");
        return NULL;
    }
    if (pq.status(conn) != CONNECTION_OK) {
        first_line(why, sizeof why, pq.error_message(conn));
        error_line(err, err_cap, "store: cannot connect to PostgreSQL: %s",
                   why[0] != '\0' ? why : "no reason given");
        pq.finish(conn);
        return NULL;
    }
    (void)pq.set_notice_processor(conn, no_notice, NULL);
    struct pg_db *db = calloc(1, sizeof *db);
    if (db == NULL) {
        pq.finish(conn);
        error_line(err, err_cap, "out of memory");
        return NULL;
    }
    db->base.backend = &POSTGRES_BACKEND;
    db->conn = conn;
    return &db->base;
}

void sql_postgres_close(struct sql_db *base)
{
    if (base == NULL)
        return;
    struct pg_db *db = pg(base);
    pg_cache_drop(base);
    pq.finish(db->conn);
    free(db);
}

enum sql_postgres_txn sql_postgres_txn_status(struct sql_db *db)
{
    switch (pq.transaction_status(pg(db)->conn)) {
    case PQTRANS_IDLE:
        return SQL_PG_IDLE;
    case PQTRANS_INTRANS:
        return SQL_PG_IN_TXN;
    case PQTRANS_INERROR:
        return SQL_PG_FAILED;
    default:
        return SQL_PG_UNKNOWN;
    }
}
