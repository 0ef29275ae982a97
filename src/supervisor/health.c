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

void health_free(struct health *h)
{
    for (size_t i = 0; i < h->flow_count; i++)
        free(h->flows[i].id);
    free(h->flows);
    h->flows = NULL;
    h->flow_count = 0;
}

static struct health_flow *flow_entry(struct health *h, const char *flow)
{
    for (size_t i = 0; i < h->flow_count; i++)
        if (strcmp(h->flows[i].id, flow) == 0)
            return &h->flows[i];
    struct health_flow *grown = realloc(h->flows, (h->flow_count + 1) * sizeof *grown);
    if (grown == NULL)
        return NULL;
    h->flows = grown;
    struct health_flow *f = &h->flows[h->flow_count];
    memset(f, 0, sizeof *f);
    f->id = strdup(flow);
    if (f->id == NULL)
        return NULL;
    h->flow_count++;
    return f;
}

void health_count_runs(struct health *h, const char *flow, enum activation_status status,
                       unsigned long long n)
{
    if ((unsigned)status == 0 || (unsigned)status > ACTIVATION_STATUS_COUNT)
        return;
    h->runs[status] += n;
    if (flow != NULL) {
        struct health_flow *f = flow_entry(h, flow);
        if (f != NULL)
            f->runs[status] += n;
    }
}

void health_record_run(struct health *h, const char *flow, const struct activation_outcome *out)
{
    health_count_runs(h, flow, out->status, 1);
}

void health_record_death(struct health *h, int term_signal)
{
    h->crashed++;
    if (term_signal == SIGSYS)
        h->sigsys_deaths++;
}

static json_t *runs_json(const unsigned long long runs[ACTIVATION_STATUS_COUNT + 1])
{
    json_t *o = json_object();
    for (unsigned s = 1; s <= ACTIVATION_STATUS_COUNT; s++)
        json_object_set_new(o, activation_status_name((enum activation_status)s),
                            json_integer((json_int_t)runs[s]));
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
    json_object_set_new(root, "counters", counters);

    json_object_set_new(root, "runs", runs_json(h->runs));

    json_t *pool = json_object();
    json_object_set_new(pool, "live", json_integer(h->live));
    json_object_set_new(pool, "spares", json_integer(h->spares));
    json_object_set_new(pool, "busy", json_integer(h->busy));
    json_object_set_new(pool, "bound", json_integer(h->bound));
    json_object_set_new(root, "pool", pool);

    json_t *flows = json_object();
    for (size_t i = 0; i < h->flow_count; i++) {
        json_t *f = json_object();
        json_object_set_new(f, "runs", runs_json(h->flows[i].runs));
        json_object_set_new(flows, h->flows[i].id, f);
    }
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
