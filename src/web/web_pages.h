/* The status page's HTML, rendered from the data of the ops commands (the same JSON
 * `ck-basal ... --json` prints: docs/operations.md). Every text taken from that data
 * (flow ids, results, errors, journal arguments, reasons) goes through html_text();
 * the markup here is the page's own. The page links only its own stylesheet and
 * script (/style.css, /live.js), so the Content-Security-Policy can forbid everything
 * else. */
#ifndef BASAL_WEB_WEB_PAGES_H
#define BASAL_WEB_WEB_PAGES_H

#include <jansson.h>

struct html;

#define WEB_RUNS_PER_PAGE 50

/* Which runs the runs page lists: all NULL / 0 for every run, newest first. */
struct web_runs_query {
    const char *flow;  /* a flow id, or NULL */
    const char *state; /* a run state, or NULL */
    long page;         /* from 0 */
};

/* The page's stylesheet, served as /style.css. */
extern const char WEB_STYLESHEET[];

/* flows: flow.list's data; health: health's data (per-flow counters), may be NULL. */
void web_page_flows(struct html *h, const json_t *flows, const json_t *health);
/* runs: the runs command's data. web_runs_table() is the part the live update
 * fetches (/runs/table) and replaces: one element, id "runs", with the table and its
 * page line. */
void web_page_runs(struct html *h, const json_t *runs, const struct web_runs_query *q);
void web_runs_table(struct html *h, const json_t *runs, const struct web_runs_query *q);
/* run: journal's data; csrf: the token of its forms (cancel, reconcile). */
void web_page_run(struct html *h, const json_t *run, const char *csrf);
/* health: health's data; runs: the runs command's data (for the chart). */
void web_page_health(struct html *h, json_t *health, const json_t *runs,
                     long long now_ms);
/* A short page: a title and one line of text (an error, a refusal). */
void web_page_message(struct html *h, const char *title, const char *text);

#endif
