/* The parent's table of host-call kinds (flows/host_kinds.h) against the worker's own
 * list of the script's host calls (worker/host_apis.h, linked as the worker links it):
 * every kind a worker can send has exactly one row with the same sync flag, every
 * row is a kind a worker sends, and every host's sync answer (struct host_ops's
 * is_sync, what the activation driver asks) agrees with the rows. A kind added to
 * one list and not the other, or a host without the table's answer, turns this red. */
#include "flows/codemode_host.h"
#include "flows/dry_run_host.h"
#include "flows/flow_host.h"
#include "flows/host_kinds.h"
#include "host/host.h"
#include "host/test_host.h"
#include "lib/harness.h"
#include "worker/host_apis.h"

#include <jansson.h>
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
    const struct host hosts[] = {flow_host_interface(NULL), dry_run_host_interface(NULL),
                                 codemode_host_interface(NULL)};
    unsigned differ = 0, sync_rows = 0;
    for (size_t i = 0; i < count; i++) {
        for (size_t h = 0; h < sizeof hosts / sizeof hosts[0]; h++)
            differ += host_is_sync(&hosts[h], rows[i].name) != rows[i].sync;
        differ += host_kinds_is_sync(rows[i].name) != rows[i].sync;
        sync_rows += rows[i].sync;
    }
    check(differ == 0 && sync_rows == 2,
          "the flow, dry-run and codemode hosts' sync answers agree with every row (now and"
          " random)",
          "%u disagreements, %u sync rows", differ, sync_rows);
    struct host test = test_host_interface(NULL);
    check(!host_is_sync(&hosts[0], "test.echo") && !host_kinds_is_sync("test.echo") &&
              host_kind_find("test.echo") == NULL && host_is_sync(&test, "now") &&
              host_is_sync(&test, "random") && !host_is_sync(&test, "test.echo"),
          "a kind without a row (test.echo) is not sync; exec's test host answers now and"
          " random as sync, its own kinds not", "it differs");
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

/* The code of a rejection, or "" for a fulfilment. */
static const char *code_of(const struct host_settlement *s, char *code, size_t cap)
{
    host_settlement_code(s, code, cap);
    return code;
}

/* The effects of fs, net.fetch and git.* run only on a request their grant check
 * passed [guard: a parsed request is not performed ungranted]: parsed and handed to
 * the effect without the grant, each is refused "denied" and touches nothing. */
static void test_effects_need_the_grant(void)
{
    char code[32], reason[512], got[64];
    json_t *fs_args = json_pack("[s]", "/etc/hostname");
    struct fs_request *fs = NULL;
    struct host_settlement out = {PROTO_SETTLEMENT_FULFILLED, NULL};
    bool parsed = fs_builtin_parse("fs.read", fs_args, &fs, code, sizeof code, reason,
                                   sizeof reason) == 0;
    int rc = parsed ? fs_builtin_perform(fs, NULL, false, &out, NULL) : -1;
    check(parsed && rc == 0 && strcmp(code_of(&out, got, sizeof got), HOST_CODE_DENIED) == 0,
          "fs: a parsed, unauthorized request is refused denied, not read",
          "parsed %d, rc %d, outcome %s", parsed, rc, out.value != NULL ? out.value : "-");
    host_settlement_free(&out);
    fs_request_free(fs);
    json_decref(fs_args);

    json_t *net_args = json_pack("[s]", "https://example.com/");
    struct net_fetch_request *net = NULL;
    parsed = net_fetch_parse(net_args, &net, code, sizeof code, reason, sizeof reason) == 0;
    char no_session[256] = "";
    struct net_fetch_session *session =
        parsed ? net_fetch_session_new(no_session, sizeof no_session) : NULL;
    struct net_grants none = {NULL, 0};
    rc = session != NULL ? net_fetch_perform(session, &none, net, NULL, 0, &out) : -1;
    check(parsed && rc == 0 && strcmp(code_of(&out, got, sizeof got), HOST_CODE_DENIED) == 0,
          "net.fetch: a parsed, ungranted request is refused denied, not sent",
          "parsed %d, rc %d, outcome %s %s", parsed, rc, out.value != NULL ? out.value : "-",
          no_session);
    host_settlement_free(&out);
    net_fetch_session_free(session);
    net_fetch_request_free(net);
    json_decref(net_args);

    json_t *git_args = json_pack("[s]", "/");
    struct git_request *git = NULL;
    parsed = git_builtin_parse("git.log", git_args, &git, code, sizeof code, reason,
                               sizeof reason) == 0;
    rc = parsed ? git_builtin_run(git, 0, &out) : -1;
    check(parsed && rc == 0 && strcmp(code_of(&out, got, sizeof got), HOST_CODE_DENIED) == 0,
          "git: a parsed, ungranted request is refused denied, git not run",
          "parsed %d, rc %d, outcome %s", parsed, rc, out.value != NULL ? out.value : "-");
    host_settlement_free(&out);
    git_request_free(git);
    json_decref(git_args);
}

int main(void)
{
    test_worker_kinds_have_rows();
    test_rows_are_worker_kinds();
    test_driver_sync_agrees();
    test_rows_coherent();
    test_effects_need_the_grant();
    return harness_finish();
}
