/* The store's schema as a list of migrations. Migration i (1-based) takes a store at
 * schema version i-1 to version i; store_open() applies each missing one in its own
 * transaction together with PRAGMA user_version = i. Never edit a released migration:
 * add the next one. */
#ifndef BASAL_STORE_STORE_SCHEMA_H
#define BASAL_STORE_STORE_SCHEMA_H

/* The newest schema version this build knows. */
#define STORE_SCHEMA_VERSION 7

/* The SQL of the migration to version (1..STORE_SCHEMA_VERSION), or NULL. */
const char *store_schema_migration(int version);

#endif
