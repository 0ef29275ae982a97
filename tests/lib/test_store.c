#include "test_store.h"

#include "harness.h"
#include "pg_test.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOMES_MAX 256
#define URI_CAP 512

/* The database made for each data home so far (a test reopens a home many times). */
struct made {
    char home[256];
    char uri[URI_CAP];
};

static struct made g_made[HOMES_MAX];
static size_t g_count;

/* What a command gets when its home's database could not be made: no server answers
 * there, so the command fails rather than running on the other engine. */
static const char UNAVAILABLE[] = "postgresql:///unavailable?host=/nonexistent-basal-test";

/* SQLite's json_extract(doc, '$.a.b') for the tests' own queries of the store (a text
 * result: the queries compare it with text). The store's code never calls it. */
static const char JSON_EXTRACT[] =
    "CREATE FUNCTION public.json_extract(doc text, path text) RETURNS text LANGUAGE sql "
    "IMMUTABLE AS $$ SELECT doc::json #>> string_to_array(substr(path, 3), '.') $$;";

const char *test_store_uri(const char *home)
{
    const char *engine = getenv("BASAL_TEST_ENGINE");
    if (engine == NULL || strcmp(engine, "postgresql") != 0 || home == NULL)
        return NULL;
    for (size_t i = 0; i < g_count; i++)
        if (strcmp(g_made[i].home, home) == 0)
            return g_made[i].uri;
    if (g_count == HOMES_MAX || strlen(home) >= sizeof g_made[0].home) {
        check(false, "test store: a PostgreSQL database for the data home", "%s",
              "too many data homes, or a path too long");
        return UNAVAILABLE;
    }
    struct made *m = &g_made[g_count];
    char out[512];
    if (test_pg_database("test store", m->uri, sizeof m->uri) != 0)
        snprintf(m->uri, sizeof m->uri, "%s", UNAVAILABLE); /* reported once, kept */
    else if (test_pg_sql(m->uri, JSON_EXTRACT, out, sizeof out) != 0)
        check(false, "test store: json_extract for the tests' own queries", "%s", out);
    snprintf(m->home, sizeof m->home, "%s", home);
    g_count++;
    return m->uri;
}
