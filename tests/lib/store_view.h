/* A test's look into a data home's store (basal.db), outside the code under test:
 * one value by SQL, read-only unless the test means to change the store. In the pg/
 * variant (test_store.h) store_number, store_text and store_exec read the data home's
 * PostgreSQL database instead (psql); the rest are SQLite's only. */
#ifndef BASAL_TESTS_STORE_VIEW_H
#define BASAL_TESTS_STORE_VIEW_H

#include <stdbool.h>
#include <stddef.h>

/* The first column of the first row as a number; -1 if the store, the statement or
 * the row is not there. Read-only, waiting up to 10 s for a writer's lock. */
long long store_number(const char *db, const char *sql);
/* The same as text (malloc'd; free it), or NULL. */
char *store_text(const char *db, const char *sql);
/* Runs sql (any statements) read-write, as a test that alters the store on purpose
 * does; true if all of it ran. */
bool store_exec(const char *db, const char *sql);
/* store_exec, then how many rows the statements changed (-1 if any failed): a test
 * that alters one row checks it found that row. */
long long store_exec_changes(const char *db, const char *sql);

/* Makes a new store file db (0600; it must not exist) holding schema_sql, then
 * rows_sql, in one transaction: a store as an older build left it, for a migration
 * test. True if all of it ran. */
bool store_create(const char *db, const char *schema_sql, const char *rows_sql);

/* Every row of each of count queries, every column in hex ("|" after each column,
 * "\n" after each row, "--\n" after each query), as one malloc'd string: a test
 * compares two dumps to prove a refused command changed nothing stored. */
char *store_dump(const char *db, const char *const *queries, size_t count);

#endif
