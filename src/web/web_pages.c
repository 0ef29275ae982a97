/* The status page's HTML (web/web_pages.h). */
#include "web/web_pages.h"
#include "web/html_text.h"
#include "web/web_chart.h"
#include "base/json_out.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char WEB_STYLESHEET[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222;background:#fff}\n"
    "header{background:#263238;color:#fff;padding:8px 16px}\n"
    "header a{color:#fff;margin-right:16px;text-decoration:none}\n"
    "header a.current{text-decoration:underline}\n"
    "main{padding:8px 16px}\n"
    "table{border-collapse:collapse;margin:8px 0}\n"
    "th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}\n"
    "th{background:#eceff1}\n"
    "td.json,td.text{font-family:ui-monospace,monospace;white-space:pre-wrap;"
    "word-break:break-all;max-width:48em}\n"
    ".state-failed{color:#c62828}.state-succeeded{color:#2e7d32}"
    ".state-needs_reconcile{color:#ef6c00}\n"
    "form.inline{display:inline-block;margin:4px 8px 4px 0}\n"
    ".legend .key{margin-right:12px}\n";

/* ---------------------------------------------------------------- small parts */

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* A JSON value as its compact text (strings too, with their quotes), escaped. */
static void json_value_text(struct html *h, const json_t *v)
{
    if (v == NULL || json_is_null(v)) {
        html_raw(h, "<span class=\"none\">&#8212;</span>");
        return;
    }
    char *text = json_out_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL) {
        h->failed = true;
        return;
    }
    html_text(h, text);
    free(text);
}

/* A scalar as text: strings as they are, numbers and booleans as JSON. */
static void scalar_text(struct html *h, const json_t *v)
{
    if (json_is_string(v))
        html_text(h, json_string_value(v));
    else
        json_value_text(h, v);
}

static void time_text(struct html *h, const json_t *ms_value)
{
    if (!json_is_integer(ms_value)) {
        json_value_text(h, ms_value);
        return;
    }
    long long ms = json_integer_value(ms_value);
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    char text[40];
    if (gmtime_r(&t, &tm) == NULL || strftime(text, sizeof text, "%Y-%m-%d %H:%M:%SZ", &tm) == 0) {
        html_rawf(h, "%lld", ms);
        return;
    }
    html_raw(h, text);
}

/* Part of a URL's query: only the bytes of a flow id or state pass unescaped. */
static void query_value(struct html *h, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.')
            html_rawf(h, "%c", *p);
        else
            html_rawf(h, "%%%02X", *p);
    }
}

static void run_link(struct html *h, const json_t *run)
{
    const json_t *id = json_object_get(run, "run");
    html_raw(h, "<a class=\"run\" href=\"/run?id=");
    if (json_is_integer(id)) {
        html_rawf(h, "%" JSON_INTEGER_FORMAT "\">%" JSON_INTEGER_FORMAT "</a>",
                  json_integer_value(id), json_integer_value(id));
        return;
    }
    query_value(h, json_is_string(id) ? json_string_value(id) : "");
    html_raw(h, "\">");
    scalar_text(h, id);
    html_raw(h, "</a>");
}


static void page_begin(struct html *h, const char *title, const char *current)
{
    static const char *const NAV[][2] = {
        {"/flows", "flows"}, {"/runs", "runs"}, {"/health", "health"}};
    html_raw(h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"referrer\" content=\"no-referrer\"><title>basal: ");
    html_text(h, title);
    html_raw(h, "</title><link rel=\"stylesheet\" href=\"/style.css\"></head><body><header>"
                "<strong>basal</strong> &#183; ");
    for (size_t i = 0; i < sizeof NAV / sizeof NAV[0]; i++)
        html_rawf(h, "<a href=\"%s\"%s>%s</a>", NAV[i][0],
                  strcmp(NAV[i][1], current) == 0 ? " class=\"current\"" : "", NAV[i][1]);
    html_raw(h, "</header><main><h1>");
    html_text(h, title);
    html_raw(h, "</h1>");
}

static void page_end(struct html *h, bool live)
{
    html_raw(h, "</main>");
    if (live)
        html_raw(h, "<script src=\"/live.js\"></script>");
    html_raw(h, "</body></html>\n");
}

void web_page_message(struct html *h, const char *title, const char *text)
{
    page_begin(h, title, "");
    html_raw(h, "<p id=\"message\">");
    html_text(h, text);
    html_raw(h, "</p>");
    page_end(h, false);
}

/* Any JSON value as nested tables: object keys and scalars as text. */
static void json_table(struct html *h, json_t *v)
{
    if (json_is_object(v)) {
        html_raw(h, "<table class=\"kv\">");
        const char *key;
        json_t *child;
        json_object_foreach(v, key, child) {
            html_raw(h, "<tr><th>");
            html_text(h, key);
            html_raw(h, "</th><td>");
            json_table(h, child);
            html_raw(h, "</td></tr>");
        }
        html_raw(h, "</table>");
    } else if (json_is_array(v) && json_array_size(v) > 0 && json_is_object(json_array_get(v, 0))) {
        size_t i;
        json_t *child;
        json_array_foreach(v, i, child) {
            json_table(h, child);
        }
    } else
        scalar_text(h, v);
}

/* ---------------------------------------------------------------- listings */

/* What one cell of a listing is written from: the row's item, the field the column
 * shows (NULL for a cell written from several), and on the flows page the flow's
 * counters from health (NULL elsewhere). */
struct cell_source {
    const json_t *item;
    const char *field;
    const json_t *counters;
};

/* A column of a listing (flows, runs, a run's journal): its heading, how its cells are
 * opened, and the writer of a cell's content. */
struct column {
    const char *title;
    const char *cell_class; /* the class of every cell, or NULL for none */
    bool state_class;       /* instead: "state state-<the field's value>", for the colours */
    const char *field;
    void (*write)(struct html *h, const struct cell_source *cell);
};

static void field_scalar(struct html *h, const struct cell_source *cell)
{
    scalar_text(h, json_object_get(cell->item, cell->field));
}

static void field_time(struct html *h, const struct cell_source *cell)
{
    time_text(h, json_object_get(cell->item, cell->field));
}

static void field_state(struct html *h, const struct cell_source *cell)
{
    html_text(h, str(cell->item, cell->field));
}

static void counter_scalar(struct html *h, const struct cell_source *cell)
{
    scalar_text(h, json_object_get(cell->counters, cell->field));
}

static void table_head(struct html *h, const struct column *columns, size_t count)
{
    html_raw(h, "<tr>");
    for (size_t i = 0; i < count; i++) {
        html_raw(h, "<th>");
        html_raw(h, columns[i].title);
        html_raw(h, "</th>");
    }
    html_raw(h, "</tr>");
}

static void table_row(struct html *h, const char *row_class, const struct column *columns,
                      size_t count, const json_t *item, const json_t *counters)
{
    html_rawf(h, "<tr class=\"%s\">", row_class);
    for (size_t i = 0; i < count; i++) {
        const struct column *c = &columns[i];
        if (c->state_class) {
            const char *state = str(item, c->field);
            html_raw(h, "<td class=\"state state-");
            query_value(h, state != NULL ? state : "");
            html_raw(h, "\">");
        } else if (c->cell_class != NULL)
            html_rawf(h, "<td class=\"%s\">", c->cell_class);
        else
            html_raw(h, "<td>");
        struct cell_source cell = {item, c->field, counters};
        c->write(h, &cell);
        html_raw(h, "</td>");
    }
    html_raw(h, "</tr>");
}

#define COLUMN_COUNT(columns) (sizeof(columns) / sizeof(columns)[0])

/* ---------------------------------------------------------------- flows */

static void flow_link_cell(struct html *h, const struct cell_source *cell)
{
    const char *id = str(cell->item, "id");
    html_raw(h, "<a href=\"/runs?flow=");
    query_value(h, id != NULL ? id : "");
    html_raw(h, "\">");
    html_text(h, id);
    html_raw(h, "</a>");
}

static void enabled_cell(struct html *h, const struct cell_source *cell)
{
    html_raw(h, json_is_true(json_object_get(cell->item, "enabled")) ? "yes" : "no");
    if (str(cell->item, "disabled_reason") != NULL) {
        html_raw(h, " (");
        html_text(h, str(cell->item, "disabled_reason"));
        html_raw(h, ")");
    }
}

static void latest_version_cell(struct html *h, const struct cell_source *cell)
{
    scalar_text(h, json_object_get(cell->item, "latest_version"));
    html_raw(h, " (");
    scalar_text(h, json_object_get(cell->item, "latest_state"));
    html_raw(h, ")");
}

static void trigger_cell(struct html *h, const struct cell_source *cell)
{
    /* flow.list says when a schedule fires next; other triggers fire on demand. */
    html_raw(h, json_is_object(json_object_get(cell->item, "next_fire")) ? "schedule"
                                                                          : "manual or event");
}

static void next_fire_cell(struct html *h, const struct cell_source *cell)
{
    const json_t *next = json_object_get(cell->item, "next_fire");
    if (json_is_object(next)) {
        scalar_text(h, json_object_get(next, "utc"));
        html_raw(h, " (");
        scalar_text(h, json_object_get(next, "tz"));
        html_raw(h, ")");
    } else
        html_raw(h, "&#8212;");
}

static void run_states_cell(struct html *h, const struct cell_source *cell)
{
    json_t *states = json_object_get(cell->counters, "run_states");
    const char *state;
    json_t *n;
    json_object_foreach(states, state, n) {
        html_text(h, state);
        html_rawf(h, " %" JSON_INTEGER_FORMAT "<br>", json_integer_value(n));
    }
}

static void last_run_cell(struct html *h, const struct cell_source *cell)
{
    const json_t *last = json_object_get(cell->counters, "last_run");
    if (json_is_object(last)) {
        run_link(h, last);
        html_raw(h, " ");
        html_text(h, str(last, "state"));
    } else
        html_raw(h, "&#8212;");
}

static const struct column FLOW_COLUMNS[] = {
    {"flow", NULL, false, NULL, flow_link_cell},
    {"enabled", NULL, false, NULL, enabled_cell},
    {"latest version", NULL, false, NULL, latest_version_cell},
    {"approved version", NULL, false, "approved_version", field_scalar},
    {"approved code hash", "text", false, "approved_code_hash", field_scalar},
    {"trigger", NULL, false, NULL, trigger_cell},
    {"next fire", NULL, false, NULL, next_fire_cell},
    {"runs by state", NULL, false, NULL, run_states_cell},
    {"queue", NULL, false, "queue_depth", counter_scalar},
    {"last run", NULL, false, NULL, last_run_cell},
};

void web_page_flows(struct html *h, const json_t *flows, const json_t *health)
{
    const json_t *per_flow = json_object_get(health, "flows");
    page_begin(h, "flows", "flows");
    html_raw(h, "<table id=\"flows\">");
    table_head(h, FLOW_COLUMNS, COLUMN_COUNT(FLOW_COLUMNS));
    size_t i;
    const json_t *f;
    json_array_foreach(flows, i, f) {
        const char *id = str(f, "id");
        const json_t *counters = json_object_get(per_flow, id != NULL ? id : "");
        table_row(h, "flow", FLOW_COLUMNS, COLUMN_COUNT(FLOW_COLUMNS), f, counters);
    }
    html_raw(h, "</table>");
    page_end(h, false);
}

/* ---------------------------------------------------------------- runs */

static int newest_first(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    long long tx = json_integer_value(json_object_get(x, "created_at_ms"));
    long long ty = json_integer_value(json_object_get(y, "created_at_ms"));
    if (tx != ty)
        return tx < ty ? 1 : -1;
    /* Admitted in one millisecond: the larger run id (or codemode id) is newer. */
    const json_t *ix = json_object_get(x, "run"), *iy = json_object_get(y, "run");
    long long nx = json_is_integer(ix) ? json_integer_value(ix) : json_integer_value(json_object_get(x, "id"));
    long long ny = json_is_integer(iy) ? json_integer_value(iy) : json_integer_value(json_object_get(y, "id"));
    return nx < ny ? 1 : nx > ny ? -1 : 0;
}

static bool run_matches(const json_t *run, const struct web_runs_query *q)
{
    if (q->flow != NULL && (str(run, "flow") == NULL || strcmp(str(run, "flow"), q->flow) != 0))
        return false;
    return q->state == NULL || (str(run, "state") != NULL && strcmp(str(run, "state"), q->state) == 0);
}

static void query_link(struct html *h, const char *path, const struct web_runs_query *q, long page)
{
    html_raw(h, path);
    html_rawf(h, "?page=%ld", page);
    if (q->flow != NULL) {
        html_raw(h, "&amp;flow=");
        query_value(h, q->flow);
    }
    if (q->state != NULL) {
        html_raw(h, "&amp;state=");
        query_value(h, q->state);
    }
}

static void run_link_cell(struct html *h, const struct cell_source *cell)
{
    run_link(h, cell->item);
}

/* A flow's run names its flow, a codemode run its script. */
static void run_flow_cell(struct html *h, const struct cell_source *cell)
{
    const char *shown = str(cell->item, "flow") != NULL ? "flow" : "script";
    scalar_text(h, json_object_get(cell->item, shown));
}

static void run_outcome_cell(struct html *h, const struct cell_source *cell)
{
    const json_t *error = json_object_get(cell->item, "error");
    json_value_text(h, json_is_string(error) ? error : json_object_get(cell->item, "result"));
}

static const struct column RUN_COLUMNS[] = {
    {"run", NULL, false, NULL, run_link_cell},
    {"flow", NULL, false, NULL, run_flow_cell},
    {"version", NULL, false, "version", field_scalar},
    {"state", NULL, true, "state", field_state},
    {"trigger id", "text", false, "trigger_id", field_scalar},
    {"admitted", NULL, false, "created_at_ms", field_time},
    {"updated", NULL, false, "updated_at_ms", field_time},
    {"result or error", "json", false, NULL, run_outcome_cell},
};

void web_runs_table(struct html *h, const json_t *runs, const struct web_runs_query *q)
{
    size_t total = json_array_size(runs), matched = 0;
    /* The runs of this page, sorted: pointers into runs (borrowed). */
    typedef const json_t *run_ref;
    run_ref *order = calloc(total > 0 ? total : 1, sizeof(run_ref));
    if (order == NULL) {
        h->failed = true;
        return;
    }
    for (size_t i = 0; i < total; i++) {
        const json_t *run = json_array_get(runs, i);
        if (run_matches(run, q))
            order[matched++] = run;
    }
    qsort((void *)order, matched, sizeof(run_ref), newest_first);
    size_t first = (size_t)q->page * WEB_RUNS_PER_PAGE;
    /* One element (id "runs") holds the table and its page line: the live update
     * replaces both. */
    html_raw(h, "<div id=\"runs\" data-live=\"");
    query_link(h, "/runs/table", q, q->page);
    html_rawf(h, "\" data-count=\"%zu\"><table>", matched);
    table_head(h, RUN_COLUMNS, COLUMN_COUNT(RUN_COLUMNS));
    for (size_t i = first; i < matched && i < first + WEB_RUNS_PER_PAGE; i++)
        table_row(h, "run", RUN_COLUMNS, COLUMN_COUNT(RUN_COLUMNS), order[i], NULL);
    html_raw(h, "</table>");
    free((void *)order);
    html_raw(h, "<p class=\"pages\">");
    if (q->page > 0) {
        html_raw(h, "<a rel=\"prev\" href=\"");
        query_link(h, "/runs", q, q->page - 1);
        html_raw(h, "\">newer</a> ");
    }
    html_rawf(h, "page %ld of %zu (%zu runs) ", q->page + 1,
              matched > 0 ? (matched + WEB_RUNS_PER_PAGE - 1) / WEB_RUNS_PER_PAGE : 1, matched);
    if (first + WEB_RUNS_PER_PAGE < matched) {
        html_raw(h, "<a rel=\"next\" href=\"");
        query_link(h, "/runs", q, q->page + 1);
        html_raw(h, "\">older</a>");
    }
    html_raw(h, "</p></div>");
}

void web_page_runs(struct html *h, const json_t *runs, const struct web_runs_query *q)
{
    static const char *const STATES[] = {"pending", "running", "suspended", "needs_reconcile",
                                         "succeeded", "failed", "cancelled"};
    page_begin(h, "runs", "runs");
    html_raw(h, "<form class=\"filter\" method=\"get\" action=\"/runs\"><label>flow "
                "<input name=\"flow\" value=\"");
    html_text(h, q->flow);
    html_raw(h, "\"></label> <label>state <select name=\"state\"><option value=\"\">any</option>");
    for (size_t i = 0; i < sizeof STATES / sizeof STATES[0]; i++)
        html_rawf(h, "<option%s>%s</option>",
                  q->state != NULL && strcmp(q->state, STATES[i]) == 0 ? " selected" : "",
                  STATES[i]);
    html_raw(h, "</select></label> <button>filter</button></form>");
    web_runs_table(h, runs, q);
    page_end(h, true);
}

/* ---------------------------------------------------------------- one run */

static void field_row(struct html *h, const char *name, const json_t *run, const char *key,
                      bool as_json)
{
    html_raw(h, "<tr><th>");
    html_raw(h, name);
    html_rawf(h, "</th><td id=\"run-%s\" class=\"%s\">", key, as_json ? "json" : "text");
    if (as_json)
        json_value_text(h, json_object_get(run, key));
    else if (strstr(key, "_at_ms") != NULL)
        time_text(h, json_object_get(run, key));
    else
        scalar_text(h, json_object_get(run, key));
    html_raw(h, "</td></tr>");
}

static void hidden_fields(struct html *h, const char *csrf, const json_t *run)
{
    html_raw(h, "<input type=\"hidden\" name=\"csrf\" value=\"");
    html_text(h, csrf);
    html_rawf(h, "\"><input type=\"hidden\" name=\"run\" value=\"%" JSON_INTEGER_FORMAT "\">",
              json_integer_value(json_object_get(run, "run")));
}

static void reconcile_form(struct html *h, const char *csrf, const json_t *run,
                           const json_t *call)
{
    html_raw(h, "<form class=\"inline reconcile\" method=\"post\" action=\"/run/reconcile\">");
    hidden_fields(h, csrf, run);
    html_rawf(h, "<input type=\"hidden\" name=\"position\" value=\"%" JSON_INTEGER_FORMAT "\">"
                 "position %" JSON_INTEGER_FORMAT ": <select name=\"decision\">"
                 "<option value=\"observed\">it took effect, answering</option>"
                 "<option value=\"not-applied\">it did not take effect</option>"
                 "<option value=\"cancel\">cancel the run</option></select> "
                 "<input name=\"observed\" placeholder=\"observed JSON\"> "
                 "<button>reconcile</button></form>",
              json_integer_value(json_object_get(call, "position")),
              json_integer_value(json_object_get(call, "position")));
}

/* A tools.call names its tool after the kind. */
static void call_kind_cell(struct html *h, const struct cell_source *cell)
{
    scalar_text(h, json_object_get(cell->item, "kind"));
    if (str(cell->item, "tool") != NULL) {
        html_raw(h, " ");
        html_text(h, str(cell->item, "tool"));
    }
}

static void call_delivery_cell(struct html *h, const struct cell_source *cell)
{
    const json_t *order = json_object_get(cell->item, "delivery_order");
    if (json_is_integer(order))
        html_rawf(h, "delivered #%" JSON_INTEGER_FORMAT, json_integer_value(order));
    else if (json_is_string(json_object_get(cell->item, "decision")))
        scalar_text(h, json_object_get(cell->item, "decision"));
    else
        html_raw(h, "not delivered");
}

static void call_outcome_cell(struct html *h, const struct cell_source *cell)
{
    const json_t *outcome = json_object_get(cell->item, "outcome");
    if (json_is_object(outcome))
        html_raw(h, json_object_get(outcome, "fulfilled") != NULL ? "fulfilled: " : "rejected: ");
    scalar_text(h, json_object_get(cell->item, "value_text"));
}

static const struct column CALL_COLUMNS[] = {
    {"position", NULL, false, "position", field_scalar},
    {"kind", NULL, false, NULL, call_kind_cell},
    {"arguments", "json", false, "args_text", field_scalar},
    {"class", NULL, false, "class", field_scalar},
    {"state", NULL, true, "state", field_state},
    {"delivery", NULL, false, NULL, call_delivery_cell},
    {"outcome", "json", false, NULL, call_outcome_cell},
};

void web_page_run(struct html *h, const json_t *run, const char *csrf)
{
    bool flow_run = json_is_integer(json_object_get(run, "run"));
    char title[48];
    snprintf(title, sizeof title, "run %s%" JSON_INTEGER_FORMAT, flow_run ? "" : "c",
             json_integer_value(json_object_get(run, flow_run ? "run" : "id")));
    page_begin(h, title, "runs");
    html_raw(h, "<table id=\"run\">");
    if (flow_run) {
        field_row(h, "flow", run, "flow", false);
        field_row(h, "version", run, "version", false);
        field_row(h, "generation", run, "generation", false);
    } else {
        field_row(h, "script", run, "script", false);
        field_row(h, "script sha256", run, "script_sha256", false);
        field_row(h, "outcome", run, "outcome", false);
        field_row(h, "tool calls", run, "tool_calls", false);
        field_row(h, "wall ms", run, "wall_ms", false);
    }
    field_row(h, "state", run, "state", false);
    field_row(h, "trigger id", run, "trigger_id", false);
    field_row(h, flow_run ? "trigger" : "input", run, flow_run ? "trigger" : "input", true);
    field_row(h, "result", run, "result", true);
    field_row(h, "error", run, "error", false);
    field_row(h, "admitted", run, "created_at_ms", false);
    field_row(h, "updated", run, "updated_at_ms", false);
    if (!flow_run)
        field_row(h, "console", run, "console", false);
    html_raw(h, "</table>");

    const char *state = str(run, "state");
    bool ended = state != NULL && (strcmp(state, "succeeded") == 0 ||
                                   strcmp(state, "failed") == 0 || strcmp(state, "cancelled") == 0);
    const json_t *calls = json_object_get(run, "calls");
    if (flow_run && !ended) {
        html_raw(h, "<h2>actions</h2><form class=\"inline cancel\" method=\"post\" "
                    "action=\"/run/cancel\">");
        hidden_fields(h, csrf, run);
        html_raw(h, "<input name=\"reason\" placeholder=\"reason (optional)\"> "
                    "<button id=\"cancel\">cancel the run</button></form>");
        size_t i;
        const json_t *call;
        bool in_doubt = state != NULL && strcmp(state, "needs_reconcile") == 0;
        json_array_foreach(calls, i, call) {
            if (in_doubt && str(call, "state") != NULL && strcmp(str(call, "state"), "unknown") == 0)
                reconcile_form(h, csrf, run, call);
        }
    }

    html_rawf(h, "<h2>journal (%zu calls)</h2><table id=\"journal\">", json_array_size(calls));
    table_head(h, CALL_COLUMNS, COLUMN_COUNT(CALL_COLUMNS));
    size_t i;
    const json_t *call;
    json_array_foreach(calls, i, call) {
        table_row(h, "call", CALL_COLUMNS, COLUMN_COUNT(CALL_COLUMNS), call, NULL);
    }
    html_raw(h, "</table>");
    page_end(h, false);
}

/* ---------------------------------------------------------------- health */

void web_page_health(struct html *h, json_t *health, const json_t *runs, long long now_ms)
{
    page_begin(h, "health", "health");
    html_raw(h, "<h2>runs per minute, last hour</h2>");
    web_chart_runs_per_minute(h, runs, now_ms);
    html_raw(h, "<h2>counters</h2><div id=\"health\">");
    json_table(h, health);
    html_raw(h, "</div>");
    page_end(h, false);
}
