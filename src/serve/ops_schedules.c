/* flow.schedule, and the next fire `flow list` shows (docs/triggers.md): computed from
 * the flow's approved schedule and the row serve keeps, by the rule the scheduler
 * itself applies (scheduled_flow_row), so what is shown is what fires; both start
 * from one first fire (first_shown). */
#include "serve/ops_args.h"
#include "serve/ops_commands_internal.h"
#include "serve/ops_reply.h"

#include "flows/schedule_plan.h"
#include "flows/scheduled_flows.h"
#include "store/schedules.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>

#define ERR_CAP 1024
#define SCHEDULE_COUNT_DEFAULT 5
#define SCHEDULE_COUNT_MAX 1000

static json_t *instant(const struct schedule *s, int64_t unix_s)
{
    char local[40], utc[32];
    schedule_iso_local(s, unix_s, local);
    schedule_iso_utc(unix_s, utc);
    json_t *o = json_object();
    json_object_set_new(o, "local", json_string(local));
    json_object_set_new(o, "utc", json_string(utc));
    json_object_set_new(o, "unix", json_integer(unix_s));
    return o;
}

/* The flow's schedule and the row the scheduler keeps (or would make). 1 when
 * scheduled, 0 when not (why in err), -1 on error. */
static int load(struct store *st, const char *id, struct scheduled_flow *f,
                struct schedule_row *row, char *err, size_t err_cap)
{
    int got = scheduled_flow_of(st, id, f, err, err_cap);
    if (got != 1)
        return got;
    struct schedule_row stored;
    int has = schedules_get(st, id, &stored, err, err_cap);
    if (has < 0) {
        scheduled_flow_free(f);
        return -1;
    }
    (void)scheduled_flow_row(f, has == 1 ? &stored : NULL, row);
    return 1;
}

/* The first fire flow list and flow schedule show, by one rule: the row's next fire
 * while it is still ahead; an overdue one fires at the next serve by the missed rule
 * (or not at all), so what is shown goes on from now. False: it never fires again. */
static bool first_shown(const struct scheduled_flow *f, const struct schedule_row *row,
                        int64_t *first_s)
{
    int64_t now_s = store_now_ms() / 1000;
    if (row->has_next && row->next_fire_ms / 1000 > now_s) {
        *first_s = row->next_fire_ms / 1000;
        return true;
    }
    return schedule_next(&f->schedule, now_s, first_s) == 0;
}

json_t *ops_flow_next_fire(struct store *st, const char *id)
{
    struct scheduled_flow f;
    struct schedule_row row;
    char err[ERR_CAP];
    if (load(st, id, &f, &row, err, sizeof err) != 1)
        return json_null();
    int64_t first_s = 0;
    json_t *o = json_null();
    if (first_shown(&f, &row, &first_s)) {
        o = instant(&f.schedule, first_s);
        json_object_set_new(o, "tz", json_string(f.tz));
    }
    scheduled_flow_free(&f);
    return o;
}

static const char *const MISSED_NAMES[] = {
    [MANIFEST_MISSED_ONCE] = "once",
    [MANIFEST_MISSED_SKIP] = "skip",
    [MANIFEST_MISSED_EACH] = "each",
};

json_t *ops_cmd_flow_schedule(struct store *st, json_t *args)
{
    const char *id;
    long long count = SCHEDULE_COUNT_DEFAULT;
    json_t *reply;
    if (ops_arg_string(args, "id", true, 256, &id, &reply) != 0 ||
        (json_object_get(args, "count") != NULL &&
         ops_arg_integer(args, "count", 1, SCHEDULE_COUNT_MAX, &count, &reply) != 0))
        return reply;
    struct scheduled_flow f;
    struct schedule_row row;
    char err[ERR_CAP];
    int got = load(st, id, &f, &row, err, sizeof err);
    if (got != 1)
        return ops_reply_error(1, err);
    json_t *fires = json_array();
    int64_t at = 0;
    bool more = first_shown(&f, &row, &at);
    for (long long i = 0; more && i < count; i++) {
        json_array_append_new(fires, instant(&f.schedule, at));
        more = i + 1 < count && schedule_next(&f.schedule, at, &at) == 0;
    }
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(f.flow_id));
    json_object_set_new(o, "version", json_integer(f.version));
    json_object_set_new(o, "schedule", json_string(f.spec));
    json_object_set_new(o, "tz", json_string(f.tz));
    json_object_set_new(o, "missed", json_string(MISSED_NAMES[f.missed]));
    if (f.missed == MANIFEST_MISSED_EACH)
        json_object_set_new(o, "each_cap", json_integer(f.each_cap));
    json_object_set_new(o, "fires", fires);
    scheduled_flow_free(&f);
    return ops_reply_ok(o);
}
