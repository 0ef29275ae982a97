/* ck-basal exec: runs scripts through one worker pool with the fixed test host (no
 * store, no manifest: flows run with `ck-basal run`). Every run of every script goes through the same pool, bound to one flow
 * id, so pooling, reuse and retirement can be watched from the outside (the worker pid
 * of each run is in the --json output). docs/operations.md has the formats. */
#include "cli/commands.h"
#include "cli/term_text.h"
#include "base/json_out.h"
#include "supervisor/activation.h"
#include "supervisor/health.h"
#include "supervisor/pool.h"
#include "supervisor/worker_proc.h"
#include "host/test_host.h"
#include "proto/utf8.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXEC_MAX_SCRIPTS 64
#define EXEC_MAX_REPEAT 100000ULL
#define EXEC_MAX_STACK_BYTES (4ULL << 20) /* below the worker's 8 MiB native stack */

struct exec_options {
    const char *scripts[EXEC_MAX_SCRIPTS];
    size_t script_count;
    enum proto_profile profile;
    const char *trigger;
    unsigned long long cpu_ms, heap_bytes, stack_bytes, max_value_bytes, deadline_ms;
    bool have_cpu, have_heap, have_stack, have_max_value, have_deadline;
    const char *flow;
    unsigned long long repeat;
    enum landlock_policy policy;
    bool health;
};

struct loaded_script {
    const char *path;
    char *text;
    size_t len;
};

__attribute__((format(printf, 1, 2))) static int usage(const char *fmt, ...)
{
    fprintf(stderr, "ck-basal exec: ");
    va_list args;
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    fprintf(stderr, " (see ck-basal --help)\n");
    return EXIT_USAGE;
}

/* A whole decimal number in [min, max]. */
static bool parse_number(const char *text, unsigned long long min, unsigned long long max,
                         unsigned long long *out)
{
    if (text == NULL || *text < '0' || *text > '9')
        return false;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == NULL || *end != '\0' || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* 1-63 of [a-z0-9_-], as flow ids are. */
static bool valid_flow_id(const char *id)
{
    size_t len = strlen(id);
    if (len == 0 || len > 63)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* Matches "--name VALUE" or "--name=VALUE"; advances *i over a separate value. */
static bool option_value(int argc, char **argv, int *i, const char *name, const char **value,
                         bool *missing)
{
    size_t len = strlen(name);
    const char *arg = argv[*i];
    if (strncmp(arg, name, len) != 0)
        return false;
    if (arg[len] == '=') {
        *value = arg + len + 1;
        return true;
    }
    if (arg[len] != '\0')
        return false;
    if (*i + 1 >= argc) {
        *missing = true;
        return true;
    }
    *value = argv[++*i];
    return true;
}

struct number_option {
    const char *name;
    unsigned long long min, max;
    unsigned long long *target;
    bool *seen;
};

static int parse_options(int argc, char **argv, struct exec_options *o)
{
    memset(o, 0, sizeof *o);
    o->profile = PROTO_PROFILE_FLOW;
    o->flow = "exec";
    o->repeat = 1;
    o->policy = LANDLOCK_POLICY_REQUIRED;
    bool repeat_seen = false;
    const struct number_option numbers[] = {
        {"--cpu-ms", 1, 3600000, &o->cpu_ms, &o->have_cpu},
        {"--heap-bytes", 65536, WORKER_CODEMODE_HEAP_MAX, &o->heap_bytes, &o->have_heap},
        {"--stack-bytes", 16384, EXEC_MAX_STACK_BYTES, &o->stack_bytes, &o->have_stack},
        {"--max-value-bytes", 1024, PROTO_MAX_JSON_BYTES, &o->max_value_bytes, &o->have_max_value},
        {"--deadline-ms", 1, 24ULL * 3600 * 1000, &o->deadline_ms, &o->have_deadline},
        {"--repeat", 1, EXEC_MAX_REPEAT, &o->repeat, &repeat_seen},
    };
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = NULL;
        bool missing = false;
        if (arg[0] != '-' || strcmp(arg, "-") == 0) {
            if (o->script_count == EXEC_MAX_SCRIPTS)
                return usage("more than %d scripts", EXEC_MAX_SCRIPTS);
            o->scripts[o->script_count++] = arg;
            continue;
        }
        if (strcmp(arg, "--health") == 0) {
            o->health = true;
            continue;
        }
        if (strcmp(arg, "--landlock=required") == 0) {
            o->policy = LANDLOCK_POLICY_REQUIRED;
            continue;
        }
        if (strcmp(arg, "--landlock=optional") == 0) {
            o->policy = LANDLOCK_POLICY_OPTIONAL;
            continue;
        }
        bool matched = false;
        for (size_t n = 0; n < sizeof numbers / sizeof numbers[0] && !matched; n++) {
            if (!option_value(argc, argv, &i, numbers[n].name, &value, &missing))
                continue;
            matched = true;
            if (missing)
                return usage("%s needs a value", numbers[n].name);
            if (!parse_number(value, numbers[n].min, numbers[n].max, numbers[n].target)) {
                fprintf(stderr,
                        "ck-basal exec: %s must be a whole number from %llu to %llu, not '%s'\n",
                        numbers[n].name, numbers[n].min, numbers[n].max, value);
                return EXIT_USAGE;
            }
            *numbers[n].seen = true;
        }
        if (matched)
            continue;
        if (option_value(argc, argv, &i, "--profile", &value, &missing)) {
            if (missing)
                return usage("%s needs a value", "--profile");
            if (strcmp(value, "flow") == 0)
                o->profile = PROTO_PROFILE_FLOW;
            else if (strcmp(value, "codemode") == 0)
                o->profile = PROTO_PROFILE_CODEMODE;
            else
                return usage("unknown profile '%s' (expected flow or codemode)", value);
            continue;
        }
        if (option_value(argc, argv, &i, "--trigger", &value, &missing)) {
            if (missing)
                return usage("%s needs a value", "--trigger");
            json_error_t error;
            json_t *parsed = json_loads(value, JSON_DECODE_ANY, &error);
            if (parsed == NULL)
                return usage("--trigger is not JSON: %s", error.text);
            json_decref(parsed);
            o->trigger = value;
            continue;
        }
        if (option_value(argc, argv, &i, "--flow", &value, &missing)) {
            if (missing)
                return usage("%s needs a value", "--flow");
            if (!valid_flow_id(value))
                return usage("--flow '%s' is not a flow id (1-63 of a-z, 0-9, _ and -)", value);
            o->flow = value;
            continue;
        }
        return usage("unknown option '%s'", arg);
    }
    if (o->script_count == 0)
        return usage("%s", "no script given: ck-basal exec SCRIPT.js [SCRIPT.js ...] [options]");
    unsigned long long heap_max =
        o->profile == PROTO_PROFILE_CODEMODE ? WORKER_CODEMODE_HEAP_MAX : WORKER_FLOW_HEAP_MAX;
    if (o->have_heap && o->heap_bytes > heap_max) {
        fprintf(stderr, "ck-basal exec: --heap-bytes %llu is over the %s profile's %llu\n",
                o->heap_bytes, o->profile == PROTO_PROFILE_CODEMODE ? "codemode" : "flow",
                heap_max);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* Reads a script whole; one clear line and false if it cannot be used. */
static bool load_script(const char *path, struct loaded_script *out)
{
    out->path = path;
    out->text = NULL;
    out->len = 0;
    FILE *f = fopen(path, "rbe");
    if (f == NULL) {
        fprintf(stderr, "ck-basal exec: cannot read script %s: %s\n", path, strerror(errno));
        return false;
    }
    size_t cap = 0;
    bool ok = true;
    for (;;) {
        if (out->len == cap) {
            if (cap > PROTO_MAX_SCRIPT_BYTES) {
                fprintf(stderr, "ck-basal exec: script %s is larger than %u bytes\n", path,
                        PROTO_MAX_SCRIPT_BYTES);
                ok = false;
                break;
            }
            cap = cap == 0 ? 4096 : cap * 2;
            char *grown = realloc(out->text, cap + 1);
            if (grown == NULL) {
                fprintf(stderr, "ck-basal exec: out of memory reading %s\n", path);
                ok = false;
                break;
            }
            out->text = grown;
        }
        size_t n = fread(out->text + out->len, 1, cap - out->len, f);
        out->len += n;
        if (n == 0) {
            if (ferror(f)) {
                fprintf(stderr, "ck-basal exec: cannot read script %s: %s\n", path,
                        strerror(errno));
                ok = false;
            }
            break;
        }
    }
    fclose(f);
    if (ok && out->len > PROTO_MAX_SCRIPT_BYTES) {
        fprintf(stderr, "ck-basal exec: script %s is larger than %u bytes\n", path,
                PROTO_MAX_SCRIPT_BYTES);
        ok = false;
    }
    if (ok && (memchr(out->text, '\0', out->len) != NULL ||
               !utf8_valid((const uint8_t *)out->text, out->len))) {
        fprintf(stderr, "ck-basal exec: script %s is not UTF-8 text without NUL bytes\n", path);
        ok = false;
    }
    if (!ok) {
        free(out->text);
        out->text = NULL;
        return false;
    }
    if (out->text == NULL)
        out->text = strdup("");
    else
        out->text[out->len] = '\0';
    return out->text != NULL;
}

/* The JSON a worker returned, as a jansson value (integers too large for jansson are
 * read as reals); NULL if it does not parse. */
static json_t *parse_value(const char *text)
{
    json_error_t error;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &error);
    if (v == NULL)
        v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &error);
    return v;
}

static void print_run_json(const struct loaded_script *script, unsigned long long run,
                           const char *flow, const struct activation_outcome *out,
                           const char *message)
{
    json_t *o = json_object();
    json_object_set_new(o, "script", json_string(script->path));
    json_object_set_new(o, "run", json_integer((json_int_t)run));
    json_object_set_new(o, "flow", json_string(flow));
    json_object_set_new(o, "pid", json_integer(out->pid));
    json_object_set_new(o, "outcome", json_string(activation_status_name(out->status)));
    json_object_set_new(o, "message", json_string(message));
    switch (out->status) {
    case ACTIVATION_COMPLETED: {
        json_t *v = parse_value(out->value != NULL ? out->value : "null");
        if (v != NULL)
            json_object_set_new(o, "value", v);
        else
            json_object_set_new(o, "value_text", json_string(out->value));
        break;
    }
    case ACTIVATION_FAILED:
        json_object_set_new(o, "kind", json_string(out->failure_kind != NULL ? out->failure_kind
                                                                             : ""));
        json_object_set_new(o, "detail", json_string(out->detail != NULL ? out->detail : ""));
        break;
    case ACTIVATION_BUDGET_EXHAUSTED:
        json_object_set_new(o, "budget", json_string(proto_budget_name(out->budget)));
        break;
    case ACTIVATION_WORKER_CRASHED:
        if (out->term_signal > 0)
            json_object_set_new(o, "signal",
                                json_string(activation_signal_name(out->term_signal)));
        else
            json_object_set_new(o, "exit_status", json_integer(out->exit_status));
        break;
    case ACTIVATION_PROTOCOL_ERROR:
    case ACTIVATION_NO_WORKER:
        json_object_set_new(o, "detail", json_string(out->detail != NULL ? out->detail : ""));
        break;
    default:
        break;
    }
    json_object_set_new(o, "host_calls", json_integer(out->host_calls));
    json_object_set_new(o, "wall_ms", json_integer(out->wall_ms));
    if (out->console != NULL)
        json_object_set_new(o, "console", json_string(out->console));
    if (out->console_truncated)
        json_object_set_new(o, "console_truncated", json_true());
    if (out->worker_log != NULL)
        json_object_set_new(o, "worker_log", json_string(out->worker_log));
    (void)json_out_line(stdout, o, JSON_COMPACT);
    json_decref(o);
}

/* Console lines keep their line breaks (each is "stream: text"); every other control
 * or direction character the script or worker chose is escaped (cli/term_text.h). */
static void print_run_human(const struct activation_outcome *out, const char *message)
{
    if (out->console != NULL) /* a console cut short ends in a line saying so */
        term_puts(stderr, out->console, TERM_KEEP_NEWLINES);
    term_puts(stdout, message, 0);
    putchar('\n');
}

static void print_health(struct pool *pool, bool machine)
{
    json_t *h = health_to_json(pool_health(pool));
    if (h == NULL)
        return;
    json_t *wrapped = json_pack("{s:o}", "health", h);
    (void)json_out_line(stdout, wrapped, machine ? JSON_COMPACT : JSON_INDENT(2));
    json_decref(wrapped);
}

static void free_scripts(struct loaded_script *scripts, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(scripts[i].text);
}

int cmd_exec(const struct cli_globals *globals, int argc, char **argv)
{
    struct exec_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != EXIT_OK)
        return rc;
    struct loaded_script scripts[EXEC_MAX_SCRIPTS];
    for (size_t i = 0; i < o.script_count; i++) {
        if (!load_script(o.scripts[i], &scripts[i])) {
            free_scripts(scripts, i);
            return EXIT_USAGE;
        }
    }
    /* A worker's death must never end us: writes to it fail with EPIPE instead. */
    signal(SIGPIPE, SIG_IGN);

    struct activation_request req;
    memset(&req, 0, sizeof req);
    activation_request_defaults(&req, o.profile);
    if (o.have_cpu)
        req.budgets.cpu_ms = (uint32_t)o.cpu_ms;
    if (o.have_heap)
        req.budgets.heap_bytes = o.heap_bytes;
    if (o.have_stack)
        req.budgets.stack_bytes = (uint32_t)o.stack_bytes;
    if (o.have_max_value)
        req.budgets.max_value_bytes = (uint32_t)o.max_value_bytes;
    if (o.have_deadline)
        req.deadline_ms = (long long)o.deadline_ms;
    req.trigger = o.trigger;

    struct pool_config cfg;
    pool_config_defaults(&cfg);
    cfg.policy = o.policy;
    /* A one-shot command starts exactly the workers it uses: every run of every script
     * is bound to one flow id, so its one worker serves them all (and a replacement is
     * started only when one is retired); a spare would be started, checked and killed
     * unused. */
    cfg.spares = 0;
    struct pool *pool = pool_new(&cfg);
    struct test_host *th = test_host_new();
    if (pool == NULL || th == NULL) {
        fprintf(stderr, "ck-basal exec: out of memory\n");
        pool_free(pool);
        test_host_free(th);
        free_scripts(scripts, o.script_count);
        return EXIT_REFUSED;
    }
    struct host host = test_host_interface(th);
    enum pool_use use = o.profile == PROTO_PROFILE_CODEMODE ? POOL_USE_CODEMODE : POOL_USE_FLOW;

    bool all_completed = true;
    uint64_t activation_id = 0;
    for (size_t s = 0; s < o.script_count; s++) {
        for (unsigned long long n = 1; n <= o.repeat; n++) {
            req.activation_id = ++activation_id;
            req.script = scripts[s].text;
            req.script_len = scripts[s].len;
            req.script_name = scripts[s].path;
            struct activation_outcome out;
            pool_run(pool, o.flow, use, &req, &host, &out);
            char message[1024];
            activation_describe(&out, message, sizeof message);
            if (globals->json) {
                print_run_json(&scripts[s], n, o.flow, &out, message);
            } else {
                print_run_human(&out, message);
            }
            fflush(stdout);
            if (out.status != ACTIVATION_COMPLETED)
                all_completed = false;
            activation_outcome_free(&out);
        }
    }
    if (o.health)
        print_health(pool, globals->json);
    pool_free(pool);
    test_host_free(th);
    free_scripts(scripts, o.script_count);
    return all_completed ? EXIT_OK : EXIT_REFUSED;
}
