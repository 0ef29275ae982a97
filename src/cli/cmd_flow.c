/* ck-basal flow install|approve|list|schedule|disable|enable|drain: the flow registry (flows/flows.h)
 * from the command line, asked as the ops commands "flow.*" (serve/ops_dispatch.h) and
 * rendered from the reply's data (reconcile and dry-run have files of their own).
 * Every refusal is one line on stderr and changes nothing. */
#include "cli/commands.h"
#include "cli/ops_call.h"
#include "cli/term_text.h"
#include "base/names.h"
#include "flows/code_hash.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many hex digits of a code hash `flow list` shows (as git shows commits). */
#define SHORT_HASH_LEN 12

#define FLOW_USAGE "usage: ck-basal flow install DIR | approve ID --version N --code-hash HEX | " \
                   "list | show ID | schedule ID [--count N] | disable ID | enable ID | drain ID | " \
                   "reconcile RUN POSITION " \
                   "--observed JSON | " \
                   "--not-applied | --cancel | complete KEY REPLY | dry-run DIR | ID --version N [options]"

static int usage(const char *what)
{
    fprintf(stderr, "ck-basal flow: %s (%s)\n", what, FLOW_USAGE);
    return EXIT_USAGE;
}

/* One flow command through the ops dispatch (cli/ops_call.h): args stolen. EXIT_OK
 * with *data, or the exit status after the error was printed. */
static int call(const struct cli_globals *g, const char *sub, json_t *args, json_t **data)
{
    char what[32], cmd[32];
    snprintf(what, sizeof what, "flow %s", sub);
    snprintf(cmd, sizeof cmd, "flow.%s", sub);
    json_t *request = cli_ops_request(cmd, args);
    int status = cli_ops_call(g, what, request, data);
    json_decref(request);
    return status;
}

static int flow_install(const struct cli_globals *g, int argc, char **argv)
{
    if (argc != 1)
        return usage(argc == 0 ? "install needs a directory" : "install takes one directory");
    /* Whoever answers (a serve) does not share our working directory: the absolute
     * path goes in the request. A path that does not resolve is refused here as
     * reading it would be. */
    char dir[PATH_MAX];
    if (realpath(argv[0], dir) == NULL) {
        char err[PATH_MAX + 128];
        snprintf(err, sizeof err, "%s: %s", argv[0], strerror(errno));
        term_error_line("flow install", err);
        return EXIT_REFUSED;
    }
    json_t *dir_text = json_string(dir), *in;
    if (dir_text == NULL) { /* a request is JSON: its texts are UTF-8 */
        char shown[TERM_SHOWN_CAP(80)];
        fprintf(stderr, "ck-basal flow install: %s: the path is not UTF-8\n",
                term_show(shown, sizeof shown, argv[0], 0));
        return EXIT_REFUSED;
    }
    json_t *args = json_object();
    json_object_set_new(args, "dir", dir_text);
    int status = call(g, "install", args, &in);
    if (status != EXIT_OK)
        return status;
    if (g->json) {
        cli_print_json(in);
        return EXIT_OK;
    }
    char id[TERM_SHOWN_CAP(FLOW_ID_MAX)], hash[TERM_SHOWN_CAP(CODE_HASH_HEX_LEN)];
    term_show(id, sizeof id, json_string_value(json_object_get(in, "id")), 0);
    term_show(hash, sizeof hash, json_string_value(json_object_get(in, "code_hash")), 0);
    json_int_t version = json_integer_value(json_object_get(in, "version"));
    printf("installed flow %s version %" JSON_INTEGER_FORMAT " (pending approval)\n", id, version);
    printf("code hash %s\n", hash);
    printf("approve with: ck-basal flow approve %s --version %" JSON_INTEGER_FORMAT
           " --code-hash %s\n", id, version, hash);
    json_decref(in);
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
    json_t *args = json_object(), *approved;
    json_object_set_new(args, "id", json_string(id));
    json_object_set_new(args, "version", json_integer(version));
    json_object_set_new(args, "code_hash", json_string(hash));
    int status = call(g, "approve", args, &approved);
    if (status != EXIT_OK)
        return status;
    if (g->json) {
        cli_print_json(approved);
        return EXIT_OK;
    }
    char shown_id[TERM_SHOWN_CAP(FLOW_ID_MAX)], shown_hash[TERM_SHOWN_CAP(CODE_HASH_HEX_LEN)];
    printf("approved flow %s version %" JSON_INTEGER_FORMAT " code hash %s\n",
           term_show(shown_id, sizeof shown_id, json_string_value(json_object_get(approved, "id")),
                     0),
           json_integer_value(json_object_get(approved, "version")),
           term_show(shown_hash, sizeof shown_hash,
                     json_string_value(json_object_get(approved, "code_hash")), 0));
    json_decref(approved);
    return EXIT_OK;
}

/* "2026-12-03T02:00:00+01:00 Europe/Berlin (2026-12-03T01:00:00Z)", or "-". */
static const char *next_fire_text(const json_t *fire, char *out, size_t cap)
{
    const char *local = json_string_value(json_object_get(fire, "local"));
    const char *utc = json_string_value(json_object_get(fire, "utc"));
    const char *tz = json_string_value(json_object_get(fire, "tz"));
    if (local == NULL || utc == NULL || tz == NULL)
        return "-";
    char line[160];
    snprintf(line, sizeof line, "%s %s (%s)", local, tz, utc);
    return term_show(out, cap, line, 0);
}

static int flow_list(const struct cli_globals *g, int argc, char **argv)
{
    (void)argv;
    if (argc != 0)
        return usage("list takes no arguments");
    json_t *flows;
    int status = call(g, "list", json_object(), &flows);
    if (status != EXIT_OK)
        return status;
    if (g->json) {
        cli_print_json(flows);
        return EXIT_OK;
    }
    printf("%-24s %-8s %-7s %-8s %-12s %s\n", "ID", "ENABLED", "LATEST", "APPROVED", "CODE HASH",
           "NEXT FIRE");
    size_t i;
    const json_t *f;
    json_array_foreach (flows, i, f) {
        char approved[32] = "-";
        const json_t *approved_version = json_object_get(f, "approved_version");
        if (json_is_integer(approved_version))
            snprintf(approved, sizeof approved, "%" JSON_INTEGER_FORMAT,
                     json_integer_value(approved_version));
        /* The approved version's hash, short: `flow show` and --json print it whole. */
        const char *approved_hash = json_string_value(json_object_get(f, "approved_code_hash"));
        char id[TERM_SHOWN_CAP(FLOW_ID_MAX)], hash[TERM_SHOWN_CAP(CODE_HASH_HEX_LEN)];
        char next[TERM_SHOWN_CAP(160)];
        term_show(hash, sizeof hash, approved_hash != NULL ? approved_hash : "-", 0);
        hash[strnlen(hash, SHORT_HASH_LEN)] = '\0';
        printf("%-24s %-8s %-7" JSON_INTEGER_FORMAT " %-8s %-12s %s\n",
               term_show(id, sizeof id, json_string_value(json_object_get(f, "id")), 0),
               json_is_true(json_object_get(f, "enabled")) ? "yes" : "no",
               json_integer_value(json_object_get(f, "latest_version")), approved, hash,
               next_fire_text(json_object_get(f, "next_fire"), next, sizeof next));
        /* serve's own reason for disabling it (a rate limit), until `flow enable`. */
        const char *reason = json_string_value(json_object_get(f, "disabled_reason"));
        if (reason != NULL) {
            char shown[TERM_SHOWN_CAP(512)];
            printf("  disabled by serve: %s\n", term_show(shown, sizeof shown, reason, 0));
        }
    }
    json_decref(flows);
    return EXIT_OK;
}

/* flow show ID: one flow of `flow list`, every field, the hashes whole. */
static int flow_show(const struct cli_globals *g, int argc, char **argv)
{
    if (argc != 1 || argv[0][0] == '-')
        return usage("show takes one flow id");
    json_t *flows;
    int status = call(g, "list", json_object(), &flows);
    if (status != EXIT_OK)
        return status;
    size_t i;
    json_t *f, *found = NULL;
    json_array_foreach (flows, i, f) {
        if (json_is_string(json_object_get(f, "id")) &&
            strcmp(json_string_value(json_object_get(f, "id")), argv[0]) == 0)
            found = f;
    }
    if (found == NULL) {
        char err[FLOW_ID_MAX + 64];
        snprintf(err, sizeof err, "unknown flow '%.*s'", FLOW_ID_MAX, argv[0]);
        term_error_line("flow show", err);
        json_decref(flows);
        return EXIT_REFUSED;
    }
    if (g->json) {
        cli_print_json(found);
        json_decref(flows);
        return EXIT_OK;
    }
    char id[TERM_SHOWN_CAP(FLOW_ID_MAX)], latest[TERM_SHOWN_CAP(CODE_HASH_HEX_LEN)];
    char approved[TERM_SHOWN_CAP(CODE_HASH_HEX_LEN)];
    const char *approved_hash = json_string_value(json_object_get(found, "approved_code_hash"));
    const char *disabled = json_string_value(json_object_get(found, "disabled_reason"));
    const json_t *approved_version = json_object_get(found, "approved_version");
    printf("flow                %s\n", term_show(id, sizeof id, argv[0], 0));
    printf("enabled             %s\n", json_is_true(json_object_get(found, "enabled")) ? "yes" : "no");
    printf("latest version      %" JSON_INTEGER_FORMAT " (%s)\n",
           json_integer_value(json_object_get(found, "latest_version")),
           json_is_string(json_object_get(found, "latest_state"))
               ? json_string_value(json_object_get(found, "latest_state"))
               : "-");
    printf("latest code hash    %s\n",
           term_show(latest, sizeof latest, json_string_value(json_object_get(found, "latest_code_hash")), 0));
    if (json_is_integer(approved_version))
        printf("approved version    %" JSON_INTEGER_FORMAT "\n", json_integer_value(approved_version));
    else
        printf("approved version    -\n");
    printf("approved code hash  %s\n",
           term_show(approved, sizeof approved, approved_hash != NULL ? approved_hash : "-", 0));
    if (disabled != NULL) {
        char reason[TERM_SHOWN_CAP(512)];
        printf("disabled by serve   %s\n", term_show(reason, sizeof reason, disabled, 0));
    }
    char next[TERM_SHOWN_CAP(160)];
    printf("next fire           %s\n", next_fire_text(json_object_get(found, "next_fire"), next, sizeof next));
    json_decref(flows);
    return EXIT_OK;
}

/* flow schedule ID [--count N]: the next N fire times, in the flow's zone and in UTC. */
static int flow_schedule(const struct cli_globals *g, int argc, char **argv)
{
    if (argc < 1 || argv[0][0] == '-')
        return usage("schedule needs a flow id");
    json_t *args = json_object();
    json_object_set_new(args, "id", json_string(argv[0]));
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            char *end;
            errno = 0;
            long long n = strtoll(argv[++i], &end, 10);
            if (errno != 0 || end == argv[i] || *end != '\0' || n < 1 || n > 1000) {
                json_decref(args);
                return usage("--count takes a whole number 1-1000");
            }
            json_object_set_new(args, "count", json_integer(n));
        } else {
            json_decref(args);
            return usage(strcmp(argv[i], "--count") == 0 ? "--count needs a number"
                                                         : "schedule takes ID [--count N]");
        }
    }
    json_t *sched;
    int status = call(g, "schedule", args, &sched);
    if (status != EXIT_OK)
        return status;
    if (g->json) {
        cli_print_json(sched);
        return EXIT_OK;
    }
    char id[TERM_SHOWN_CAP(FLOW_ID_MAX)], spec[TERM_SHOWN_CAP(256)];
    printf("flow %s version %" JSON_INTEGER_FORMAT ": %s, missed %s\n",
           term_show(id, sizeof id, json_string_value(json_object_get(sched, "id")), 0),
           json_integer_value(json_object_get(sched, "version")),
           term_show(spec, sizeof spec, json_string_value(json_object_get(sched, "schedule")), 0),
           json_string_value(json_object_get(sched, "missed")));
    size_t i;
    const json_t *fire;
    const json_t *fires = json_object_get(sched, "fires");
    json_array_foreach (fires, i, fire) {
        printf("  %s  %s\n", json_string_value(json_object_get(fire, "local")),
               json_string_value(json_object_get(fire, "utc")));
    }
    if (json_array_size(fires) == 0)
        printf("  (it never fires again)\n");
    json_decref(sched);
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
    json_t *args = json_object(), *toggled;
    json_object_set_new(args, "id", json_string(argv[0]));
    int status = call(g, sub, args, &toggled);
    if (status != EXIT_OK)
        return status;
    if (g->json) {
        cli_print_json(toggled);
        return EXIT_OK;
    }
    char id[TERM_SHOWN_CAP(FLOW_ID_MAX)];
    printf("flow %s %s\n", term_show(id, sizeof id, json_string_value(json_object_get(toggled, "id")), 0),
           json_is_true(json_object_get(toggled, "enabled")) ? "enabled" : "disabled");
    json_decref(toggled);
    return EXIT_OK;
}

/* flow drain ID: a running serve stops admitting runs of the flow and answers once
 * none is pending or running (serve/daemon.h). */
static int flow_drain(const struct cli_globals *g, int argc, char **argv)
{
    if (argc != 1)
        return usage("drain takes one flow id");
    json_t *args = json_object(), *drained;
    json_object_set_new(args, "id", json_string(argv[0]));
    int status = call(g, "drain", args, &drained);
    if (status != EXIT_OK)
        return status;
    if (g->json) {
        cli_print_json(drained);
        return EXIT_OK;
    }
    char id[TERM_SHOWN_CAP(FLOW_ID_MAX)];
    printf("flow %s drained: no run pending or running; new runs refused until flow enable "
           "or the next serve\n",
           term_show(id, sizeof id, json_string_value(json_object_get(drained, "flow")), 0));
    json_decref(drained);
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
    if (strcmp(sub, "show") == 0)
        return flow_show(globals, argc - 1, argv + 1);
    if (strcmp(sub, "disable") == 0)
        return flow_toggle(globals, argc - 1, argv + 1, false);
    if (strcmp(sub, "enable") == 0)
        return flow_toggle(globals, argc - 1, argv + 1, true);
    if (strcmp(sub, "drain") == 0)
        return flow_drain(globals, argc - 1, argv + 1);
    if (strcmp(sub, "schedule") == 0)
        return flow_schedule(globals, argc - 1, argv + 1);
    if (strcmp(sub, "reconcile") == 0)
        return cmd_flow_reconcile(globals, argc - 1, argv + 1);
    if (strcmp(sub, "complete") == 0)
        return cmd_flow_complete(globals, argc - 1, argv + 1);
    if (strcmp(sub, "dry-run") == 0)
        return cmd_flow_dry_run(globals, argc - 1, argv + 1);
    fprintf(stderr, "ck-basal flow: unknown subcommand '%.40s' (%s)\n", sub, FLOW_USAGE);
    return EXIT_USAGE;
}
