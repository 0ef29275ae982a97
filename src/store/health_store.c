#include "store/health_store.h"

#include "base/error_line.h"
#include "store/runs.h"
#include "store/sql.h"
#include "store/store_internal.h"
#include "store/store.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define ACTIVATIONS_PREFIX "activations."
#define BUDGET_PREFIX "budget_exhausted."
#define FLOW_PREFIX "flow."

struct counter_field {
    const char *name;
    size_t offset_health; /* in struct health */
    size_t offset_mark;   /* in struct health_mark */
};

#define FIELD(n) {#n, offsetof(struct health, n), offsetof(struct health_mark, n)}
static const struct counter_field FIELDS[] = {
    FIELD(spawned), FIELD(refused_welcomes), FIELD(spawn_failures), FIELD(retired),
    FIELD(killed),  FIELD(crashed),          FIELD(respawned),      FIELD(sigsys_deaths),
    FIELD(flow_counts_dropped),
};
#define FIELD_COUNT (sizeof FIELDS / sizeof FIELDS[0])

static unsigned long long *health_field(struct health *h, size_t i)
{
    return (unsigned long long *)((char *)h + FIELDS[i].offset_health);
}

static unsigned long long health_value(const struct health *h, size_t i)
{
    return *(const unsigned long long *)((const char *)h + FIELDS[i].offset_health);
}

int health_store_add(struct store *s, const struct health *now, struct health_mark *mark,
                     const char *flow, const struct activation_outcome *out)
{
    for (size_t i = 0; i < FIELD_COUNT; i++) {
        unsigned long long value = health_value(now, i);
        unsigned long long *seen = (unsigned long long *)((char *)mark + FIELDS[i].offset_mark);
        if (value <= *seen)
            continue; /* counters copied before another writer moved the mark */
        if (store_health_add(s, FIELDS[i].name, (long long)(value - *seen)) != 0)
            return -1;
        *seen = value;
    }
    if (flow == NULL)
        return 0;
    char name[160];
    const char *status = activation_status_name(out->status);
    snprintf(name, sizeof name, ACTIVATIONS_PREFIX "%s", status);
    if (store_health_add(s, name, 1) != 0)
        return -1;
    snprintf(name, sizeof name, FLOW_PREFIX "%s." ACTIVATIONS_PREFIX "%s", flow, status);
    if (store_health_add(s, name, 1) != 0)
        return -1;
    if (out->status != ACTIVATION_BUDGET_EXHAUSTED || (unsigned)out->budget == 0 ||
        (unsigned)out->budget > PROTO_BUDGET_COUNT)
        return 0;
    const char *budget = proto_budget_name(out->budget);
    snprintf(name, sizeof name, BUDGET_PREFIX "%s", budget);
    if (store_health_add(s, name, 1) != 0)
        return -1;
    snprintf(name, sizeof name, FLOW_PREFIX "%s." BUDGET_PREFIX "%s", flow, budget);
    return store_health_add(s, name, 1);
}

/* The worker counters a flow has in the store, by their name after "flow.<id>.". */
static const struct {
    const char *name;
    size_t offset; /* in struct health_flow */
} FLOW_WORKER_FIELDS[] = {
    {"spawned", offsetof(struct health_flow, spawned)},
    {"retired", offsetof(struct health_flow, retired)},
    {"killed", offsetof(struct health_flow, killed)},
    {"crashed", offsetof(struct health_flow, crashed)},
    {"sigsys_deaths", offsetof(struct health_flow, sigsys_deaths)},
};
#define FLOW_WORKER_FIELD_COUNT (sizeof FLOW_WORKER_FIELDS / sizeof FLOW_WORKER_FIELDS[0])

static unsigned long long *flow_worker_field(struct health_flow *f, size_t i)
{
    return (unsigned long long *)((char *)f + FLOW_WORKER_FIELDS[i].offset);
}

static unsigned long long flow_worker_value(const struct health_flow *f, size_t i)
{
    return *(const unsigned long long *)((const char *)f + FLOW_WORKER_FIELDS[i].offset);
}

int health_store_add_flows(struct store *s, const struct health_flow *flows, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        for (size_t k = 0; k < FLOW_WORKER_FIELD_COUNT; k++) {
            unsigned long long n = flow_worker_value(&flows[i], k);
            if (n == 0)
                continue; /* no row for a count that never moved */
            char name[160];
            snprintf(name, sizeof name, FLOW_PREFIX "%s.%s", flows[i].id,
                     FLOW_WORKER_FIELDS[k].name);
            if (store_health_add(s, name, (long long)n) != 0)
                return -1;
        }
    }
    return 0;
}

static enum activation_status status_named(const char *name)
{
    for (unsigned st = 1; st <= ACTIVATION_STATUS_COUNT; st++)
        if (strcmp(name, activation_status_name((enum activation_status)st)) == 0)
            return (enum activation_status)st;
    return (enum activation_status)0;
}

static enum proto_budget budget_named(const char *name)
{
    for (unsigned b = 1; b <= PROTO_BUDGET_COUNT; b++)
        if (strcmp(name, proto_budget_name((enum proto_budget)b)) == 0)
            return (enum proto_budget)b;
    return (enum proto_budget)0;
}

/* flow.<id>.<rest>: the flow's counter named rest into its entry. */
static void count_flow(struct health *h, const char *flow, const char *rest,
                       unsigned long long value)
{
    size_t pl = strlen(ACTIVATIONS_PREFIX), bl = strlen(BUDGET_PREFIX);
    if (strncmp(rest, ACTIVATIONS_PREFIX, pl) == 0) {
        enum activation_status st = status_named(rest + pl);
        if ((unsigned)st == 0)
            return;
        /* health_count_runs adds to the total too; the total has its own counter. */
        h->runs[st] -= value;
        health_count_runs(h, flow, st, value);
        return;
    }
    if (strncmp(rest, BUDGET_PREFIX, bl) == 0) {
        enum proto_budget b = budget_named(rest + bl);
        if ((unsigned)b == 0)
            return;
        h->budgets[b] -= value; /* as above: the total is its own counter */
        health_count_budget(h, flow, b, value);
        return;
    }
    for (size_t i = 0; i < FLOW_WORKER_FIELD_COUNT; i++) {
        if (strcmp(rest, FLOW_WORKER_FIELDS[i].name) == 0) {
            struct health_flow *f = health_flow_entry(h, flow);
            if (f != NULL)
                *flow_worker_field(f, i) = value;
            return;
        }
    }
}

static void count_one(struct health *h, const char *name, long long value)
{
    for (size_t i = 0; i < FIELD_COUNT; i++) {
        if (strcmp(name, FIELDS[i].name) == 0) {
            *health_field(h, i) = (unsigned long long)value;
            return;
        }
    }
    size_t pl = strlen(ACTIVATIONS_PREFIX), bl = strlen(BUDGET_PREFIX);
    if (strncmp(name, ACTIVATIONS_PREFIX, pl) == 0) {
        health_count_runs(h, NULL, status_named(name + pl), (unsigned long long)value);
        return;
    }
    if (strncmp(name, BUDGET_PREFIX, bl) == 0) {
        health_count_budget(h, NULL, budget_named(name + bl), (unsigned long long)value);
        return;
    }
    /* flow.<id>.<counter>: ids hold no '.', so the first '.' ends the id. */
    size_t fl = strlen(FLOW_PREFIX);
    if (strncmp(name, FLOW_PREFIX, fl) != 0)
        return;
    const char *id = name + fl;
    const char *dot = strchr(id, '.');
    if (dot == NULL || dot == id || (size_t)(dot - id) > FLOW_ID_MAX)
        return;
    char flow[FLOW_ID_MAX + 1];
    snprintf(flow, sizeof flow, "%.*s", (int)(dot - id), id);
    count_flow(h, flow, dot + 1, (unsigned long long)value);
}

static int load_counters(struct sql_db *db, struct health *h, char *err, size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT name, value FROM health_counters ORDER BY name", &st, err,
                    err_cap) != 0)
        return -1;
    int rc;
    while ((rc = sql_step(st)) == SQL_ROW)
        count_one(h, sql_column_text(st, 0), sql_column_int64(st, 1));
    sql_release(st);
    return rc == SQL_DONE ? 0 : sql_fail(db, err, err_cap);
}

/* run_states overall into root, and per flow into root.flows.<id>.run_states. */
static int add_run_states(struct sql_db *db, json_t *root, char *err, size_t err_cap)
{
    json_t *all = json_object();
    json_t *flows = json_object_get(root, "flows");
    for (int st = RUN_PENDING; st <= RUN_CANCELLED; st++)
        json_object_set_new(all, run_state_name((enum run_state)st), json_integer(0));
    json_object_set_new(root, "run_states", all);
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT flow_id, state, count(*) FROM runs GROUP BY flow_id, state",
                    &st, err, err_cap) != 0)
        return -1;
    int rc;
    while ((rc = sql_step(st)) == SQL_ROW) {
        const char *flow = sql_column_text(st, 0);
        const char *state = sql_column_text(st, 1);
        json_int_t n = sql_column_int64(st, 2);
        json_int_t before = json_integer_value(json_object_get(all, state));
        json_object_set_new(all, state, json_integer(before + n));
        json_t *f = json_object_get(flows, flow);
        if (f == NULL) {
            f = json_object();
            json_object_set_new(flows, flow, f);
        }
        json_t *states = json_object_get(f, "run_states");
        if (states == NULL) {
            states = json_object();
            json_object_set_new(f, "run_states", states);
        }
        json_object_set_new(states, state, json_integer(n));
    }
    sql_release(st);
    return rc == SQL_DONE ? 0 : sql_fail(db, err, err_cap);
}

/* Per installed flow: enabled, and disabled_reason (why serve disabled it, or null). */
static int add_flow_states(struct sql_db *db, json_t *root, char *err, size_t err_cap)
{
    json_t *flows = json_object_get(root, "flows");
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT id, enabled, disabled_reason FROM flows ORDER BY id", &st, err,
                    err_cap) != 0)
        return -1;
    int rc;
    while ((rc = sql_step(st)) == SQL_ROW) {
        const char *flow = sql_column_text(st, 0);
        const char *reason = sql_column_text(st, 2);
        json_t *f = json_object_get(flows, flow);
        if (f == NULL) {
            f = json_object();
            json_object_set_new(flows, flow, f);
        }
        json_object_set_new(f, "enabled", json_boolean((int)sql_column_int64(st, 1) != 0));
        json_object_set_new(f, "disabled_reason", reason != NULL ? json_string(reason) : json_null());
    }
    sql_release(st);
    return rc == SQL_DONE ? 0 : sql_fail(db, err, err_cap);
}

/* Per flow: queue_depth (its pending runs: the runs waiting, the store being the
 * queue) and last_run (the run that ended last, or null). */
static int add_queues(struct sql_db *db, json_t *root, char *err, size_t err_cap)
{
    json_t *flows = json_object_get(root, "flows");
    const char *id;
    json_t *f;
    json_object_foreach(flows, id, f)
    {
        json_t *pending = json_object_get(json_object_get(f, "run_states"), "pending");
        json_object_set_new(f, "queue_depth",
                            json_integer(json_is_integer(pending) ? json_integer_value(pending) : 0));
        json_object_set_new(f, "last_run", json_null());
    }
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT flow_id, id, state, updated_at FROM runs WHERE state IN"
                        " ('succeeded', 'failed', 'cancelled') ORDER BY flow_id, updated_at, id",
                    &st, err, err_cap) != 0)
        return -1;
    int rc;
    while ((rc = sql_step(st)) == SQL_ROW) {
        json_t *flow = json_object_get(flows, sql_column_text(st, 0));
        if (flow == NULL)
            continue;
        json_t *last = json_object();
        json_object_set_new(last, "run", json_integer(sql_column_int64(st, 1)));
        json_object_set_new(last, "state", json_string(sql_column_text(st, 2)));
        json_object_set_new(last, "ended_at_ms", json_integer(sql_column_int64(st, 3)));
        json_object_set_new(flow, "last_run", last);
    }
    sql_release(st);
    return rc == SQL_DONE ? 0 : sql_fail(db, err, err_cap);
}

void *health_store_json(struct store *s, enum landlock_policy landlock, char *err,
                        size_t err_cap)
{
    struct health h;
    health_init(&h, landlock);
    struct sql_db *db = store_db(s);
    json_t *root = NULL;
    if (load_counters(db, &h, err, err_cap) == 0) {
        root = health_to_json(&h);
        if (root == NULL)
            error_line(err, err_cap, "out of memory");
        else if (add_run_states(db, root, err, err_cap) != 0 ||
                 add_flow_states(db, root, err, err_cap) != 0 ||
                 add_queues(db, root, err, err_cap) != 0) {
            json_decref(root);
            root = NULL;
        }
    }
    health_free(&h);
    return root;
}
