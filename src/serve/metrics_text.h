/* Health as Prometheus text (exposition format 0.0.4), for `ck-basal health --format
 * prometheus` and serve's /metrics (docs/operations.md, "Metrics", lists every name). */
#ifndef BASAL_SERVE_METRICS_TEXT_H
#define BASAL_SERVE_METRICS_TEXT_H

#include <stddef.h>

/* health is the object `ck-basal health --json` prints (a json_t *, borrowed): the
 * store's health (store/health_store.h) and, from a serve, its live fields (pool gauges
 * including "idle"; per flow "queue_depth" and "last_run"). Fields it does not know
 * are skipped. Returns malloc'd text, or NULL with a reason in err. */
char *metrics_text(const void *health, char *err, size_t err_cap);

#endif
