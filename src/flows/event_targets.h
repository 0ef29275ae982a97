/* Which flows listen to an event (docs/triggers.md, "Events"): every ENABLED flow whose
 * highest APPROVED version's manifest lists (module, name, version) in
 * trigger.events. A disabled flow, a flow without an approval, or one whose approved
 * version lists another version of the event listens not. Read from the store's
 * flow_versions.manifest, so a pending (unapproved) version changes nothing until it is
 * approved. */
#ifndef BASAL_FLOWS_EVENT_TARGETS_H
#define BASAL_FLOWS_EVENT_TARGETS_H

#include "base/names.h"

#include <stddef.h>
#include <stdint.h>

struct store;

struct event_target {
    char flow[FLOW_ID_MAX + 1];
    int64_t version; /* the approved version whose manifest lists the event */
};

/* The listening flows, by flow id. *targets malloc'd (free it; NULL with *count 0 when
 * none). A stored manifest that no longer parses listens not (its runs would be
 * refused anyway). 0, or -1 with the reason in err. */
int event_targets(struct store *s, const char *module, const char *name, int64_t version,
                  struct event_target **targets, size_t *count, char *err, size_t err_cap);

#endif
