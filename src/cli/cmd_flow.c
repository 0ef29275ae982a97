/* ck-basal flow install|approve|list|disable|enable: the flow registry (flows/flows.h)
 * from the command line (reconcile and dry-run have files of their own). Every refusal
 * is one line on stderr and changes nothing. */
#include "cli/commands.h"
#include "cli/term_text.h"
#include "store/datahome.h"
#include "flows/flows.h"
#include "store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLOW_USAGE "usage: ck-basal flow install DIR | approve ID --version N --code-hash HEX | " \
                   "list | disable ID | enable ID | reconcile RUN POSITION --observed JSON | " \
                   "--not-applied | --cancel | dry-run DIR | ID --version N [options]"

static int usage(const char *what)
{
    fprintf(stderr, "ck-basal flow: %s (%s)\n", what, FLOW_USAGE);
    return EXIT_USAGE;
}

/* err may quote a manifest, a script or the store: escaped (cli/term_text.h). */
static int refused(const char *sub, const char *err)
{
    char what[32];
    snprintf(what, sizeof what, "flow %s", sub);
    term_error_line(what, err);
    return EXIT_REFUSED;
}

static int open_store(const struct cli_globals *g, const char *sub, struct store **st)
{
    char home[PATH_MAX], what[32];
    snprintf(what, sizeof what, "flow %s", sub);
    return cli_open_store(g, what, st, home);
}

static void print_json(json_t *o)
{
    cli_print_json(o);
}

static int flow_install(const struct cli_globals *g, int argc, char **argv)
{
    if (argc != 1)
        return usage(argc == 0 ? "install needs a directory" : "install takes one directory");
    struct store *st;
    if (open_store(g, "install", &st) != 0)
        return EXIT_REFUSED;
    struct flow_installed in;
    char err[1024];
    int rc = flows_install_dir(st, argv[0], &in, err, sizeof err);
    store_close(st);
    if (rc != 0)
        return refused("install", err);
    if (g->json) {
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(in.id));
        json_object_set_new(o, "version", json_integer(in.version));
        json_object_set_new(o, "code_hash", json_string(in.code_hash));
        json_object_set_new(o, "state", json_string("pending"));
        json_object_set_new(o, "new_flow", json_boolean(in.new_flow));
        print_json(o);
    } else {
        printf("installed flow %s version %" PRId64 " (pending approval)\n", in.id, in.version);
        printf("code hash %s\n", in.code_hash);
        printf("approve with: ck-basal flow approve %s --version %" PRId64 " --code-hash %s\n",
               in.id, in.version, in.code_hash);
    }
    return EXIT_OK;
}

/* A version number as an operator writes it: decimal, 1..INT64_MAX. */
static bool parse_version(const char *text, int64_t *out)
{
    if (text[0] < '0' || text[0] > '9')
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < 1)
        return false;
    *out = v;
    return true;
}

static int flow_approve(const struct cli_globals *g, int argc, char **argv)
{
    const char *id = NULL, *version_text = NULL, *hash = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "--code-hash") == 0) {
            if (i + 1 >= argc)
                return usage(strcmp(argv[i], "--version") == 0 ? "--version needs a number"
                                                               : "--code-hash needs a hash");
            if (strcmp(argv[i], "--version") == 0)
                version_text = argv[++i];
            else
                hash = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "ck-basal flow approve: unknown option '%s' (%s)\n", argv[i],
                    FLOW_USAGE);
            return EXIT_USAGE;
        } else if (id == NULL) {
            id = argv[i];
        } else {
            return usage("approve takes one flow id");
        }
    }
    if (id == NULL)
        return usage("approve needs a flow id");
    if (version_text == NULL)
        return usage("approve needs --version N");
    if (hash == NULL)
        return usage("approve needs --code-hash HEX");
    int64_t version;
    if (!parse_version(version_text, &version)) {
        fprintf(stderr, "ck-basal flow approve: --version '%.40s' is not a version number (>= 1)\n",
                version_text);
        return EXIT_USAGE;
    }
    struct store *st;
    if (open_store(g, "approve", &st) != 0)
        return EXIT_REFUSED;
    char err[1024];
    int rc = flows_approve(st, id, version, hash, err, sizeof err);
    store_close(st);
    if (rc != 0)
        return refused("approve", err);
    if (g->json) {
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(id));
        json_object_set_new(o, "version", json_integer(version));
        json_object_set_new(o, "code_hash", json_string(hash));
        json_object_set_new(o, "state", json_string("approved"));
        print_json(o);
    } else {
        printf("approved flow %s version %" PRId64 " code hash %s\n", id, version, hash);
    }
    return EXIT_OK;
}

static int flow_list(const struct cli_globals *g, int argc, char **argv)
{
    (void)argv;
    if (argc != 0)
        return usage("list takes no arguments");
    struct store *st;
    if (open_store(g, "list", &st) != 0)
        return EXIT_REFUSED;
    struct flow_summary *rows;
    size_t n;
    char err[1024];
    int rc = flows_list(st, &rows, &n, err, sizeof err);
    store_close(st);
    if (rc != 0)
        return refused("list", err);
    if (g->json) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) {
            json_t *o = json_object();
            json_object_set_new(o, "id", json_string(rows[i].id));
            json_object_set_new(o, "enabled", json_boolean(rows[i].enabled));
            json_object_set_new(o, "latest_version", json_integer(rows[i].latest_version));
            json_object_set_new(o, "latest_state",
                                json_string(rows[i].latest_approved ? "approved" : "pending"));
            json_object_set_new(o, "latest_code_hash", json_string(rows[i].latest_hash));
            json_object_set_new(o, "approved_version",
                                rows[i].approved_version > 0
                                    ? json_integer(rows[i].approved_version)
                                    : json_null());
            json_object_set_new(o, "approved_code_hash",
                                rows[i].approved_version > 0
                                    ? json_string(rows[i].approved_hash)
                                    : json_null());
            json_array_append_new(a, o);
        }
        print_json(a);
    } else {
        printf("%-24s %-8s %-7s %-8s %s\n", "ID", "ENABLED", "LATEST", "APPROVED",
               "APPROVED CODE HASH");
        for (size_t i = 0; i < n; i++) {
            char approved[32];
            if (rows[i].approved_version > 0)
                snprintf(approved, sizeof approved, "%" PRId64, rows[i].approved_version);
            else
                snprintf(approved, sizeof approved, "-");
            char id[TERM_SHOWN_CAP(FLOW_ID_MAX)], hash[TERM_SHOWN_CAP(CODE_HASH_HEX_LEN)];
            printf("%-24s %-8s %-7" PRId64 " %-8s %s\n", term_show(id, sizeof id, rows[i].id, 0),
                   rows[i].enabled ? "yes" : "no", rows[i].latest_version, approved,
                   term_show(hash, sizeof hash,
                             rows[i].approved_version > 0 ? rows[i].approved_hash : "-", 0));
        }
    }
    free(rows);
    return EXIT_OK;
}

static int flow_toggle(const struct cli_globals *g, int argc, char **argv, bool enable)
{
    const char *sub = enable ? "enable" : "disable";
    if (argc != 1) {
        char what[64];
        snprintf(what, sizeof what, "%s takes one flow id", sub);
        return usage(what);
    }
    struct store *st;
    if (open_store(g, sub, &st) != 0)
        return EXIT_REFUSED;
    char err[1024];
    int rc = flows_set_enabled(st, argv[0], enable, err, sizeof err);
    store_close(st);
    if (rc != 0)
        return refused(sub, err);
    if (g->json) {
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(argv[0]));
        json_object_set_new(o, "enabled", json_boolean(enable));
        print_json(o);
    } else {
        printf("flow %s %s\n", argv[0], enable ? "enabled" : "disabled");
    }
    return EXIT_OK;
}

int cmd_flow(const struct cli_globals *globals, int argc, char **argv)
{
    if (argc < 1)
        return usage("missing subcommand");
    const char *sub = argv[0];
    if (strcmp(sub, "install") == 0)
        return flow_install(globals, argc - 1, argv + 1);
    if (strcmp(sub, "approve") == 0)
        return flow_approve(globals, argc - 1, argv + 1);
    if (strcmp(sub, "list") == 0)
        return flow_list(globals, argc - 1, argv + 1);
    if (strcmp(sub, "disable") == 0)
        return flow_toggle(globals, argc - 1, argv + 1, false);
    if (strcmp(sub, "enable") == 0)
        return flow_toggle(globals, argc - 1, argv + 1, true);
    if (strcmp(sub, "reconcile") == 0)
        return cmd_flow_reconcile(globals, argc - 1, argv + 1);
    if (strcmp(sub, "dry-run") == 0)
        return cmd_flow_dry_run(globals, argc - 1, argv + 1);
    fprintf(stderr, "ck-basal flow: unknown subcommand '%.40s' (%s)\n", sub, FLOW_USAGE);
    return EXIT_USAGE;
}
