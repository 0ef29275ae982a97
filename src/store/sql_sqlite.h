/* The SQLite engine of store/sql.h (store/sql_backend.h): a connection opened by
 * store/store_sqlite.c, adopted so the store's modules reach it through sql.h. */
#ifndef BASAL_STORE_SQL_SQLITE_H
#define BASAL_STORE_SQL_SQLITE_H

#include <sqlite3.h>

struct sql_db;

/* A struct sql_db for db (which stays the caller's to close, after
 * sql_sqlite_release), or NULL when out of memory. */
struct sql_db *sql_sqlite_adopt(sqlite3 *db);

/* Drops the statements kept for it and frees the wrapper (not db). NULL is fine. */
void sql_sqlite_release(struct sql_db *db);

/* The SQLite connection under db. */
sqlite3 *sql_sqlite_handle(struct sql_db *db);

#endif
