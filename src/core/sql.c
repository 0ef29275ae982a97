#include "core/sql.h"

#include "core/error_line.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int sql_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *err, size_t err_cap)
{
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK) {
        *st = NULL;
        return sql_fail(db, err, err_cap);
    }
    return 0;
}

int sql_fail(sqlite3 *db, char *err, size_t err_cap)
{
    return error_line(err, err_cap, "store: %s", sqlite3_errmsg(db));
}

int sql_run(sqlite3 *db, sqlite3_stmt *st, char *err, size_t err_cap)
{
    int rc = sqlite3_step(st);
    int ret = rc == SQLITE_DONE ? 0 : sql_fail(db, err, err_cap);
    sqlite3_finalize(st);
    return ret;
}

int sql_column_dup(sqlite3_stmt *st, int i, char **out, size_t *len)
{
    *out = NULL;
    if (len != NULL)
        *len = 0;
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return 0;
    const void *bytes = sqlite3_column_blob(st, i);
    size_t n = (size_t)sqlite3_column_bytes(st, i);
    char *copy = malloc(n + 1);
    if (copy == NULL)
        return -1;
    if (n > 0)
        memcpy(copy, bytes, n);
    copy[n] = '\0';
    *out = copy;
    if (len != NULL)
        *len = n;
    return 0;
}

int64_t sql_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
