#include "supervisor/pool.h"

#include "supervisor/worker_check.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

struct pool_worker {
    struct worker_conn conn;
    char *flow;       /* NULL: an unbound spare */
    bool busy;
    bool single_use;
    bool codemode_checked; /* compiled its run's script (POOL_USE_CODEMODE_CHECK) */
    bool released; /* its flow stopped while it was busy: killed when the activation returns */
    bool serves_flow; /* bound by POOL_USE_FLOW: its end counts under flow in the health */
    unsigned activations;
    long long idle_since_ms; /* pool clock */
};

struct pool {
    /* Guards everything below. An activation runs outside it, on a worker marked busy,
     * which no other thread touches until it is idle again. */
    pthread_mutex_t lock;
    struct pool_config cfg;
    struct health health;
    struct pool_worker **workers;
    size_t count, cap;
    unsigned consecutive_failures;
    long long backoff_until_ms; /* pool clock; 0: not backing off */
    char last_failure[256];
    unsigned replacement_debt; /* workers ended that no start has replaced yet */
    /* A worker pool_launch started and nothing has greeted yet (pid -1: none). */
    struct worker_proc launched;
    bool launched_codemode;
};

static long long default_clock(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long long pool_now(const struct pool *pool)
{
    return pool->cfg.clock_ms(pool->cfg.clock_ctx);
}

void pool_config_defaults(struct pool_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->policy = LANDLOCK_POLICY_REQUIRED;
    cfg->spares = 2;
    cfg->max_size = 16;
    cfg->max_activations = 256;
    cfg->idle_retire_ms = 10LL * 60 * 1000;
    cfg->backoff_initial_ms = 250;
    cfg->backoff_max_ms = 30000;
    cfg->welcome_timeout_ms = WORKER_WELCOME_TIMEOUT_MS;
    cfg->shutdown_timeout_ms = 1000;
}

struct pool *pool_new(const struct pool_config *cfg)
{
    struct pool *pool = calloc(1, sizeof *pool);
    if (pool == NULL)
        return NULL;
    if (pthread_mutex_init(&pool->lock, NULL) != 0) {
        free(pool);
        return NULL;
    }
    pool->cfg = *cfg;
    if (pool->cfg.clock_ms == NULL)
        pool->cfg.clock_ms = default_clock;
    if (pool->cfg.max_size == 0)
        pool->cfg.max_size = 1;
    health_init(&pool->health, cfg->policy);
    pool->health.flow_limit = HEALTH_POOL_FLOW_LIMIT;
    return pool;
}

/* ------------------------------------------------------------------ the list */

static void forget(struct pool *pool, struct pool_worker *pw)
{
    for (size_t i = 0; i < pool->count; i++) {
        if (pool->workers[i] == pw) {
            pool->workers[i] = pool->workers[--pool->count];
            break;
        }
    }
    free(pw->flow);
    free(pw);
}

static bool add(struct pool *pool, struct pool_worker *pw)
{
    if (pool->count == pool->cap) {
        size_t cap = pool->cap == 0 ? 8 : pool->cap * 2;
        /* An array of pointers: the element size is a pointer's. */
        struct pool_worker **grown =
            realloc(pool->workers, cap * sizeof *grown); // NOLINT(bugprone-sizeof-expression)
        if (grown == NULL)
            return false;
        pool->workers = grown;
        pool->cap = cap;
    }
    pool->workers[pool->count++] = pw;
    return true;
}

/* ------------------------------------------------------------------ ending workers */

/* The flow a worker's end counts under in the health, or NULL. */
static const char *counted_flow(const struct pool_worker *pw)
{
    return pw->serves_flow ? pw->flow : NULL;
}

enum retire_how { RETIRE_SHUTDOWN, RETIRE_KILL };

/* Ends a live worker by policy and forgets it. */
static void retire(struct pool *pool, struct pool_worker *pw, enum retire_how how)
{
    struct worker_end end = how == RETIRE_KILL
                                ? worker_conn_kill(&pw->conn)
                                : worker_conn_shutdown(&pw->conn, pool->cfg.shutdown_timeout_ms);
    pool->health.retired++;
    struct health_flow *f =
        pw->serves_flow ? health_flow_entry(&pool->health, pw->flow) : NULL;
    if (f != NULL)
        f->retired++;
    if (end.killed)
        health_record_kill(&pool->health, counted_flow(pw));
    else if (WIFSIGNALED(end.wait_status)) /* died on its own */
        health_record_death(&pool->health, counted_flow(pw), WTERMSIG(end.wait_status));
    pool->replacement_debt++;
    forget(pool, pw);
}

/* An activation ended with its worker already reaped: count how, and forget it. */
static void account_ended(struct pool *pool, struct pool_worker *pw,
                          const struct activation_outcome *out)
{
    if (out->killed_by_parent)
        health_record_kill(&pool->health, counted_flow(pw));
    else
        health_record_death(&pool->health, counted_flow(pw), out->term_signal);
    pool->replacement_debt++;
    worker_conn_free(&pw->conn);
    forget(pool, pw);
}

/* An idle worker must be silent and alive. One that died is counted as crashed; one
 * that wrote anything between activations is killed. Returns true if it was removed. */
static bool remove_if_broken(struct pool *pool, struct pool_worker *pw)
{
    /* Bytes already read and not consumed count as speaking too: they would be taken
     * for the next activation's frames. */
    const struct worker_channel *ch = &pw->conn.channel;
    struct pollfd p = {pw->conn.proc.from_worker, POLLIN, 0};
    if (pw->conn.proc.from_worker >= 0 && ch->in.len <= ch->start && poll(&p, 1, 0) == 0)
        return false;
    int status = 0;
    pid_t done;
    while ((done = waitpid(pw->conn.proc.pid, &status, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (done == pw->conn.proc.pid) {
        pw->conn.proc.pid = -1;
        worker_conn_drain_log(&pw->conn);
        worker_conn_free(&pw->conn);
        health_record_death(&pool->health, counted_flow(pw),
                            WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        pool->replacement_debt++;
        forget(pool, pw);
        return true;
    }
    /* Alive, but its stdout is readable or closed: it spoke out of turn. */
    retire(pool, pw, RETIRE_KILL);
    return true;
}

/* Retires idle workers past their idle time and removes broken ones. */
static void sweep(struct pool *pool)
{
    long long now = pool_now(pool);
    for (size_t i = pool->count; i-- > 0;) {
        if (i >= pool->count)
            continue;
        struct pool_worker *pw = pool->workers[i];
        if (pw->busy)
            continue;
        if (remove_if_broken(pool, pw))
            continue;
        if (now - pw->idle_since_ms >= pool->cfg.idle_retire_ms)
            retire(pool, pw, RETIRE_SHUTDOWN);
    }
}

/* ------------------------------------------------------------------ starting workers */

static bool backing_off(const struct pool *pool, long long now)
{
    return pool->consecutive_failures > 0 && now < pool->backoff_until_ms;
}

static bool use_is_codemode(enum pool_use use)
{
    return use == POOL_USE_CODEMODE || use == POOL_USE_CODEMODE_CHECK;
}

static struct worker_limits use_limits(enum pool_use use)
{
    struct worker_limits limits = {use_is_codemode(use) ? WORKER_CODEMODE_ADDRESS_SPACE
                                                        : WORKER_FLOW_ADDRESS_SPACE,
                                   WORKER_OPEN_FILES};
    return limits;
}

void pool_launch(struct pool *pool, enum pool_use use)
{
    pthread_mutex_lock(&pool->lock);
    if (pool->launched.pid <= 0 && !backing_off(pool, pool_now(pool)) &&
        pool->count < pool->cfg.max_size) {
        struct worker_limits limits = use_limits(use);
        struct worker_report report;
        if (!worker_start_ahead(pool->cfg.worker_path, pool->cfg.policy, &limits, &pool->launched,
                           &report))
            pool->launched.pid = -1; /* the start that needs it tries again, and says why */
        pool->launched_codemode = use_is_codemode(use);
    }
    pthread_mutex_unlock(&pool->lock);
}

/* Starts and accepts one worker (or greets the one pool_launch started); NULL (with
 * why) if it failed or the pool is backing off. The new worker is in the list, unbound
 * and idle. */
static struct pool_worker *start_worker(struct pool *pool, enum pool_use use, char *why,
                                        size_t why_cap)
{
    long long now = pool_now(pool);
    if (backing_off(pool, now)) {
        snprintf(why, why_cap, "worker starts backing off for %lld ms after: %s",
                 pool->backoff_until_ms - now, pool->last_failure);
        return NULL;
    }
    bool codemode = use_is_codemode(use);
    struct worker_proc proc;
    struct worker_report report;
    bool accepted;
    if (pool->launched.pid > 0 && pool->launched_codemode == codemode) {
        /* Started ahead by pool_launch: only its greeting and checks are left. */
        proc = pool->launched;
        pool->launched.pid = -1;
        accepted = worker_handshake(&proc, pool->cfg.policy, pool->cfg.welcome_timeout_ms,
                                    &report);
        report.started = true;
    } else {
        struct worker_limits limits = use_limits(use);
        accepted = worker_start_checked_with(pool->cfg.worker_path, pool->cfg.policy, &limits,
                                             pool->cfg.welcome_timeout_ms, &proc, &report);
    }
    if (report.started)
        pool->health.spawned++;
    if (!accepted) {
        pool->health.spawn_failures++;
        if (report.started) {
            pool->health.refused_welcomes++;
            pool->health.killed++; /* worker_handshake killed it */
        }
        pool->consecutive_failures++;
        unsigned shift = pool->consecutive_failures - 1;
        long long delay = pool->cfg.backoff_initial_ms;
        while (shift-- > 0 && delay < pool->cfg.backoff_max_ms)
            delay *= 2;
        if (delay > pool->cfg.backoff_max_ms)
            delay = pool->cfg.backoff_max_ms;
        pool->backoff_until_ms = pool_now(pool) + delay;
        const char *log = report.worker_log;
        size_t log_len = strcspn(log, "\n");
        snprintf(pool->last_failure, sizeof pool->last_failure, "%.180s%s%.*s", report.reason,
                 log_len > 0 ? "; worker said: " : "", (int)(log_len > 60 ? 60 : log_len), log);
        snprintf(why, why_cap, "%s", pool->last_failure);
        return NULL;
    }
    pool->consecutive_failures = 0;
    pool->backoff_until_ms = 0;
    struct pool_worker *pw = calloc(1, sizeof *pw);
    if (pw == NULL || !add(pool, pw)) {
        free(pw);
        (void)worker_kill(&proc);
        pool->health.killed++;
        snprintf(why, why_cap, "out of memory");
        return NULL;
    }
    worker_conn_init(&pw->conn, &proc);
    pw->idle_since_ms = pool_now(pool);
    if (pool->replacement_debt > 0) {
        pool->replacement_debt--;
        pool->health.respawned++;
    }
    return pw;
}

/* Makes room for one more worker by retiring the idle worker unused the longest.
 * False if every worker is busy. */
static bool make_room(struct pool *pool)
{
    if (pool->count < pool->cfg.max_size)
        return true;
    struct pool_worker *oldest = NULL;
    for (size_t i = 0; i < pool->count; i++) {
        struct pool_worker *pw = pool->workers[i];
        if (!pw->busy && (oldest == NULL || pw->idle_since_ms < oldest->idle_since_ms))
            oldest = pw;
    }
    if (oldest == NULL)
        return false;
    retire(pool, oldest, RETIRE_SHUTDOWN);
    return true;
}

static unsigned count_spares(const struct pool *pool)
{
    unsigned n = 0;
    for (size_t i = 0; i < pool->count; i++)
        if (pool->workers[i]->flow == NULL && !pool->workers[i]->busy)
            n++;
    return n;
}

void pool_maintain(struct pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    sweep(pool);
    while (count_spares(pool) < pool->cfg.spares && pool->count < pool->cfg.max_size) {
        char why[256];
        if (start_worker(pool, POOL_USE_FLOW, why, sizeof why) == NULL)
            break;
    }
    pthread_mutex_unlock(&pool->lock);
}

/* ------------------------------------------------------------------ running */

static struct pool_worker *find_idle(const struct pool *pool, const char *flow)
{
    for (size_t i = 0; i < pool->count; i++) {
        struct pool_worker *pw = pool->workers[i];
        if (pw->busy || pw->codemode_checked)
            continue;
        if (flow == NULL ? pw->flow == NULL : (pw->flow != NULL && strcmp(pw->flow, flow) == 0))
            return pw;
    }
    return NULL;
}

/* The worker that compiled the script of the codemode run named flow, still idle. */
static struct pool_worker *find_checked(const struct pool *pool, const char *flow)
{
    for (size_t i = 0; i < pool->count; i++) {
        struct pool_worker *pw = pool->workers[i];
        if (!pw->busy && pw->codemode_checked && strcmp(pw->flow, flow) == 0)
            return pw;
    }
    return NULL;
}

static bool flow_busy(const struct pool *pool, const char *flow)
{
    for (size_t i = 0; i < pool->count; i++)
        if (pool->workers[i]->busy && pool->workers[i]->flow != NULL &&
            strcmp(pool->workers[i]->flow, flow) == 0)
            return true;
    return false;
}

static struct pool_worker *acquire(struct pool *pool, const char *flow, enum pool_use use,
                                   char *why, size_t why_cap)
{
    struct pool_worker *pw = NULL;
    if (use == POOL_USE_FLOW) {
        pw = find_idle(pool, flow);
        if (pw != NULL)
            return pw;
        if (flow_busy(pool, flow)) {
            snprintf(why, why_cap, "flow %.64s already has a running activation", flow);
            return NULL;
        }
    }
    if (use == POOL_USE_CODEMODE) {
        pw = find_checked(pool, flow);
        if (pw != NULL) {
            pw->codemode_checked = false;
            pw->single_use = true;
            return pw;
        }
    } else if (use != POOL_USE_CODEMODE_CHECK) {
        pw = find_idle(pool, NULL); /* a warm spare */
    }
    if (pw == NULL) {
        if (!make_room(pool)) {
            snprintf(why, why_cap, "the pool is full: all %u workers are busy",
                     pool->cfg.max_size);
            return NULL;
        }
        pw = start_worker(pool, use, why, why_cap);
        if (pw == NULL)
            return NULL;
    }
    if (use == POOL_USE_FLOW || use == POOL_USE_CODEMODE_CHECK) {
        pw->flow = strdup(flow);
        pw->codemode_checked = use == POOL_USE_CODEMODE_CHECK;
        if (pw->flow == NULL) {
            snprintf(why, why_cap, "out of memory");
            return NULL;
        }
        if (use == POOL_USE_FLOW) {
            /* A spare taken or a worker started: either begins serving the flow here. */
            pw->serves_flow = true;
            struct health_flow *f = health_flow_entry(&pool->health, flow);
            if (f != NULL)
                f->spawned++;
        }
    } else {
        pw->single_use = true;
    }
    return pw;
}

void pool_run(struct pool *pool, const char *flow, enum pool_use use,
              const struct activation_request *req, const struct host *host,
              struct activation_outcome *out)
{
    pthread_mutex_lock(&pool->lock);
    sweep(pool);
    char why[320];
    why[0] = '\0';
    struct pool_worker *pw = NULL;
    if (use == POOL_USE_CODEMODE_CHECK && !req->compile_only)
        snprintf(why, sizeof why, "a codemode run's check must only compile its script");
    else
        pw = acquire(pool, flow, use, why, sizeof why);
    if (pw == NULL) {
        memset(out, 0, sizeof *out);
        out->status = ACTIVATION_NO_WORKER;
        out->exit_status = -1;
        out->detail = strdup(why);
        health_record_run(&pool->health, flow, out);
        pthread_mutex_unlock(&pool->lock);
        return;
    }
    pw->busy = true;
    pthread_mutex_unlock(&pool->lock);
    activation_run(&pw->conn, req, host, out);
    pthread_mutex_lock(&pool->lock);
    pw->busy = false;
    pw->activations++;
    pw->idle_since_ms = pool_now(pool);
    health_record_run(&pool->health, flow, out);

    if (out->worker_ended)
        account_ended(pool, pw, out);
    else if (!activation_keeps_worker(out) || pw->released ||
             (pw->codemode_checked && out->status != ACTIVATION_COMPLETED))
        retire(pool, pw, RETIRE_KILL); /* its engine state is not trusted */
    else if (pw->single_use || pw->activations >= pool->cfg.max_activations)
        retire(pool, pw, RETIRE_SHUTDOWN);
    pthread_mutex_unlock(&pool->lock);
}

void pool_lock(struct pool *pool)
{
    pthread_mutex_lock(&pool->lock);
}

void pool_unlock(struct pool *pool)
{
    pthread_mutex_unlock(&pool->lock);
}

unsigned pool_max_size(const struct pool *pool)
{
    return pool->cfg.max_size;
}

void pool_take_flow_counts(struct pool *pool, struct health_flow **flows, size_t *count)
{
    pthread_mutex_lock(&pool->lock);
    health_take_flows(&pool->health, flows, count);
    pthread_mutex_unlock(&pool->lock);
}

void pool_give_back_flow_counts(struct pool *pool, struct health_flow *flows, size_t count)
{
    pthread_mutex_lock(&pool->lock);
    health_give_back_flows(&pool->health, flows, count);
    pthread_mutex_unlock(&pool->lock);
}

const struct health *pool_health(struct pool *pool)
{
    struct health *h = &pool->health;
    h->live = h->spares = h->busy = h->bound = 0;
    for (size_t i = 0; i < pool->count; i++) {
        const struct pool_worker *pw = pool->workers[i];
        h->live++;
        if (pw->busy)
            h->busy++;
        if (pw->flow != NULL)
            h->bound++;
        else if (!pw->busy)
            h->spares++;
    }
    return h;
}

pid_t pool_flow_worker(struct pool *pool, const char *flow)
{
    pthread_mutex_lock(&pool->lock);
    const struct pool_worker *pw = find_idle(pool, flow);
    pid_t pid = pw != NULL ? pw->conn.proc.pid : 0;
    pthread_mutex_unlock(&pool->lock);
    return pid;
}

void pool_release_flow(struct pool *pool, const char *flow)
{
    pthread_mutex_lock(&pool->lock);
    for (size_t i = pool->count; i-- > 0;) {
        struct pool_worker *pw = pool->workers[i];
        if (pw->flow == NULL || strcmp(pw->flow, flow) != 0)
            continue;
        if (pw->busy)
            pw->released = true; /* pool_run kills it when its activation returns */
        else
            retire(pool, pw, RETIRE_KILL);
    }
    pthread_mutex_unlock(&pool->lock);
}

void pool_free(struct pool *pool)
{
    if (pool == NULL)
        return;
    /* Killed, not asked: a worker holds nothing worth a clean exit, and a stop must
     * not leave one alive for a grace (nor wait for it). */
    while (pool->count > 0) {
        struct pool_worker *pw = pool->workers[pool->count - 1];
        (void)worker_conn_kill(&pw->conn);
        forget(pool, pw);
    }
    if (pool->launched.pid > 0)
        (void)worker_kill(&pool->launched);
    free(pool->workers);
    health_free(&pool->health);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}
