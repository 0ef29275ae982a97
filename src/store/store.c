/* The store's engine-neutral half: which engine store_open uses (store_use), and the
 * transactions and counters every engine shares through store/store_engine.h. */
#include "store/store.h"

#include "base/error_line.h"
#include "store/sql.h"
#include "store/store_engine.h"
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The chosen PostgreSQL URI, or NULL for SQLite. Set before any thread opens the store
 * (a command's start), read after. */
static char *g_uri;

/* A password in the URI's user info ("user:pw@") or in a "password" parameter. */
static bool uri_has_password(const char *uri)
{
    const char *rest = strstr(uri, "://");
    if (rest == NULL)
        return false;
    rest += 3;
    size_t authority = strcspn(rest, "/?");
    const char *at = memchr(rest, '@', authority);
    if (at != NULL && memchr(rest, ':', (size_t)(at - rest)) != NULL)
        return true;
    const char *query = strchr(rest, '?');
    for (const char *p = query; p != NULL; p = strchr(p + 1, '&'))
        if (strncmp(p + 1, "password=", 9) == 0)
            return true;
    return false;
}

int store_use(const char *uri, char *err, size_t err_cap)
{
    if (uri == NULL || uri[0] == '\0') {
        free(g_uri);
        g_uri = NULL;
        return 0;
    }
    if (strncmp(uri, "postgresql://", 13) != 0 && strncmp(uri, "postgres://", 11) != 0)
        return error_line(err, err_cap, "store: '%.*s' is not a PostgreSQL connection URI "
                          "(postgresql://...); without --store the store is SQLite in the data home",
                          64, uri);
    for (const char *p = uri; *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return error_line(err, err_cap, "store: the URI holds a control character");
    if (uri_has_password(uri))
        return error_line(err, err_cap, "store: the URI carries a password: refused (it would "
                          "show in ps and logs); put it in a libpq service file or PGPASSFILE");
    char *copy = strdup(uri);
    if (copy == NULL)
        return error_line(err, err_cap, "out of memory");
    free(g_uri);
    g_uri = copy;
    return 0;
}

const char *store_location(void) { return g_uri; }

int store_open(const char *home, struct store **out, char *err, size_t err_cap)
{
    const struct store_engine *engine = g_uri != NULL ? &STORE_POSTGRES : &STORE_SQLITE;
    char *home_copy = strdup(home);
    if (home_copy == NULL)
        return error_line(err, err_cap, "out of memory");
    if (engine->open(home, g_uri, out, err, err_cap) != 0) {
        free(home_copy);
        return -1;
    }
    (*out)->home = home_copy;
    return 0;
}

void store_close(struct store *s)
{
    if (s != NULL) {
        free(s->home);
        s->home = NULL;
        s->engine->close(s);
    }
}

bool store_idle(struct store *s) { return s->engine->idle(s); }
int store_schema_version(const struct store *s) { return s->version; }
int store_schema_version_at_open(const struct store *s) { return s->version_at_open; }
bool store_created(const struct store *s) { return s->created; }
const char *store_path(const struct store *s) { return s->path; }
const char *store_home(const struct store *s) { return s->home; }
struct sql_db *store_db(struct store *s) { return s->db; }
const char *store_errmsg(struct store *s) { return s->engine->errmsg(s); }

int store_settings_get(struct store *s, struct store_settings *out, char *err, size_t err_cap)
{
    return s->engine->settings_get(s, out, err, err_cap);
}

int store_benchmark_sync_off(struct store *s, bool off)
{
    return s->engine->benchmark_sync_off(s, off);
}

int store_group_commit(struct store *s, char *err, size_t err_cap)
{
    return s->engine->group_commit(s, err, err_cap);
}

int store_hold_driver(struct store *s, char *err, size_t err_cap)
{
    return s->engine->hold_driver != NULL ? s->engine->hold_driver(s, err, err_cap) : 0;
}

int store_begin(struct store *s) { return s->engine->begin(s, STORE_TXN_WRITE); }
int store_commit(struct store *s) { return s->engine->commit(s); }
int store_rollback(struct store *s) { return s->engine->rollback(s); }

int store_begin_txn(struct store *s, char *err, size_t err_cap)
{
    if (s->engine->begin(s, STORE_TXN_WRITE) != 0)
        return error_line(err, err_cap, "store: cannot begin a transaction: %s", store_errmsg(s));
    return 0;
}

int store_begin_txn_unsynced(struct store *s, char *err, size_t err_cap)
{
    if (s->engine->begin(s, STORE_TXN_WRITE_UNSYNCED) != 0)
        return error_line(err, err_cap, "store: cannot begin a transaction: %s", store_errmsg(s));
    return 0;
}

int store_end_txn(struct store *s, int rc, char *err, size_t err_cap)
{
    if (rc != 0) {
        store_rollback(s);
        return -1;
    }
    if (store_commit(s) != 0) {
        error_line(err, err_cap, "store: cannot commit: %s", store_errmsg(s));
        store_rollback(s);
        return -1;
    }
    return 0;
}

int store_begin_read(struct store *s, char *err, size_t err_cap)
{
    if (s->engine->begin(s, STORE_TXN_READ) != 0)
        return error_line(err, err_cap, "store: %s", store_errmsg(s));
    return 0;
}

void store_end_read(struct store *s) { (void)s->engine->rollback(s); }

int64_t store_now_ms(void) { return sql_now_ms(); }

int store_health_add(struct store *s, const char *name, long long delta)
{
    bool own = store_idle(s);
    if (own && store_begin(s) != 0)
        return -1;
    struct sql_stmt *st = NULL;
    int rc = -1;
    if (sql_prepare(s->db,
                    "INSERT INTO health_counters(name, value) VALUES (?1, ?2) "
                    "ON CONFLICT(name) DO UPDATE SET value = health_counters.value + excluded.value",
                    &st, NULL, 0) == 0) {
        sql_bind_text(st, 1, name);
        sql_bind_int64(st, 2, delta);
        rc = sql_step(st) == SQL_DONE ? 0 : -1;
        sql_release(st);
    }
    if (own) {
        if (rc == 0)
            rc = store_commit(s);
        if (rc != 0)
            store_rollback(s);
    }
    return rc;
}

int store_health_get(struct store *s, const char *name, long long *value)
{
    struct sql_stmt *st = NULL;
    *value = 0;
    if (sql_prepare(s->db, "SELECT value FROM health_counters WHERE name = ?1", &st, NULL, 0) != 0)
        return -1;
    sql_bind_text(st, 1, name);
    enum sql_step step = sql_step(st);
    if (step == SQL_ROW)
        *value = sql_column_int64(st, 0);
    sql_release(st);
    return step == SQL_ROW || step == SQL_DONE ? 0 : -1;
}
