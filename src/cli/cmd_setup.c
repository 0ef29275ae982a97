/* ck-basal setup: prepares the data home (owner-only, narrowed if wider), opens the
 * store (creating or migrating it) and says what the kernel offers the worker's
 * confinement: seccomp with KILL_PROCESS and the Landlock ABI. */
#include "cli/commands.h"
#include "base/json_out.h"
#include "store/datahome.h"
#include "supervisor/kernel_facts.h"
#include "store/store.h"
#include "web/web_auth.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* The data home chosen by --home, else the default; 0 or -1 with err set. */
int cli_data_home(const struct cli_globals *globals, char *out, size_t cap, char *err,
                  size_t err_cap)
{
    if (globals->home == NULL)
        return datahome_default(out, cap, err, err_cap);
    int n = snprintf(out, cap, "%s", globals->home);
    if (n <= 0 || (size_t)n >= cap) {
        snprintf(err, err_cap, "--home: %s", n <= 0 ? "empty path" : "path too long");
        return -1;
    }
    return 0;
}

static void print_json(const char *home, const struct datahome_report *rep,
                       const struct store *st, int seccomp, int landlock)
{
    json_t *o = json_object();
    json_t *h = json_object();
    json_object_set_new(h, "path", json_string(home));
    json_object_set_new(h, "mode", json_string("0700"));
    json_object_set_new(h, "owner_only", json_true());
    json_object_set_new(h, "created", json_boolean(rep->created));
    json_object_set_new(h, "narrowed", json_boolean(rep->narrowed));
    if (rep->narrowed) {
        char m[8];
        snprintf(m, sizeof m, "%04o", (unsigned)rep->prior_mode);
        json_object_set_new(h, "narrowed_from", json_string(m));
    }
    json_object_set_new(o, "data_home", h);
    json_t *s = json_object();
    json_object_set_new(s, "path", json_string(store_path(st)));
    json_object_set_new(s, "schema_version", json_integer(store_schema_version(st)));
    json_object_set_new(s, "schema_version_before", json_integer(store_schema_version_at_open(st)));
    json_object_set_new(s, "created", json_boolean(store_created(st)));
    json_object_set_new(o, "store", s);
    json_t *k = json_object();
    json_object_set_new(k, "seccomp_kill_process", json_boolean(seccomp == 1));
    json_object_set_new(k, "landlock_abi", landlock >= 0 ? json_integer(landlock) : json_null());
    json_object_set_new(o, "kernel", k);
    (void)json_out_line(stdout, o, JSON_COMPACT);
    json_decref(o);
}

static void print_human(const char *home, const struct datahome_report *rep,
                        const struct store *st, int seccomp, int landlock)
{
    printf("data home: %s\n", home);
    if (rep->created)
        printf("  created, owner-only (0700)\n");
    else if (rep->narrowed)
        printf("  owner-only (0700): narrowed from %04o\n", (unsigned)rep->prior_mode);
    else
        printf("  owner-only (0700)\n");
    printf("store: %s\n", store_path(st));
    int v = store_schema_version(st), before = store_schema_version_at_open(st);
    if (store_created(st) || before == 0)
        printf("  created at schema version %d%s\n", v,
               store_location() == NULL ? " (owner-only, 0600)" : " (PostgreSQL)");
    else if (before < v)
        printf("  migrated from schema version %d to %d\n", before, v);
    else
        printf("  schema version %d, up to date\n", v);
    printf("kernel:\n");
    printf("  seccomp filters with KILL_PROCESS: %s\n",
           seccomp == 1 ? "yes" : "no (the worker cannot confine itself)");
    if (landlock > 0)
        printf("  Landlock ABI %d\n", landlock);
    else if (landlock == 0)
        printf("  no Landlock (workers need --landlock=optional)\n");
    else
        printf("  Landlock: could not ask the kernel\n");
}

int cmd_setup(const struct cli_globals *globals, int argc, char **argv)
{
    if (argc > 0) {
        fprintf(stderr, "ck-basal setup: unexpected argument '%s' (setup takes none; "
                        "use ck-basal --home DIR setup)\n", argv[0]);
        return EXIT_USAGE;
    }
    char home[PATH_MAX], err[512];
    struct datahome_report rep;
    struct store *st = NULL;
    if (cli_data_home(globals, home, sizeof home, err, sizeof err) != 0 ||
        datahome_prepare(home, true, &rep, err, sizeof err) != 0 ||
        store_open(home, &st, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal setup: %s\n", err);
        return EXIT_REFUSED;
    }
    /* The status page's token (docs/web.md), made once and kept. */
    char token[WEB_SECRET_HEX + 1];
    if (web_token_ensure(home, token, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal setup: %s\n", err);
        store_close(st);
        return EXIT_REFUSED;
    }
    int seccomp = kernel_has_seccomp_kill_process();
    int landlock = kernel_landlock_abi();
    if (globals->json)
        print_json(home, &rep, st, seccomp, landlock);
    else
        print_human(home, &rep, st, seccomp, landlock);
    store_close(st);
    return EXIT_OK;
}
