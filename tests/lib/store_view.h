/* A test's look into a data home's store (basal.db), outside the code under test:
 * one value by SQL, read-only unless the test means to change the store. */
#ifndef BASAL_TESTS_STORE_VIEW_H
#define BASAL_TESTS_STORE_VIEW_H

#include <stdbool.h>

/* The first column of the first row as a number; -1 if the store, the statement or
 * the row is not there. Read-only, waiting up to 10 s for a writer's lock. */
long long store_number(const char *db, const char *sql);
/* The same as text (malloc'd; free it), or NULL. */
char *store_text(const char *db, const char *sql);
/* Runs sql (any statements) read-write, as a test that alters the store on purpose
 * does; true if all of it ran. */
bool store_exec(const char *db, const char *sql);

#endif
