/* ck-basal runs [FLOW] and ck-basal journal RUN: what the store knows about runs and
 * their host calls, asked as the ops commands "runs" and "journal"
 * (serve/ops_dispatch.h) and rendered from the reply's data. Read-only. */
#include "cli/commands.h"
#include "cli/ops_call.h"
#include "cli/term_text.h"
#include "base/names.h"
#include "store/codemode_store.h"

#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUNS_USAGE "usage: ck-basal runs [FLOW]"
#define JOURNAL_USAGE "usage: ck-basal journal RUN (a number, or c<id> for a codemode run)"
#define SHOWN_MAX 120 /* bytes of args, values or errors in the human listing */

/* A text field of a reply's data, escaped and cut to fit cap (NULL or absent: ""). */
static const char *shown(char *dst, size_t cap, const json_t *o, const char *key)
{
    return term_show(dst, cap, json_string_value(json_object_get(o, key)), 0);
}

static long long number(const json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

static void print_flow_run_line(const json_t *run)
{
    char id[TERM_SHOWN_CAP(FLOW_ID_MAX)], state[TERM_SHOWN_CAP(16)], error[SHOWN_MAX + 1];
    printf("%-6lld %-20s %-7lld %-16s %s\n", number(run, "run"),
           shown(id, sizeof id, run, "flow"), number(run, "version"),
           shown(state, sizeof state, run, "state"), shown(error, sizeof error, run, "error"));
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
        char shown_flow[TERM_SHOWN_CAP(80)];
        fprintf(stderr, "ck-basal runs: unknown flow '%s' (not a flow id)\n",
                term_show(shown_flow, sizeof shown_flow, flow, 0));
        return EXIT_REFUSED;
    }
    json_t *args = json_object();
    if (flow != NULL)
        json_object_set_new(args, "flow", json_string(flow));
    json_t *request = cli_ops_request("runs", args), *runs;
    int status = cli_ops_call(g, "runs", request, &runs);
    json_decref(request);
    if (status != EXIT_OK)
        return status;
    if (g->json) {
        cli_print_json(runs);
        return EXIT_OK;
    }
    if (json_array_size(runs) == 0) {
        printf("no runs\n");
    } else {
        printf("%-6s %-20s %-7s %-16s %s\n", "RUN", "FLOW", "VERSION", "STATE", "ERROR");
        size_t i;
        const json_t *run;
        json_array_foreach (runs, i, run) {
            const char *kind = json_string_value(json_object_get(run, "kind"));
            if (kind != NULL && strcmp(kind, "codemode") == 0)
                codemode_view_run_line(run);
            else
                print_flow_run_line(run);
        }
    }
    json_decref(runs);
    return EXIT_OK;
}

/* One call, on one line: its kind, value and args are the script's, escaped and cut
 * to SHOWN_MAX bytes ("..." when cut); the value and args as stored (value_text,
 * args_text). */
static void print_entry(const json_t *e)
{
    char order[24] = "-";
    const json_t *delivery = json_object_get(e, "delivery_order");
    if (json_is_integer(delivery))
        snprintf(order, sizeof order, "%" JSON_INTEGER_FORMAT, json_integer_value(delivery));
    const json_t *settled = json_object_get(e, "outcome");
    const char *outcome = json_is_true(json_object_get(e, "waiting")) ? "(waiting)"
                          : !json_is_object(settled)                 ? "(no outcome)"
                          : json_object_get(settled, "fulfilled") != NULL ? "fulfilled"
                                                                          : "rejected";
    char kind[SHOWN_MAX + 1], cls[TERM_SHOWN_CAP(16)], state[TERM_SHOWN_CAP(16)];
    char value[SHOWN_MAX + 1], args[SHOWN_MAX + 1];
    printf("%-5u %-12s %-15s %-8s %-6s %-12s %s", (unsigned)number(e, "position"),
           shown(kind, sizeof kind, e, "kind"), shown(cls, sizeof cls, e, "class"),
           shown(state, sizeof state, e, "state"), order, outcome,
           shown(value, sizeof value, e, "value_text"));
    printf("   args %s\n", shown(args, sizeof args, e, "args_text"));
}

int cmd_journal(const struct cli_globals *g, int argc, char **argv)
{
    long long run_id;
    int64_t codemode_id;
    bool codemode = argc == 1 && codemode_run_ref_parse(argv[0], &codemode_id);
    if (!codemode && (argc != 1 || !cli_parse_int(argv[0], 1, INT64_MAX, &run_id))) {
        fprintf(stderr, "ck-basal journal: %s (%s)\n",
                argc != 1 ? "takes one run id"
                          : "the run id must be a positive number, or c<id> for a codemode run",
                JOURNAL_USAGE);
        return EXIT_USAGE;
    }
    json_t *args = json_object();
    json_object_set_new(args, "run", json_string(argv[0]));
    json_t *request = cli_ops_request("journal", args), *run;
    int status = cli_ops_call(g, "journal", request, &run);
    json_decref(request);
    if (status != EXIT_OK)
        return status;
    if (g->json) {
        cli_print_json(run);
        return EXIT_OK;
    }
    if (codemode) {
        codemode_view_journal(run);
    } else {
        char id[TERM_SHOWN_CAP(FLOW_ID_MAX)], state[TERM_SHOWN_CAP(16)];
        printf("run %lld of flow %s (version %lld): %s\n", number(run, "run"),
               shown(id, sizeof id, run, "flow"), number(run, "version"),
               shown(state, sizeof state, run, "state"));
        printf("%-5s %-12s %-15s %-8s %-6s %-12s %s\n", "POS", "KIND", "CLASS", "STATE", "ORDER",
               "OUTCOME", "VALUE");
        const json_t *calls = json_object_get(run, "calls");
        for (size_t i = 0; i < json_array_size(calls); i++)
            print_entry(json_array_get(calls, i));
    }
    json_decref(run);
    return EXIT_OK;
}
