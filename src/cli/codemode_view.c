/* Codemode runs as `ck-basal runs` lists them and `ck-basal journal c<id>` shows one
 * (store/codemode_store.h; docs/operations.md has the formats). Read-only. */
#include "cli/commands.h"
#include "cli/term_text.h"
#include "store/codemode_store.h"
#include "store/store.h"

#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOWN_MAX 120 /* bytes of args or values in the human listing */

static json_t *json_of(const char *text)
{
    if (text == NULL)
        return json_null();
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    return v != NULL ? v : json_string(text);
}

void *codemode_view_run_json(const struct codemode_run_row *r)
{
    char ref[24];
    codemode_run_ref(r->id, ref);
    json_t *o = json_object();
    json_object_set_new(o, "run", json_string(ref));
    json_object_set_new(o, "kind", json_string("codemode"));
    json_object_set_new(o, "id", json_integer(r->id));
    json_object_set_new(o, "script", json_string(r->script_name));
    json_object_set_new(o, "script_sha256", json_string(r->script_sha256));
    json_object_set_new(o, "input", json_of(r->input));
    json_object_set_new(o, "state", json_string(codemode_run_state_name(r->state)));
    json_object_set_new(o, "outcome", r->outcome != NULL ? json_string(r->outcome) : json_null());
    json_object_set_new(o, "result", json_of(r->result));
    json_object_set_new(o, "error", r->error != NULL ? json_string(r->error) : json_null());
    json_object_set_new(o, "tool_calls", json_integer(r->tool_calls));
    json_object_set_new(o, "over_limit_calls", json_integer(r->over_limit_calls));
    json_object_set_new(o, "console_truncated", json_boolean(r->console_truncated));
    json_object_set_new(o, "wall_ms", r->wall_ms >= 0 ? json_integer(r->wall_ms) : json_null());
    json_object_set_new(o, "created_at_ms", json_integer(r->created_at));
    json_object_set_new(o, "updated_at_ms", json_integer(r->updated_at));
    return o;
}

void codemode_view_run_line(const struct codemode_run_row *r)
{
    char ref[24];
    codemode_run_ref(r->id, ref);
    char error[SHOWN_MAX + 4];
    printf("%-6s %-20s %-7s %-16s %s\n", ref, "(codemode)", "-",
           codemode_run_state_name(r->state),
           term_show(error, sizeof error, r->error != NULL ? r->error : "", 0));
}

static json_t *call_json(const struct codemode_call *c)
{
    json_t *o = json_object();
    json_object_set_new(o, "position", json_integer(c->position));
    json_object_set_new(o, "kind", json_string(c->kind));
    json_object_set_new(o, "tool", c->tool != NULL ? json_string(c->tool) : json_null());
    json_object_set_new(o, "module", c->module != NULL ? json_string(c->module) : json_null());
    json_object_set_new(o, "op", c->op != NULL ? json_string(c->op) : json_null());
    json_object_set_new(o, "class", c->has_class ? json_string(c->mutation ? "mutation" : "query")
                                                 : json_null());
    json_object_set_new(o, "args", json_of(c->args));
    json_object_set_new(o, "args_sha256", json_string(c->digest));
    json_object_set_new(o, "idempotency_key", c->key[0] != '\0' ? json_string(c->key)
                                                                : json_null());
    json_object_set_new(o, "decision", json_string(c->allowed ? "allowed" : "refused"));
    json_object_set_new(o, "state", json_string(c->settled ? "settled" : "pending"));
    json_t *outcome = json_null();
    if (c->settled) {
        outcome = json_object();
        json_object_set_new(outcome, c->settlement == PROTO_SETTLEMENT_FULFILLED ? "fulfilled"
                                                                                : "rejected",
                            json_of(c->value));
    }
    json_object_set_new(o, "outcome", outcome);
    return o;
}

/* A cell of script text: escaped and cut. */
static void print_cell(const char *text)
{
    char shown[SHOWN_MAX + 4];
    fputs(term_show(shown, sizeof shown, text, 0), stdout);
}

static void print_call(const struct codemode_call *c)
{
    const char *outcome = !c->settled ? "(no outcome)"
                          : c->settlement == PROTO_SETTLEMENT_FULFILLED ? "fulfilled"
                                                                        : "rejected";
    char kind[40 + 4];
    term_show(kind, sizeof kind, c->kind, 0);
    printf("%-5u %-10s %-24s %-9s %-8s %-8s %-12s ", (unsigned)c->position,
           kind, c->tool != NULL ? c->tool : "-",
           c->has_class ? (c->mutation ? "mutation" : "query") : "-",
           c->allowed ? "allowed" : "refused", c->settled ? "settled" : "pending", outcome);
    print_cell(c->settled && c->value != NULL ? c->value : "");
    fputs("   args ", stdout);
    print_cell(c->args);
    fputs("\n", stdout);
}

int cmd_codemode_journal(const struct cli_globals *g, int64_t id)
{
    struct store *st;
    char home[PATH_MAX], err[512];
    if (cli_open_store(g, "journal", &st, home) != 0)
        return EXIT_REFUSED;
    struct codemode_run_row run;
    int found = codemode_run_get(st, id, &run, err, sizeof err);
    struct codemode_call *calls = NULL;
    size_t n = 0;
    int rc = found == 1 ? codemode_calls_load(st, id, &calls, &n, err, sizeof err) : -1;
    store_close(st);
    if (found == 0)
        snprintf(err, sizeof err, "unknown codemode run c%" PRId64, id);
    if (rc != 0) {
        fprintf(stderr, "ck-basal journal: %s\n", err);
        if (found == 1)
            codemode_run_row_free(&run);
        return EXIT_REFUSED;
    }
    if (g->json) {
        json_t *o = codemode_view_run_json(&run);
        json_t *list = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(list, call_json(&calls[i]));
        json_object_set_new(o, "calls", list);
        json_object_set_new(o, "console", run.console != NULL ? json_string(run.console)
                                                              : json_null());
        cli_print_json(o);
    } else {
        char ref[24];
        codemode_run_ref(run.id, ref);
        printf("codemode run %s (script ", ref);
        print_cell(run.script_name);
        printf(", sha256 %.12s...): %s\n", run.script_sha256,
               codemode_run_state_name(run.state));
        if (run.over_limit_calls > 0)
            printf("%" PRId64 " more tool calls were refused over the run's limit (not listed)\n",
                   run.over_limit_calls);
        printf("%-5s %-10s %-24s %-9s %-8s %-8s %-12s %s\n", "POS", "KIND", "TOOL", "CLASS",
               "DECISION", "STATE", "OUTCOME", "VALUE");
        for (size_t i = 0; i < n; i++)
            print_call(&calls[i]);
    }
    for (size_t i = 0; i < n; i++)
        codemode_call_free(&calls[i]);
    free(calls);
    codemode_run_row_free(&run);
    return EXIT_OK;
}
