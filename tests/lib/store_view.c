#include "store_view.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define STORE_VIEW_BUSY_MS 10000

/* The first row of sql on a read-only connection, or NULL (then *db_out is closed). */
static sqlite3_stmt *first_row(const char *db, const char *sql, sqlite3 **db_out)
{
    sqlite3_stmt *st = NULL;
    *db_out = NULL;
    if (sqlite3_open_v2(db, db_out, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(*db_out, STORE_VIEW_BUSY_MS);
        if (sqlite3_prepare_v2(*db_out, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            return st;
    }
    sqlite3_finalize(st);
    sqlite3_close(*db_out);
    *db_out = NULL;
    return NULL;
}

long long store_number(const char *db, const char *sql)
{
    sqlite3 *h;
    sqlite3_stmt *st = first_row(db, sql, &h);
    long long v = st != NULL ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

char *store_text(const char *db, const char *sql)
{
    sqlite3 *h;
    sqlite3_stmt *st = first_row(db, sql, &h);
    const unsigned char *text = st != NULL ? sqlite3_column_text(st, 0) : NULL;
    char *v = text != NULL ? strdup((const char *)text) : NULL;
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

bool store_exec(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    bool good = sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK;
    if (good) {
        sqlite3_busy_timeout(h, STORE_VIEW_BUSY_MS);
        good = sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK;
    }
    sqlite3_close(h);
    return good;
}
