/* ck-basal codemode run SCRIPT.js|- [--input JSON] and ck-basal codemode describe
 * [--format json|typescript]: the codemode profile for agents (docs/codemode.md).
 *
 * run: the script runs once, in a fresh single-use worker with the codemode budgets,
 * against the tools of the operator's catalog (tools.json) through the codemode host
 * (flows/codemode_run.h): every tools.call validated before its module runs, recorded
 * and audited in the store as codemode run "c<id>"; by this process, or by the serve
 * running on the home (ops command "codemode.run"), which then alone writes the store. Console
 * output goes to stderr apart from the result (stdout). Exit 0 when the run
 * succeeded, 1 when it failed or was refused, 2 for usage.
 * describe: the catalog as JSON, or as TypeScript declarations
 * (host/tool_typescript.h). */
#include "cli/commands.h"
#include "base/clock.h"
#include "cli/json_argument.h"
#include "cli/term_text.h"
#include "flows/code_hash.h"
#include "flows/codemode_run.h"
#include "cli/ops_call.h"
#include "serve/ops_commands.h"
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

/* Prints a codemode run's report (flows/codemode_run.h: {"run", "result_text"}),
 * whoever ran it; returns the exit status it means. */
static int print_report(bool json, json_t *report)
{
    json_t *o = json_object_get(report, "run");
    const char *state = json_string_value(json_object_get(o, "state"));
    int status = state != NULL && strcmp(state, "succeeded") == 0 ? EXIT_OK : EXIT_REFUSED;
    if (json) {
        cli_print_json(json_incref(o));
        return status;
    }
    /* The console first, on stderr: the script's text, escaped; stdout has only ours
     * and the result. */
    const char *console = json_string_value(json_object_get(o, "console"));
    if (console != NULL) {
        term_puts(stderr, console, TERM_KEEP_NEWLINES);
        fflush(stderr);
    }
    char ref[TERM_SHOWN_CAP(24)], shown_state[TERM_SHOWN_CAP(16)];
    printf("codemode run %s: %s\n",
           term_show(ref, sizeof ref, json_string_value(json_object_get(o, "run")), 0),
           term_show(shown_state, sizeof shown_state, state, 0));
    const char *result = json_string_value(json_object_get(report, "result_text"));
    if (result != NULL) {
        fputs("result: ", stdout);
        term_puts(stdout, result, 0);
        fputs("\n", stdout);
    }
    const char *error = json_string_value(json_object_get(o, "error"));
    if (error != NULL) {
        fputs("error: ", stdout);
        term_puts(stdout, error, 0);
        fputs("\n", stdout);
    }
    json_int_t calls = json_integer_value(json_object_get(o, "tool_calls"));
    json_int_t over = json_integer_value(json_object_get(o, "over_limit_calls"));
    printf("tool calls: %" JSON_INTEGER_FORMAT "%s", calls, over > 0 ? "" : "\n");
    if (over > 0)
        printf(" (and %" JSON_INTEGER_FORMAT " refused over the limit of %u)\n", over,
               CODEMODE_MAX_HOST_CALLS);
    if (json_is_true(json_object_get(o, "console_truncated")))
        printf("console: truncated at %u bytes (the last line of the console says so)\n",
               ACTIVATION_CONSOLE_MAX);
    return status;
}

/* A serve runs on the home: it runs the script (ops command "codemode.run") and
 * answers with the report. The script goes in the request, or, too large for one, the
 * path of its file for the serve to read. EXIT_OK with *report, or the exit status
 * after the error was printed. */
static int run_through_serve(int fd, const struct run_options *o, const char *script,
                             size_t script_len, const char *input, json_t **report)
{
    json_t *args = json_object();
    json_object_set_new(args, "script_name", json_string(o->script));
    if (script_len <= OPS_CODEMODE_SCRIPT_INLINE_MAX) {
        json_object_set_new(args, "script", json_stringn(script, script_len));
    } else {
        char path[PATH_MAX];
        if (strcmp(o->script, "-") == 0 || realpath(o->script, path) == NULL) {
            close(fd);
            json_decref(args);
            fprintf(stderr, "ck-basal codemode run: a script over %u bytes goes to the serve "
                    "running on this data home by its file: %s\n",
                    OPS_CODEMODE_SCRIPT_INLINE_MAX,
                    strcmp(o->script, "-") == 0 ? "give it as a file, not on stdin"
                                                : strerror(errno));
            return EXIT_REFUSED;
        }
        json_object_set_new(args, "script_path", json_string(path));
    }
    json_object_set_new(args, "input", json_string(input));
    json_t *request = cli_ops_request("codemode.run", args);
    if (request == NULL) {
        close(fd);
        fprintf(stderr, "ck-basal codemode run: out of memory\n");
        return EXIT_REFUSED;
    }
    int status = cli_ops_send("codemode run", fd, request, report);
    json_decref(request);
    return status;
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
    /* With a serve on the home, the run is its to make: nothing opens the store
     * beside it. */
    char home[PATH_MAX];
    int fd = -1;
    int served = cli_ops_connect(g, "codemode run", home, &fd);
    json_t *report = NULL;
    rc = EXIT_REFUSED;
    if (served == 1) {
        rc = run_through_serve(fd, &o, script, script_len, input, &report);
    } else if (served == 0) {
        struct store *st;
        if (cli_open_store(g, "codemode run", &st, home) == 0) {
            char err[1024];
            struct codemode_run_request req = {o.script, script, script_len, input, o.policy};
            report = codemode_run_execute(st, home, &req, err, sizeof err);
            store_close(st);
            if (report == NULL)
                fprintf(stderr, "ck-basal codemode run: %s\n", err);
        }
    }
    if (report != NULL)
        rc = print_report(g->json || o.json, report);
    json_decref(report);
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
