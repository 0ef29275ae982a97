#include "serve/daemon.h"

#include "base/clock.h"
#include "base/error_line.h"
#include "base/names.h"
#include "flows/flows.h"
#include "flows/reconcile.h"
#include "flows/run_driver.h"
#include "host/curl_library.h"
#include "serve/admission_batch.h"
#include "serve/admission_rate.h"
#include "serve/event_delivery.h"
#include "serve/metrics_http.h"
#include "serve/metrics_text.h"
#include "serve/ops_commands.h"
#include "serve/ops_commands_internal.h"
#include "serve/ops_dispatch.h"
#include "serve/ops_reply.h"
#include "serve/ops_socket.h"
#include "serve/run_view.h"
#include "serve/scheduler.h"
#include "serve/serve_clock.h"
#include "serve/sd_notify.h"
#include "serve/serve_lock.h"
#include "serve/serve_log.h"
#include "store/audit.h"
#include "store/health_store.h"
#include "store/runs.h"
#include "store/store.h"
#include "web/web_server.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* How long an idle runner sleeps before it looks at the store again by itself (for
 * changes no request announced, e.g. a run reconciled by the operator). */
#define RUNNER_IDLE_MS 1000
/* A flow whose run found no worker, or could not be driven, waits this long. */
#define RETRY_NO_WORKER_MS 1000
#define RETRY_NOT_DRIVEN_MS 5000
#define TICK_MS 1000
/* Replies of runs that ended, kept for a client that registers after the end (a run
 * can end between its admission and its client's wait). */
#define RECENT_ENDS 1024

struct gate {
    char flow[FLOW_ID_MAX + 1];
    long long not_before_ms; /* monotonic */
    bool draining;
};

struct waiter {
    int64_t run_id;
    bool done;
    json_t *reply;
    struct waiter *next;
};

struct runner {
    struct daemon *d;
    unsigned index;
    pthread_t thread;
    bool started;
    char flow[FLOW_ID_MAX + 1]; /* "" when idle (guarded by d->mu) */
    int64_t run_id;
};

struct daemon {
    const struct serve_options *o;
    pthread_mutex_t mu;
    pthread_cond_t work;    /* a runner may find something to do */
    pthread_cond_t changed; /* a run ended (waiters, drains, the stop) */
    bool stopping;  /* no new run starts, no admission */
    unsigned admitting; /* admissions past the stop gate, not yet ended (close_admission) */
    bool gave_up;   /* the grace is over: waiting clients are told */
    bool runners_may_exit; /* the pool is gone (see runner_main) */
    struct runner runners[SERVE_RUNNERS_MAX];
    unsigned runner_count;
    unsigned busy;
    struct gate *gates;
    size_t gate_count;
    struct waiter *waiters;
    struct {
        int64_t run_id;
        json_t *reply;
    } recent[RECENT_ENDS];
    size_t recent_next;
    struct pool_config pool_cfg;
    struct pool *pool;
    struct health_mark mark; /* shared by the runners' drivers */
    struct health logged;    /* pool counters already logged (guarded by the pool lock) */
    struct ops_daemon_hooks hooks;
    struct scheduler *scheduler; /* set before any runner starts */
    struct admission_rate rate; /* guarded by mu */
    struct admission_batch batch; /* admissions written together */
};

/* A connection for the calling thread (a connection is used and closed only by the
 * thread that opened it), committing in a group with the other threads'. */
static int open_store(struct daemon *d, struct store **st, char *err, size_t err_cap)
{
    if (store_open(d->o->home, st, err, err_cap) != 0)
        return -1;
    if (store_group_commit(*st, err, err_cap) != 0) {
        store_close(*st);
        *st = NULL;
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ gates */

static struct gate *gate_of(struct daemon *d, const char *flow, bool create)
{
    for (size_t i = 0; i < d->gate_count; i++)
        if (strcmp(d->gates[i].flow, flow) == 0)
            return &d->gates[i];
    if (!create)
        return NULL;
    struct gate *grown = realloc(d->gates, (d->gate_count + 1) * sizeof *grown);
    if (grown == NULL)
        return NULL;
    d->gates = grown;
    struct gate *g = &d->gates[d->gate_count++];
    memset(g, 0, sizeof *g);
    snprintf(g->flow, sizeof g->flow, "%s", flow);
    return g;
}

static bool flow_busy(const struct daemon *d, const char *flow)
{
    for (unsigned i = 0; i < d->runner_count; i++)
        if (strcmp(d->runners[i].flow, flow) == 0)
            return true;
    return false;
}

/* ------------------------------------------------------------------ logging */

static void log_pool_changes(struct daemon *d)
{
    pool_lock(d->pool);
    const struct health *h = pool_health(d->pool);
    static const struct {
        const char *event;
        size_t offset;
    } COUNTERS[] = {
        {"worker_spawned", offsetof(struct health, spawned)},
        {"worker_retired", offsetof(struct health, retired)},
        {"worker_crashed", offsetof(struct health, crashed)},
        {"worker_sigsys_death", offsetof(struct health, sigsys_deaths)},
        {"worker_refused", offsetof(struct health, refused_welcomes)},
    };
    char total[32];
    for (size_t i = 0; i < sizeof COUNTERS / sizeof COUNTERS[0]; i++) {
        const unsigned long long *now =
            (const unsigned long long *)(const void *)((const char *)h + COUNTERS[i].offset);
        unsigned long long *seen =
            (unsigned long long *)(void *)((char *)&d->logged + COUNTERS[i].offset);
        while (*seen < *now) {
            (*seen)++;
            snprintf(total, sizeof total, "%llu", *seen);
            /* Spawns are routine: logged only as a count with the next other event. */
            if (i > 0)
                serve_log(COUNTERS[i].event, "total", total, LOG_END);
        }
    }
    pool_unlock(d->pool);
}

/* ------------------------------------------------------------------ waiters */

static void notify_waiters(struct daemon *d, int64_t run_id, json_t *reply)
{
    size_t slot = d->recent_next++ % RECENT_ENDS;
    json_decref(d->recent[slot].reply);
    d->recent[slot].run_id = run_id;
    d->recent[slot].reply = json_incref(reply);
    for (struct waiter *w = d->waiters; w != NULL; w = w->next) {
        if (w->run_id == run_id && !w->done) {
            w->done = true;
            w->reply = json_incref(reply);
        }
    }
    pthread_cond_broadcast(&d->changed);
}

/* ------------------------------------------------------------------ runners */

/* Under d->mu: the next run for a runner, by the rules in daemon.h; 0 if none. */
/* Under d->mu: one idle runner looks for work. Not a broadcast: every woken runner
 * reads the runs under d->mu, so waking all of them for one admission made the others
 * wait. A runner that finds work wakes the next (runner_main), so a burst of
 * admissions still reaches every idle runner, one after another. */
static void wake_runner(struct daemon *d)
{
    pthread_cond_signal(&d->work);
}

static int64_t pick(struct daemon *d, struct store *st, char flow[FLOW_ID_MAX + 1])
{
    struct run_head *heads = NULL;
    size_t n = 0;
    char err[512];
    if (runs_heads(st, &heads, &n, err, sizeof err) != 0) {
        serve_log("store_error", "what", "reading the runs to start", "error", err, LOG_END);
        return 0;
    }
    long long now = monotonic_ms();
    int64_t chosen = 0;
    for (size_t i = 0; i < n && chosen == 0; i++) {
        const struct run_head *h = &heads[i];
        if (flow_busy(d, h->flow_id))
            continue;
        struct gate *g = gate_of(d, h->flow_id, false);
        if (g != NULL && g->not_before_ms > now)
            continue;
        if (h->state == RUN_PENDING || (h->state == RUN_RUNNING && !runs_owner_alive(h->owner))) {
            chosen = h->id;
            snprintf(flow, FLOW_ID_MAX + 1, "%s", h->flow_id);
        }
    }
    free(heads);
    return chosen;
}

static void hold_flow(struct daemon *d, const char *flow, long long ms)
{
    struct gate *g = gate_of(d, flow, true);
    if (g != NULL)
        g->not_before_ms = monotonic_ms() + ms;
}

static void drive_one(struct daemon *d, struct runner *r, struct run_driver *driver)
{
    char id_text[24], ms_text[24];
    snprintf(id_text, sizeof id_text, "%" PRId64, r->run_id);
    serve_log("run_started", "run", id_text, "flow", r->flow, LOG_END);
    long long started = monotonic_ms();
    struct run_report rep;
    char err[1024];
    err[0] = '\0';
    int rc = run_drive(driver, r->run_id, &rep, err, sizeof err);
    snprintf(ms_text, sizeof ms_text, "%lld", monotonic_ms() - started);
    json_t *reply;
    if (rc != 0) {
        serve_log("run_not_driven", "run", id_text, "flow", r->flow, "error", err, LOG_END);
        char line[1200];
        snprintf(line, sizeof line, "run %" PRId64 ": %s", r->run_id, err);
        reply = ops_reply_error(1, line);
    } else {
        serve_log("run_ended", "run", id_text, "flow", r->flow, "state",
                  run_state_name(rep.state), "duration_ms", ms_text, "error",
                  rep.error != NULL ? rep.error : "", LOG_END);
        reply = ops_reply_ok(run_view_json(&rep));
    }
    log_pool_changes(d);
    pthread_mutex_lock(&d->mu);
    if (rc != 0)
        hold_flow(d, r->flow, RETRY_NOT_DRIVEN_MS);
    else if (rep.state == RUN_PENDING && rep.error != NULL) /* no worker, not a completion */
        hold_flow(d, r->flow, RETRY_NO_WORKER_MS);
    notify_waiters(d, r->run_id, reply);
    scheduler_poke(d->scheduler); /* a flow held by this run may fire now */
    r->flow[0] = '\0';
    r->run_id = 0;
    d->busy--; /* the flow's next run: this runner looks for it first (runner_main) */
    pthread_mutex_unlock(&d->mu);
    json_decref(reply);
    if (rc == 0)
        run_report_free(&rep);
}

static void *runner_main(void *arg)
{
    struct runner *r = arg;
    struct daemon *d = r->d;
    struct store *st = NULL;
    char err[512];
    if (open_store(d, &st, err, sizeof err) != 0) {
        serve_log("runner_failed", "error", err, LOG_END);
        return NULL;
    }
    struct run_driver driver;
    memset(&driver, 0, sizeof driver);
    driver.store = st;
    driver.home = d->o->home;
    driver.pool = d->pool;
    driver.shared_mark = &d->mark;
    pthread_mutex_lock(&d->mu);
    while (!d->stopping) {
        char flow[FLOW_ID_MAX + 1];
        int64_t id = pick(d, st, flow);
        if (id == 0) {
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_sec += RUNNER_IDLE_MS / 1000;
            (void)pthread_cond_timedwait(&d->work, &d->mu, &until);
            continue;
        }
        wake_runner(d); /* there may be more: the next idle runner looks */
        snprintf(r->flow, sizeof r->flow, "%s", flow);
        r->run_id = id;
        d->busy++;
        pthread_mutex_unlock(&d->mu);
        drive_one(d, r, &driver);
        pthread_mutex_lock(&d->mu);
    }
    /* A worker gets its parent-death signal when the THREAD that forked it ends: a
     * runner that ended now would kill the pooled workers it started, which other
     * runners may be using during the grace. So runners end only after the pool. */
    while (!d->runners_may_exit)
        pthread_cond_wait(&d->changed, &d->mu);
    pthread_mutex_unlock(&d->mu);
    store_close(st);
    return NULL;
}

/* ------------------------------------------------------------------ ops requests */

static json_t *string_arg(const json_t *args, const char *name)
{
    json_t *v = json_object_get(args, name);
    return json_is_string(v) ? v : NULL;
}

/* Under d->mu: forgets the ends kept for run_id. A run reconciled or recovered ends
 * again: the end it had before must not answer for the next one. */
static void forget_ends(struct daemon *d, int64_t run_id)
{
    for (size_t i = 0; i < RECENT_ENDS; i++) {
        if (d->recent[i].run_id == run_id) {
            json_decref(d->recent[i].reply);
            d->recent[i].reply = NULL;
            d->recent[i].run_id = 0;
        }
    }
}

/* Under d->mu: whether run_id cannot go on by itself because the first unfinished run
 * of its flow, another one, waits for the operator (suspended or needs_reconcile): no
 * runner starts it until then (why says so). */
static bool waits_behind_operator(struct store *st, int64_t run_id, char *why, size_t why_cap)
{
    struct run_row run;
    char err[256];
    if (runs_get(st, run_id, &run, err, sizeof err) != 1)
        return false;
    struct run_head *heads = NULL;
    size_t n = 0;
    bool waits = false;
    if (runs_heads(st, &heads, &n, err, sizeof err) == 0) {
        for (size_t i = 0; i < n && !waits; i++) {
            const struct run_head *h = &heads[i];
            if (strcmp(h->flow_id, run.flow_id) != 0 || h->id == run_id ||
                (h->state != RUN_SUSPENDED && h->state != RUN_NEEDS_RECONCILE))
                continue;
            waits = true;
            snprintf(why, why_cap,
                     "run %" PRId64 ": waits behind run %" PRId64 " of its flow, which is %s",
                     run_id, h->id, run_state_name(h->state));
        }
    }
    free(heads);
    run_row_free(&run);
    return waits;
}

/* Waits for run_id's end (or the end of the stop's grace) and returns its reply. With
 * st (the caller's connection), also stops waiting for a run that waits behind one the
 * operator must settle first (waits_behind_operator): the reply is then that. */
static json_t *wait_for_end_on(struct daemon *d, int64_t run_id, struct store *st)
{
    struct waiter *w = calloc(1, sizeof *w);
    if (w == NULL)
        return ops_reply_error(1, "out of memory");
    w->run_id = run_id;
    pthread_mutex_lock(&d->mu);
    /* The run may have ended already, between its admission and this wait. */
    for (size_t i = 0; i < RECENT_ENDS && !w->done; i++) {
        if (d->recent[i].run_id == run_id && d->recent[i].reply != NULL) {
            w->done = true;
            w->reply = json_incref(d->recent[i].reply);
        }
    }
    w->next = d->waiters;
    d->waiters = w;
    pthread_cond_broadcast(&d->work);
    char behind[256] = "";
    while (!w->done && !d->gave_up) {
        if (st == NULL) {
            pthread_cond_wait(&d->changed, &d->mu);
            continue;
        }
        if (waits_behind_operator(st, run_id, behind, sizeof behind))
            break;
        struct timespec until; /* an operator's settlement elsewhere wakes nobody here */
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        (void)pthread_cond_timedwait(&d->changed, &d->mu, &until);
    }
    for (struct waiter **p = &d->waiters; *p != NULL; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    pthread_mutex_unlock(&d->mu);
    json_t *reply = w->reply;
    free(w);
    if (reply != NULL)
        return reply;
    if (behind[0] != '\0')
        return ops_reply_error(1, behind);
    char err[160];
    snprintf(err, sizeof err,
             "run %" PRId64 ": serve is stopping; the run is left to the next start", run_id);
    return ops_reply_error(1, err);
}

static json_t *wait_for_end(struct daemon *d, int64_t run_id)
{
    return wait_for_end_on(d, run_id, NULL);
}

/* The rate limit's part of daemon_admit (serve/admission_rate.h): 0 with a slot taken,
 * or -1 refused with the reason; the refusal that completes a streak of saturated
 * windows also disables the flow (store, audit, log). */
static int rate_take(struct daemon *d, struct store *st, const char *flow, int64_t now_ms,
                     char *err, size_t err_cap)
{
    pthread_mutex_lock(&d->mu);
    enum admission_rate_verdict v = admission_rate_take(&d->rate, flow, now_ms);
    if (v == ADMISSION_RATE_DISABLE)
        admission_rate_reset(&d->rate, flow);
    unsigned limit = d->rate.limit;
    pthread_mutex_unlock(&d->mu);
    if (v == ADMISSION_RATE_ALLOW)
        return 0;
    if (v == ADMISSION_RATE_DISABLE) {
        char reason[160], why[512];
        snprintf(reason, sizeof reason,
                 "rate limit: saturated %u windows in a row (limit %u per %lld s)",
                 ADMISSION_RATE_SATURATED_WINDOWS, limit, ADMISSION_RATE_WINDOW_MS / 1000);
        bool disabled = false;
        if (flows_disable_auto(st, flow, reason, &disabled, why, sizeof why) != 0)
            serve_log("store_error", "what", "disabling a saturated flow", "flow", flow, "error",
                      why, LOG_END);
        else if (disabled) {
            serve_log("flow_auto_disabled", "flow", flow, "reason", reason, LOG_END);
            scheduler_flows_changed(d->scheduler); /* a disabled flow has no schedule */
            pool_release_flow(d->pool, flow);
        }
    }
    return error_line(err, err_cap,
                      "run: rate limit: flow '%s' had its %u admissions of this %lld s window%s",
                      flow, limit, ADMISSION_RATE_WINDOW_MS / 1000,
                      v == ADMISSION_RATE_DISABLE ? "; saturated too many windows in a row: "
                                                    "the flow is disabled"
                                                  : "");
}

/* Every admission of a serve goes through here, whatever fired it (source: "manual",
 * "schedule", "event"): the stop and drain gates, the preflight (the flow is enabled and
 * its approval holds), the backlog. Returns 0 with *run_id, 1 when (flow, trigger_id)
 * was admitted before (*run_id that run; nothing stored), -1 refused with the reason
 * in err. A runner is woken for a new run. */
static int admit_gated(struct daemon *d, struct store *st, const char *source, const char *flow,
                       const char *trigger, const char *trigger_id, int64_t *run_id, char *err,
                       size_t err_cap)
{
    pthread_mutex_lock(&d->mu);
    struct gate *g = gate_of(d, flow, false);
    bool draining = g != NULL && g->draining;
    pthread_mutex_unlock(&d->mu);
    if (draining)
        return error_line(err, err_cap, "run: the flow is draining: no new runs");
    struct run_driver probe;
    memset(&probe, 0, sizeof probe);
    probe.store = st;
    probe.home = d->o->home;
    probe.pool = d->pool;
    int64_t version = 0;
    if (run_preflight(&probe, flow, &version, err, err_cap) != 0)
        return -1;
    int64_t now_ms = serve_clock_now_ms();
    if (rate_take(d, st, flow, now_ms, err, err_cap) != 0)
        return -1;
    struct run_admission a = {.flow = flow,
                              .version = version,
                              .trigger = trigger,
                              .trigger_id = trigger_id,
                              .max_waiting = d->o->backlog};
    admission_batch_admit(&d->batch, st, &a);
    int rc = a.rc;
    *run_id = a.run_id;
    if (rc != 0) {
        snprintf(err, err_cap, "%s", a.err);
        pthread_mutex_lock(&d->mu); /* only admissions count against the rate */
        admission_rate_release(&d->rate, flow, now_ms);
        pthread_mutex_unlock(&d->mu);
        return rc;
    }
    char id_text[24];
    snprintf(id_text, sizeof id_text, "%" PRId64, *run_id);
    serve_log("run_admitted", "run", id_text, "flow", flow, "source", source, LOG_END);
    pthread_mutex_lock(&d->mu);
    wake_runner(d);
    pthread_mutex_unlock(&d->mu);
    return 0;
}

/* The stop gate around admit_gated: an admission that passed it is counted until it
 * ended, so the stop can wait for it (close_admission) before it logs "stopping". */
static int daemon_admit(struct daemon *d, struct store *st, const char *source, const char *flow,
                        const char *trigger, const char *trigger_id, int64_t *run_id, char *err,
                        size_t err_cap)
{
    pthread_mutex_lock(&d->mu);
    bool stopping = d->stopping;
    if (!stopping)
        d->admitting++;
    pthread_mutex_unlock(&d->mu);
    if (stopping)
        return error_line(err, err_cap, "run: serve is stopping: no new runs");
    int rc = admit_gated(d, st, source, flow, trigger, trigger_id, run_id, err, err_cap);
    pthread_mutex_lock(&d->mu);
    d->admitting--;
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

/* Admits a run of flow (its trigger already checked). The reply: at once with the run
 * id when detach, else when the run ended (wait_for_end). */
static json_t *admit_run(struct daemon *d, struct store *st, const char *flow,
                         const char *trigger, const char *trigger_id, bool detach)
{
    char err[1024];
    int64_t run_id = 0;
    int rc = daemon_admit(d, st, "manual", flow, trigger, trigger_id, &run_id, err, sizeof err);
    if (rc != 0)
        return ops_reply_error(1, err);

    if (detach) {
        json_t *data = json_object();
        json_object_set_new(data, "run", json_integer(run_id));
        json_object_set_new(data, "flow", json_string(flow));
        json_object_set_new(data, "state", json_string("pending"));
        return ops_reply_ok(data);
    }
    return wait_for_end(d, run_id);
}

static void *handle_run(void *daemon, struct store *st, const void *args)
{
    struct daemon *d = daemon;
    const char *flow = json_string_value(string_arg(args, "flow"));
    json_t *trigger_v = json_object_get(args, "trigger");
    json_t *trigger_id_v = json_object_get(args, "trigger_id");
    json_t *detach_v = json_object_get(args, "detach");
    if (flow == NULL || !flow_id_valid(flow) || (trigger_v != NULL && !json_is_string(trigger_v)) ||
        (trigger_id_v != NULL && !json_is_null(trigger_id_v) && !json_is_string(trigger_id_v)) ||
        (detach_v != NULL && !json_is_boolean(detach_v)))
        return ops_reply_error(2, "run: needs a flow id, and a trigger, trigger_id and detach of "
                                  "the right types");
    const char *trigger_id = json_is_string(trigger_id_v) ? json_string_value(trigger_id_v) : NULL;
    if (trigger_id != NULL && (trigger_id[0] == '\0' || strlen(trigger_id) > RUN_TRIGGER_ID_MAX))
        return ops_reply_error(2, "run: trigger_id must be 1 to 128 bytes");
    /* The rule the CLI applies to --trigger, applied again to what the peer sent. */
    char why[320];
    bool out_of_memory;
    char *trigger = ops_json_value(trigger_v != NULL ? json_string_value(trigger_v) : "{}", why,
                                   sizeof why, &out_of_memory);
    if (trigger == NULL) {
        char err[400];
        snprintf(err, sizeof err, "run: the trigger %s", why);
        return ops_reply_error(out_of_memory ? 1 : 2, err);
    }
    json_t *reply = admit_run(d, st, flow, trigger, trigger_id, json_is_true(detach_v));
    free(trigger);
    return reply;
}

/* Under d->mu: true while flow has a run pending or running. */
static bool flow_has_work(struct daemon *d, const char *flow, struct store *st)
{
    if (flow_busy(d, flow))
        return true;
    struct run_head *heads = NULL;
    size_t n = 0;
    char err[256];
    if (runs_heads(st, &heads, &n, err, sizeof err) != 0)
        return true;
    bool work = false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(heads[i].flow_id, flow) == 0 &&
            (heads[i].state == RUN_PENDING || heads[i].state == RUN_RUNNING))
            work = true;
    free(heads);
    return work;
}

static void *handle_drain(void *daemon, struct store *st, const void *args)
{
    struct daemon *d = daemon;
    const char *flow = json_string_value(string_arg(args, "id"));
    if (flow == NULL || !flow_id_valid(flow))
        return ops_reply_error(2, "flow drain: needs a flow id");
    char err[512];
    /* Only an installed flow gets a gate: draining "nosuch" would otherwise answer
     * "drained" and leave a gate that refuses that name's runs as "draining". */
    int known = flows_known(st, flow, err, sizeof err);
    if (known <= 0) {
        if (known == 0)
            error_line(err, sizeof err, "unknown flow '%s'", flow);
        return ops_reply_error(1, err);
    }
    pthread_mutex_lock(&d->mu);
    struct gate *g = gate_of(d, flow, true);
    if (g == NULL) {
        pthread_mutex_unlock(&d->mu);
        return ops_reply_error(1, "flow drain: out of memory");
    }
    g->draining = true;
    pthread_mutex_unlock(&d->mu);
    serve_log("flow_draining", "flow", flow, LOG_END);
    pthread_mutex_lock(&d->mu);
    while (!d->gave_up && flow_has_work(d, flow, st)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        (void)pthread_cond_timedwait(&d->changed, &d->mu, &until);
    }
    bool stopped = d->gave_up;
    pthread_mutex_unlock(&d->mu);
    if (stopped)
        return ops_reply_error(1, "flow drain: serve is stopping");
    pool_release_flow(d->pool, flow); /* no run of it comes before flow enable */
    serve_log("flow_drained", "flow", flow, LOG_END);
    json_t *data = json_object();
    json_object_set_new(data, "flow", json_string(flow));
    json_object_set_new(data, "drained", json_true());
    return ops_reply_ok(data);
}

/* flow.reconcile: the operator's settlement (flows/reconcile.h), made and audited here
 * on serve's store; then, unless cancelled, the run is a runner's to resume, and the
 * reply comes when it has ended, as for `run`. */
static void *handle_reconcile(void *daemon, struct store *st, const void *request_args)
{
    struct daemon *d = daemon;
    /* The argument checks take a mutable object; the request is the dispatcher's. */
    json_t *args = json_deep_copy(request_args);
    if (args == NULL)
        return ops_reply_error(1, "flow reconcile: out of memory");
    struct ops_reconcile r;
    json_t *reply = ops_reconcile_args(args, &r);
    if (reply != NULL) {
        json_decref(args);
        return reply;
    }
    char err[1024];
    pthread_mutex_lock(&d->mu);
    forget_ends(d, r.run); /* its end as needs_reconcile is not the one to report */
    pthread_mutex_unlock(&d->mu);
    int rc = reconcile_settle(st, r.run, r.position, (enum reconcile_decision)r.decision,
                              r.observed, err, sizeof err);
    free(r.observed);
    char id_text[24], position_text[16], decision[16];
    snprintf(decision, sizeof decision, "%s", r.decision_name);
    json_decref(args); /* r.decision_name was borrowed from it */
    if (rc != 0) {
        return ops_reply_error(1, err);
    }
    snprintf(id_text, sizeof id_text, "%lld", r.run);
    snprintf(position_text, sizeof position_text, "%" PRIu32, r.position);
    serve_log("run_reconciled", "run", id_text, "position", position_text, "decision", decision,
              LOG_END);
    if (r.decision == RECONCILE_CANCEL) {
        json_t *data = json_object();
        json_object_set_new(data, "run", json_integer(r.run));
        json_object_set_new(data, "state", json_string("cancelled"));
        return ops_reply_ok(data);
    }
    reply = wait_for_end_on(d, r.run, st);
    return reply;
}

/* recover: every run a dead process left (store/runs.h, runs_recoverable) is a
 * runner's anyway; this waits for each one's end, in admission order, and answers
 * {"runs": [the run view of each, or {"run", "error"}]}. */
static void *handle_recover(void *daemon, struct store *st, const void *args)
{
    struct daemon *d = daemon;
    (void)args; /* none (the command table's schema) */
    char err[1024];
    int64_t *ids = NULL;
    size_t count = 0;
    pthread_mutex_lock(&d->mu); /* no end is reported between the listing and the wait */
    int rc = runs_recoverable(st, &ids, &count, err, sizeof err);
    for (size_t i = 0; rc == 0 && i < count; i++)
        forget_ends(d, ids[i]);
    pthread_cond_broadcast(&d->work);
    pthread_mutex_unlock(&d->mu);
    if (rc != 0) {
        return ops_reply_error(1, err);
    }
    char count_text[24];
    snprintf(count_text, sizeof count_text, "%zu", count);
    serve_log("recover_requested", "runs", count_text, LOG_END);
    json_t *runs = json_array();
    for (size_t i = 0; i < count && runs != NULL; i++) {
        json_t *end = wait_for_end_on(d, ids[i], st);
        json_t *item;
        if (json_is_true(json_object_get(end, "ok"))) {
            item = json_incref(json_object_get(end, "data"));
        } else {
            item = json_object();
            json_object_set_new(item, "run", json_integer(ids[i]));
            json_object_set(item, "error", json_object_get(end, "error"));
        }
        json_decref(end);
        json_array_append_new(runs, item);
    }
    free(ids);
    json_t *data = json_object();
    json_object_set_new(data, "runs", runs);
    return ops_reply_ok(data);
}

/* codemode.run: the run is made here, on serve's store, with serve's Landlock policy.
 * Its single-use worker is forked by this request's thread, which reaps it before it
 * returns (the parent-death signal follows the thread that forked). */
static void *handle_codemode_run(void *daemon, struct store *st, const void *request_args)
{
    struct daemon *d = daemon;
    json_t *args = json_deep_copy(request_args); /* the checks take a mutable object */
    if (args == NULL)
        return ops_reply_error(1, "codemode run: out of memory");
    pthread_mutex_lock(&d->mu);
    bool stopping = d->stopping;
    pthread_mutex_unlock(&d->mu);
    if (stopping) {
        json_decref(args);
        return ops_reply_error(1, "codemode run: serve is stopping: no new runs");
    }
    json_t *reply = ops_cmd_codemode_run(st, d->o->home, args, d->o->landlock);
    json_decref(args);
    const json_t *run = json_object_get(json_object_get(json_object_get(reply, "data"), "run"),
                                        "run");
    if (run != NULL)
        serve_log("codemode_run_ended", "run", json_string_value(run), "state",
                  json_string_value(json_object_get(
                      json_object_get(json_object_get(reply, "data"), "run"), "state")),
                  LOG_END);
    return reply;
}

#ifdef BASAL_TEST_HOOKS
/* test.clock {"ms": N}: moves the test clock (serve/serve_clock.h). */
static void *handle_test_clock(void *daemon, struct store *st, const void *args)
{
    (void)st;
    struct daemon *d = daemon;
    json_t *ms = json_object_get(args, "ms");
    if (!serve_clock_fixed() || !json_is_integer(ms) || json_integer_value(ms) < 0)
        return ops_reply_error(2, "test.clock: needs a fixed test clock and {\"ms\": N >= 0}");
    serve_clock_set_ms(json_integer_value(ms));
    scheduler_look_now(d->scheduler);
    json_t *data = json_object();
    json_object_set_new(data, "ms", json_integer(serve_clock_now_ms()));
    return ops_reply_ok(data);
}
#endif

/* "serve.stop" (ck upgrade --stop): the same stop as SIGTERM, by sending it. Every
 * thread blocks SIGTERM, so it waits for the main loop's signalfd, which then stops
 * the serve exactly as for an operator's kill. The reply goes out first: the ops
 * server answers every waiting client before it closes. */
static void *handle_stop(void *daemon, struct store *st, const void *args)
{
    (void)daemon;
    (void)st;
    (void)args; /* none (the command table's schema) */
    if (kill(getpid(), SIGTERM) != 0)
        return ops_reply_error(1, "serve.stop: cannot signal the serve itself");
    json_t *data = json_object();
    json_object_set_new(data, "stopping", json_true());
    json_object_set_new(data, "pid", json_integer((json_int_t)getpid()));
    return ops_reply_ok(data);
}

static int admit_event_run(void *daemon, struct store *st, const char *flow, const char *trigger,
                           const char *trigger_id, int64_t *run_id, char *err, size_t err_cap)
{
    return daemon_admit(daemon, st, "event", flow, trigger, trigger_id, run_id, err, err_cap);
}

/* Runs were made pending (long-running calls completed or timed out): a runner takes
 * them. */
static void scheduler_woke_runs(void *ctx)
{
    struct daemon *d = ctx;
    pthread_mutex_lock(&d->mu);
    pthread_cond_broadcast(&d->work);
    pthread_mutex_unlock(&d->mu);
}

/* event.emit: recorded and delivered at once (serve/event_delivery.h). */
static void *handle_event_emit(void *daemon, struct store *st, const void *args)
{
    void *reply = event_emit_deliver(st, args, admit_event_run, daemon);
    scheduler_woke_runs(daemon); /* a long-running call it completed may resume a run */
    return reply;
}

/* A store command changed something (serve/ops_dispatch.h, enum ops_change). */
static void hook_changed(void *ctx, enum ops_change change, const char *flow)
{
    struct daemon *d = ctx;
    if (change == OPS_ENABLES_FLOW && flow != NULL) {
        pthread_mutex_lock(&d->mu); /* admission reopens after a drain */
        struct gate *g = gate_of(d, flow, false);
        if (g != NULL)
            g->draining = false;
        pthread_mutex_unlock(&d->mu);
    }
    if (change == OPS_DISABLES_FLOW && flow != NULL)
        pool_release_flow(d->pool, flow); /* a disabled flow runs nothing more */
    if (change != OPS_CHANGES_RUNS)
        scheduler_flows_changed(d->scheduler);
    pthread_mutex_lock(&d->mu); /* what a runner may start may have changed */
    pthread_cond_broadcast(&d->work);
    pthread_mutex_unlock(&d->mu);
}

static void hook_live_health(void *ctx, void *health)
{
    struct daemon *d = ctx;
    json_t *h = health;
    pool_lock(d->pool);
    const struct health *ph = pool_health(d->pool);
    json_t *pool = json_object();
    json_object_set_new(pool, "live", json_integer(ph->live));
    json_object_set_new(pool, "spares", json_integer(ph->spares));
    json_object_set_new(pool, "busy", json_integer(ph->busy));
    json_object_set_new(pool, "bound", json_integer(ph->bound));
    json_object_set_new(pool, "idle", json_integer(ph->live - ph->busy));
    pool_unlock(d->pool);
    json_object_set_new(h, "pool", pool);
}

/* The ops handler thread's store connection, opened at its first request and kept
 * (with its prepared statements) until the thread ends (handler_thread_end). */
static _Thread_local struct store *t_handler_store;

static void *handle_request(void *ctx, const void *request)
{
    struct daemon *d = ctx;
    char err[512];
    if (t_handler_store == NULL && open_store(d, &t_handler_store, err, sizeof err) != 0)
        return ops_reply_error(1, err);
    struct ops_context c = {t_handler_store, d->o->home, &d->hooks};
    void *reply = ops_dispatch(&c, request);
    /* A handler that left a transaction open must not hand it to the next request
     * (nor hold the writers' lock): closing rolls it back. */
    if (!store_idle(t_handler_store)) {
        store_close(t_handler_store);
        t_handler_store = NULL;
    }
    return reply;
}

static void handler_thread_end(void *ctx)
{
    (void)ctx;
    store_close(t_handler_store);
    t_handler_store = NULL;
}

/* The web page's requests, on threads of libmicrohttpd's that tell nobody when they
 * end: a connection of the request's own, closed after it. */
static void *handle_web_request(void *ctx, const void *request)
{
    void *reply = handle_request(ctx, request);
    handler_thread_end(ctx);
    return reply;
}

static void refused_peer(void *ctx, const char *what, long uid, long pid)
{
    struct daemon *d = ctx;
    char uid_text[24], pid_text[24];
    snprintf(uid_text, sizeof uid_text, "%ld", uid);
    snprintf(pid_text, sizeof pid_text, "%ld", pid);
    serve_log("ops_refused", "peer_uid", uid_text, "peer_pid", pid_text, "reason", what, LOG_END);
    struct store *st;
    char err[512];
    if (open_store(d, &st, err, sizeof err) == 0) {
        char reason[512];
        snprintf(reason, sizeof reason, "ops socket: %s (peer uid %ld, pid %ld)", what, uid, pid);
        (void)audit_record(st, "", 0, 0, "ops_refused", false, reason, err, sizeof err);
        store_close(st);
    }
}

/* ------------------------------------------------------------------ metrics */

static char *render_metrics(void *ctx)
{
    struct daemon *d = ctx;
    struct store *st;
    char err[512];
    if (open_store(d, &st, err, sizeof err) != 0)
        return NULL;
    json_t *h = health_store_json(st, d->o->landlock, err, sizeof err);
    store_close(st);
    if (h == NULL)
        return NULL;
    hook_live_health(d, h);
    char *text = metrics_text(h, err, sizeof err);
    json_decref(h);
    return text;
}

/* ------------------------------------------------------------------ the process */

static void stop_runners(struct daemon *d)
{
    pthread_mutex_lock(&d->mu);
    d->stopping = true;
    pthread_cond_broadcast(&d->work);
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->mu);
}

/* The first step of a stop, before the "stopping" line: new ops requests are refused
 * with "serve is stopping", the scheduler fires no more, the stop gate closes, and
 * every admission already past it ends (committed or refused). Nothing is admitted
 * after it returns. */
static void close_admission(struct daemon *d, struct ops_server *ops)
{
    ops_server_refuse_new(ops, "serve is stopping");
    scheduler_stop(d->scheduler);
    stop_runners(d);
    pthread_mutex_lock(&d->mu);
    while (d->admitting > 0)
        pthread_cond_wait(&d->changed, &d->mu);
    pthread_mutex_unlock(&d->mu);
}

/* Waits until no runner drives a run, or grace_ms passed. True if all are idle. */
static bool wait_runs(struct daemon *d, long long grace_ms)
{
    long long until = monotonic_ms() + grace_ms;
    pthread_mutex_lock(&d->mu);
    while (d->busy > 0 && monotonic_ms() < until) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += 100 * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        (void)pthread_cond_timedwait(&d->changed, &d->mu, &t);
    }
    bool idle = d->busy == 0;
    pthread_mutex_unlock(&d->mu);
    return idle;
}

static int scheduler_open_store(void *ctx, struct store **st, char *err, size_t err_cap)
{
    return open_store(ctx, st, err, err_cap);
}

static int scheduler_admit(void *ctx, struct store *st, const char *flow, const char *trigger,
                           const char *trigger_id, int64_t *run_id, char *err, size_t err_cap)
{
    return daemon_admit(ctx, st, "schedule", flow, trigger, trigger_id, run_id, err, err_cap);
}

static void deliver_pending_events(struct daemon *d)
{
    struct store *st;
    char err[1024];
    long delivered = -1;
    if (open_store(d, &st, err, sizeof err) == 0) {
        delivered = event_deliver_pending(st, admit_event_run, d, err, sizeof err);
        store_close(st);
    }
    if (delivered < 0)
        serve_log("store_error", "what", "delivering pending events", "error", err, LOG_END);
}

static int start_fail(const char *reason)
{
    serve_log("start_failed", "error", reason, LOG_END);
    return 1;
}

static int recoverable_count(const char *home, size_t *count, char *err, size_t err_cap)
{
    struct store *st;
    if (store_open(home, &st, err, err_cap) != 0)
        return -1;
    int64_t *ids = NULL;
    int rc = runs_recoverable(st, &ids, count, err, err_cap);
    free(ids);
    store_close(st);
    return rc;
}

/* What a serve holds from its start to its stop. */
struct serve_process {
    struct daemon d;
    int sig_fd, lock_fd;
    struct ops_server *ops;
    struct metrics_http *metrics;  /* NULL: no --metrics-listen */
    struct web_server *web;        /* NULL: no --web-listen */
};

/* Signals are taken by the main thread's signalfd only: blocked before any thread
 * exists, so every thread inherits the mask. The signalfd, or -1 with why. */
static int take_stop_signals(const char **why)
{
    sigset_t stop_set;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGTERM);
    sigaddset(&stop_set, SIGINT);
    signal(SIGPIPE, SIG_IGN);
    *why = "cannot block SIGTERM and SIGINT";
    if (pthread_sigmask(SIG_BLOCK, &stop_set, NULL) != 0)
        return -1;
    *why = "signalfd failed";
    return signalfd(-1, &stop_set, SFD_CLOEXEC);
}

/* The daemon's state before any of its threads: 0, or -1 out of memory. */
static int daemon_init(struct daemon *d, const struct serve_options *o)
{
    memset(d, 0, sizeof *d);
    d->o = o;
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_t mono;
    pthread_condattr_init(&mono);
    pthread_condattr_setclock(&mono, CLOCK_MONOTONIC);
    pthread_cond_init(&d->work, &mono);
    pthread_cond_init(&d->changed, NULL);
    d->hooks = (struct ops_daemon_hooks){
        .daemon = d,
        .add_live_health = hook_live_health,
        .answer = {[OPS_DAEMON_RUN] = handle_run,
                   [OPS_DAEMON_FLOW_DRAIN] = handle_drain,
                   [OPS_DAEMON_FLOW_RECONCILE] = handle_reconcile,
                   [OPS_DAEMON_RECOVER] = handle_recover,
                   [OPS_DAEMON_CODEMODE_RUN] = handle_codemode_run,
                   [OPS_DAEMON_EVENT_EMIT] = handle_event_emit,
                   [OPS_DAEMON_SERVE_STOP] = handle_stop,
#ifdef BASAL_TEST_HOOKS
                   [OPS_DAEMON_TEST_CLOCK] = handle_test_clock,
#endif
        },
        .changed = hook_changed,
    };
    pool_config_defaults(&d->pool_cfg);
    d->pool_cfg.policy = o->landlock;
    d->pool_cfg.spares = o->spares;
    d->pool = pool_new(&d->pool_cfg);
    if (admission_batch_init(&d->batch) != 0)
        return -1;
    d->rate.limit = o->rate_limit > 0 ? o->rate_limit : ADMISSION_RATE_LIMIT_DEFAULT;
    d->runner_count = o->max_runs < SERVE_RUNNERS_MAX ? o->max_runs : SERVE_RUNNERS_MAX;
    return d->pool != NULL ? 0 : -1;
}

static void log_start(const struct daemon *d, size_t left_behind)
{
    const struct serve_options *o = d->o;
    char runners_text[16], backlog_text[16], pid_text[24], left_text[24], rate_text[16];
    snprintf(runners_text, sizeof runners_text, "%u", o->max_runs);
    snprintf(backlog_text, sizeof backlog_text, "%u", o->backlog);
    snprintf(pid_text, sizeof pid_text, "%ld", (long)getpid());
    snprintf(left_text, sizeof left_text, "%zu", left_behind);
    snprintf(rate_text, sizeof rate_text, "%u", d->rate.limit);
    serve_log("start", "home", o->home, "pid", pid_text, "max_runs", runners_text, "backlog",
              backlog_text, "rate_limit", rate_text, "landlock",
              o->landlock == LANDLOCK_POLICY_OPTIONAL ? "optional" : "required", "recovering",
              left_text, LOG_END);
    if (o->home_narrowed_from != 0) {
        char from[8];
        snprintf(from, sizeof from, "%04o", o->home_narrowed_from & 07777U);
        serve_log("home_narrowed", "home", o->home, "from", from, "to", "0700", LOG_END);
    }
}

/* The ops socket, and the metrics and web listeners when asked for: 0, or -1 with
 * the reason (none of them left running). */
static int start_listeners(struct serve_process *s, char *err, size_t err_cap)
{
    const struct serve_options *o = s->d.o;
    s->ops = ops_server_start(o->home, handle_request, handler_thread_end, refused_peer, &s->d,
                              err, err_cap);
    if (s->ops == NULL)
        return -1;
    if (o->metrics_listen != NULL) {
        s->metrics = metrics_http_start(o->metrics_listen, render_metrics, &s->d, err, err_cap);
        if (s->metrics == NULL) {
            ops_server_stop(s->ops);
            return -1;
        }
        char port[16];
        snprintf(port, sizeof port, "%u", metrics_http_port(s->metrics));
        serve_log("metrics_listening", "listen", o->metrics_listen, "port", port, LOG_END);
    }
    if (o->web_listen != NULL) {
        /* The page asks what the ops socket answers, by the same dispatch. */
        struct web_env env = {o->home,
                              o->landlock == LANDLOCK_POLICY_OPTIONAL ? "optional" : "required",
                              handle_web_request, &s->d};
        s->web = web_server_start(o->web_listen, o->web_allow_remote, &env, err, err_cap);
        if (s->web == NULL) {
            metrics_http_stop(s->metrics);
            ops_server_stop(s->ops);
            return -1;
        }
        char port[16];
        snprintf(port, sizeof port, "%u", web_server_port(s->web));
        serve_log("web_listening", "listen", o->web_listen, "port", port, LOG_END);
    }
    return 0;
}

/* Start: the stop signals, the home's lock, the daemon, its listeners, scheduler and
 * runners, the pending events; then READY. 0, or 1 when it could not start (logged). */
static int serve_start(struct serve_process *s, const struct serve_options *o)
{
    serve_log_json(o->log_json);
    char err[1024];
    const char *why;
    s->sig_fd = take_stop_signals(&why);
    if (s->sig_fd < 0)
        return start_fail(why);
#ifdef BASAL_TEST_HOOKS
    if (serve_clock_init_from_env(err, sizeof err) != 0)
        return start_fail(err);
#endif
    s->lock_fd = serve_lock_take(o->home, err, sizeof err);
    if (s->lock_fd < 0)
        return start_fail(err);
    /* libcurl is loaded and its global state set up once, before any thread could race
     * for it, and a serve that could make no transfer does not start. */
    if (curl_library_start(err, sizeof err) != 0)
        return start_fail(err);
    struct daemon *d = &s->d;
    if (daemon_init(d, o) != 0)
        return start_fail("out of memory");
    size_t left_behind = 0;
    if (recoverable_count(o->home, &left_behind, err, sizeof err) != 0) {
        pool_free(d->pool);
        return start_fail(err);
    }
    log_start(d, left_behind);
    if (start_listeners(s, err, sizeof err) != 0) {
        pool_free(d->pool);
        return start_fail(err);
    }
    pool_maintain(d->pool);
    struct scheduler_hooks sched_hooks = {d, scheduler_open_store, scheduler_admit,
                                          scheduler_woke_runs};
    d->scheduler = scheduler_start(&sched_hooks, err, sizeof err);
    if (d->scheduler == NULL) {
        web_server_stop(s->web);
        metrics_http_stop(s->metrics);
        ops_server_stop(s->ops);
        pool_free(d->pool);
        return start_fail(err);
    }
    for (unsigned i = 0; i < d->runner_count; i++) {
        d->runners[i].d = d;
        d->runners[i].index = i;
        d->runners[i].started =
            pthread_create(&d->runners[i].thread, NULL, runner_main, &d->runners[i]) == 0;
    }
    /* Runs left behind are the runners' first work (the store is the queue); events
     * recorded while no serve ran are delivered once, before the socket takes new ones
     * from this process's point of view (serve/event_delivery.h). */
    deliver_pending_events(d);
    const char *no_systemd = serve_notify_unavailable();
    if (no_systemd != NULL)
        serve_log("systemd_unreachable", "error", no_systemd, LOG_END);
    serve_notify_ready("admitting runs");
    serve_log("ready", LOG_END);
    return 0;
}

/* Loop: the pool kept and the watchdog fed until SIGTERM or SIGINT; returns which. */
static const char *serve_loop(struct serve_process *s)
{
    long long watchdog_ms = serve_watchdog_interval_ms();
    int timeout = TICK_MS;
    if (watchdog_ms > 0 && watchdog_ms / 2 < timeout)
        timeout = (int)(watchdog_ms / 2 > 0 ? watchdog_ms / 2 : 1);
    for (;;) {
        struct pollfd p = {s->sig_fd, POLLIN, 0};
        int n = poll(&p, 1, timeout);
        if (watchdog_ms > 0)
            serve_notify_watchdog();
        if (n > 0) {
            struct signalfd_siginfo info;
            if (read(s->sig_fd, &info, sizeof info) == (ssize_t)sizeof info)
                return info.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
        }
        pool_maintain(s->d.pool);
        log_pool_changes(&s->d);
    }
}

/* Stop: no admission, the runs' grace, every waiting client answered; then the
 * threads joined and everything freed. Returns 0 (a stop that left runs going exits
 * the process here: the next start takes them). */
static int serve_stop(struct serve_process *s, const char *stop_name)
{
    struct daemon *d = &s->d;
    serve_notify_stopping();
    web_server_stop(s->web); /* no page request after this */
    close_admission(d, s->ops); /* nothing admitted after the line below */
    serve_log("stopping", "signal", stop_name, LOG_END);
    bool idle = wait_runs(d, d->o->grace_ms);
    pthread_mutex_lock(&d->mu);
    d->gave_up = true;
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->mu);
    ops_server_stop(s->ops); /* after every waiting client has its answer */
    metrics_http_stop(s->metrics);
    if (!idle) {
        /* Runs still going are left to the next start: exiting ends their workers
         * (parent-death signal) and leaves the runs running under a dead owner. */
        char busy_text[16];
        snprintf(busy_text, sizeof busy_text, "%u", d->busy);
        serve_log("stopped", "left_running", busy_text, LOG_END);
        _exit(0);
    }
    pool_free(d->pool);
    pthread_mutex_lock(&d->mu);
    d->runners_may_exit = true;
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->mu);
    for (unsigned i = 0; i < d->runner_count; i++)
        if (d->runners[i].started)
            pthread_join(d->runners[i].thread, NULL);
    serve_log("stopped", "left_running", "0", LOG_END);
    scheduler_free(d->scheduler); /* no runner or ops thread is left to call it */
    free(d->gates);
    admission_rate_free(&d->rate);
    for (size_t i = 0; i < RECENT_ENDS; i++)
        json_decref(d->recent[i].reply);
    close(s->lock_fd);
    close(s->sig_fd);
    return 0;
}

/* glibc gives the free top of a thread's heap back (madvise) once it passes the trim
 * threshold, 128 KiB by default; SQLite's temporary b-trees and statement journals
 * pass it on every run, and each give-back is a TLB shootdown on every CPU running one
 * of serve's threads: 9-10% of serve's samples, and half its throughput under load
 * (docs/benchmarks.md, issue 25). A few MiB per heap stay instead. */
#define SERVE_MALLOC_TRIM_BYTES (4 << 20)

int serve_main(const struct serve_options *o)
{
    (void)mallopt(M_TRIM_THRESHOLD, SERVE_MALLOC_TRIM_BYTES);
    struct serve_process s;
    memset(&s, 0, sizeof s);
    if (serve_start(&s, o) != 0)
        return 1;
    return serve_stop(&s, serve_loop(&s));
}
