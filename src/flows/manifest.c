/* Manifest parsing and validation (basal.md section 6; docs/manifest.md). */
#include "flows/manifest.h"

#include "flows/schedule.h"
#include "flows/zoneinfo.h"

#include "base/bounded_file.h"
#include "base/error_line.h"
#include "base/json_fields.h"
#include "host/fs_builtin.h"

#include "supervisor/activation.h"
#include "host/address_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- generic value checks -------------------------------------------------------- */

/* The member key of obj: 1 present (*val set), 0 absent and optional, -1 missing. */
static int member(struct field_check *c, json_t *obj, const char *path, const char *key, bool required,
                  json_t **val, char *sub, size_t sub_cap)
{
    field_key_path(sub, sub_cap, path, key);
    *val = json_object_get(obj, key);
    if (*val != NULL)
        return 1;
    if (required)
        return field_fail(c, sub, "missing");
    return 0;
}

static int want_string(struct field_check *c, json_t *v, const char *path, size_t max, const char **s)
{
    *s = "";
    if (!json_is_string(v))
        return field_fail(c, path, "must be a string");
    size_t n = json_string_length(v);
    if (n == 0)
        return field_fail(c, path, "must not be empty");
    if (n > max)
        return field_fail(c, path, "%zu bytes, more than the %zu allowed", n, max);
    *s = json_string_value(v);
    if (strlen(*s) != n) /* jansson refuses \u0000 already; belt and braces */
        return field_fail(c, path, "contains a NUL character");
    return 0;
}

static int want_array(struct field_check *c, json_t *v, const char *path, size_t min)
{
    if (!json_is_array(v))
        return field_fail(c, path, "must be a list");
    size_t n = json_array_size(v);
    if (n > MANIFEST_MAX_LIST)
        return field_fail(c, path, "%zu entries, more than the %u allowed", n, MANIFEST_MAX_LIST);
    if (n < min)
        return field_fail(c, path, "must have at least %zu entr%s", min, min == 1 ? "y" : "ies");
    return 0;
}

/* ---- field forms ------------------------------------------------------------------- */

static const char *host_problem(const char *h)
{
    size_t n = strlen(h);
    if (n == 0)
        return "must not be empty";
    if (n > MANIFEST_HOST_MAX)
        return "longer than 253 bytes";
    size_t label = 0;
    char prev = '.';
    for (size_t i = 0; i < n; i++) {
        char ch = h[i];
        if (ch == '.') {
            if (label == 0)
                return "has an empty label";
            if (prev == '-')
                return "has a label ending with '-'";
            label = 0;
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-') {
            if (label == 0 && ch == '-')
                return "has a label starting with '-'";
            if (++label > 63)
                return "has a label longer than 63 bytes";
        } else if (ch >= 'A' && ch <= 'Z') {
            return "must be lowercase";
        } else if (ch == ':' || ch == '[' || ch == ']') {
            return "is an IP address literal, not a DNS name";
        } else {
            return "has a character outside [a-z0-9.-]";
        }
        prev = ch;
    }
    if (label == 0)
        return "has an empty label (a trailing dot)";
    if (prev == '-')
        return "has a label ending with '-'";
    /* The same rule net.fetch applies to a URL's host (host/address_policy.h). */
    if (address_host_numeric(h))
        return "is an IP address literal, not a DNS name";
    return NULL;
}

bool manifest_host_valid(const char *host)
{
    return host_problem(host) == NULL;
}

int manifest_parse_duration(const char *text, uint32_t *seconds)
{
    uint64_t n = 0;
    size_t i = 0;
    if (text[0] < '1' || text[0] > '9')
        return -1;
    for (; text[i] >= '0' && text[i] <= '9'; i++) {
        if (i >= 9)
            return -1;
        n = n * 10 + (uint64_t)(text[i] - '0');
    }
    uint64_t unit;
    switch (text[i]) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    default: return -1;
    }
    if (text[i + 1] != '\0')
        return -1;
    n *= unit;
    if (n > UINT32_MAX)
        return -1;
    *seconds = (uint32_t)n;
    return 0;
}

static const char *const METHOD_NAMES[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"};
#define METHOD_COUNT (sizeof METHOD_NAMES / sizeof METHOD_NAMES[0])

const char *manifest_method_name(unsigned method)
{
    for (size_t i = 0; i < METHOD_COUNT; i++)
        if (method == 1u << i)
            return METHOD_NAMES[i];
    return NULL;
}


/* ---- sections ---------------------------------------------------------------------- */

static int want_name(struct field_check *c, json_t *v, const char *path, char **out)
{
    const char *s;
    if (want_string(c, v, path, OBJECT_NAME_MAX, &s) != 0)
        return -1;
    if (!object_name_valid(s)) {
        char shown[FIELD_SHOW_CAP];
        return field_fail(c, path, "%s is not a name (1-63 of [a-z0-9_.-], starting with a-z or 0-9)",
                    field_show(s, true, shown, sizeof shown));
    }
    *out = field_dup(c, path, s);
    return *out != NULL ? 0 : -1;
}

static int want_duration(struct field_check *c, json_t *v, const char *path, uint32_t lo, uint32_t hi,
                         const char *range, uint32_t *out)
{
    const char *s;
    char shown[FIELD_SHOW_CAP];
    if (want_string(c, v, path, 16, &s) != 0)
        return -1;
    if (manifest_parse_duration(s, out) != 0)
        return field_fail(c, path,
                    "%s is not a duration (a whole number without leading zeros and one unit "
                    "s, m, h or d, e.g. \"30s\")",
                    field_show(s, true, shown, sizeof shown));
    if (*out < lo || *out > hi)
        return field_fail(c, path, "%s is outside %s", field_show(s, true, shown, sizeof shown), range);
    return 0;
}

static int parse_schedule(struct field_check *c, json_t *v, const char *path, struct manifest_schedule *s)
{
    static const char *const keys[] = {"cron", "interval", "tz", "missed", "each_cap", NULL};
    char sub[FIELD_PATH_CAP];
    char shown[FIELD_SHOW_CAP];
    json_t *cron, *interval, *tz, *missed, *cap;
    const char *text;
    if (field_want_object(c, v, path, keys) != 0)
        return -1;
    cron = json_object_get(v, "cron");
    interval = json_object_get(v, "interval");
    if (cron != NULL && interval != NULL)
        return field_fail(c, path, "has both cron and interval; exactly one is allowed");
    if (cron == NULL && interval == NULL)
        return field_fail(c, path, "needs one of cron or interval");
    if (cron != NULL) {
        char why[160];
        field_key_path(sub, sizeof sub, path, "cron");
        if (want_string(c, cron, sub, MANIFEST_CRON_MAX, &text) != 0)
            return -1;
        /* The scheduler's own parser: what it accepts here is what fires. */
        struct schedule parsed;
        if (schedule_parse_cron(text, NULL, &parsed, why, sizeof why) != 0)
            return field_fail(c, sub, "%s", strncmp(why, "cron: ", 6) == 0 ? why + 6 : why);
        schedule_free(&parsed);
        if ((s->cron = field_dup(c, sub, text)) == NULL)
            return -1;
    } else {
        field_key_path(sub, sizeof sub, path, "interval");
        if (want_duration(c, interval, sub, MANIFEST_INTERVAL_MIN_S, MANIFEST_INTERVAL_MAX_S,
                          "10s..7d", &s->interval_s) != 0)
            return -1;
    }
    if (member(c, v, path, "tz", false, &tz, sub, sizeof sub) > 0) {
        if (cron == NULL)
            return field_fail(c, sub, "only with cron (an interval has no time zone)");
        if (want_string(c, tz, sub, MANIFEST_TZ_MAX, &text) != 0)
            return -1;
        char zone_err[256];
        if (zoneinfo_name_check(text, zone_err, sizeof zone_err) != 0)
            return field_fail(c, sub, "%s is not a time zone name (like \"UTC\" or \"Europe/Berlin\")",
                        field_show(text, true, shown, sizeof shown));
        /* A zone the system's zoneinfo does not have could never fire: refused now. */
        struct zoneinfo *zone = NULL;
        if (zoneinfo_load(text, &zone, zone_err, sizeof zone_err) != 0)
            return field_fail(c, sub, "%s", zone_err);
        zoneinfo_free(zone);
        if ((s->tz = field_dup(c, sub, text)) == NULL)
            return -1;
    } else if (cron != NULL && (s->tz = field_dup(c, sub, "UTC")) == NULL) {
        return -1;
    }
    s->missed = MANIFEST_MISSED_ONCE;
    if (member(c, v, path, "missed", false, &missed, sub, sizeof sub) > 0) {
        if (want_string(c, missed, sub, 16, &text) != 0)
            return -1;
        if (strcmp(text, "once") == 0)
            s->missed = MANIFEST_MISSED_ONCE;
        else if (strcmp(text, "skip") == 0)
            s->missed = MANIFEST_MISSED_SKIP;
        else if (strcmp(text, "each") == 0)
            s->missed = MANIFEST_MISSED_EACH;
        else
            return field_fail(c, sub, "%s is not one of once, skip, each",
                        field_show(text, true, shown, sizeof shown));
    }
    if (member(c, v, path, "each_cap", false, &cap, sub, sizeof sub) > 0) {
        long long n;
        if (s->missed != MANIFEST_MISSED_EACH)
            return field_fail(c, sub, "only with missed \"each\"");
        if (field_want_int(c, cap, sub, 1, MANIFEST_EACH_CAP_MAX, &n) != 0)
            return -1;
        s->each_cap = (uint32_t)n;
    } else if (s->missed == MANIFEST_MISSED_EACH) {
        s->each_cap = MANIFEST_EACH_CAP_DEFAULT;
    }
    return 0;
}

static int parse_events(struct field_check *c, json_t *v, const char *path, struct manifest_trigger *t)
{
    static const char *const keys[] = {"module", "name", "version", NULL};
    if (want_array(c, v, path, 1) != 0)
        return -1;
    size_t n = json_array_size(v);
    t->events = calloc(n, sizeof *t->events);
    if (t->events == NULL)
        return field_fail(c, path, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char at[FIELD_PATH_CAP], sub[FIELD_PATH_CAP];
        json_t *e = json_array_get(v, i), *f;
        struct manifest_event *ev = &t->events[i];
        long long ver;
        field_index_path(at, sizeof at, path, i);
        t->event_count = i + 1;
        if (field_want_object(c, e, at, keys) != 0 ||
            member(c, e, at, "module", true, &f, sub, sizeof sub) < 0 ||
            want_name(c, f, sub, &ev->module) != 0 ||
            member(c, e, at, "name", true, &f, sub, sizeof sub) < 0 ||
            want_name(c, f, sub, &ev->name) != 0 ||
            member(c, e, at, "version", true, &f, sub, sizeof sub) < 0 ||
            field_want_int(c, f, sub, 1, INT32_MAX, &ver) != 0)
            return -1;
        ev->version = ver;
        for (size_t j = 0; j < i; j++)
            if (strcmp(t->events[j].module, ev->module) == 0 &&
                strcmp(t->events[j].name, ev->name) == 0 && t->events[j].version == ev->version)
                return field_fail(c, at, "the same event as entry %zu", j);
    }
    return 0;
}

static int parse_trigger(struct field_check *c, json_t *v, const char *path, struct manifest_trigger *t)
{
    static const char *const keys[] = {"schedule", "events", "manual", NULL};
    char sub[FIELD_PATH_CAP];
    if (field_want_object(c, v, path, keys) != 0)
        return -1;
    const char *present[3];
    size_t count = 0;
    for (size_t i = 0; keys[i] != NULL; i++)
        if (json_object_get(v, keys[i]) != NULL)
            present[count++] = keys[i];
    if (count == 0)
        return field_fail(c, path, "needs exactly one of schedule, events or manual");
    if (count > 1)
        return field_fail(c, path, "has both %s and %s; exactly one of schedule, events or manual is "
                    "allowed", present[0], present[1]);
    json_t *f;
    if (member(c, v, path, "schedule", false, &f, sub, sizeof sub) > 0) {
        t->kind = MANIFEST_TRIGGER_SCHEDULE;
        return parse_schedule(c, f, sub, &t->schedule);
    }
    if (member(c, v, path, "events", false, &f, sub, sizeof sub) > 0) {
        t->kind = MANIFEST_TRIGGER_EVENTS;
        return parse_events(c, f, sub, t);
    }
    member(c, v, path, "manual", false, &f, sub, sizeof sub);
    if (!json_is_true(f))
        return field_fail(c, sub, "must be true");
    t->kind = MANIFEST_TRIGGER_MANUAL;
    return 0;
}

static int parse_ops(struct field_check *c, json_t *v, const char *path, struct manifest *m)
{
    static const char *const keys[] = {"module", "op", NULL};
    if (want_array(c, v, path, 0) != 0)
        return -1;
    size_t n = json_array_size(v);
    if (n == 0)
        return 0;
    m->ops = calloc(n, sizeof *m->ops);
    if (m->ops == NULL)
        return field_fail(c, path, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char at[FIELD_PATH_CAP], sub[FIELD_PATH_CAP];
        json_t *e = json_array_get(v, i), *f;
        struct manifest_op *op = &m->ops[i];
        field_index_path(at, sizeof at, path, i);
        m->op_count = i + 1;
        if (field_want_object(c, e, at, keys) != 0 ||
            member(c, e, at, "module", true, &f, sub, sizeof sub) < 0 ||
            want_name(c, f, sub, &op->module) != 0 ||
            member(c, e, at, "op", true, &f, sub, sizeof sub) < 0 ||
            want_name(c, f, sub, &op->op) != 0)
            return -1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(m->ops[j].module, op->module) == 0 && strcmp(m->ops[j].op, op->op) == 0)
                return field_fail(c, at, "the same op as entry %zu", j);
    }
    return 0;
}

enum strings_kind { STRINGS_DIRS, STRINGS_NAMES };

static int want_dir(struct field_check *c, json_t *v, const char *path, char **out)
{
    const char *s;
    char shown[FIELD_SHOW_CAP];
    struct stat st;
    if (want_string(c, v, path, PATH_MAX - 1, &s) != 0)
        return -1;
    if (s[0] != '/')
        return field_fail(c, path, "%s is not an absolute path", field_show(s, true, shown, sizeof shown));
    char *real = realpath(s, NULL);
    if (real == NULL) {
        int e = errno;
        if (e == ENOENT)
            return field_fail(c, path, "%s does not exist", field_show(s, true, shown, sizeof shown));
        return field_fail(c, path, "%s: %s", field_show(s, true, shown, sizeof shown), strerror(e));
    }
    if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
        free(real);
        return field_fail(c, path, "%s is not a directory", field_show(s, true, shown, sizeof shown));
    }
    *out = real;
    return 0;
}

static int parse_strings(struct field_check *c, json_t *v, const char *path, enum strings_kind kind,
                         struct manifest_strings *out)
{
    if (want_array(c, v, path, 0) != 0)
        return -1;
    size_t n = json_array_size(v);
    if (n == 0)
        return 0;
    out->items = calloc(n, sizeof *out->items);
    if (out->items == NULL)
        return field_fail(c, path, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char at[FIELD_PATH_CAP];
        json_t *e = json_array_get(v, i);
        field_index_path(at, sizeof at, path, i);
        out->count = i + 1;
        int rc = kind == STRINGS_DIRS ? want_dir(c, e, at, &out->items[i])
                                      : want_name(c, e, at, &out->items[i]);
        if (rc != 0)
            return -1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(out->items[j], out->items[i]) == 0)
                return field_fail(c, at, kind == STRINGS_DIRS ? "the same directory as entry %zu"
                                                        : "the same name as entry %zu", j);
    }
    return 0;
}

static int parse_methods(struct field_check *c, json_t *v, const char *path, unsigned *out)
{
    if (want_array(c, v, path, 1) != 0)
        return -1;
    *out = 0;
    for (size_t i = 0; i < json_array_size(v); i++) {
        char at[FIELD_PATH_CAP];
        const char *s;
        field_index_path(at, sizeof at, path, i);
        if (want_string(c, json_array_get(v, i), at, 16, &s) != 0)
            return -1;
        unsigned bit = 0;
        for (size_t k = 0; k < METHOD_COUNT; k++)
            if (strcmp(METHOD_NAMES[k], s) == 0)
                bit = 1u << k;
        if (bit == 0) {
            char shown[FIELD_SHOW_CAP];
            return field_fail(c, at, "unknown method %s (GET, HEAD, POST, PUT, PATCH or DELETE)",
                        field_show(s, true, shown, sizeof shown));
        }
        if (*out & bit)
            return field_fail(c, at, "%s listed twice", s);
        *out |= bit;
    }
    return 0;
}

static int parse_net(struct field_check *c, json_t *v, const char *path, struct manifest *m)
{
    static const char *const keys[] = {"fetch", NULL};
    static const char *const entry_keys[] = {"host", "methods", "idempotent", NULL};
    char sub[FIELD_PATH_CAP];
    json_t *fetch;
    if (field_want_object(c, v, path, keys) != 0)
        return -1;
    if (member(c, v, path, "fetch", false, &fetch, sub, sizeof sub) <= 0)
        return 0;
    if (want_array(c, fetch, sub, 0) != 0)
        return -1;
    size_t n = json_array_size(fetch);
    if (n == 0)
        return 0;
    m->fetch = calloc(n, sizeof *m->fetch);
    if (m->fetch == NULL)
        return field_fail(c, sub, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char at[FIELD_PATH_CAP], field[FIELD_PATH_CAP];
        json_t *e = json_array_get(fetch, i), *f;
        struct manifest_fetch *fe = &m->fetch[i];
        const char *host, *why;
        field_index_path(at, sizeof at, sub, i);
        m->fetch_count = i + 1;
        if (field_want_object(c, e, at, entry_keys) != 0 ||
            member(c, e, at, "host", true, &f, field, sizeof field) < 0 ||
            want_string(c, f, field, MANIFEST_HOST_MAX + 1, &host) != 0)
            return -1;
        if ((why = host_problem(host)) != NULL) {
            char shown[FIELD_SHOW_CAP];
            return field_fail(c, field, "%s %s", field_show(host, true, shown, sizeof shown), why);
        }
        if ((fe->host = field_dup(c, field, host)) == NULL)
            return -1;
        fe->methods = MANIFEST_METHODS_DEFAULT;
        if (member(c, e, at, "methods", false, &f, field, sizeof field) > 0 &&
            parse_methods(c, f, field, &fe->methods) != 0)
            return -1;
        if (member(c, e, at, "idempotent", false, &f, field, sizeof field) > 0) {
            if (!json_is_boolean(f))
                return field_fail(c, field, "must be true or false");
            fe->idempotent = json_is_true(f);
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(m->fetch[j].host, fe->host) == 0)
                return field_fail(c, at, "the same host as entry %zu (list its methods once)", j);
    }
    return 0;
}

static int parse_limits(struct field_check *c, json_t *v, const char *path, struct proto_budgets *b)
{
    static const char *const keys[] = {"cpu_ms", "heap_bytes", "stack_bytes", "max_value_bytes",
                                       NULL};
    char sub[FIELD_PATH_CAP];
    json_t *f;
    long long n;
    if (field_want_object(c, v, path, keys) != 0)
        return -1;
    if (member(c, v, path, "cpu_ms", false, &f, sub, sizeof sub) > 0) {
        if (field_want_int(c, f, sub, MANIFEST_CPU_MS_MIN, MANIFEST_CPU_MS_MAX, &n) != 0)
            return -1;
        b->cpu_ms = (uint32_t)n;
    }
    if (member(c, v, path, "heap_bytes", false, &f, sub, sizeof sub) > 0) {
        if (field_want_int(c, f, sub, (long long)MANIFEST_HEAP_MIN, (long long)MANIFEST_HEAP_MAX, &n) != 0)
            return -1;
        b->heap_bytes = (uint64_t)n;
    }
    if (member(c, v, path, "stack_bytes", false, &f, sub, sizeof sub) > 0) {
        if (field_want_int(c, f, sub, MANIFEST_STACK_MIN, MANIFEST_STACK_MAX, &n) != 0)
            return -1;
        b->stack_bytes = (uint32_t)n;
    }
    if (member(c, v, path, "max_value_bytes", false, &f, sub, sizeof sub) > 0) {
        if (field_want_int(c, f, sub, MANIFEST_VALUE_MIN, MANIFEST_VALUE_MAX, &n) != 0)
            return -1;
        b->max_value_bytes = (uint32_t)n;
    }
    return 0;
}

static int parse_root(struct field_check *c, json_t *root, struct manifest *m)
{
    static const char *const keys[] = {"format", "id", "version", "purpose", "trigger",
                                       "ops", "fs", "git", "net", "sinks", "limits",
                                       "deadline", "concurrency", NULL};
    static const char *const fs_keys[] = {"read", "write", NULL};
    static const char *const git_keys[] = {"read", NULL};
    const char *path = "manifest";
    char sub[FIELD_PATH_CAP], sub2[FIELD_PATH_CAP];
    json_t *f, *g;
    const char *s;
    long long n;

    /* The flow profile's budgets, from the one place that defines them. */
    struct activation_request flow_defaults;
    activation_request_defaults(&flow_defaults, PROTO_PROFILE_FLOW);
    m->limits = flow_defaults.budgets;
    m->deadline_s = MANIFEST_DEADLINE_DEFAULT_S;
    m->concurrency = 1;

    if (field_want_object(c, root, path, keys) != 0)
        return -1;
    if (member(c, root, path, "format", true, &f, sub, sizeof sub) < 0 ||
        field_want_int(c, f, sub, 1, 1, &n) != 0)
        return -1;
    m->format = n;
    if (member(c, root, path, "id", true, &f, sub, sizeof sub) < 0 ||
        want_string(c, f, sub, FLOW_ID_MAX, &s) != 0)
        return -1;
    if (!flow_id_valid(s)) {
        char shown[FIELD_SHOW_CAP];
        return field_fail(c, sub, "%s is not an id (1-63 of [a-z0-9_-])",
                    field_show(s, true, shown, sizeof shown));
    }
    if ((m->id = field_dup(c, sub, s)) == NULL)
        return -1;
    if (member(c, root, path, "version", true, &f, sub, sizeof sub) < 0 ||
        field_want_int(c, f, sub, 1, LLONG_MAX, &n) != 0)
        return -1;
    m->version = n;
    if (member(c, root, path, "purpose", true, &f, sub, sizeof sub) < 0 ||
        want_string(c, f, sub, MANIFEST_PURPOSE_MAX, &s) != 0)
        return -1;
    if (field_want_shown_text(c, sub, s, strlen(s), false) != 0)
        return -1;
    if ((m->purpose = field_dup(c, sub, s)) == NULL)
        return -1;
    if (member(c, root, path, "trigger", true, &f, sub, sizeof sub) < 0 ||
        parse_trigger(c, f, sub, &m->trigger) != 0)
        return -1;
    if (member(c, root, path, "ops", false, &f, sub, sizeof sub) > 0 &&
        parse_ops(c, f, sub, m) != 0)
        return -1;
    if (member(c, root, path, "fs", false, &f, sub, sizeof sub) > 0) {
        if (field_want_object(c, f, sub, fs_keys) != 0)
            return -1;
        if (member(c, f, sub, "read", false, &g, sub2, sizeof sub2) > 0 &&
            parse_strings(c, g, sub2, STRINGS_DIRS, &m->fs_read) != 0)
            return -1;
        if (member(c, f, sub, "write", false, &g, sub2, sizeof sub2) > 0 &&
            parse_strings(c, g, sub2, STRINGS_DIRS, &m->fs_write) != 0)
            return -1;
    }
    if (member(c, root, path, "git", false, &f, sub, sizeof sub) > 0) {
        if (field_want_object(c, f, sub, git_keys) != 0)
            return -1;
        if (member(c, f, sub, "read", false, &g, sub2, sizeof sub2) > 0 &&
            parse_strings(c, g, sub2, STRINGS_DIRS, &m->git_read) != 0)
            return -1;
    }
    if (member(c, root, path, "net", false, &f, sub, sizeof sub) > 0 &&
        parse_net(c, f, sub, m) != 0)
        return -1;
    if (member(c, root, path, "sinks", false, &f, sub, sizeof sub) > 0 &&
        parse_strings(c, f, sub, STRINGS_NAMES, &m->sinks) != 0)
        return -1;
    if (member(c, root, path, "limits", false, &f, sub, sizeof sub) > 0 &&
        parse_limits(c, f, sub, &m->limits) != 0)
        return -1;
    if (member(c, root, path, "deadline", false, &f, sub, sizeof sub) > 0 &&
        want_duration(c, f, sub, MANIFEST_DEADLINE_MIN_S, MANIFEST_DEADLINE_MAX_S, "1s..24h",
                      &m->deadline_s) != 0)
        return -1;
    if (member(c, root, path, "concurrency", false, &f, sub, sizeof sub) > 0) {
        if (field_want_int(c, f, sub, 1, 1, &n) != 0)
            return -1;
        m->concurrency = (uint32_t)n;
    }
    return 0;
}

/* ---- entry points ------------------------------------------------------------------ */

int manifest_parse(const char *json, size_t len, struct manifest *out, char *err, size_t err_cap)
{
    struct field_check c = {err, err_cap, NULL};
    memset(out, 0, sizeof *out);
    if (err != NULL && err_cap > 0)
        err[0] = '\0';
    if (json == NULL && len > 0)
        return field_fail(&c, "manifest", "no bytes");
    if (len > MANIFEST_MAX_BYTES)
        return field_fail(&c, "manifest", "%zu bytes, more than the %u allowed", len,
                    MANIFEST_MAX_BYTES);
    if (len == 0)
        return field_fail(&c, "manifest", "empty");
    json_t *root = field_load_document(&c, "manifest", json, len, JSON_DECODE_ANY);
    if (root == NULL)
        return -1;
    if (!json_is_object(root)) {
        json_decref(root);
        return field_fail(&c, "manifest", "must be a JSON object");
    }
    int rc = parse_root(&c, root, out);
    json_decref(root);
    if (rc != 0)
        manifest_free(out);
    return rc;
}

int manifest_load_file(const char *path, struct manifest *out, char *err, size_t err_cap)
{
    memset(out, 0, sizeof *out);
    char *buf;
    size_t len;
    if (read_bounded_file(path, "manifest", MANIFEST_MAX_BYTES, &buf, &len, err, err_cap) != 0)
        return -1;
    int rc = manifest_parse(buf, len, out, err, err_cap);
    free(buf);
    return rc;
}

/* One list of roots against the data home; 0 or -1 (err set). */
static int check_root_list(const struct manifest_strings *roots, const char *path, bool writable,
                           const char *home_real, char *err, size_t err_cap)
{
    for (size_t i = 0; i < roots->count; i++) {
        char why[128];
        if (fs_root_allowed(roots->items[i], writable, home_real, why, sizeof why))
            continue;
        return error_line(err, err_cap, "%s[%zu]: '%s' %s; such a root is never granted", path,
                          i, roots->items[i], why);
    }
    return 0;
}

int manifest_check_roots(const struct manifest *m, const char *home, char *err,
                         size_t err_cap)
{
    char *home_real = realpath(home, NULL);
    if (home_real == NULL)
        return error_line(err, err_cap, "the data home %s cannot be resolved: %s", home,
                          strerror(errno));
    int rc = check_root_list(&m->fs_read, "manifest.fs.read", false, home_real, err, err_cap);
    if (rc == 0)
        rc = check_root_list(&m->fs_write, "manifest.fs.write", true, home_real, err, err_cap);
    if (rc == 0)
        rc = check_root_list(&m->git_read, "manifest.git.read", false, home_real, err, err_cap);
    free(home_real);
    return rc;
}

static void free_strings(struct manifest_strings *s)
{
    for (size_t i = 0; i < s->count; i++)
        free(s->items[i]);
    free(s->items);
}

void manifest_free(struct manifest *m)
{
    if (m == NULL)
        return;
    free(m->id);
    free(m->purpose);
    free(m->trigger.schedule.cron);
    free(m->trigger.schedule.tz);
    for (size_t i = 0; i < m->trigger.event_count; i++) {
        free(m->trigger.events[i].module);
        free(m->trigger.events[i].name);
    }
    free(m->trigger.events);
    for (size_t i = 0; i < m->op_count; i++) {
        free(m->ops[i].module);
        free(m->ops[i].op);
    }
    free(m->ops);
    free_strings(&m->fs_read);
    free_strings(&m->fs_write);
    free_strings(&m->git_read);
    for (size_t i = 0; i < m->fetch_count; i++)
        free(m->fetch[i].host);
    free(m->fetch);
    free_strings(&m->sinks);
    memset(m, 0, sizeof *m);
}
