/* The PostgreSQL schema (store/store_schema_postgres.h) against the SQLite one `setup`
 * makes: store_schema_postgres_create() applies to a fresh database; every table of the
 * SQLite store at its version is there with the same columns in the same order, the
 * same NOT NULL and the translated type, and nothing more (basal_schema aside); the
 * same indexes (partial where SQLite's are); the audit log stays append-only; and a
 * few CHECK guards refuse on PostgreSQL exactly what they refuse on SQLite and accept
 * the valid value, each probe run on both stores. Also proves tests/lib/pg_test.h:
 * test_pg_database gives two distinct empty databases. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/pg_test.h"
#include "lib/store_view.h"
#include "store/store_schema.h"
#include "store/store_schema_postgres.h"

#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define URI_MAX 1024
#define OUT_MAX 65536

static char g_uri[URI_MAX];
static char g_db[PATH_MAX];

/* Appends text to buf (cap), cut at the end. */
static void append(char *buf, size_t cap, const char *text)
{
    size_t n = strlen(buf);
    if (n + 1 < cap)
        snprintf(buf + n, cap - n, "%s", text);
}

/* The rows of sql on the SQLite store, first column of each, one a line. */
static void sqlite_lines(const char *sql, char *out, size_t cap)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    out[0] = '\0';
    if (sqlite3_open_v2(g_db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const unsigned char *t = sqlite3_column_text(st, 0);
            if (out[0] != '\0')
                append(out, cap, "\n");
            append(out, cap, t != NULL ? (const char *)t : "");
        }
    } else {
        sfmt(out, cap, "(sqlite: %s)", h != NULL ? sqlite3_errmsg(h) : "no store");
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* PostgreSQL's name of SQLite's declared type (STRICT: exactly these three). */
static const char *pg_type_of(const char *sqlite_type)
{
    if (strcmp(sqlite_type, "INTEGER") == 0)
        return "bigint";
    if (strcmp(sqlite_type, "TEXT") == 0)
        return "text";
    if (strcmp(sqlite_type, "BLOB") == 0)
        return "bytea";
    return sqlite_type;
}

/* "name|pg type|notnull" per column of table in the SQLite store, in order. A primary
 * key column counts as NOT NULL: a STRICT table's key is never NULL (SQLite's
 * table_info shows only the declared NOT NULL), and PostgreSQL's always is. */
static void sqlite_columns(const char *table, char *out, size_t cap)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    out[0] = '\0';
    if (sqlite3_open_v2(g_db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1)",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            char line[256];
            const char *name = (const char *)sqlite3_column_text(st, 0);
            const char *type = (const char *)sqlite3_column_text(st, 1);
            bool notnull = sqlite3_column_int(st, 2) != 0 || sqlite3_column_int(st, 3) > 0;
            sfmt(line, sizeof line, "%s%s|%s|%d", out[0] != '\0' ? "\n" : "",
                 name != NULL ? name : "?", pg_type_of(type != NULL ? type : "?"), notnull);
            append(out, cap, line);
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* "name|partial|col,col" per index of the SQLite store that SQL made (not a key's). */
static void sqlite_indexes(char *out, size_t cap)
{
    char names[4096];
    out[0] = '\0';
    sqlite_lines("SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL"
                 " ORDER BY name",
                 names, sizeof names);
    for (char *name = strtok(names, "\n"); name != NULL; name = strtok(NULL, "\n")) {
        char sql[512], cols[1024], partial[16], line[1200];
        sfmt(sql, sizeof sql,
             "SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_index_info('%s')"
             " ORDER BY seqno)",
             name);
        sqlite_lines(sql, cols, sizeof cols);
        sfmt(sql, sizeof sql,
             "SELECT partial FROM pragma_index_list((SELECT tbl_name FROM sqlite_schema"
             " WHERE name = '%s')) WHERE name = '%s'",
             name, name);
        sqlite_lines(sql, partial, sizeof partial);
        sfmt(line, sizeof line, "%s%s|%s|%s", out[0] != '\0' ? "\n" : "", name, partial, cols);
        append(out, cap, line);
    }
}

/* The same for the PostgreSQL database: indexes no constraint owns. */
static const char PG_INDEXES[] =
    "SELECT c.relname || '|' || (i.indpred IS NOT NULL)::int || '|' ||"
    "  (SELECT string_agg(a.attname, ',' ORDER BY k.ord)"
    "     FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)"
    "     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum)"
    " FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
    " JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = 'public'"
    "   AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)"
    " ORDER BY c.relname COLLATE \"C\";";

static const char PG_TABLE_COUNT[] =
    "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = 'public';";

/* ---- test_pg_database, and the schema applied ---------------------------------------- */

static bool databases_and_apply(void)
{
    char other[URI_MAX], out[OUT_MAX], out2[OUT_MAX];
    if (test_pg_database("schema_postgres", g_uri, sizeof g_uri) != 0 ||
        test_pg_database("schema_postgres", other, sizeof other) != 0)
        return false;
    check(strcmp(g_uri, other) != 0, "schema postgres: test_pg_database twice gives two URIs",
          "both %s", g_uri);
    int a = test_pg_sql(g_uri, PG_TABLE_COUNT, out, sizeof out);
    int b = test_pg_sql(other, PG_TABLE_COUNT, out2, sizeof out2);
    check(a == 0 && b == 0 && strcmp(out, "0") == 0 && strcmp(out2, "0") == 0,
          "schema postgres: both fresh databases are empty", "%s / %s", out, out2);

    int rc = test_pg_sql(g_uri, store_schema_postgres_create(), out, sizeof out);
    if (!check(rc == 0, "schema postgres: store_schema_postgres_create() applies to a fresh database",
               "%s", out))
        return false;
    rc = test_pg_sql(other, PG_TABLE_COUNT, out2, sizeof out2);
    check(rc == 0 && strcmp(out2, "0") == 0,
          "schema postgres: the other database stays empty (the two are distinct)", "%s", out2);
    rc = test_pg_sql(g_uri, "SELECT version FROM basal_schema;", out, sizeof out);
    char want[32];
    sfmt(want, sizeof want, "%d", STORE_SCHEMA_VERSION);
    check(rc == 0 && strcmp(out, want) == 0,
          "schema postgres: basal_schema holds one row, the SQLite schema's version", "got '%s', want %s",
          out, want);
    long long sqlite_version = store_number(g_db, "PRAGMA user_version");
    check_int_eq(sqlite_version, STORE_SCHEMA_VERSION,
                 "schema postgres: the SQLite store compared with is at that version");
    rc = test_pg_sql(g_uri, store_schema_postgres_create(), out, sizeof out);
    check(rc != 0 && strstr(out, "already exists") != NULL,
          "schema postgres: applied again it fails as a whole (every object exists)", "%s", out);
    return true;
}

/* ---- the shape: tables, columns, indexes ------------------------------------------- */

static void compare_shape(void)
{
    char sq_tables[4096], pg_tables[4096];
    sqlite_lines("SELECT name FROM sqlite_schema WHERE type = 'table'"
                 " AND name NOT LIKE 'sqlite_%' ORDER BY name",
                 sq_tables, sizeof sq_tables);
    int rc = test_pg_sql(g_uri,
                         "SELECT table_name FROM information_schema.tables"
                         " WHERE table_schema = 'public' AND table_name <> 'basal_schema'"
                         " ORDER BY table_name COLLATE \"C\";",
                         pg_tables, sizeof pg_tables);
    check(rc == 0 && sq_tables[0] != '\0' && strcmp(sq_tables, pg_tables) == 0,
          "schema postgres: the same tables as the SQLite store (none more but basal_schema)",
          "sqlite:\n%s\npostgres:\n%s", sq_tables, pg_tables);

    char tables[4096];
    snprintf(tables, sizeof tables, "%s", sq_tables);
    for (char *t = strtok(tables, "\n"); t != NULL; t = strtok(NULL, "\n")) {
        char sq[8192], pg[8192], sql[512], name[160];
        sqlite_columns(t, sq, sizeof sq);
        sfmt(sql, sizeof sql,
             "SELECT column_name || '|' || data_type || '|' ||"
             " CASE is_nullable WHEN 'NO' THEN 1 ELSE 0 END"
             " FROM information_schema.columns WHERE table_schema = 'public'"
             " AND table_name = '%s' ORDER BY ordinal_position;",
             t);
        rc = test_pg_sql(g_uri, sql, pg, sizeof pg);
        sfmt(name, sizeof name,
             "schema postgres: %s: the same columns in the same order, type and NOT NULL", t);
        check(rc == 0 && sq[0] != '\0' && strcmp(sq, pg) == 0, name, "sqlite:\n%s\npostgres:\n%s",
              sq, pg);
    }

    char sq_idx[8192], pg_idx[8192];
    sqlite_indexes(sq_idx, sizeof sq_idx);
    rc = test_pg_sql(g_uri, PG_INDEXES, pg_idx, sizeof pg_idx);
    check(rc == 0 && sq_idx[0] != '\0' && strcmp(sq_idx, pg_idx) == 0,
          "schema postgres: the same indexes on the same columns, partial where SQLite's are",
          "sqlite:\n%s\npostgres:\n%s", sq_idx, pg_idx);
}

/* ---- the guards, each probe on both stores ----------------------------------------- */

#define H16 "0123456789abcdef"
#define H64 H16 H16 H16 H16
#define H63 H16 H16 H16 "0123456789abcde"

/* Rows the probes lean on (a flow, a version, a run, a journal row), the same on both
 * stores but for the byte literals. */
static const char SQLITE_ROWS[] =
    "INSERT INTO flows (id, created_at) VALUES ('f1', 1);"
    "INSERT INTO flow_versions VALUES ('f1', 1, X'73', X'6d', '" H64 "', 'approved', 1);"
    "INSERT INTO runs (flow_id, version, trigger_id, created_at, updated_at)"
    "  VALUES ('f1', 1, 't0', 1, 1);";
static const char PG_ROWS[] =
    "INSERT INTO flows (id, created_at) VALUES ('f1', 1);"
    "INSERT INTO flow_versions VALUES ('f1', 1, '\\x73', '\\x6d', '" H64 "', 'approved', 1);"
    "INSERT INTO runs (flow_id, version, trigger_id, created_at, updated_at)"
    "  VALUES ('f1', 1, 't0', 1, 1);";

struct probe {
    const char *name;   /* the guard and the value */
    bool accepted;      /* what both stores must do */
    const char *sqlite; /* the statement on SQLite */
    const char *pg;     /* on PostgreSQL; NULL: the same text */
};

#define FV_SQLITE(hash) "INSERT INTO flow_versions VALUES ('f1', 2, X'73', X'6d', '" hash "', 'pending', 1)"
#define FV_PG(hash) "INSERT INTO flow_versions VALUES ('f1', 2, '\\x73', '\\x6d', '" hash "', 'pending', 1)"
#define RUN(trigger, state)                                                                    \
    "INSERT INTO runs (flow_id, version, trigger_id, trigger, state, created_at, updated_at)" \
    " VALUES ('f1', 1, 't1', '" trigger "', '" state "', 1, 1)"
#define KV_KEY_SQLITE(n) "INSERT INTO kv VALUES ('f1', replace(hex(zeroblob(" #n ")), '00', 'é'), '1')"
#define KV_KEY_PG(n) "INSERT INTO kv VALUES ('f1', repeat('é', " #n "), '1')"

static const struct probe PROBES[] = {
    {"flow_versions.code_hash [guard code-hash-hex64]: 63 hex characters refused", false,
     FV_SQLITE(H63), FV_PG(H63)},
    {"flow_versions.code_hash [guard code-hash-hex64]: an uppercase hex digit refused", false,
     FV_SQLITE("A" H63), FV_PG("A" H63)},
    {"flow_versions.code_hash [guard code-hash-hex64]: 64 lowercase hex accepted", true,
     FV_SQLITE(H64), FV_PG(H64)},
    {"flows.id [guard flow-id-charset]: an uppercase letter refused", false,
     "INSERT INTO flows (id, created_at) VALUES ('Flow', 1)", NULL},
    {"flows.id [guard flow-id-charset]: a space refused", false,
     "INSERT INTO flows (id, created_at) VALUES ('a b', 1)", NULL},
    {"flows.id [guard flow-id-charset]: lowercase, digits, _ and - accepted", true,
     "INSERT INTO flows (id, created_at) VALUES ('flow-a_1', 1)", NULL},
    {"runs.state [guard run-state-enum]: 'bogus' refused", false, RUN("{}", "bogus"), NULL},
    {"runs.state [guard run-state-enum]: 'running' accepted", true, RUN("{}", "running"), NULL},
    {"runs.trigger [guard trigger-json-valid]: invalid JSON refused", false,
     RUN("{\"a\":", "pending"), NULL},
    {"runs.trigger [guard trigger-json-valid]: a JSON object accepted", true,
     RUN("{\"a\": [1, null]}", "pending"), NULL},
    {"kv.value [guard kv-value-json-valid]: a string escaping NUL (\\u0000 in JSON) accepted: json, not jsonb", true,
     "INSERT INTO kv VALUES ('f1', 'k', '\"\\u0000\"')", NULL},
    {"kv.key [guard kv-key-bytes]: 129 two-byte characters (258 bytes) refused", false,
     KV_KEY_SQLITE(129), KV_KEY_PG(129)},
    {"kv.key [guard kv-key-bytes]: 128 two-byte characters (256 bytes) accepted", true,
     KV_KEY_SQLITE(128), KV_KEY_PG(128)},
    {"journal [guard settled-iff-settlement]: settled without a settlement refused", false,
     "INSERT INTO journal (run_id, position, kind, args, args_digest, idempotency_key, class,"
     " state, created_at) VALUES (1, 0, 'k', X'00', '" H64 "', 'i', 'query', 'settled', 1)",
     "INSERT INTO journal (run_id, position, kind, args, args_digest, idempotency_key, class,"
     " state, created_at) VALUES (1, 0, 'k', '\\x00', '" H64 "', 'i', 'query', 'settled', 1)"},
};

static void probe_guards(void)
{
    char out[OUT_MAX], name[300];
    int rc = test_pg_sql(g_uri, PG_ROWS, out, sizeof out);
    bool sq_rows = store_exec(g_db, SQLITE_ROWS);
    if (!check(rc == 0 && sq_rows, "schema postgres: the probes' rows insert on both stores",
               "postgres: %s; sqlite: %s", rc == 0 ? "ok" : out, sq_rows ? "ok" : "failed"))
        return;
    for (size_t i = 0; i < sizeof PROBES / sizeof PROBES[0]; i++) {
        const struct probe *p = &PROBES[i];
        char sq_sql[2048], pg_sql[2048];
        /* Each probe alone, its change rolled back: probes do not see each other. */
        sfmt(sq_sql, sizeof sq_sql, "BEGIN; %s; ROLLBACK;", p->sqlite);
        sfmt(pg_sql, sizeof pg_sql, "BEGIN; %s; ROLLBACK;", p->pg != NULL ? p->pg : p->sqlite);
        bool sq_ok = store_exec(g_db, sq_sql);
        bool pg_ok = test_pg_sql(g_uri, pg_sql, out, sizeof out) == 0;
        /* A refusal must be the CHECK's, not any error. */
        bool pg_right = p->accepted ? pg_ok : !pg_ok && strstr(out, "violates check constraint") != NULL;
        sfmt(name, sizeof name, "schema postgres: %s on both stores", p->name);
        check(sq_ok == p->accepted && pg_right, name, "sqlite %s, postgres %s (%s)",
              sq_ok ? "accepted" : "refused", pg_ok ? "accepted" : "refused", pg_ok ? "" : out);
    }
}

/* The audit log: UPDATE, DELETE and TRUNCATE each refused by its trigger. */
static void audit_append_only(void)
{
    static const char *const WRITES[] = {"UPDATE audit SET at = 2", "DELETE FROM audit",
                                         "TRUNCATE audit"};
    char out[OUT_MAX], sql[256], name[200];
    int rc = test_pg_sql(g_uri,
                         "INSERT INTO audit (at, kind, decision) VALUES (1, 'k', 'allowed');",
                         out, sizeof out);
    if (!check(rc == 0, "schema postgres: an audit row inserts", "%s", out))
        return;
    for (size_t i = 0; i < sizeof WRITES / sizeof WRITES[0]; i++) {
        sfmt(sql, sizeof sql, "%s;", WRITES[i]);
        rc = test_pg_sql(g_uri, sql, out, sizeof out);
        sfmt(name, sizeof name, "schema postgres: audit append-only [guard audit-append-only]: %s refused",
             WRITES[i]);
        check(rc != 0 && strstr(out, "audit is append-only") != NULL, name, "%s", out);
    }
    rc = test_pg_sql(g_uri, "SELECT count(*) FROM audit;", out, sizeof out);
    check(rc == 0 && strcmp(out, "1") == 0, "schema postgres: the audit row is still there",
          "%s", out);
}

int main(void)
{
    const char *root = harness_tmpdir("schema-postgres");
    if (root == NULL)
        return harness_finish();
    char home[PATH_MAX], why[1024];
    sfmt(home, sizeof home, "%s/home", root);
    sfmt(g_db, sizeof g_db, "%s/basal.db", home);
    if (check(cli_home_setup(home, NULL, why, sizeof why),
              "schema postgres: setup makes a SQLite store to compare with", "%s", why) &&
        databases_and_apply()) {
        compare_shape();
        audit_append_only();
        probe_guards();
    }
    harness_remove_tree(root);
    return harness_finish();
}
