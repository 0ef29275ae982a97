/* Health as Prometheus text (exposition format 0.0.4). Each family is written whole
 * (its # HELP and # TYPE, then its samples) and only if it has a sample; families in a
 * fixed order, and within one, flows and label values in byte order of their JSON keys,
 * so the same health always gives the same text. docs/operations.md ("Metrics") lists
 * every name; keep the two in step. */
#include "serve/metrics_text.h"
#include "base/error_line.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct family {
    const char *name; /* the sample name; a counter's ends in _total */
    const char *type; /* "counter" or "gauge" */
    const char *help;
};

/* The worker counters: JSON counters.<field> -> family. */
static const struct {
    const char *field;
    struct family family;
} WORKER_COUNTERS[] = {
    {"spawned", {"basal_worker_spawned_total", "counter", "Worker processes started."}},
    {"retired",
     {"basal_worker_retired_total", "counter",
      "Accepted workers the pool ended by policy (activation count, idle time, an unclean "
      "end, single use, making room)."}},
    {"killed",
     {"basal_worker_killed_total", "counter", "Workers the parent killed with SIGKILL."}},
    {"crashed",
     {"basal_worker_crashed_total", "counter",
      "Accepted workers that died on their own (a signal, or an exit mid-activation)."}},
    {"respawned",
     {"basal_worker_respawned_total", "counter",
      "Workers started to replace one that had ended."}},
    {"refused_welcomes",
     {"basal_worker_refused_welcomes_total", "counter",
      "Started workers refused at the handshake (Welcome or the kernel's view)."}},
    {"spawn_failures",
     {"basal_worker_spawn_failures_total", "counter",
      "Worker starts that failed, refused or not started at all."}},
    {"flow_counts_dropped",
     {"basal_flow_counts_dropped_total", "counter",
      "Per-flow counts not kept (the pool's flow table was full); the totals have them."}},
};

static const struct family SIGSYS_DEATHS = {
    "basal_worker_sigsys_deaths_total", "counter",
    "Workers killed by the seccomp filter (SIGSYS) for a forbidden system call."};
static const struct family CONFINEMENT_INFO = {
    "basal_worker_confinement_info", "gauge",
    "The workers' confinement: the OS and the Landlock policy (always 1)."};
static const struct family ACTIVATIONS = {
    "basal_activations_total", "counter", "Activations (not runs) by outcome, all flows."};
static const struct family BUDGET_EXHAUSTIONS = {
    "basal_budget_exhaustions_total", "counter",
    "Activations that exhausted a budget, by budget, all flows."};
static const struct family RUNS = {"basal_runs", "gauge", "Runs by their current state."};

/* The pool gauges: JSON pool.<field> -> family ("idle" only from a serve). */
static const struct {
    const char *field;
    struct family family;
} POOL_GAUGES[] = {
    {"live", {"basal_pool_live_workers", "gauge", "Workers alive."}},
    {"spares", {"basal_pool_spare_workers", "gauge", "Unbound idle workers (warm spares)."}},
    {"busy", {"basal_pool_busy_workers", "gauge", "Workers running an activation."}},
    {"bound", {"basal_pool_bound_workers", "gauge", "Workers bound to a flow."}},
    {"idle", {"basal_pool_idle_workers", "gauge", "Workers alive and not running an activation."}},
};

static const struct family FLOW_ACTIVATIONS = {
    "basal_flow_activations_total", "counter", "Activations of one flow by outcome."};
static const struct family FLOW_BUDGET_EXHAUSTIONS = {
    "basal_flow_budget_exhaustions_total", "counter",
    "Activations of one flow that exhausted a budget, by budget."};
/* The per-flow worker counters: JSON flows.<id>.workers.<field> -> family. */
static const struct {
    const char *field;
    struct family family;
} FLOW_WORKER_COUNTERS[] = {
    {"spawned",
     {"basal_flow_worker_spawned_total", "counter",
      "Workers that began serving one flow (a warm spare taken or a worker started)."}},
    {"retired",
     {"basal_flow_worker_retired_total", "counter",
      "Workers of one flow the pool ended by policy."}},
    {"killed",
     {"basal_flow_worker_killed_total", "counter",
      "Workers of one flow the parent killed (a budget, a deadline, a retirement by kill)."}},
    {"crashed",
     {"basal_flow_worker_crashed_total", "counter",
      "Workers of one flow that died on their own (SIGSYS included)."}},
    {"sigsys_deaths",
     {"basal_flow_worker_sigsys_deaths_total", "counter",
      "Workers of one flow killed by the seccomp filter (SIGSYS)."}},
};
#define FLOW_WORKER_COUNTER_COUNT (sizeof FLOW_WORKER_COUNTERS / sizeof FLOW_WORKER_COUNTERS[0])
static const struct family FLOW_RUNS = {"basal_flow_runs", "gauge",
                                        "Runs of one flow by their current state."};
static const struct family FLOW_QUEUE_DEPTH = {
    "basal_flow_queue_depth", "gauge", "Runs of one flow admitted and waiting for a runner."};
static const struct family FLOW_LAST_RUN_ID = {"basal_flow_last_run_id", "gauge",
                                               "The id of the flow's last run."};
static const struct family FLOW_LAST_RUN_INFO = {
    "basal_flow_last_run_info", "gauge", "The state of the flow's last run (always 1)."};
static const struct family FLOW_LAST_RUN_END = {
    "basal_flow_last_run_end_timestamp_seconds", "gauge",
    "When the flow's last run ended, in seconds since the Unix epoch."};

/* The text being written: the family whose header is out, so each header is written
 * once, right before that family's first sample. */
struct emitter {
    FILE *out;
    const struct family *current;
};

/* A label value per the format: backslash, double quote and line feed escaped. */
static void write_label_value(FILE *out, const char *value)
{
    for (const char *c = value; *c != '\0'; c++) {
        if (*c == '\\')
            fputs("\\\\", out);
        else if (*c == '"')
            fputs("\\\"", out);
        else if (*c == '\n')
            fputs("\\n", out);
        else
            fputc(*c, out);
    }
}

/* One sample of family with up to two labels (a NULL name ends them); value is the
 * number as text. */
static void emit(struct emitter *em, const struct family *family, const char *label1,
                 const char *value1, const char *label2, const char *value2, const char *value)
{
    if (em->current != family) {
        fprintf(em->out, "# HELP %s %s\n# TYPE %s %s\n", family->name, family->help,
                family->name, family->type);
        em->current = family;
    }
    fputs(family->name, em->out);
    if (label1 != NULL) {
        fprintf(em->out, "{%s=\"", label1);
        write_label_value(em->out, value1);
        if (label2 != NULL) {
            fprintf(em->out, "\",%s=\"", label2);
            write_label_value(em->out, value2);
        }
        fputs("\"}", em->out);
    }
    fprintf(em->out, " %s\n", value);
}

/* The value of an integer field as text; false (skip it) for any other JSON type. */
static bool integer_text(const json_t *v, char buf[32])
{
    if (!json_is_integer(v))
        return false;
    snprintf(buf, 32, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    return true;
}

static int compare_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of obj in byte order: a malloc'd array (*count entries; borrowed strings),
 * or NULL when obj is not an object or has no key. *failed is set on no memory. */
static const char **sorted_keys(const json_t *obj, size_t *count, bool *failed)
{
    *count = 0;
    if (!json_is_object(obj) || json_object_size(obj) == 0)
        return NULL;
    const char **keys = malloc(json_object_size(obj) * sizeof *keys);
    if (keys == NULL) {
        *failed = true;
        return NULL;
    }
    const char *key;
    json_t *value;
    size_t n = 0;
    /* Only read: jansson's iteration takes a non-const object. */
    json_t *iterable = (json_t *)(uintptr_t)obj; // NOLINT(performance-no-int-to-ptr)
    json_object_foreach(iterable, key, value) {
        (void)value;
        keys[n++] = key;
    }
    qsort(keys, n, sizeof *keys, compare_keys);
    *count = n;
    return keys;
}

/* Every integer member of obj as a sample of family labelled label=<key>, after the
 * optional flow label. */
static void emit_by_key(struct emitter *em, const struct family *family, const json_t *obj,
                        const char *flow, const char *label, bool *failed)
{
    size_t n;
    const char **keys = sorted_keys(obj, &n, failed);
    for (size_t i = 0; i < n; i++) {
        char num[32];
        if (!integer_text(json_object_get(obj, keys[i]), num))
            continue;
        if (flow != NULL)
            emit(em, family, "flow", flow, label, keys[i], num);
        else
            emit(em, family, label, keys[i], NULL, NULL, num);
    }
    free(keys);
}

/* A per-flow family over every flow (flows sorted by id). */
enum flow_field { FLOW_ACTIVATIONS_FIELD, FLOW_BUDGETS_FIELD, FLOW_WORKER_SPAWNED,
                  FLOW_WORKER_RETIRED, FLOW_WORKER_KILLED, FLOW_WORKER_CRASHED,
                  FLOW_WORKER_SIGSYS_DEATHS, FLOW_RUNS_FIELD, FLOW_QUEUE,
                  FLOW_LAST_ID, FLOW_LAST_STATE, FLOW_LAST_END };
/* The worker fields are FLOW_WORKER_COUNTERS' rows, in its order. */
_Static_assert(FLOW_WORKER_SIGSYS_DEATHS - FLOW_WORKER_SPAWNED + 1 == FLOW_WORKER_COUNTER_COUNT,
               "one flow field per row of FLOW_WORKER_COUNTERS");

static void emit_flow_field(struct emitter *em, const json_t *flow, const char *id,
                            enum flow_field field, bool *failed)
{
    char num[32];
    const json_t *last = json_object_get(flow, "last_run");
    switch (field) {
    case FLOW_ACTIVATIONS_FIELD:
        emit_by_key(em, &FLOW_ACTIVATIONS, json_object_get(flow, "runs"), id, "outcome",
                    failed);
        break;
    case FLOW_BUDGETS_FIELD:
        emit_by_key(em, &FLOW_BUDGET_EXHAUSTIONS, json_object_get(flow, "budget_exhaustions"),
                    id, "budget", failed);
        break;
    case FLOW_WORKER_SPAWNED:
    case FLOW_WORKER_RETIRED:
    case FLOW_WORKER_KILLED:
    case FLOW_WORKER_CRASHED:
    case FLOW_WORKER_SIGSYS_DEATHS: {
        size_t i = (size_t)(field - FLOW_WORKER_SPAWNED);
        if (integer_text(json_object_get(json_object_get(flow, "workers"),
                                         FLOW_WORKER_COUNTERS[i].field), num))
            emit(em, &FLOW_WORKER_COUNTERS[i].family, "flow", id, NULL, NULL, num);
        break;
    }
    case FLOW_RUNS_FIELD:
        emit_by_key(em, &FLOW_RUNS, json_object_get(flow, "run_states"), id, "state", failed);
        break;
    case FLOW_QUEUE:
        if (integer_text(json_object_get(flow, "queue_depth"), num))
            emit(em, &FLOW_QUEUE_DEPTH, "flow", id, NULL, NULL, num);
        break;
    case FLOW_LAST_ID:
        if (integer_text(json_object_get(last, "run"), num))
            emit(em, &FLOW_LAST_RUN_ID, "flow", id, NULL, NULL, num);
        break;
    case FLOW_LAST_STATE: {
        const char *state = json_string_value(json_object_get(last, "state"));
        if (state != NULL)
            emit(em, &FLOW_LAST_RUN_INFO, "flow", id, "state", state, "1");
        break;
    }
    case FLOW_LAST_END: {
        const json_t *ms = json_object_get(last, "ended_at_ms");
        if (json_is_integer(ms) && json_integer_value(ms) >= 0) {
            /* Milliseconds as exact decimal seconds: no rounding through a double. */
            json_int_t v = json_integer_value(ms);
            snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT ".%03d", v / 1000,
                     (int)(v % 1000));
            emit(em, &FLOW_LAST_RUN_END, "flow", id, NULL, NULL, num);
        }
        break;
    }
    }
}

static void emit_all(struct emitter *em, const json_t *h, bool *failed)
{
    char num[32];
    const json_t *counters = json_object_get(h, "counters");
    for (size_t i = 0; i < sizeof WORKER_COUNTERS / sizeof WORKER_COUNTERS[0]; i++)
        if (integer_text(json_object_get(counters, WORKER_COUNTERS[i].field), num))
            emit(em, &WORKER_COUNTERS[i].family, NULL, NULL, NULL, NULL, num);

    const json_t *conf = json_object_get(h, "worker_confinement");
    if (integer_text(json_object_get(conf, "sigsys_deaths"), num))
        emit(em, &SIGSYS_DEATHS, NULL, NULL, NULL, NULL, num);
    const char *os = json_string_value(json_object_get(conf, "os"));
    const char *landlock = json_string_value(json_object_get(conf, "landlock"));
    if (os != NULL && landlock != NULL)
        emit(em, &CONFINEMENT_INFO, "os", os, "landlock", landlock, "1");

    emit_by_key(em, &ACTIVATIONS, json_object_get(h, "runs"), NULL, "outcome", failed);
    emit_by_key(em, &BUDGET_EXHAUSTIONS, json_object_get(h, "budget_exhaustions"), NULL,
                "budget", failed);
    emit_by_key(em, &RUNS, json_object_get(h, "run_states"), NULL, "state", failed);

    const json_t *pool = json_object_get(h, "pool");
    for (size_t i = 0; i < sizeof POOL_GAUGES / sizeof POOL_GAUGES[0]; i++)
        if (integer_text(json_object_get(pool, POOL_GAUGES[i].field), num))
            emit(em, &POOL_GAUGES[i].family, NULL, NULL, NULL, NULL, num);

    const json_t *flows = json_object_get(h, "flows");
    size_t n;
    const char **ids = sorted_keys(flows, &n, failed);
    for (int field = FLOW_ACTIVATIONS_FIELD; field <= FLOW_LAST_END; field++)
        for (size_t i = 0; i < n; i++) {
            const json_t *flow = json_object_get(flows, ids[i]);
            if (json_is_object(flow))
                emit_flow_field(em, flow, ids[i], (enum flow_field)field, failed);
        }
    free(ids);
}

char *metrics_text(const void *health, char *err, size_t err_cap)
{
    const json_t *h = health;
    if (!json_is_object(h)) {
        error_line(err, err_cap, "health is not a JSON object");
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (out == NULL) {
        error_line(err, err_cap, "out of memory");
        return NULL;
    }
    struct emitter em = {out, NULL};
    bool failed = false;
    emit_all(&em, h, &failed);
    if (ferror(out))
        failed = true;
    if (fclose(out) != 0)
        failed = true;
    if (failed) {
        free(text);
        error_line(err, err_cap, "out of memory");
        return NULL;
    }
    return text;
}
