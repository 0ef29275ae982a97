/* The store's SQLite connection, for the sources of src/store/ only: the modules that
 * own the store's tables reach it here. No type of SQLite crosses store/'s public
 * headers, so another backend (issue 26) can stand behind the same operations;
 * scripts/check-includes.py refuses this header (and store/sql.h) outside src/store/. */
#ifndef BASAL_STORE_STORE_INTERNAL_H
#define BASAL_STORE_STORE_INTERNAL_H

struct store;
typedef struct sqlite3 sqlite3;

/* The connection. Do not close it. */
sqlite3 *store_db(struct store *s);

#endif
