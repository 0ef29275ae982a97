/* ck-basal codemode run SCRIPT.js|- [--input JSON] and ck-basal codemode describe
 * [--format json|typescript]: the codemode profile for agents (docs/codemode.md).
 *
 * run: the script runs once, in a fresh single-use worker with the codemode budgets,
 * against the tools of the operator's catalog (tools.json) through the codemode host
 * (flows/codemode_host.h): every tools.call validated in this process before its
 * module runs, recorded and audited in the store as codemode run "c<id>". Console
 * output goes to stderr apart from the result (stdout). Exit 0 when the run
 * succeeded, 1 when it failed or was refused, 2 for usage.
 * describe: the catalog as JSON, or as TypeScript declarations
 * (host/tool_typescript.h). */
#include "cli/commands.h"
#include "base/clock.h"
#include "cli/json_argument.h"
#include "cli/term_text.h"
#include "flows/code_hash.h"
#include "flows/codemode_host.h"
#include "store/codemode_store.h"
#include "store/datahome.h"
#include "store/store.h"
#include "supervisor/activation.h"
#include "supervisor/pool.h"
#include "host/tool_typescript.h"
#include "host/tools_catalog.h"
#include "cli/tsc_check.h"
#include "base/bounded_file.h"
#include "base/json_out.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CODEMODE_USAGE "usage: ck-basal codemode run SCRIPT.js|- [--input JSON] " \
                       "[--landlock=required|optional] | describe [--format json|typescript] | " \
                       "check SCRIPT.js|- [--tsc PATH] | tsconfig"

/* Every host call of a codemode run, now and random included: a loop of Date.now()
 * cannot keep the parent busy until the wall deadline. Tool calls have their own,
 * smaller limit (CODEMODE_MAX_HOST_CALLS). */
#define CODEMODE_RUN_MAX_HOST_CALLS 10000u

static int usage(const char *what)
{
    fprintf(stderr, "ck-basal codemode: %s (%s)\n", what, CODEMODE_USAGE);
    return EXIT_USAGE;
}

/* ---- the script --------------------------------------------------------------------- */

/* Reads stdin whole, at most cap bytes (one more is refused). */
static int read_stdin(size_t cap, char **bytes, size_t *len)
{
    char *buf = malloc(cap + 2);
    if (buf == NULL)
        return -1;
    size_t got = 0;
    while (got < cap + 1) {
        ssize_t r = read(0, buf + got, cap + 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r < 0) {
                free(buf);
                return -1;
            }
            break;
        }
        got += (size_t)r;
    }
    buf[got] = '\0';
    *bytes = buf;
    *len = got;
    return 0;
}

/* The script at path ("-": stdin): 1 MiB at most of UTF-8 without NUL, not empty.
 * what: the subcommand its errors name ("run", "check"). */
static int load_script(const char *what, const char *path, char **bytes, size_t *len)
{
    char err[512];
    if (strcmp(path, "-") == 0) {
        if (read_stdin(PROTO_MAX_SCRIPT_BYTES, bytes, len) != 0) {
            fprintf(stderr, "ck-basal codemode %s: cannot read the script from stdin: %s\n",
                    what, strerror(errno));
            return -1;
        }
    } else if (read_bounded_file(path, "script", PROTO_MAX_SCRIPT_BYTES, bytes, len, err,
                                 sizeof err) != 0) {
        fprintf(stderr, "ck-basal codemode %s: %s\n", what, err);
        return -1;
    }
    if (*len > PROTO_MAX_SCRIPT_BYTES || script_validate(*bytes, *len, err, sizeof err) != 0) {
        if (*len > PROTO_MAX_SCRIPT_BYTES)
            snprintf(err, sizeof err, "script: more than the %u bytes allowed",
                     PROTO_MAX_SCRIPT_BYTES);
        fprintf(stderr, "ck-basal codemode %s: %s\n", what, err);
        free(*bytes);
        *bytes = NULL;
        return -1;
    }
    return 0;
}

/* ---- run ---------------------------------------------------------------------------- */

struct run_options {
    const char *script;
    const char *input; /* as given, or NULL */
    enum landlock_policy policy;
    bool json;
};

static int parse_run(int argc, char **argv, struct run_options *o)
{
    memset(o, 0, sizeof *o);
    o->policy = LANDLOCK_POLICY_REQUIRED;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--input") == 0) {
            if (i + 1 >= argc)
                return usage("--input needs a JSON value");
            o->input = argv[++i];
        } else if (strncmp(arg, "--input=", 8) == 0) {
            o->input = arg + 8;
        } else if (strcmp(arg, "--landlock=required") == 0) {
            o->policy = LANDLOCK_POLICY_REQUIRED;
        } else if (strcmp(arg, "--landlock=optional") == 0) {
            o->policy = LANDLOCK_POLICY_OPTIONAL;
        } else if (strcmp(arg, "--json") == 0) {
            o->json = true;
        } else if (arg[0] == '-' && strcmp(arg, "-") != 0) {
            fprintf(stderr, "ck-basal codemode run: unknown option '%.60s' (%s)\n", arg,
                    CODEMODE_USAGE);
            return EXIT_USAGE;
        } else if (o->script != NULL) {
            return usage("run takes one script");
        } else {
            o->script = arg;
        }
    }
    if (o->script == NULL)
        return usage("run needs a script (a file, or - for stdin)");
    return EXIT_OK;
}

/* What the run leaves for the report and the store. */
struct run_end {
    struct codemode_run_end row;
    char error[1024];
};

static void decide_end(const struct activation_outcome *out, const struct codemode_host *h,
                       struct run_end *end)
{
    memset(end, 0, sizeof *end);
    const char *broken = codemode_host_broken(h);
    if (broken != NULL)
        snprintf(end->error, sizeof end->error, "%s", broken);
    else if (out->status != ACTIVATION_COMPLETED)
        activation_describe(out, end->error, sizeof end->error);
    bool ok = out->status == ACTIVATION_COMPLETED && broken == NULL;
    end->row.state = ok ? CODEMODE_SUCCEEDED : CODEMODE_FAILED;
    end->row.outcome = activation_status_name(out->status);
    end->row.result = ok ? out->value : NULL;
    end->row.error = end->error[0] != '\0' ? end->error : NULL;
    end->row.console = out->console;
    end->row.console_truncated = out->console_truncated;
    end->row.tool_calls = codemode_host_tool_calls(h);
    end->row.over_limit_calls = codemode_host_over_limit(h);
    end->row.worker_pid = (long)out->pid;
    end->row.wall_ms = out->wall_ms;
}

static json_t *json_value_of(const char *text)
{
    if (text == NULL)
        return json_null();
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    return v != NULL ? v : json_string(text);
}

static void print_run(bool json, int64_t id, const struct run_end *end,
                      const struct activation_outcome *out)
{
    char ref[24];
    codemode_run_ref(id, ref);
    const struct codemode_run_end *r = &end->row;
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "run", json_string(ref));
        json_object_set_new(o, "id", json_integer(id));
        json_object_set_new(o, "state", json_string(codemode_run_state_name(r->state)));
        json_object_set_new(o, "outcome", json_string(r->outcome));
        json_object_set_new(o, "result", json_value_of(r->result));
        json_object_set_new(o, "error", r->error != NULL ? json_string(r->error) : json_null());
        if (out->status == ACTIVATION_FAILED && out->detail != NULL)
            json_object_set_new(o, "detail", json_string(out->detail));
        json_object_set_new(o, "console", json_string(r->console != NULL ? r->console : ""));
        json_object_set_new(o, "console_truncated", json_boolean(r->console_truncated));
        json_object_set_new(o, "tool_calls", json_integer(r->tool_calls));
        json_object_set_new(o, "over_limit_calls", json_integer(r->over_limit_calls));
        json_object_set_new(o, "wall_ms", json_integer(r->wall_ms));
        cli_print_json(o);
        return;
    }
    /* The console first, on stderr: the script's text, escaped; stdout has only ours
     * and the result. */
    if (r->console != NULL) {
        term_puts(stderr, r->console, TERM_KEEP_NEWLINES);
        fflush(stderr);
    }
    printf("codemode run %s: %s\n", ref, codemode_run_state_name(r->state));
    if (r->result != NULL) {
        fputs("result: ", stdout);
        term_puts(stdout, r->result, 0);
        fputs("\n", stdout);
    }
    if (r->error != NULL) {
        fputs("error: ", stdout);
        term_puts(stdout, r->error, 0);
        fputs("\n", stdout);
    }
    printf("tool calls: %" PRIu32 "%s", r->tool_calls, r->over_limit_calls > 0 ? "" : "\n");
    if (r->over_limit_calls > 0)
        printf(" (and %" PRIu32 " refused over the limit of %u)\n", r->over_limit_calls,
               CODEMODE_MAX_HOST_CALLS);
    if (r->console_truncated)
        printf("console: truncated at %u bytes (the last line of the console says so)\n",
               ACTIVATION_CONSOLE_MAX);
}

/* Drives run id to its end and records it. */
static int drive(struct store *st, int64_t id, const struct run_options *o, const char *script,
                 size_t script_len, const char *input, const struct tools_catalog *tools,
                 const struct ops_catalog *modules, bool json)
{
    struct activation_request req;
    memset(&req, 0, sizeof req);
    activation_request_defaults(&req, PROTO_PROFILE_CODEMODE);
    req.activation_id = (uint64_t)id;
    req.script = script;
    req.script_len = script_len;
    req.script_name = strcmp(o->script, "-") == 0 ? "<stdin>" : o->script;
    req.trigger = input;
    req.max_host_calls = CODEMODE_RUN_MAX_HOST_CALLS;
    struct codemode_host_config hc = {st, id, tools, modules, CODEMODE_MAX_HOST_CALLS,
                                      monotonic_ms() + req.deadline_ms};
    struct pool_config cfg;
    pool_config_defaults(&cfg);
    cfg.policy = o->policy;
    cfg.spares = 0; /* one single-use worker */
    struct pool *pool = pool_new(&cfg);
    struct codemode_host *h = codemode_host_new(&hc);
    struct activation_outcome out;
    memset(&out, 0, sizeof out);
    if (pool == NULL || h == NULL) {
        out.status = ACTIVATION_NO_WORKER;
        out.detail = strdup("out of memory");
    } else {
        struct host host = codemode_host_interface(h);
        pool_run(pool, "codemode", POOL_USE_CODEMODE, &req, &host, &out);
    }
    int rc = EXIT_REFUSED;
    if (h != NULL) {
        struct run_end end;
        char err[512];
        decide_end(&out, h, &end);
        if (codemode_run_finish(st, id, &end.row, err, sizeof err) != 0)
            fprintf(stderr, "ck-basal codemode run: run c%" PRId64 ": %s\n", id, err);
        else
            rc = end.row.state == CODEMODE_SUCCEEDED ? EXIT_OK : EXIT_REFUSED;
        print_run(json, id, &end, &out);
    } else {
        fprintf(stderr, "ck-basal codemode run: out of memory\n");
    }
    activation_outcome_free(&out);
    codemode_host_free(h);
    pool_free(pool);
    return rc;
}

static int codemode_run(const struct cli_globals *g, int argc, char **argv)
{
    struct run_options o;
    int rc = parse_run(argc, argv, &o);
    if (rc != EXIT_OK)
        return rc;
    char *input =
        cli_json_argument("codemode run", "--input", o.input != NULL ? o.input : "{}", &rc);
    if (input == NULL)
        return rc;
    char *script = NULL;
    size_t script_len = 0;
    if (load_script("run", o.script, &script, &script_len) != 0) {
        free(input);
        return EXIT_USAGE;
    }
    /* A worker's death must never end us: writes to it fail with EPIPE instead. */
    signal(SIGPIPE, SIG_IGN);
    struct store *st;
    char home[PATH_MAX], err[1024];
    struct ops_catalog modules;
    struct tools_catalog tools;
    memset(&modules, 0, sizeof modules);
    memset(&tools, 0, sizeof tools);
    rc = EXIT_REFUSED;
    int64_t id = 0;
    if (cli_open_store(g, "codemode run", &st, home) != 0)
        goto out;
    /* Every refusal before the run row: nothing is stored. */
    if (ops_catalog_load(home, &modules, err, sizeof err) != 0 ||
        tools_catalog_load(home, &modules, &tools, err, sizeof err) != 0 ||
        codemode_runs_abandon(st, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal codemode run: %s\n", err);
        goto close;
    }
    struct codemode_run_start start = {o.script, script, script_len, input};
    if (codemode_run_begin(st, &start, &id, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal codemode run: %s\n", err);
        goto close;
    }
    rc = drive(st, id, &o, script, script_len, input, &tools, &modules, g->json || o.json);
close:
    store_close(st);
out:
    tools_catalog_free(&tools);
    ops_catalog_free(&modules);
    free(script);
    free(input);
    return rc;
}

/* ---- describe ----------------------------------------------------------------------- */

/* The module and tool catalogs of the data home; errors on stderr as "codemode WHAT". */
static int load_catalogs(const struct cli_globals *g, const char *what, struct ops_catalog *modules,
                         struct tools_catalog *tools)
{
    char home[PATH_MAX], err[1024];
    if (cli_data_home(g, home, sizeof home, err, sizeof err) != 0 ||
        datahome_prepare(home, false, NULL, err, sizeof err) != 0 ||
        ops_catalog_load(home, modules, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal codemode %s: %s\n", what, err);
        return -1;
    }
    if (tools_catalog_load(home, modules, tools, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal codemode %s: %s\n", what, err);
        ops_catalog_free(modules);
        return -1;
    }
    return 0;
}

static int codemode_describe(const struct cli_globals *g, int argc, char **argv)
{
    bool typescript = false;
    for (int i = 0; i < argc; i++) {
        const char *format = NULL;
        if (strcmp(argv[i], "--format") == 0) {
            if (i + 1 >= argc)
                return usage("--format needs json or typescript");
            format = argv[++i];
        } else if (strncmp(argv[i], "--format=", 9) == 0) {
            format = argv[i] + 9;
        } else if (strcmp(argv[i], "--json") == 0) {
            format = "json";
        } else {
            fprintf(stderr, "ck-basal codemode describe: unexpected argument '%.60s' (%s)\n",
                    argv[i], CODEMODE_USAGE);
            return EXIT_USAGE;
        }
        if (strcmp(format, "json") == 0)
            typescript = false;
        else if (strcmp(format, "typescript") == 0)
            typescript = true;
        else
            return usage("--format must be json or typescript");
    }
    struct ops_catalog modules;
    struct tools_catalog tools;
    if (load_catalogs(g, "describe", &modules, &tools) != 0)
        return EXIT_REFUSED;
    int rc = EXIT_OK;
    if (typescript) {
        char *text = tool_typescript(&tools);
        if (text != NULL)
            fputs(text, stdout);
        else
            rc = EXIT_REFUSED;
        free(text);
    } else {
        json_t *o = tools_catalog_json(&tools);
        char *text = o != NULL ? json_out_dumps(o, g->json ? JSON_COMPACT : JSON_INDENT(2)) : NULL;
        if (text != NULL)
            puts(text);
        else
            rc = EXIT_REFUSED;
        free(text);
        json_decref(o);
    }
    if (rc != EXIT_OK)
        fprintf(stderr, "ck-basal codemode describe: out of memory\n");
    tools_catalog_free(&tools);
    ops_catalog_free(&modules);
    return rc;
}

/* ---- check, tsconfig --------------------------------------------------------------- */

/* codemode check SCRIPT.js|- [--tsc PATH]: the script type-checked against the
 * declarations of the operator's tools by tsc (cli/tsc_check.h); exit 0 when it found
 * nothing, 1 when it found errors or could not run. */
static int codemode_check(const struct cli_globals *g, int argc, char **argv)
{
    const char *path = NULL, *tsc = "tsc";
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--tsc") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0')
                return usage("--tsc needs the compiler's path");
            tsc = argv[++i];
        } else if (path == NULL && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)) {
            path = argv[i];
        } else {
            fprintf(stderr, "ck-basal codemode check: unexpected argument '%.60s' (%s)\n",
                    argv[i], CODEMODE_USAGE);
            return EXIT_USAGE;
        }
    }
    if (path == NULL)
        return usage("check needs a script");
    char *script;
    size_t len;
    if (load_script("check", path, &script, &len) != 0)
        return EXIT_REFUSED;
    struct ops_catalog modules;
    struct tools_catalog tools;
    if (load_catalogs(g, "check", &modules, &tools) != 0) {
        free(script);
        return EXIT_REFUSED;
    }
    char *declarations = tool_typescript(&tools);
    char err[1024];
    int found = declarations != NULL
                    ? tsc_check(tsc, declarations, script, len, strcmp(path, "-") == 0 ? "<stdin>" : path,
                                err, sizeof err)
                    : -1;
    if (declarations == NULL)
        snprintf(err, sizeof err, "out of memory");
    if (found < 0)
        term_error_line("codemode check", err);
    else if (found == 0)
        printf("no type errors: every tools.call matches its tool's input type\n");
    free(declarations);
    free(script);
    tools_catalog_free(&tools);
    ops_catalog_free(&modules);
    return found == 0 ? EXIT_OK : EXIT_REFUSED;
}

static int codemode_tsconfig(int argc)
{
    if (argc != 0)
        return usage("tsconfig takes no arguments");
    fputs(TSC_CONFIG_JSON, stdout);
    return EXIT_OK;
}

int cmd_codemode(const struct cli_globals *g, int argc, char **argv)
{
    if (argc < 1)
        return usage("missing subcommand");
    if (strcmp(argv[0], "run") == 0)
        return codemode_run(g, argc - 1, argv + 1);
    if (strcmp(argv[0], "describe") == 0)
        return codemode_describe(g, argc - 1, argv + 1);
    if (strcmp(argv[0], "check") == 0)
        return codemode_check(g, argc - 1, argv + 1);
    if (strcmp(argv[0], "tsconfig") == 0)
        return codemode_tsconfig(argc - 1);
    fprintf(stderr, "ck-basal codemode: unknown subcommand '%.40s' (%s)\n", argv[0],
            CODEMODE_USAGE);
    return EXIT_USAGE;
}
