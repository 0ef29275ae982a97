/* Placeholder until the PostgreSQL engine lands (issue 26): refuses to open. */
#include "store/store_engine.h"

#include "base/error_line.h"

static int pg_open(const char *home, const char *uri, struct store **out, char *err,
                   size_t err_cap)
{
    (void)home;
    (void)uri;
    *out = NULL;
    return error_line(err, err_cap, "store: this build has no PostgreSQL engine");
}

const struct store_engine STORE_POSTGRES = {.name = "postgresql", .open = pg_open};
