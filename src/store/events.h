/* Emitted events (docs/triggers.md, "Events"): the `events` table. An event is
 * (module, name, version, event_id) with a JSON payload; the four together are unique,
 * so an event emitted twice with one id is one row. A row is recorded before any run it
 * causes is admitted and marked delivered after every listening flow was offered it:
 * a crash in between leaves it pending, and the next delivery offers it again (each
 * flow's admission dedupes by the trigger id events_trigger_id gives). */
#ifndef BASAL_STORE_EVENTS_H
#define BASAL_STORE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

#define EVENT_ID_MAX 128u
/* "event:" and a decimal seq. */
#define EVENT_TRIGGER_ID_MAX 32u

/* An event id: 1 to EVENT_ID_MAX bytes of [A-Za-z0-9._:-] (safe in a trigger id, a log
 * line and a shell word). */
bool events_id_valid(const char *id);

struct event_row {
    int64_t seq;
    char module[64];
    char name[64];
    int64_t version;
    char event_id[EVENT_ID_MAX + 1];
    char *payload;  /* compact JSON, malloc'd (events_rows_free) */
    bool delivered;
};

/* Records the event as pending unless (module, name, version, event_id) is recorded
 * already; either way *row is the stored row (its payload the first one recorded) and
 * *is_new says which. The caller checked the names, the id and the payload (an object
 * of compact JSON). 0, or -1 with the reason in err (row zeroed). */
int events_record(struct store *s, const char *module, const char *name, int64_t version,
                  const char *event_id, const char *payload, struct event_row *row,
                  bool *is_new, char *err, size_t err_cap);

/* Every pending event, oldest first. *rows malloc'd (events_rows_free). 0 or -1. */
int events_pending(struct store *s, struct event_row **rows, size_t *count, char *err,
                   size_t err_cap);

/* Marks event seq delivered (stamped now); already delivered is fine. 0 or -1. */
int events_mark_delivered(struct store *s, int64_t seq, char *err, size_t err_cap);

void events_rows_free(struct event_row *rows, size_t count);

/* The trigger id of the runs event seq admits: "event:<seq>". The seq names the whole
 * (module, name, version, event_id) (the row is never deleted), so one flow gets one
 * run per event however often it is offered, and two events that share an id but not
 * a name stay apart. out holds EVENT_TRIGGER_ID_MAX + 1 bytes. */
void events_trigger_id(int64_t seq, char *out, size_t cap);

#endif
