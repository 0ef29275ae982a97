/* ck-basal runs [FLOW] and ck-basal journal RUN: what the store knows about runs and
 * their host calls. Read-only. */
#include "cli/commands.h"
#include "cli/term_text.h"
#include "base/json_js.h"
#include "base/names.h"
#include "flows/flows.h"
#include "store/codemode_store.h"
#include "store/journal.h"
#include "store/runs.h"
#include "store/store.h"

#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUNS_USAGE "usage: ck-basal runs [FLOW]"
#define JOURNAL_USAGE "usage: ck-basal journal RUN (a number, or c<id> for a codemode run)"
#define SHOWN_MAX 120 /* bytes of args, values or errors in the human listing */

/* JSON text as a value (the text itself, as a string, if it does not parse). */
static json_t *json_of(const char *text)
{
    if (text == NULL)
        return json_null();
    json_t *v = json_js_loads(text, JSON_DECODE_ANY, NULL); /* 1e19 too */
    return v != NULL ? v : json_string(text);
}

static json_t *run_json(const struct run_row *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "run", json_integer(r->id));
    json_object_set_new(o, "kind", json_string("flow"));
    json_object_set_new(o, "flow", json_string(r->flow_id));
    json_object_set_new(o, "version", json_integer(r->version));
    json_object_set_new(o, "trigger_id", json_string(r->trigger_id));
    json_object_set_new(o, "trigger", json_of(r->trigger));
    json_object_set_new(o, "state", json_string(run_state_name(r->state)));
    json_object_set_new(o, "generation", json_integer(r->generation));
    json_object_set_new(o, "result", json_of(r->result));
    json_object_set_new(o, "error", r->error != NULL ? json_string(r->error) : json_null());
    json_object_set_new(o, "created_at_ms", json_integer(r->created_at));
    json_object_set_new(o, "updated_at_ms", json_integer(r->updated_at));
    return o;
}

int cmd_runs(const struct cli_globals *g, int argc, char **argv)
{
    if (argc > 1 || (argc == 1 && argv[0][0] == '-')) {
        fprintf(stderr, "ck-basal runs: unexpected argument '%s' (%s)\n", argv[argc - 1],
                RUNS_USAGE);
        return EXIT_USAGE;
    }
    const char *flow = argc == 1 ? argv[0] : NULL;
    if (flow != NULL && !flow_id_valid(flow)) {
        char shown[TERM_SHOWN_CAP(80)];
        fprintf(stderr, "ck-basal runs: unknown flow '%s' (not a flow id)\n",
                term_show(shown, sizeof shown, flow, 0));
        return EXIT_REFUSED;
    }
    struct store *st;
    char home[PATH_MAX], err[512];
    if (cli_open_store(g, "runs", &st, home) != 0)
        return EXIT_REFUSED;
    /* A flow that was never installed is an error, not an empty listing. */
    int known = flow != NULL ? flows_known(st, flow, err, sizeof err) : 1;
    if (known != 1) {
        store_close(st);
        if (known == 0)
            snprintf(err, sizeof err, "unknown flow '%s'", flow);
        term_error_line("runs", err);
        return EXIT_REFUSED;
    }
    struct run_row *rows;
    size_t n;
    int rc = runs_list(st, flow, &rows, &n, err, sizeof err);
    /* Codemode runs (c<id>) belong to no flow: listed only without a FLOW. */
    struct codemode_run_row *cm = NULL;
    size_t cm_n = 0;
    if (rc == 0 && flow == NULL)
        rc = codemode_runs_list(st, &cm, &cm_n, err, sizeof err);
    store_close(st);
    if (rc != 0) {
        term_error_line("runs", err);
        for (size_t i = 0; i < n; i++)
            run_row_free(&rows[i]);
        free(rows);
        return EXIT_REFUSED;
    }
    if (g->json) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(a, run_json(&rows[i]));
        for (size_t i = 0; i < cm_n; i++)
            json_array_append_new(a, codemode_view_run_json(&cm[i]));
        cli_print_json(a);
    } else if (n + cm_n == 0) {
        printf("no runs\n");
    } else {
        printf("%-6s %-20s %-7s %-16s %s\n", "RUN", "FLOW", "VERSION", "STATE", "ERROR");
        for (size_t i = 0; i < n; i++) {
            char id[TERM_SHOWN_CAP(FLOW_ID_MAX)], error[SHOWN_MAX + 1];
            printf("%-6" PRId64 " %-20s %-7" PRId64 " %-16s %s\n", rows[i].id,
                   term_show(id, sizeof id, rows[i].flow_id, 0), rows[i].version,
                   run_state_name(rows[i].state), term_show(error, sizeof error, rows[i].error, 0));
        }
        for (size_t i = 0; i < cm_n; i++)
            codemode_view_run_line(&cm[i]);
    }
    for (size_t i = 0; i < n; i++)
        run_row_free(&rows[i]);
    free(rows);
    for (size_t i = 0; i < cm_n; i++)
        codemode_run_row_free(&cm[i]);
    free(cm);
    return EXIT_OK;
}

static json_t *entry_json(const struct journal_entry *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "position", json_integer(e->position));
    json_object_set_new(o, "kind", json_string(e->kind));
    json_object_set_new(o, "args", json_of(e->args));
    json_object_set_new(o, "args_sha256", json_string(e->digest));
    json_object_set_new(o, "class", json_string(journal_class_name(e->cls)));
    json_object_set_new(o, "idempotency_key", json_string(e->key));
    json_object_set_new(o, "state", json_string(journal_state_name(e->state)));
    json_t *outcome = json_null();
    if (e->has_outcome) {
        outcome = json_object();
        json_object_set_new(outcome, e->settlement == PROTO_SETTLEMENT_FULFILLED ? "fulfilled"
                                                                                : "rejected",
                            json_of(e->value));
    }
    json_object_set_new(o, "outcome", outcome);
    json_object_set_new(o, "delivery_order",
                        e->delivery_order >= 0 ? json_integer(e->delivery_order) : json_null());
    return o;
}

/* One call, on one line: its kind, value and args are the script's, escaped and cut
 * to SHOWN_MAX bytes ("..." when cut). */
static void print_entry(const struct journal_entry *e)
{
    char order[24] = "-";
    if (e->delivery_order >= 0)
        snprintf(order, sizeof order, "%" PRId64, e->delivery_order);
    const char *outcome = !e->has_outcome ? "(no outcome)"
                          : e->settlement == PROTO_SETTLEMENT_FULFILLED ? "fulfilled" : "rejected";
    char kind[SHOWN_MAX + 1], value[SHOWN_MAX + 1], args[SHOWN_MAX + 1];
    printf("%-5u %-12s %-15s %-8s %-6s %-12s %s", (unsigned)e->position,
           term_show(kind, sizeof kind, e->kind, 0), journal_class_name(e->cls),
           journal_state_name(e->state), order, outcome,
           term_show(value, sizeof value, e->has_outcome ? e->value : NULL, 0));
    printf("   args %s\n", term_show(args, sizeof args, e->args, 0));
}

int cmd_journal(const struct cli_globals *g, int argc, char **argv)
{
    long long run_id;
    int64_t codemode_id;
    if (argc == 1 && codemode_run_ref_parse(argv[0], &codemode_id))
        return cmd_codemode_journal(g, codemode_id);
    if (argc != 1 || !cli_parse_int(argv[0], 1, INT64_MAX, &run_id)) {
        fprintf(stderr, "ck-basal journal: %s (%s)\n",
                argc != 1 ? "takes one run id"
                          : "the run id must be a positive number, or c<id> for a codemode run",
                JOURNAL_USAGE);
        return EXIT_USAGE;
    }
    struct store *st;
    char home[PATH_MAX], err[512];
    if (cli_open_store(g, "journal", &st, home) != 0)
        return EXIT_REFUSED;
    struct run_row run;
    int found = runs_get(st, run_id, &run, err, sizeof err);
    struct journal_entry *rows = NULL;
    size_t n = 0;
    int rc = found == 1 ? journal_load(st, run_id, &rows, &n, err, sizeof err) : -1;
    store_close(st);
    if (found == 0)
        snprintf(err, sizeof err, "unknown run %lld", run_id);
    if (rc != 0) {
        term_error_line("journal", err);
        if (found == 1)
            run_row_free(&run);
        return EXIT_REFUSED;
    }
    if (g->json) {
        json_t *o = run_json(&run);
        json_t *calls = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(calls, entry_json(&rows[i]));
        json_object_set_new(o, "calls", calls);
        cli_print_json(o);
    } else {
        char id[TERM_SHOWN_CAP(FLOW_ID_MAX)];
        printf("run %" PRId64 " of flow %s (version %" PRId64 "): %s\n", run.id,
               term_show(id, sizeof id, run.flow_id, 0), run.version, run_state_name(run.state));
        printf("%-5s %-12s %-15s %-8s %-6s %-12s %s\n", "POS", "KIND", "CLASS", "STATE", "ORDER",
               "OUTCOME", "VALUE");
        for (size_t i = 0; i < n; i++)
            print_entry(&rows[i]);
    }
    journal_entries_free(rows, n);
    run_row_free(&run);
    return EXIT_OK;
}
