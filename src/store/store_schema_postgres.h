/* The store's schema on PostgreSQL: the same tables, columns, keys and checks as the
 * SQLite migrations of store/store_schema.h, in PostgreSQL's types (BIGINT for
 * INTEGER, BYTEA for BLOB, identity columns for AUTOINCREMENT, regular expressions for
 * GLOB, a jsonb cast for json_valid). A new database gets the whole schema at
 * STORE_SCHEMA_VERSION at once; later versions add one migration each, as on SQLite.
 * The version in force is the one row of basal_schema(version). */
#ifndef BASAL_STORE_STORE_SCHEMA_POSTGRES_H
#define BASAL_STORE_STORE_SCHEMA_POSTGRES_H

/* The version the whole schema of store_schema_postgres_create() stands at. */
#define STORE_SCHEMA_POSTGRES_BASE 7

/* SQL creating every table, index and function of the schema at
 * STORE_SCHEMA_POSTGRES_BASE, and basal_schema with that version in its one row. */
const char *store_schema_postgres_create(void);

/* The SQL taking a database at version-1 to version (STORE_SCHEMA_POSTGRES_BASE <
 * version <= STORE_SCHEMA_VERSION), or NULL. */
const char *store_schema_postgres_migration(int version);

#endif
