#include "supervisor/health.h"

#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

void health_init(struct health *h, enum landlock_policy landlock)
{
    memset(h, 0, sizeof *h);
    h->landlock = landlock;
}

void health_flows_free(struct health_flow *flows, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(flows[i].id);
    free(flows);
}

void health_free(struct health *h)
{
    health_flows_free(h->flows, h->flow_count);
    h->flows = NULL;
    h->flow_count = h->flow_cap = 0;
}

static struct health_flow *find_flow(const struct health *h, const char *flow)
{
    /* The last entry first: a store's rows come sorted by name, a flow's together. */
    if (h->flow_count > 0 && strcmp(h->flows[h->flow_count - 1].id, flow) == 0)
        return &h->flows[h->flow_count - 1];
    for (size_t i = 0; i < h->flow_count; i++)
        if (strcmp(h->flows[i].id, flow) == 0)
            return &h->flows[i];
    return NULL;
}

struct health_flow *health_flow_entry(struct health *h, const char *flow)
{
    struct health_flow *f = find_flow(h, flow);
    if (f != NULL)
        return f;
    if (h->flow_limit != 0 && h->flow_count >= h->flow_limit) {
        h->flow_counts_dropped++;
        return NULL;
    }
    if (h->flow_count == h->flow_cap) {
        size_t cap = h->flow_cap == 0 ? 8 : h->flow_cap * 2;
        struct health_flow *grown = realloc(h->flows, cap * sizeof *grown);
        if (grown == NULL) {
            h->flow_counts_dropped++;
            return NULL;
        }
        h->flows = grown;
        h->flow_cap = cap;
    }
    f = &h->flows[h->flow_count];
    memset(f, 0, sizeof *f);
    f->id = strdup(flow);
    if (f->id == NULL) {
        h->flow_counts_dropped++;
        return NULL;
    }
    h->flow_count++;
    return f;
}

void health_count_runs(struct health *h, const char *flow, enum activation_status status,
                       unsigned long long n)
{
    if ((unsigned)status == 0 || (unsigned)status > ACTIVATION_STATUS_COUNT)
        return;
    h->runs[status] += n;
    struct health_flow *f = flow != NULL ? health_flow_entry(h, flow) : NULL;
    if (f != NULL)
        f->runs[status] += n;
}

void health_count_budget(struct health *h, const char *flow, enum proto_budget budget,
                         unsigned long long n)
{
    if ((unsigned)budget == 0 || (unsigned)budget > PROTO_BUDGET_COUNT)
        return;
    h->budgets[budget] += n;
    struct health_flow *f = flow != NULL ? health_flow_entry(h, flow) : NULL;
    if (f != NULL)
        f->budgets[budget] += n;
}

void health_record_run(struct health *h, const char *flow, const struct activation_outcome *out)
{
    health_count_runs(h, flow, out->status, 1);
    if (out->status == ACTIVATION_BUDGET_EXHAUSTED)
        health_count_budget(h, flow, out->budget, 1);
}

void health_record_kill(struct health *h, const char *flow)
{
    h->killed++;
    struct health_flow *f = flow != NULL ? health_flow_entry(h, flow) : NULL;
    if (f != NULL)
        f->killed++;
}

void health_record_death(struct health *h, const char *flow, int term_signal)
{
    h->crashed++;
    struct health_flow *f = flow != NULL ? health_flow_entry(h, flow) : NULL;
    if (f != NULL)
        f->crashed++;
    if (term_signal != SIGSYS)
        return;
    h->sigsys_deaths++;
    if (f != NULL)
        f->sigsys_deaths++;
}

void health_take_flows(struct health *h, struct health_flow **flows, size_t *count)
{
    *flows = h->flows;
    *count = h->flow_count;
    h->flows = NULL;
    h->flow_count = h->flow_cap = 0;
}

void health_give_back_flows(struct health *h, struct health_flow *flows, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        struct health_flow *f = health_flow_entry(h, flows[i].id);
        if (f == NULL)
            continue;
        for (unsigned s = 1; s <= ACTIVATION_STATUS_COUNT; s++)
            f->runs[s] += flows[i].runs[s];
        for (unsigned b = 1; b <= PROTO_BUDGET_COUNT; b++)
            f->budgets[b] += flows[i].budgets[b];
        f->spawned += flows[i].spawned;
        f->retired += flows[i].retired;
        f->killed += flows[i].killed;
        f->crashed += flows[i].crashed;
        f->sigsys_deaths += flows[i].sigsys_deaths;
    }
    health_flows_free(flows, count);
}

static json_t *runs_json(const unsigned long long runs[ACTIVATION_STATUS_COUNT + 1])
{
    json_t *o = json_object();
    for (unsigned s = 1; s <= ACTIVATION_STATUS_COUNT; s++)
        json_object_set_new(o, activation_status_name((enum activation_status)s),
                            json_integer((json_int_t)runs[s]));
    return o;
}

static json_t *budgets_json(const unsigned long long budgets[PROTO_BUDGET_COUNT + 1])
{
    json_t *o = json_object();
    for (unsigned b = 1; b <= PROTO_BUDGET_COUNT; b++)
        json_object_set_new(o, proto_budget_name((enum proto_budget)b),
                            json_integer((json_int_t)budgets[b]));
    return o;
}

static json_t *flow_json(const struct health_flow *f)
{
    json_t *o = json_object();
    json_object_set_new(o, "runs", runs_json(f->runs));
    json_object_set_new(o, "budget_exhaustions", budgets_json(f->budgets));
    json_t *workers = json_object();
    json_object_set_new(workers, "spawned", json_integer((json_int_t)f->spawned));
    json_object_set_new(workers, "retired", json_integer((json_int_t)f->retired));
    json_object_set_new(workers, "killed", json_integer((json_int_t)f->killed));
    json_object_set_new(workers, "crashed", json_integer((json_int_t)f->crashed));
    json_object_set_new(workers, "sigsys_deaths", json_integer((json_int_t)f->sigsys_deaths));
    json_object_set_new(o, "workers", workers);
    return o;
}

void *health_to_json(const struct health *h)
{
    json_t *root = json_object();
    if (root == NULL)
        return NULL;
    json_t *counters = json_object();
    json_object_set_new(counters, "spawned", json_integer((json_int_t)h->spawned));
    json_object_set_new(counters, "retired", json_integer((json_int_t)h->retired));
    json_object_set_new(counters, "killed", json_integer((json_int_t)h->killed));
    json_object_set_new(counters, "crashed", json_integer((json_int_t)h->crashed));
    json_object_set_new(counters, "respawned", json_integer((json_int_t)h->respawned));
    json_object_set_new(counters, "refused_welcomes", json_integer((json_int_t)h->refused_welcomes));
    json_object_set_new(counters, "spawn_failures", json_integer((json_int_t)h->spawn_failures));
    json_object_set_new(counters, "flow_counts_dropped",
                        json_integer((json_int_t)h->flow_counts_dropped));
    json_object_set_new(root, "counters", counters);

    json_object_set_new(root, "runs", runs_json(h->runs));
    json_object_set_new(root, "budget_exhaustions", budgets_json(h->budgets));

    json_t *pool = json_object();
    json_object_set_new(pool, "live", json_integer(h->live));
    json_object_set_new(pool, "spares", json_integer(h->spares));
    json_object_set_new(pool, "busy", json_integer(h->busy));
    json_object_set_new(pool, "bound", json_integer(h->bound));
    json_object_set_new(root, "pool", pool);

    json_t *flows = json_object();
    for (size_t i = 0; i < h->flow_count; i++)
        json_object_set_new(flows, h->flows[i].id, flow_json(&h->flows[i]));
    json_object_set_new(root, "flows", flows);

    json_t *conf = json_object();
    json_object_set_new(conf, "os", json_string("linux"));
    json_object_set_new(conf, "landlock",
                        json_string(h->landlock == LANDLOCK_POLICY_OPTIONAL ? "optional"
                                                                            : "required"));
    json_object_set_new(conf, "sigsys_deaths", json_integer((json_int_t)h->sigsys_deaths));
    json_object_set_new(root, "worker_confinement", conf);
    return root;
}
