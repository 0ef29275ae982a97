/* A worker shares its parent's CPU during a burst of host calls, and only then
 * (src/supervisor/colocate.c).
 *
 * A host wrapped around the test host looks at the placement from inside the parent
 * at each host call and each delivery: the driving thread's affinity and the worker's.
 * The real test-build worker runs every script, through the pool. Nothing here
 * asserts a time: what the pin buys is the benchmark's business (docs/benchmarks.md). */
#include "host/test_host.h"
#include "lib/flow_request.h"
#include "lib/harness.h"
#include "supervisor/pool.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ the observer */

struct placement {
    cpu_set_t thread; /* the driving thread's mask */
    cpu_set_t worker; /* the worker's mask */
    int cpu;          /* the CPU the thread ran on */
    bool read_ok;
};

#define SEEN_MAX 64

struct observer {
    struct test_host *inner;
    pid_t worker;
    struct placement calls[SEEN_MAX];
    size_t call_count;
    struct placement sleep_delivered; /* at the delivery of the sleep call's answer */
    bool saw_sleep_delivered;
};

static void look(const struct observer *o, struct placement *p)
{
    p->cpu = sched_getcpu();
    p->read_ok = sched_getaffinity(0, sizeof p->thread, &p->thread) == 0 &&
                 sched_getaffinity(o->worker, sizeof p->worker, &p->worker) == 0;
}

static int observer_call(void *self, const struct host_call *call, struct host_settlement *out,
                         long long *delay_ms)
{
    struct observer *o = self;
    if (o->call_count < SEEN_MAX)
        look(o, &o->calls[o->call_count++]);
    struct host inner = test_host_interface(o->inner);
    return inner.ops->call(inner.self, call, out, delay_ms);
}

static void observer_delivered(void *self, const struct host_call *call,
                               const struct host_settlement *seen, uint32_t delivery_order)
{
    struct observer *o = self;
    /* ops.call("test", "sleep", ms): the module call's arguments name the op. */
    if (strstr(call->args, "\"sleep\"") != NULL) {
        look(o, &o->sleep_delivered);
        o->saw_sleep_delivered = true;
    }
    struct host inner = test_host_interface(o->inner);
    if (inner.ops->delivered != NULL)
        inner.ops->delivered(inner.self, call, seen, delivery_order);
}

static bool observer_is_sync(void *self, const char *kind)
{
    struct observer *o = self;
    struct host inner = test_host_interface(o->inner);
    return inner.ops->is_sync(inner.self, kind);
}

static const struct host_ops OBSERVER_OPS = {
    .call = observer_call, .delivered = observer_delivered, .is_sync = observer_is_sync};

static void observer_reset(struct observer *o, pid_t worker)
{
    o->worker = worker;
    o->call_count = 0;
    o->saw_sleep_delivered = false;
}

/* ------------------------------------------------------------------ helpers */

static struct pool *the_pool;
static struct observer the_observer;

/* Runs script on the "colo" flow's worker; true if it completed with `want`. */
static bool run(const char *script, const char *want, bool keep_placement, pid_t *pid,
                char *what, size_t what_cap)
{
    struct activation_request req;
    flow_request_for(&req, script);
    req.keep_placement = keep_placement;
    struct host host = {&OBSERVER_OPS, &the_observer};
    struct activation_outcome out;
    pool_run(the_pool, "colo", POOL_USE_FLOW, &req, &host, &out);
    bool ok = out.status == ACTIVATION_COMPLETED && out.value != NULL &&
              strcmp(out.value, want) == 0;
    activation_describe(&out, what, what_cap);
    *pid = out.pid;
    activation_outcome_free(&out);
    return ok;
}

static bool same_set(const cpu_set_t *a, const cpu_set_t *b)
{
    return CPU_EQUAL(a, b);
}

static bool one_cpu(const cpu_set_t *set, int cpu)
{
    return CPU_COUNT(set) == 1 && cpu >= 0 && CPU_ISSET(cpu, set);
}

/* The CPUs of a set, as "0,1" (for details). */
static const char *cpus_text(const cpu_set_t *set, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && used + 8 < cap; c++)
        if (CPU_ISSET(c, set))
            used += (size_t)snprintf(buf + used, cap - used, "%s%d", used ? "," : "", c);
    return buf;
}

/* How many of the calls seen found the thread's mask equal to `thread` and the
 * worker's equal to `worker`. */
static size_t calls_with_masks(const cpu_set_t *thread, const cpu_set_t *worker)
{
    size_t n = 0;
    for (size_t i = 0; i < the_observer.call_count; i++) {
        const struct placement *p = &the_observer.calls[i];
        n += p->read_ok && same_set(&p->thread, thread) && same_set(&p->worker, worker);
    }
    return n;
}

static const char BURST[] = "let s = 0; for (let i = 0; i < 20; i++) "
                            "s += (await ops.call('test', 'echo', i))[0]; return s;";

/* ------------------------------------------------------------------ the checks */

static void burst_checks(const cpu_set_t *all, pid_t worker)
{
    char what[512], a[64], b[64];
    pid_t pid = 0;
    observer_reset(&the_observer, worker);
    bool ok = run(BURST, "190", false, &pid, what, sizeof what);
    check(ok && pid == worker, "colocate: a burst of 20 host calls completes on the same worker",
          "%s (worker %d, want %d)", what, (int)pid, (int)worker);

    /* From the first call on, the thread and the worker share one CPU: the thread's. */
    size_t pinned = 0;
    const struct placement *bad = NULL;
    for (size_t i = 0; i < the_observer.call_count; i++) {
        const struct placement *p = &the_observer.calls[i];
        if (p->read_ok && one_cpu(&p->thread, p->cpu) && same_set(&p->thread, &p->worker))
            pinned++;
        else if (bad == NULL)
            bad = p;
    }
    check(the_observer.call_count == 20 && pinned == 20,
          "colocate: during a burst of calls the worker and the driving thread are on one "
          "CPU, the thread's [guard colocate-burst]",
          "%zu of %zu calls saw it; first other: thread on %d, thread mask %s, worker mask %s",
          pinned, the_observer.call_count, bad ? bad->cpu : -1,
          bad ? cpus_text(&bad->thread, a, sizeof a) : "-",
          bad ? cpus_text(&bad->worker, b, sizeof b) : "-");

    /* Afterwards both may run anywhere they could before. */
    cpu_set_t thread_now, worker_now;
    bool read = sched_getaffinity(0, sizeof thread_now, &thread_now) == 0 &&
                sched_getaffinity(worker, sizeof worker_now, &worker_now) == 0;
    check(read && same_set(&thread_now, all) && same_set(&worker_now, all),
          "colocate: after the activation the thread's and the worker's masks are what they "
          "were [guard colocate-restored]",
          "thread %s, worker %s, before %s", read ? cpus_text(&thread_now, a, sizeof a) : "?",
          read ? cpus_text(&worker_now, b, sizeof b) : "?", cpus_text(all, what, sizeof what));
}

static void quiet_checks(const cpu_set_t *all, pid_t worker)
{
    char what[512], a[64], b[64];
    pid_t pid = 0;
    observer_reset(&the_observer, worker);
    /* The parent holds the sleep's answer 200 ms: the worker is silent (it awaits it),
     * so the pin must be gone by the time the answer is delivered. 200 ms is a hundred
     * times COLOCATE_QUIET_MS, so a loaded machine still sees a quiet poll first. */
    bool ok = run("await ops.call('test', 'echo', 1); await ops.call('test', 'sleep', 200); "
                  "return (await ops.call('test', 'echo', 2))[0];",
                  "2", false, &pid, what, sizeof what);
    check(ok && pid == worker, "colocate: calls around a held answer complete", "%s", what);
    const struct placement *d = &the_observer.sleep_delivered;
    check(the_observer.saw_sleep_delivered && d->read_ok && same_set(&d->thread, all) &&
              same_set(&d->worker, all),
          "colocate: a worker silent while an answer is held is released from the pin "
          "[guard colocate-quiet-release]",
          "at the delivery: thread %s, worker %s",
          the_observer.saw_sleep_delivered ? cpus_text(&d->thread, a, sizeof a) : "(none)",
          the_observer.saw_sleep_delivered ? cpus_text(&d->worker, b, sizeof b) : "(none)");
    const struct placement *last =
        the_observer.call_count == 3 ? &the_observer.calls[2] : NULL;
    check(last != NULL && last->read_ok && one_cpu(&last->thread, last->cpu) &&
              same_set(&last->thread, &last->worker),
          "colocate: the next call after the release pins again", "%zu calls seen",
          the_observer.call_count);
}

/* A burst after which no call saw a mask other than `all`: with keep_placement, or when
 * there is only one CPU to run on. */
static void untouched_checks(const cpu_set_t *all, pid_t worker, bool keep_placement,
                             const char *name)
{
    char what[512];
    pid_t pid = 0;
    observer_reset(&the_observer, worker);
    bool ok = run(BURST, "190", keep_placement, &pid, what, sizeof what);
    size_t untouched = calls_with_masks(all, all);
    check(ok && the_observer.call_count == 20 && untouched == 20, name,
          "%s; %zu of %zu calls saw both masks untouched", what, untouched,
          the_observer.call_count);
}

/* The operator's own affinity is never widened: a thread kept to one CPU and a worker
 * kept to another stay exactly there through a burst. */
static void operator_mask_checks(const cpu_set_t *all, pid_t worker, int cpu_a, int cpu_b)
{
    char what[512], a[64], b[64];
    cpu_set_t only_a, only_b;
    CPU_ZERO(&only_a);
    CPU_SET(cpu_a, &only_a);
    CPU_ZERO(&only_b);
    CPU_SET(cpu_b, &only_b);
    if (sched_setaffinity(0, sizeof only_a, &only_a) != 0 ||
        sched_setaffinity(worker, sizeof only_b, &only_b) != 0) {
        fail("colocate: operator masks: setup", "sched_setaffinity failed");
        return;
    }
    pid_t pid = 0;
    observer_reset(&the_observer, worker);
    bool ok = run(BURST, "190", false, &pid, what, sizeof what);
    size_t kept = 0;
    const struct placement *bad = NULL;
    for (size_t i = 0; i < the_observer.call_count; i++) {
        const struct placement *p = &the_observer.calls[i];
        if (p->read_ok && same_set(&p->thread, &only_a) && same_set(&p->worker, &only_b))
            kept++;
        else if (bad == NULL)
            bad = p;
    }
    check(ok && the_observer.call_count == 20 && kept == 20,
          "colocate: a thread kept to one CPU and a worker kept to another stay there: the "
          "pin never moves either off the CPUs it was given [guard colocate-never-widens]",
          "%s; %zu of %zu calls kept them; first other: thread %s, worker %s", what, kept,
          the_observer.call_count, bad ? cpus_text(&bad->thread, a, sizeof a) : "-",
          bad ? cpus_text(&bad->worker, b, sizeof b) : "-");
    (void)sched_setaffinity(worker, sizeof *all, all);
    (void)sched_setaffinity(0, sizeof *all, all);
}

int main(void)
{
    if (!require_binary(harness_test_worker(), "colocate: the test worker"))
        return harness_finish();
    cpu_set_t all;
    if (sched_getaffinity(0, sizeof all, &all) != 0) {
        fail("colocate: setup", "sched_getaffinity failed");
        return harness_finish();
    }
    int cpu_a = -1, cpu_b = -1;
    for (int c = 0; c < CPU_SETSIZE && cpu_b < 0; c++)
        if (CPU_ISSET(c, &all)) {
            if (cpu_a < 0)
                cpu_a = c;
            else
                cpu_b = c;
        }
    the_observer.inner = test_host_new();
    struct pool_config cfg;
    pool_config_defaults(&cfg);
    cfg.worker_path = harness_test_worker();
    the_pool = pool_new(&cfg);
    if (the_pool == NULL || the_observer.inner == NULL) {
        fail("colocate: setup", "out of memory");
        return harness_finish();
    }
    /* A first run gives the flow its worker; every later run reuses it. */
    char what[512];
    pid_t worker = 0;
    observer_reset(&the_observer, 0);
    if (!check(run("return 1;", "1", false, &worker, what, sizeof what) && worker > 0,
               "colocate: the flow's worker runs a script", "%s", what))
        return harness_finish();

    if (cpu_b < 0) {
        harness_note("one CPU allowed: only the single-CPU behaviour can be shown");
        untouched_checks(&all, worker, false,
                         "colocate: with one CPU allowed, a burst completes and no mask changes");
    } else {
        burst_checks(&all, worker);
        quiet_checks(&all, worker);
        untouched_checks(&all, worker, true,
                         "colocate: keep_placement leaves both masks alone during a burst");
        operator_mask_checks(&all, worker, cpu_a, cpu_b);
        burst_checks(&all, worker); /* and the pin works again afterwards */
    }
    pool_free(the_pool);
    test_host_free(the_observer.inner);
    return harness_finish();
}
