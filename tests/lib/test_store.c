#include "test_store.h"

#include "harness.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOMES_MAX 256
#define URI_CAP 512

struct made {
    char home[256];
    char uri[URI_CAP];
};

static struct made g_made[HOMES_MAX];
static size_t g_count;

static const char UNAVAILABLE[] = "postgresql:///unavailable?host=/nonexistent-basal-test";

/* FNV-1a of home: the database's name (PostgreSQL names hold 63 bytes, a path more). */
static uint64_t name_hash(const char *home)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)home; *p != '\0'; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h;
}

static const char *unavailable(const char *why)
{
    check(false, "test store: a PostgreSQL database for the data home", "%s", why);
    return UNAVAILABLE;
}

const char *test_store_uri(const char *home)
{
    const char *engine = getenv("BASAL_TEST_ENGINE");
    if (engine == NULL || strcmp(engine, "postgresql") != 0 || home == NULL)
        return NULL;
    for (size_t i = 0; i < g_count; i++)
        if (strcmp(g_made[i].home, home) == 0)
            return g_made[i].uri;
    const char *host = getenv("BASAL_TEST_PG_HOST");
    const char *port = getenv("BASAL_TEST_PG_PORT");
    const char *user = getenv("BASAL_TEST_PG_USER");
    if (host == NULL || port == NULL || user == NULL)
        return unavailable("BASAL_TEST_PG_HOST/_PORT/_USER unset: run under tests/run.sh, which starts "
                    "a PostgreSQL cluster");
    if (g_count == HOMES_MAX || strlen(home) >= sizeof g_made[0].home)
        return unavailable("too many data homes, or a path too long");
    char db[32], create[96];
    snprintf(db, sizeof db, "h_%016llx", (unsigned long long)name_hash(home));
    snprintf(create, sizeof create, "CREATE DATABASE %s", db);
    const char *argv[] = {"psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", port,
                          "-U", user, "-d", "postgres", "-c", create, NULL};
    struct proc_result r = proc_run(argv, NULL, 0, 60000);
    bool made = proc_exited_with(&r, 0) || strstr(r.err, "already exists") != NULL;
    char why[256];
    snprintf(why, sizeof why, "psql %s: %s %.160s", create, proc_describe(&r), r.err);
    proc_result_free(&r);
    if (!made)
        return unavailable(why);
    struct made *m = &g_made[g_count];
    snprintf(m->home, sizeof m->home, "%s", home);
    int n = snprintf(m->uri, sizeof m->uri, "postgresql://%s@/%s?host=%s&port=%s", user, db,
                     host, port);
    if (n < 0 || (size_t)n >= sizeof m->uri)
        return unavailable("the URI is too long");
    g_count++;
    return m->uri;
}
