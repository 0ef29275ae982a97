/* The store's connection, for the sources of src/store/ only: the modules that
 * own the store's tables reach it here. No type of an engine crosses store/'s public
 * headers, so another backend (issue 26) can stand behind the same operations;
 * scripts/check-includes.py refuses this header (and store/sql.h) outside src/store/. */
#ifndef BASAL_STORE_STORE_INTERNAL_H
#define BASAL_STORE_STORE_INTERNAL_H

struct store;
struct sql_db;

/* The connection (store/sql.h). Do not close it. */
struct sql_db *store_db(struct store *s);

#endif
