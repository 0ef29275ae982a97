/* The schedules table (schema version 4): one row per approved, enabled, scheduled flow
 * of a serve, with the next instant it fires. Written by serve's scheduler only
 * (serve/scheduler.h); read by `flow list` with or without a serve. Times in ms since
 * the epoch. */
#ifndef BASAL_STORE_SCHEDULES_H
#define BASAL_STORE_SCHEDULES_H

#include "base/names.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A schedule's spec as text: "cron <expr> tz <zone>" or "interval <seconds>s". */
#define SCHEDULE_SPEC_MAX 256

struct schedule_row {
    char flow_id[FLOW_ID_MAX + 1];
    int64_t version;            /* the approved version it was computed for */
    char spec[SCHEDULE_SPEC_MAX + 1];
    int64_t anchor_ms;          /* approval or enable: intervals count from it */
    bool has_next;              /* false: never fires again */
    int64_t next_fire_ms;
};

/* Every row, by flow id (*rows malloc'd, NULL with 0). 0 or -1. */
int schedules_list(struct store *s, struct schedule_row **rows, size_t *count, char *err,
                   size_t err_cap);

/* flow's row: 1 with *out, 0 when it has none, -1 on error. */
int schedules_get(struct store *s, const char *flow, struct schedule_row *out, char *err,
                  size_t err_cap);

/* Inserts or replaces flow's row (one transaction). 0 or -1. */
int schedules_put(struct store *s, const struct schedule_row *row, char *err, size_t err_cap);

/* Moves flow's next fire on (has_next false: never again). 0 or -1. */
int schedules_set_next(struct store *s, const char *flow, bool has_next, int64_t next_fire_ms,
                       char *err, size_t err_cap);

/* Removes flow's row (no longer approved, enabled or scheduled). 0 or -1. */
int schedules_delete(struct store *s, const char *flow, char *err, size_t err_cap);

#endif
