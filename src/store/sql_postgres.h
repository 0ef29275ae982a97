/* The PostgreSQL engine of store/sql.h (store/sql_backend.h), on libpq, which is not
 * linked: it is loaded at the first connection (base/shared_library.h), so a process
 * whose store is SQLite never maps it.
 *
 * The shared dialect's ?N become $N (outside literals, quoted names and comments).
 * Each statement is prepared on the server once per connection and set of bound
 * types, at its first step: an int64 is sent as int8, text as text, bytes as bytea
 * (in binary), NULL with its type left to the server. Results come back as text;
 * a bytea column reads as its bytes, a boolean as 1 or 0. */
#ifndef BASAL_STORE_SQL_POSTGRES_H
#define BASAL_STORE_SQL_POSTGRES_H

#include <stdbool.h>
#include <stddef.h>

struct sql_db;

/* Connects to the database uri names (any libpq connection URI). The session speaks
 * UTF-8, is named ck-basal unless the URI names it, and sends no notice anywhere.
 * Returns the connection, or NULL with "store: cannot connect to PostgreSQL: <libpq's
 * first line>" (or why libpq could not be loaded) in err. */
struct sql_db *sql_postgres_connect(const char *uri, char *err, size_t err_cap);

/* Closes the connection (an open transaction rolls back) and frees it. NULL is fine. */
void sql_postgres_close(struct sql_db *db);

/* Where the connection stands between statements. */
enum sql_postgres_txn {
    SQL_PG_IDLE,    /* no transaction block */
    SQL_PG_IN_TXN,  /* inside one */
    SQL_PG_FAILED,  /* inside one that a failed statement aborted: it can only roll back */
    SQL_PG_UNKNOWN, /* the connection is lost or busy */
};
enum sql_postgres_txn sql_postgres_txn_status(struct sql_db *db);

/* Sets the connection's last error (sql_error_text) to text: for failures the store
 * finds itself, such as a COMMIT of a transaction PostgreSQL already aborted. */
void sql_postgres_set_error(struct sql_db *db, const char *text);

#endif
