/* The operator's catalog (home/modules.json, host/ops_module.h) loaded once and used
 * while the file stays the same (issue 25): loading it is most of what a run's inputs
 * cost when it names a few modules.
 *
 * The contract: catalog_cache_get gives the catalog ops_catalog_load would give now,
 * with its refusals. Before each use the file is looked at (stat: device, inode, size,
 * mode, owner, mtime, ctime); any difference loads it again (and so checks its owner
 * and mode again). A load is kept only if the file was the same before and after it and was
 * last changed at least settled_ms (CATALOG_SETTLED_MS) before the load: a write within the
 * timestamps' granularity of an earlier one might not change them, so a catalog read
 * soon after a change is used once and read again next time. A missing file is the
 * empty catalog, never cached. Any thread may call it; a catalog handed out is never
 * changed or freed until its release. */
#ifndef BASAL_FLOWS_CATALOG_CACHE_H
#define BASAL_FLOWS_CATALOG_CACHE_H

#include "host/ops_module.h"

#include <stddef.h>

#define CATALOG_SETTLED_MS 2000

struct catalog_cache;
struct held_catalog;

/* What a get hands out: catalog is valid until catalog_cache_release. */
struct catalog_hold {
    const struct ops_catalog *catalog;
    struct held_catalog *held; /* the cache's */
};

/* NULL when out of memory. settled_ms: CATALOG_SETTLED_MS (a test of the cache itself
 * passes 0, to keep a catalog it has just written). */
struct catalog_cache *catalog_cache_new(long long settled_ms);
/* Frees the cache and the catalog it keeps; none may be held. c may be NULL. */
void catalog_cache_free(struct catalog_cache *c);

/* home's catalog into *out: 0, or -1 with ops_catalog_load's reason in err (*out
 * zeroed). */
int catalog_cache_get(struct catalog_cache *c, const char *home, struct catalog_hold *out,
                      char *err, size_t err_cap);

/* Ends a hold (from a get that returned 0; a zeroed hold is fine). */
void catalog_cache_release(struct catalog_cache *c, struct catalog_hold *h);

#endif
