#include "serve/scheduler.h"

#include "base/clock.h"
#include "base/error_line.h"
#include "base/test_hooks.h"
#include "flows/long_running.h"
#include "flows/schedule_plan.h"
#include "flows/scheduled_flows.h"
#include "serve/serve_clock.h"
#include "serve/serve_log.h"
#include "store/runs.h"
#include "store/schedules.h"
#include "store/waits.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The longest single sleep: a wall clock set forward is noticed within this. */
#define MAX_SLEEP_MS (5LL * 60 * 1000)
/* After a store error while syncing. */
#define SYNC_RETRY_S 1

struct entry {
    struct scheduled_flow flow;
    struct schedule_row row;
};

struct scheduler {
    struct scheduler_hooks hooks;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;      /* CLOCK_MONOTONIC */
    pthread_cond_t looked;
    bool stopping, dirty, poked;
    bool joined;
    int started; /* 0 starting, 1 running, -1 could not open the store (start_err) */
    char start_err[512];
    uint64_t looks_asked, looks_done;
    /* The thread's own (no lock: only the thread touches them). */
    struct store *st;
    struct entry *entries;
    size_t entry_count;
    uint32_t admitted; /* scheduled admissions by this process (the test hook's count) */
};

static void entries_free(struct entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        scheduled_flow_free(&e[i].flow);
    free(e);
}

static void log_instant(const char *event, const char *flow, const char *key, int64_t unix_s,
                        const char *more_key, const char *more)
{
    char at[32];
    schedule_iso_utc(unix_s, at);
    serve_log(event, "flow", flow, key, at, more_key, more, LOG_END);
}

static void skipped_manifest(void *ctx, const char *flow, const char *why)
{
    (void)ctx;
    serve_log("schedule_unusable", "flow", flow, "error", why, LOG_END);
}

/* ------------------------------------------------------------------ sync */

static const struct schedule_row *row_of(const struct schedule_row *rows, size_t n,
                                         const char *flow)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].flow_id, flow) == 0)
            return &rows[i];
    return NULL;
}

/* Settles f's row (flows/scheduled_flows.h: kept or new) and stores what changed. */
static int settle_row(struct scheduler *s, struct scheduled_flow *f,
                      const struct schedule_row *stored, struct schedule_row *row)
{
    char err[512];
    bool kept = scheduled_flow_row(f, stored, row);
    if (kept && stored->version == row->version)
        return 0;
    if (schedules_put(s->st, row, err, sizeof err) != 0) {
        serve_log("store_error", "what", "storing a schedule", "error", err, LOG_END);
        return -1;
    }
    if (kept)
        return 0;
    if (row->has_next)
        log_instant("schedule_set", f->flow_id, "next_fire", row->next_fire_ms / 1000, "spec",
                    f->spec);
    else
        serve_log("schedule_set", "flow", f->flow_id, "next_fire", "never", "spec", f->spec,
                  LOG_END);
    return 0;
}

/* A sync that could not finish: logged, and every entry dropped (their schedules were
 * handed to the reload); the caller retries. */
static bool sync_failed(struct scheduler *s, struct scheduled_flow *flows, size_t n,
                        struct schedule_row *rows, const char *event, const char *why)
{
    serve_log(event, "what", "reading the scheduled flows", "error", why, LOG_END);
    scheduled_flows_free(flows, n);
    free(rows);
    entries_free(s->entries, s->entry_count);
    s->entries = NULL;
    s->entry_count = 0;
    return false;
}

/* Makes the entries and rows match the flows. False on a store error: the entries are
 * then empty (their schedules were handed to the reload) and the caller retries. */
static bool sync_flows(struct scheduler *s)
{
    char err[512];
    struct scheduled_flow *flows = NULL;
    size_t n = 0;
    struct schedule_row *rows = NULL;
    size_t row_count = 0;
    /* The parsed schedules of the current entries are reused for unchanged flows. */
    struct scheduled_flow *reuse = calloc(s->entry_count > 0 ? s->entry_count : 1, sizeof *reuse);
    for (size_t i = 0; reuse != NULL && i < s->entry_count; i++) {
        reuse[i] = s->entries[i].flow;
        memset(&s->entries[i].flow, 0, sizeof s->entries[i].flow);
    }
    int loaded = scheduled_flows_reload(s->st, reuse, reuse != NULL ? s->entry_count : 0, &flows,
                                        &n, skipped_manifest, NULL, err, sizeof err);
    scheduled_flows_free(reuse, reuse != NULL ? s->entry_count : 0);
    if (loaded != 0 || schedules_list(s->st, &rows, &row_count, err, sizeof err) != 0)
        return sync_failed(s, flows, n, rows, "store_error", err);
    struct entry *entries = calloc(n > 0 ? n : 1, sizeof *entries);
    if (entries == NULL)
        return sync_failed(s, flows, n, rows, "scheduler_error", "out of memory");
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        struct entry *e = &entries[kept];
        e->flow = flows[i];
        if (settle_row(s, &e->flow, row_of(rows, row_count, flows[i].flow_id), &e->row) == 0)
            kept++;
        else
            scheduled_flow_free(&e->flow);
    }
    /* A row of a flow no longer scheduled goes (the flow ids were copied into entries;
     * flows[] still names every wanted flow, its schedules now owned by entries). */
    for (size_t i = 0; i < row_count; i++) {
        bool still = false;
        for (size_t k = 0; k < n && !still; k++)
            still = strcmp(flows[k].flow_id, rows[i].flow_id) == 0;
        if (still)
            continue;
        if (schedules_delete(s->st, rows[i].flow_id, err, sizeof err) != 0)
            serve_log("store_error", "what", "removing a schedule", "error", err, LOG_END);
        else
            serve_log("schedule_removed", "flow", rows[i].flow_id, LOG_END);
    }
    free(flows); /* its schedules moved into entries */
    free(rows);
    entries_free(s->entries, s->entry_count);
    s->entries = entries;
    s->entry_count = kept;
    return true;
}

/* ------------------------------------------------------------------ look */

static const char *const FIRE_KINDS[] = {
    [SCHEDULE_FIRE_ON_TIME] = "on_time",
    [SCHEDULE_FIRE_ONCE] = "once",
    [SCHEDULE_FIRE_EACH] = "each",
};

/* The trigger of a scheduled run: {"scheduled_at": ISO, "fire": KIND[, "missed_since": ISO]}. */
static char *fire_trigger(const struct schedule_fire *f)
{
    char at[32];
    schedule_iso_utc(f->at_s, at);
    json_t *t = json_object();
    json_object_set_new(t, "scheduled_at", json_string(at));
    json_object_set_new(t, "fire", json_string(FIRE_KINDS[f->kind]));
    if (f->kind == SCHEDULE_FIRE_ONCE) {
        char since[32];
        schedule_iso_utc(f->missed_since_s, since);
        json_object_set_new(t, "missed_since", json_string(since));
    }
    char *text = json_dumps(t, JSON_COMPACT);
    json_decref(t);
    return text;
}

/* Fires e's due instants. Returns false when e is held (an unfinished run). */
static bool fire_due(struct scheduler *s, struct entry *e, int64_t now_ms)
{
    char err[1024], what[96];
    const char *flow = e->flow.flow_id;
    if (runs_unfinished(s->st, flow, what, sizeof what, err, sizeof err) != 0) {
        serve_log("store_error", "what", "reading a scheduled flow's runs", "error", err, LOG_END);
        return false;
    }
    if (what[0] != '\0')
        return false; /* held until that run ends */
    static struct schedule_plan plan; /* large; only the scheduler's thread uses it */
    int64_t now_s = now_ms >= 0 ? now_ms / 1000 : (now_ms - 999) / 1000;
    if (schedule_plan(&e->flow.schedule, e->flow.missed, e->flow.each_cap,
                      e->row.next_fire_ms / 1000, now_s, &plan) != 0) {
        serve_log("schedule_unusable", "flow", flow, "error", "the schedule's arithmetic failed",
                  LOG_END);
        plan.count = 0;
        plan.has_next = false;
    }
    for (size_t i = 0; i < plan.count; i++) {
        const struct schedule_fire *f = &plan.fires[i];
        char at[32], trigger_id[48];
        schedule_iso_utc(f->at_s, at);
        snprintf(trigger_id, sizeof trigger_id, "schedule:%s", at);
        char *trigger = fire_trigger(f);
        int64_t run_id = 0;
        int rc = trigger != NULL ? s->hooks.admit(s->hooks.ctx, s->st, flow, trigger, trigger_id,
                                                  &run_id, err, sizeof err)
                                 : error_line(err, sizeof err, "out of memory");
        free(trigger);
        if (rc < 0) {
            serve_log("schedule_refused", "flow", flow, "scheduled_at", at, "error", err, LOG_END);
            continue; /* this instant is lost; the schedule moves on */
        }
        log_instant("schedule_fired", flow, "scheduled_at", f->at_s, "fire",
                    rc == 1 ? "admitted_before" : FIRE_KINDS[f->kind]);
        if (rc == 0)
            test_hook_boundary(TEST_BOUNDARY_AFTER_SCHEDULE_ADMIT, ++s->admitted);
    }
    if (plan.first_missed_s != 0 && plan.missed_dropped > 0) {
        char dropped[32];
        snprintf(dropped, sizeof dropped, "%s%" PRId64, plan.dropped_exact ? "" : ">=",
                 plan.missed_dropped);
        log_instant("schedule_missed", flow, "missed_since", plan.first_missed_s, "not_fired",
                    dropped);
    }
    e->row.has_next = plan.has_next;
    e->row.next_fire_ms = plan.has_next ? plan.next_s * 1000 : 0;
    if (schedules_set_next(s->st, flow, e->row.has_next, e->row.next_fire_ms, err, sizeof err) != 0)
        serve_log("store_error", "what", "moving a schedule on", "error", err, LOG_END);
    return true;
}

/* One look at every entry. Returns the earliest next fire not yet due (ms), or
 * INT64_MAX when nothing is (held flows wait for a poke). */
static int64_t look(struct scheduler *s)
{
    int64_t earliest = INT64_MAX;
    for (size_t i = 0; i < s->entry_count; i++) {
        struct entry *e = &s->entries[i];
        if (!e->row.has_next)
            continue;
        int64_t now_ms = serve_clock_now_ms();
        if (e->row.next_fire_ms <= now_ms && !fire_due(s, e, now_ms))
            continue; /* held */
        if (e->row.has_next && e->row.next_fire_ms < earliest)
            earliest = e->row.next_fire_ms;
    }
    return earliest;
}

/* Rejects the long-running calls whose time is up. Returns how long until the next
 * wait's deadline (ms, on the store's wall clock), or INT64_MAX when nothing waits. */
static int64_t expire_waits(struct scheduler *s)
{
    char err[512];
    int64_t at = 0;
    /* A read first: most looks find nothing due, and then take no write lock. */
    int found = waits_next_deadline(s->st, &at, err, sizeof err);
    if (found > 0 && at <= store_now_ms()) {
        size_t settled = 0, woken = 0;
        if (long_running_expire(s->st, store_now_ms(), &settled, &woken, err, sizeof err) != 0) {
            serve_log("waits_not_expired", "error", err, LOG_END);
            return SYNC_RETRY_S * 1000LL; /* the store failed: try again */
        }
        if (settled > 0) {
            char n[24];
            snprintf(n, sizeof n, "%zu", settled);
            serve_log("long_running_timed_out", "calls", n, LOG_END);
        }
        if (woken > 0 && s->hooks.woke_runs != NULL)
            s->hooks.woke_runs(s->hooks.ctx);
        found = waits_next_deadline(s->st, &at, err, sizeof err);
    }
    if (found < 0)
        return SYNC_RETRY_S * 1000LL;
    if (found == 0)
        return INT64_MAX;
    int64_t left = at - store_now_ms();
    return left > 0 ? left : 0;
}

/* ------------------------------------------------------------------ the thread */

static void *scheduler_main(void *arg)
{
    struct scheduler *s = arg;
    /* The connection is opened, used and closed by this thread only: its statement
     * cache is the thread's (store/sql.c). */
    char err[512];
    int opened = s->hooks.open_store(s->hooks.ctx, &s->st, err, sizeof err);
    pthread_mutex_lock(&s->mu);
    s->started = opened == 0 ? 1 : -1;
    if (opened != 0)
        snprintf(s->start_err, sizeof s->start_err, "%s", err);
    pthread_cond_broadcast(&s->looked);
    while (opened == 0 && !s->stopping) {
        uint64_t ticket = s->looks_asked;
        bool resync = s->dirty;
        s->dirty = false;
        s->poked = false;
        pthread_mutex_unlock(&s->mu);
        bool synced = !resync || sync_flows(s);
        int64_t earliest = look(s);
        int64_t wait_left = expire_waits(s);
        pthread_mutex_lock(&s->mu);
        s->looks_done = ticket;
        pthread_cond_broadcast(&s->looked);
        if (!synced) {
            /* The store failed: try again in a second (or at the next change). */
            s->dirty = true;
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_sec += SYNC_RETRY_S;
            (void)pthread_cond_timedwait(&s->wake, &s->mu, &until);
            continue;
        }
        if (s->stopping || s->dirty || s->poked || s->looks_asked != ticket)
            continue;
        if ((earliest == INT64_MAX || serve_clock_fixed()) && wait_left == INT64_MAX) {
            /* Nothing is due, or time moves only when a test moves it. */
            pthread_cond_wait(&s->wake, &s->mu);
            continue;
        }
        long long wait_ms = earliest == INT64_MAX || serve_clock_fixed()
                                ? INT64_MAX
                                : earliest - serve_clock_now_ms();
        if (wait_left < wait_ms)
            wait_ms = wait_left;
        if (wait_ms <= 0)
            continue;
        if (wait_ms > MAX_SLEEP_MS)
            wait_ms = MAX_SLEEP_MS;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += wait_ms / 1000;
        until.tv_nsec += (wait_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        (void)pthread_cond_timedwait(&s->wake, &s->mu, &until);
    }
    pthread_mutex_unlock(&s->mu);
    entries_free(s->entries, s->entry_count);
    s->entries = NULL;
    s->entry_count = 0;
    store_close(s->st);
    s->st = NULL;
    return NULL;
}

struct scheduler *scheduler_start(const struct scheduler_hooks *hooks, char *err, size_t err_cap)
{
    struct scheduler *s = calloc(1, sizeof *s);
    if (s == NULL) {
        error_line(err, err_cap, "scheduler: out of memory");
        return NULL;
    }
    s->hooks = *hooks;
    s->dirty = true;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t mono;
    pthread_condattr_init(&mono);
    pthread_condattr_setclock(&mono, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &mono);
    pthread_condattr_destroy(&mono);
    pthread_cond_init(&s->looked, NULL);
    if (pthread_create(&s->thread, NULL, scheduler_main, s) != 0) {
        free(s);
        error_line(err, err_cap, "scheduler: cannot start its thread");
        return NULL;
    }
    (void)pthread_setname_np(s->thread, "scheduler"); /* top -H, /proc/PID/task/N/comm */
    pthread_mutex_lock(&s->mu);
    while (s->started == 0)
        pthread_cond_wait(&s->looked, &s->mu);
    pthread_mutex_unlock(&s->mu);
    if (s->started < 0) {
        error_line(err, err_cap, "scheduler: %s", s->start_err);
        pthread_join(s->thread, NULL); /* it ended at once */
        s->joined = true;
        scheduler_free(s);
        return NULL;
    }
    return s;
}

static void signal_thread(struct scheduler *s, bool flows_changed)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    if (flows_changed)
        s->dirty = true;
    s->poked = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
}

void scheduler_flows_changed(struct scheduler *s)
{
    signal_thread(s, true);
}

void scheduler_poke(struct scheduler *s)
{
    signal_thread(s, false);
}

void scheduler_look_now(struct scheduler *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    uint64_t ticket = ++s->looks_asked;
    pthread_cond_signal(&s->wake);
    while (s->looks_done < ticket && !s->stopping)
        pthread_cond_wait(&s->looked, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

void scheduler_stop(struct scheduler *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    bool joined = s->joined;
    s->joined = true;
    s->stopping = true;
    pthread_cond_signal(&s->wake);
    pthread_cond_broadcast(&s->looked);
    pthread_mutex_unlock(&s->mu);
    if (!joined)
        pthread_join(s->thread, NULL);
}

void scheduler_free(struct scheduler *s)
{
    if (s == NULL)
        return;
    scheduler_stop(s);
    pthread_cond_destroy(&s->wake);
    pthread_cond_destroy(&s->looked);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
