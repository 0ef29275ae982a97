/* JSON-lines file sinks for sink.emit(name, item) (basal.md section 7).
 *
 * A sink named N (granted by the manifest's "sinks") that the operator's catalog does
 * not make a module op (host/ops_module.h, "sinks") is the file home/sinks/N.jsonl
 * (the directory 0700 and the file 0600, created on first use, neither may be a
 * symbolic link). Each emit appends one line on an O_APPEND
 * descriptor under an exclusive flock (appends of other processes wait), then fsync;
 * an append that fails part-way (a full disk cuts a write short) or whose fsync fails
 * is cut back off (ftruncate to where it started), so the file never keeps half a
 * record and is rejected io_error ("the disk is full (...)" when it is):
 *
 *   {"flow": F, "run": R, "position": P, "key": K, "at": <unix ms>, "item": <item>}
 *
 * The key is the call's idempotency key. A consumer deduplicates on it, and so does
 * basal: after a crash an emit whose outcome was not recorded is appended again only
 * if no line of the sink already carries its key (sink_contains_key). */
#ifndef BASAL_HOST_SINK_H
#define BASAL_HOST_SINK_H

#include "host/host.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SINK_DIR "sinks"
#define SINK_LINE_MAX_BYTES (1u << 20)

struct sink_record {
    const char *flow;
    int64_t run_id;
    uint32_t position;
    const char *key;
    const char *item_json; /* the item as JSON text */
};

/* Appends the record to home/sinks/name.jsonl. Fills *out: fulfilled with
 * {"bytes": n} or rejected (io_error, too_large). Returns 0, or -1 (out of memory). */
int sink_append(const char *home, const char *name, const struct sink_record *rec,
                struct host_settlement *out);

/* 1 if a line of home/sinks/name.jsonl has "key" equal to key, 0 if none (or no
 * file), -1 on a read error (errno set). */
int sink_contains_key(const char *home, const char *name, const char *key);

#endif
