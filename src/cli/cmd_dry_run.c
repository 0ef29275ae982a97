/* ck-basal flow dry-run DIR | ID --version N [--trigger JSON] [--fixtures FILE]
 * [--allow-queries]: what a flow version would do, before the operator approves it
 * (docs/operations.md, "Dry runs").
 *
 * The version (installed, approved or not) or the directory (not installed) runs once
 * in a single-use worker through the dry-run host (flows/dry_run_host.h): reads are
 * performed for real, mutations never, module queries only with --allow-queries, and
 * every refusal a run would meet is met the same way. Every host call is listed. The
 * store gets one audit row ("flow.dry_run") and nothing else: no run, no journal, no
 * kv change. Exit 0 when the script completed, 1 when it did not or the dry run was
 * refused, 2 for usage. */
#include "cli/commands.h"
#include "base/clock.h"
#include "cli/json_argument.h"
#include "cli/term_text.h"
#include "flows/code_hash.h"
#include "flows/dry_run_fixtures.h"
#include "flows/dry_run_host.h"
#include "flows/flows.h"
#include "flows/manifest.h"
#include "store/audit.h"
#include "store/store.h"
#include "supervisor/activation.h"
#include "supervisor/pool.h"
#include "host/ops_module.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define DRY_RUN_USAGE "usage: ck-basal flow dry-run DIR | ID --version N [--trigger JSON] " \
                      "[--fixtures FILE] [--allow-queries] [--landlock=required|optional]"
#define WHAT "flow dry-run"
#define SHOWN_MAX 120 /* bytes of args or values in the human listing */

struct dry_options {
    const char *target; /* DIR, or ID with --version */
    const char *version_text;
    int64_t version; /* --version, parsed */
    const char *trigger;
    const char *fixtures;
    bool allow_queries;
    bool json;
    enum landlock_policy policy;
};

static int usage(const char *what)
{
    fprintf(stderr, "ck-basal " WHAT ": %s (%s)\n", what, DRY_RUN_USAGE);
    return EXIT_USAGE;
}

static int parse(int argc, char **argv, struct dry_options *o)
{
    memset(o, 0, sizeof *o);
    o->policy = LANDLOCK_POLICY_REQUIRED;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char **slot = strcmp(arg, "--version") == 0    ? &o->version_text
                            : strcmp(arg, "--trigger") == 0  ? &o->trigger
                            : strcmp(arg, "--fixtures") == 0 ? &o->fixtures
                                                             : NULL;
        if (slot != NULL) {
            if (i + 1 >= argc) {
                char what[64];
                snprintf(what, sizeof what, "%s needs a value", arg);
                return usage(what);
            }
            *slot = argv[++i];
        } else if (strcmp(arg, "--allow-queries") == 0) {
            o->allow_queries = true;
        } else if (strcmp(arg, "--json") == 0) {
            o->json = true;
        } else if (strcmp(arg, "--landlock=required") == 0) {
            o->policy = LANDLOCK_POLICY_REQUIRED;
        } else if (strcmp(arg, "--landlock=optional") == 0) {
            o->policy = LANDLOCK_POLICY_OPTIONAL;
        } else if (arg[0] == '-') {
            fprintf(stderr, "ck-basal " WHAT ": unknown option '%.60s' (%s)\n", arg,
                    DRY_RUN_USAGE);
            return EXIT_USAGE;
        } else if (o->target != NULL) {
            return usage("takes one directory, or one flow id with --version");
        } else {
            o->target = arg;
        }
    }
    if (o->target == NULL)
        return usage("needs a directory, or a flow id with --version N");
    long long version = 0;
    if (o->version_text != NULL && !cli_parse_int(o->version_text, 1, INT64_MAX, &version)) {
        fprintf(stderr, "ck-basal " WHAT ": --version '%.40s' is not a version number (>= 1)\n",
                o->version_text);
        return EXIT_USAGE;
    }
    o->version = version;
    return EXIT_OK;
}

/* The flow to dry-run: its exact bytes, parsed manifest and where it came from. */
struct subject {
    struct flow_blob script, manifest_bytes;
    struct manifest manifest;
    char code_hash[CODE_HASH_HEX_LEN + 1];
    bool from_store;
    bool approved;
};

static void subject_free(struct subject *s)
{
    flows_blob_free(&s->script);
    flows_blob_free(&s->manifest_bytes);
    manifest_free(&s->manifest);
}

static int load_subject(struct store *st, const struct dry_options *o, struct subject *s,
                        char *err, size_t err_cap)
{
    memset(s, 0, sizeof *s);
    if (o->version_text != NULL) {
        s->from_store = true;
        if (flows_load_version(st, o->target, o->version, &s->script, &s->manifest_bytes,
                               s->code_hash, &s->approved, err, err_cap) != 0)
            return -1;
    } else {
        if (flows_read_dir(o->target, &s->script, &s->manifest_bytes, err, err_cap) != 0)
            return -1;
        if (script_validate(s->script.bytes, s->script.len, err, err_cap) != 0) {
            subject_free(s);
            return -1;
        }
        if (code_hash_hex(s->script.bytes, s->script.len, s->manifest_bytes.bytes,
                          s->manifest_bytes.len, s->code_hash) != 0) {
            subject_free(s);
            snprintf(err, err_cap, "code hash: libcrypto failed");
            return -1;
        }
    }
    if (manifest_parse(s->manifest_bytes.bytes, s->manifest_bytes.len, &s->manifest, err,
                       err_cap) != 0) {
        subject_free(s);
        return -1;
    }
    if (s->from_store && strcmp(s->manifest.id, o->target) != 0) { /* install checked it */
        snprintf(err, err_cap, "flow '%s': the stored manifest names flow '%s'", o->target,
                 s->manifest.id);
        subject_free(s);
        return -1;
    }
    return 0;
}

/* ---- output ------------------------------------------------------------------------- */

/* How the dry run ended, as a run of the same script would: a per-run limit passed
 * fails it whatever the script did after (the run's error "limit: ..."). */
struct ending {
    const char *status; /* an activation status name */
    bool completed;
    char message[1024]; /* why it did not complete ("" when it did) */
};

static void ending_of(const struct activation_outcome *out, const struct dry_run_host *h,
                      struct ending *e)
{
    const char *limit = dry_run_host_stopped(h);
    e->completed = out->status == ACTIVATION_COMPLETED && limit == NULL;
    e->status = limit != NULL ? activation_status_name(ACTIVATION_FAILED)
                              : activation_status_name(out->status);
    e->message[0] = '\0';
    if (limit != NULL)
        snprintf(e->message, sizeof e->message, "limit: %s", limit);
    else if (!e->completed)
        activation_describe(out, e->message, sizeof e->message);
}

struct tally {
    unsigned performed, captured, fixtures, refused;
};

static struct tally count_calls(const struct dry_run_call *calls, size_t n)
{
    struct tally t = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        if (calls[i].status == DRY_RUN_PERFORMED)
            t.performed++;
        else if (calls[i].status == DRY_RUN_CAPTURED)
            t.captured++;
        else
            t.refused++;
        if (calls[i].from_fixture)
            t.fixtures++;
    }
    return t;
}

static json_t *json_of(const char *text)
{
    if (text == NULL)
        return json_null();
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    return v != NULL ? v : json_string(text);
}

static json_t *call_json(const struct dry_run_call *c)
{
    json_t *o = json_object();
    json_object_set_new(o, "position", json_integer(c->position));
    json_object_set_new(o, "kind", json_string(c->kind));
    json_object_set_new(o, "args", json_of(c->args));
    json_object_set_new(o, "class", json_string(journal_class_name(c->cls)));
    json_object_set_new(o, "status", json_string(dry_run_status_name(c->status)));
    json_object_set_new(o, "fixture", json_boolean(c->from_fixture));
    json_t *outcome = json_null();
    if (c->value != NULL) {
        outcome = json_object();
        json_object_set_new(outcome, c->settlement == PROTO_SETTLEMENT_FULFILLED ? "fulfilled"
                                                                                : "rejected",
                            json_of(c->value));
    }
    json_object_set_new(o, "outcome", outcome);
    return o;
}

static void print_json(const struct subject *s, const struct activation_outcome *out,
                       const struct ending *e, struct dry_run_host *h)
{
    size_t n;
    const struct dry_run_call *calls = dry_run_host_calls(h, &n);
    struct tally t = count_calls(calls, n);
    json_t *o = json_object();
    json_object_set_new(o, "flow", json_string(s->manifest.id));
    json_object_set_new(o, "version", json_integer(s->manifest.version));
    json_object_set_new(o, "source", json_string(s->from_store ? "store" : "directory"));
    json_object_set_new(o, "approved", s->from_store ? json_boolean(s->approved) : json_null());
    json_object_set_new(o, "code_hash", json_string(s->code_hash));
    json_object_set_new(o, "outcome", json_string(e->status));
    json_object_set_new(o, "result", e->completed ? json_of(out->value) : json_null());
    json_object_set_new(o, "error", e->completed ? json_null() : json_string(e->message));
    if (out->status == ACTIVATION_FAILED && out->detail != NULL && dry_run_host_stopped(h) == NULL)
        json_object_set_new(o, "detail", json_string(out->detail));
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list, call_json(&calls[i]));
    json_object_set_new(o, "calls", list);
    json_object_set_new(o, "performed", json_integer(t.performed));
    json_object_set_new(o, "captured", json_integer(t.captured));
    json_object_set_new(o, "from_fixtures", json_integer(t.fixtures));
    json_object_set_new(o, "refused", json_integer(t.refused));
    json_object_set_new(o, "over_limit_calls", json_integer(dry_run_host_over_limit(h)));
    json_object_set_new(o, "wall_ms", json_integer(out->wall_ms));
    cli_print_json(o);
}

static void print_cell(const char *text)
{
    char shown[SHOWN_MAX + 4];
    fputs(term_show(shown, sizeof shown, text, 0), stdout);
}

static void print_human(const struct subject *s, const struct activation_outcome *out,
                        const struct ending *e, struct dry_run_host *h)
{
    size_t n;
    const struct dry_run_call *calls = dry_run_host_calls(h, &n);
    struct tally t = count_calls(calls, n);
    printf("dry run of flow %s version %" PRId64 " (%s, code hash %s): %s\n", s->manifest.id,
           s->manifest.version,
           !s->from_store ? "from a directory" : s->approved ? "approved" : "not approved",
           s->code_hash, e->status);
    bool completed = e->completed && out->value != NULL;
    const char *shown = completed ? out->value : e->message;
    fputs(completed ? "result: " : "error: ", stdout);
    term_puts(stdout, shown, 0);
    fputs("\n", stdout);
    printf("%-5s %-12s %-15s %-10s %-20s %s\n", "POS", "KIND", "CLASS", "STATUS", "OUTCOME",
           "VALUE");
    for (size_t i = 0; i < n; i++) {
        const struct dry_run_call *c = &calls[i];
        char kind[40 + 4];
        term_show(kind, sizeof kind, c->kind, 0);
        char outcome[32];
        snprintf(outcome, sizeof outcome, "%s%s",
                 c->value == NULL ? "(no outcome)"
                 : c->settlement == PROTO_SETTLEMENT_FULFILLED ? "fulfilled"
                                                               : "rejected",
                 c->from_fixture ? " (fixture)" : "");
        printf("%-5u %-12s %-15s %-10s %-20s ", (unsigned)c->position, kind,
               journal_class_name(c->cls), dry_run_status_name(c->status), outcome);
        print_cell(c->value != NULL ? c->value : "");
        fputs("   args ", stdout);
        print_cell(c->args);
        fputs("\n", stdout);
    }
    printf("%zu calls: %u performed (reads), %u captured (%u from fixtures), %u refused", n,
           t.performed, t.captured, t.fixtures, t.refused);
    if (dry_run_host_over_limit(h) > 0)
        printf(", %u more over the run's limit", dry_run_host_over_limit(h));
    printf("; nothing was changed\n");
}

/* ---- the dry run -------------------------------------------------------------------- */

/* The one row a dry run leaves in the store. */
static int audit(struct store *st, const struct subject *s, const struct ending *e,
                 struct dry_run_host *h, char *err, size_t err_cap)
{
    size_t n;
    const struct dry_run_call *calls = dry_run_host_calls(h, &n);
    struct tally t = count_calls(calls, n);
    char reason[512];
    snprintf(reason, sizeof reason, "dry run of version %" PRId64 " (%s, code hash %s): %s;"
             " %zu calls: %u performed, %u captured, %u refused", s->manifest.version,
             s->from_store ? (s->approved ? "approved" : "not approved") : "from a directory",
             s->code_hash, e->status, n, t.performed, t.captured,
             t.refused);
    if (store_begin_txn(st, err, err_cap) != 0)
        return -1;
    return store_end_txn(st, audit_record(st, s->manifest.id, -1, -1, "flow.dry_run", true,
                                          reason, err, err_cap),
                         err, err_cap);
}

static int dry_run(struct store *st, const char *home, const struct dry_options *o,
                   const struct subject *s,
                   const struct ops_catalog *catalog, const struct dry_run_fixtures *fixtures,
                   const char *trigger, bool json)
{
    struct activation_request req;
    memset(&req, 0, sizeof req);
    activation_request_defaults(&req, PROTO_PROFILE_FLOW);
    uint64_t random_id = 0; /* names this dry run's activation and keys, nothing more */
    if (getrandom(&random_id, sizeof random_id, 0) != (ssize_t)sizeof random_id)
        random_id = (uint64_t)monotonic_ms();
    req.activation_id = random_id;
    req.script = s->script.bytes;
    req.script_len = s->script.len;
    /* Errors name the file: DIR/flow.js, or FLOW/flow.js of an installed version. */
    char script_name[PATH_MAX + 16];
    snprintf(script_name, sizeof script_name, "%s/flow.js", o->target);
    req.script_name = script_name;
    req.trigger = trigger;
    req.budgets = s->manifest.limits;
    if ((long long)s->manifest.deadline_s * 1000 < req.deadline_ms)
        req.deadline_ms = (long long)s->manifest.deadline_s * 1000;
    char trigger_id[40];
    snprintf(trigger_id, sizeof trigger_id, "dry-run-%016llx", (unsigned long long)random_id);
    struct dry_run_config cfg = {st,        s->manifest.id, trigger_id,      &s->manifest,
                                 catalog,   fixtures,       o->allow_queries,
                                 monotonic_ms() + req.deadline_ms, home};
    struct pool_config pc;
    pool_config_defaults(&pc);
    pc.policy = o->policy;
    pc.spares = 0; /* one single-use worker */
    struct pool *pool = pool_new(&pc);
    struct dry_run_host *h = dry_run_host_new(&cfg);
    if (pool == NULL || h == NULL) {
        fprintf(stderr, "ck-basal " WHAT ": out of memory\n");
        pool_free(pool);
        dry_run_host_free(h);
        return EXIT_REFUSED;
    }
    struct host host = dry_run_host_interface(h);
    struct activation_outcome out;
    pool_run(pool, s->manifest.id, POOL_USE_DRY_RUN, &req, &host, &out);
    pool_free(pool);
    struct ending e;
    ending_of(&out, h, &e);
    char err[512];
    int rc = e.completed ? EXIT_OK : EXIT_REFUSED;
    if (audit(st, s, &e, h, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal " WHAT ": %s\n", err);
        rc = EXIT_REFUSED;
    }
    if (json)
        print_json(s, &out, &e, h);
    else
        print_human(s, &out, &e, h);
    activation_outcome_free(&out);
    dry_run_host_free(h);
    return rc;
}

int cmd_flow_dry_run(const struct cli_globals *g, int argc, char **argv)
{
    struct dry_options o;
    int rc = parse(argc, argv, &o);
    if (rc != EXIT_OK)
        return rc;
    char *trigger =
        cli_json_argument(WHAT, "--trigger", o.trigger != NULL ? o.trigger : "{}", &rc);
    if (trigger == NULL)
        return rc;
    char err[1024];
    struct dry_run_fixtures fixtures = {NULL};
    if (o.fixtures != NULL && dry_run_fixtures_load(o.fixtures, &fixtures, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal " WHAT ": %s\n", err);
        free(trigger);
        return EXIT_REFUSED;
    }
    signal(SIGPIPE, SIG_IGN); /* a worker's death must never end us */
    struct store *st;
    char home[PATH_MAX];
    rc = EXIT_REFUSED;
    if (cli_open_store(g, WHAT, &st, home) == 0) {
        struct subject s;
        struct ops_catalog catalog;
        if (load_subject(st, &o, &s, err, sizeof err) != 0) {
            fprintf(stderr, "ck-basal " WHAT ": %s\n", err);
        } else {
            if (ops_catalog_load(home, &catalog, err, sizeof err) != 0)
                fprintf(stderr, "ck-basal " WHAT ": %s\n", err);
            else
                rc = dry_run(st, home, &o, &s, &catalog, &fixtures, trigger, g->json || o.json);
            ops_catalog_free(&catalog);
            subject_free(&s);
        }
        store_close(st);
    }
    dry_run_fixtures_free(&fixtures);
    free(trigger);
    return rc;
}
