#include "flows/event_targets.h"

#include "base/error_line.h"
#include "flows/manifest.h"
#include "store/flow_registry.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool lists_event(const struct manifest *m, const char *module, const char *name,
                        int64_t version)
{
    if (m->trigger.kind != MANIFEST_TRIGGER_EVENTS)
        return false;
    for (size_t i = 0; i < m->trigger.event_count; i++) {
        const struct manifest_event *e = &m->trigger.events[i];
        if (strcmp(e->module, module) == 0 && strcmp(e->name, name) == 0 &&
            e->version == version)
            return true;
    }
    return false;
}

/* The list event_targets builds, one visited flow at a time. */
struct listeners {
    const char *module, *name;
    int64_t version;
    struct event_target *targets;
    size_t n;
};

static int listener_visit(void *ctx, const struct flow_approved *flow, char *err,
                          size_t err_cap)
{
    struct listeners *l = ctx;
    struct manifest m;
    if (flow->manifest == NULL || flow->manifest_len == 0 ||
        manifest_parse(flow->manifest, flow->manifest_len, &m, NULL, 0) != 0)
        return 0;
    bool listens = lists_event(&m, l->module, l->name, l->version);
    manifest_free(&m);
    if (!listens)
        return 0;
    struct event_target *grown = realloc(l->targets, (l->n + 1) * sizeof *grown);
    if (grown == NULL)
        return error_line(err, err_cap, "out of memory");
    l->targets = grown;
    snprintf(grown[l->n].flow, sizeof grown[l->n].flow, "%s", flow->id);
    grown[l->n].version = flow->version;
    l->n++;
    return 0;
}

int event_targets(struct store *s, const char *module, const char *name, int64_t version,
                  struct event_target **targets, size_t *count, char *err, size_t err_cap)
{
    *targets = NULL;
    *count = 0;
    struct listeners l = {module, name, version, NULL, 0};
    if (flow_registry_each_approved(s, listener_visit, &l, err, err_cap) != 0) {
        free(l.targets);
        return -1;
    }
    *targets = l.targets;
    *count = l.n;
    return 0;
}
