/* A flow's manifest (basal.md section 6): parsing and validation into a struct that
 * owns its strings. docs/manifest.md is the reference for every field, its form,
 * its bounds and its default.
 *
 * The parser never prints. Every refusal is one line in the caller's buffer naming the
 * field path and the problem, e.g. "manifest.ops[2].op: missing". */
#ifndef BASAL_FLOWS_MANIFEST_H
#define BASAL_FLOWS_MANIFEST_H

#include "base/names.h"
#include "proto/message.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MANIFEST_MAX_BYTES (64u << 10) /* the whole document */
#define MANIFEST_MAX_LIST 64u          /* entries in any one list */
#define MANIFEST_PURPOSE_MAX 1024u     /* bytes of UTF-8 */
#define MANIFEST_CRON_MAX 128u
#define MANIFEST_TZ_MAX 64u
#define MANIFEST_HOST_MAX 253u

/* limits: bounds (inclusive) and defaults (the flow profile's, supervisor/activation.h). */
#define MANIFEST_CPU_MS_MIN 1u
#define MANIFEST_CPU_MS_MAX 60000u
#define MANIFEST_HEAP_MIN (1ULL << 20)
#define MANIFEST_HEAP_MAX (256ULL << 20)
#define MANIFEST_STACK_MIN (16u << 10)
#define MANIFEST_STACK_MAX (4u << 20)
#define MANIFEST_VALUE_MIN (1u << 10)
#define MANIFEST_VALUE_MAX (1u << 20)

/* deadline and schedule.interval, in seconds. */
#define MANIFEST_DEADLINE_MIN_S 1u
#define MANIFEST_DEADLINE_MAX_S (24u * 3600u)
#define MANIFEST_DEADLINE_DEFAULT_S (10u * 60u)
#define MANIFEST_INTERVAL_MIN_S 10u
#define MANIFEST_INTERVAL_MAX_S (7u * 24u * 3600u)

/* schedule.each_cap: how many missed runs "each" may catch up at most. */
#define MANIFEST_EACH_CAP_MAX 1000u
#define MANIFEST_EACH_CAP_DEFAULT 10u

enum manifest_trigger_kind {
    MANIFEST_TRIGGER_SCHEDULE = 1,
    MANIFEST_TRIGGER_EVENTS = 2,
    MANIFEST_TRIGGER_MANUAL = 3,
};

enum manifest_missed {
    MANIFEST_MISSED_ONCE = 0, /* the default */
    MANIFEST_MISSED_SKIP = 1,
    MANIFEST_MISSED_EACH = 2,
};

/* net.fetch methods, as bits. */
enum manifest_method {
    MANIFEST_METHOD_GET = 1u << 0,
    MANIFEST_METHOD_HEAD = 1u << 1,
    MANIFEST_METHOD_POST = 1u << 2,
    MANIFEST_METHOD_PUT = 1u << 3,
    MANIFEST_METHOD_PATCH = 1u << 4,
    MANIFEST_METHOD_DELETE = 1u << 5,
};
#define MANIFEST_METHODS_DEFAULT (MANIFEST_METHOD_GET | MANIFEST_METHOD_HEAD)

struct manifest_schedule {
    char *cron;           /* the 5-field expression as written, or NULL (interval) */
    uint32_t interval_s;  /* 0 with cron */
    char *tz;             /* cron's time zone, "UTC" by default; NULL with interval */
    enum manifest_missed missed;
    uint32_t each_cap;    /* with missed each (default 10); 0 otherwise */
};

struct manifest_event {
    char *module;
    char *name;
    int64_t version; /* >= 1 */
};

struct manifest_trigger {
    enum manifest_trigger_kind kind;
    struct manifest_schedule schedule;   /* kind SCHEDULE */
    struct manifest_event *events;       /* kind EVENTS: 1..64 entries */
    size_t event_count;
};

struct manifest_op {
    char *module;
    char *op;
};

struct manifest_fetch {
    char *host;       /* a lowercase DNS name */
    unsigned methods; /* enum manifest_method bits, never 0 */
    bool idempotent;  /* the host honours the Idempotency-Key header (default false) */
};

struct manifest_strings {
    char **items;
    size_t count;
};

struct manifest {
    int64_t format;  /* 1 */
    char *id;
    int64_t version; /* >= 1 */
    char *purpose;
    struct manifest_trigger trigger;
    struct manifest_op *ops;
    size_t op_count;
    struct manifest_strings fs_read;  /* real paths of existing directories */
    struct manifest_strings fs_write; /* real paths of existing directories */
    struct manifest_strings git_read; /* real paths of existing directories */
    struct manifest_fetch *fetch;
    size_t fetch_count;
    struct manifest_strings sinks;
    struct proto_budgets limits;      /* every field set (defaults filled in) */
    uint32_t deadline_s;
    uint32_t concurrency;             /* 1 */
};

/* Parses and validates json[0..len). On success fills *out (owned; release with
 * manifest_free) and returns 0. On refusal returns -1, leaves *out zeroed (nothing to
 * free) and writes one line (no newline) into err[0..err_cap). err may be NULL. */
int manifest_parse(const char *json, size_t len, struct manifest *out, char *err,
                   size_t err_cap);

/* Reads the file at path (at most MANIFEST_MAX_BYTES; a larger file is refused
 * without reading it all) and parses it as manifest_parse does. */
int manifest_load_file(const char *path, struct manifest *out, char *err, size_t err_cap);

/* The grants that are never given, whatever the manifest says (host/fs_builtin.h,
 * fs_root_allowed): refused if any fs.read, fs.write or git.read root of m is the data
 * home (home: its path, resolved here), lies inside it or holds it, if "/" is an
 * fs.write root, or if a root lies under /proc or /sys. 0, or -1 with one line in err
 * naming the field, the root and the reason; a data home that cannot be resolved
 * refuses too. Install and approve call it; every fs call checks again. */
int manifest_check_roots(const struct manifest *m, const char *home, char *err,
                         size_t err_cap);

/* Frees what *m owns and zeroes it. Safe on a zeroed manifest; m may be NULL. */
void manifest_free(struct manifest *m);

/* A lowercase DNS name (labels 1-63 of [a-z0-9-], not starting or ending with '-',
 * total <= 253, no trailing dot) that is not an IP literal. */
bool manifest_host_valid(const char *host);
/* "30s", "10m", "2h", "1d": a positive whole number without leading zeros and one
 * unit. 0 and the seconds in *seconds on success, -1 otherwise. */
int manifest_parse_duration(const char *text, uint32_t *seconds);

/* "GET", "HEAD", ... for one method bit; NULL for anything else. */
const char *manifest_method_name(unsigned method);

#endif
