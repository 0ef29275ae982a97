/* The types store/sql.h and an engine's table (store/sql_backend.h) share. */
#ifndef BASAL_STORE_SQL_TYPES_H
#define BASAL_STORE_SQL_TYPES_H

struct sql_db;   /* one connection */
struct sql_stmt; /* one prepared statement of a connection */

enum sql_step { SQL_ROW, SQL_DONE, SQL_ERROR };

#endif
