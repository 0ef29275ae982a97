/* The parent's table of host-call kinds (flows/host_kinds.h) against the worker's own
 * list of the script's host calls (worker/host_apis.h, linked as the worker links it):
 * every kind a worker can send has exactly one row with the same sync flag, every
 * row is a kind a worker sends, and the activation driver's sync check
 * (host_kind_is_sync, below the table's layer) agrees with the rows. A kind added to
 * one list and not the other turns this red. */
#include "flows/host_kinds.h"
#include "host/host.h"
#include "lib/harness.h"
#include "worker/host_apis.h"

#include <stdio.h>
#include <string.h>

static const struct host_api *worker_api(const char *kind)
{
    for (unsigned i = 0; i < HOST_API_COUNT; i++)
        if (strcmp(HOST_APIS[i].kind, kind) == 0)
            return &HOST_APIS[i];
    return NULL;
}

static void test_worker_kinds_have_rows(void)
{
    unsigned missing = 0, sync_differs = 0;
    char first[128] = "";
    for (unsigned i = 0; i < HOST_API_COUNT; i++) {
        const struct host_api *api = &HOST_APIS[i];
        const struct host_kind *row = host_kind_find(api->kind);
        if (row == NULL || row->sync != api->sync) {
            missing += row == NULL;
            sync_differs += row != NULL;
            if (first[0] == '\0')
                snprintf(first, sizeof first, "%s", api->kind);
        }
    }
    check(HOST_API_COUNT > 0 && missing == 0 && sync_differs == 0,
          "every kind the worker sends has a row with its sync flag",
          "%u without a row, %u with another sync flag (first: %s)", missing, sync_differs,
          first);
}

static void test_rows_are_worker_kinds(void)
{
    size_t count = 0;
    const struct host_kind *rows = host_kinds_all(&count);
    unsigned strays = 0, duplicates = 0, malformed = 0;
    char first[128] = "";
    for (size_t i = 0; i < count; i++) {
        const char *name = rows[i].name;
        bool stray = worker_api(name) == NULL;
        bool twice = host_kind_find(name) != &rows[i];
        bool bad = !host_kind_valid(name, strlen(name));
        strays += stray;
        duplicates += twice;
        malformed += bad;
        if ((stray || twice || bad) && first[0] == '\0')
            snprintf(first, sizeof first, "%s", name);
    }
    check(count == HOST_API_COUNT && strays == 0 && duplicates == 0 && malformed == 0,
          "every row is a kind the worker sends, once, of a host-call name's form",
          "%zu rows for %u worker kinds: %u not sent, %u twice, %u malformed (first: %s)",
          count, HOST_API_COUNT, strays, duplicates, malformed, first);
}

static void test_driver_sync_agrees(void)
{
    size_t count = 0;
    const struct host_kind *rows = host_kinds_all(&count);
    unsigned differ = 0, sync_rows = 0;
    for (size_t i = 0; i < count; i++) {
        differ += host_kind_is_sync(rows[i].name) != rows[i].sync;
        differ += host_kinds_is_sync(rows[i].name) != rows[i].sync;
        sync_rows += rows[i].sync;
    }
    check(differ == 0 && sync_rows == 2,
          "the activation driver's sync check agrees with every row (now and random)",
          "%u disagreements, %u sync rows", differ, sync_rows);
    check(!host_kind_is_sync("test.echo") && !host_kinds_is_sync("test.echo") &&
              host_kind_find("test.echo") == NULL,
          "a kind without a row (the test host's test.echo) is not sync", "it is");
}

/* Each row's columns are coherent: a sync row has no grant, a row a flow can use has
 * an effect, a codemode tool row is refused to flows. */
static void test_rows_coherent(void)
{
    size_t count = 0;
    const struct host_kind *rows = host_kinds_all(&count);
    unsigned bad = 0;
    char first[128] = "";
    for (size_t i = 0; i < count; i++) {
        const struct host_kind *k = &rows[i];
        bool ok = (!k->sync || (k->cls == JOURNAL_SYNC && k->grant == NULL &&
                                k->codemode == HOST_KIND_CODEMODE_ANSWER)) &&
                  (k->dry_run == HOST_KIND_DRY_UNSUPPORTED || k->effect != NULL) &&
                  (k->dry_run != HOST_KIND_DRY_CHECK || k->check != NULL) &&
                  (k->codemode != HOST_KIND_CODEMODE_ANSWER || k->effect != NULL);
        if (!ok) {
            bad++;
            if (first[0] == '\0')
                snprintf(first, sizeof first, "%s", k->name);
        }
    }
    check(bad == 0, "every row's columns are coherent (sync, effect, dry-run check)",
          "%u incoherent rows (first: %s)", bad, first);
}

int main(void)
{
    test_worker_kinds_have_rows();
    test_rows_are_worker_kinds();
    test_driver_sync_agrees();
    test_rows_coherent();
    return harness_finish();
}
