/* The short, adaptive spin before a blocking wait (src/proto/spin_wait.c), and what it
 * must never change: the real worker still ends every wait blocked in read(0), host
 * calls answered at once or late still complete, and activations stay correct.
 *
 * Part 1 drives the policy directly (each wait's length is given, so no check depends
 * on the machine's speed). Part 2 drives the real test-build worker
 * through the pool. Nothing here asserts a time: speed is a benchmark's business
 * (docs/benchmarks.md). */
#include "proto/spin_wait.h"
#include "supervisor/pool.h"
#include "host/test_host.h"
#include "lib/flow_request.h"
#include "lib/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================== part 1: policy */

/* Ends a wait of exactly `waited_ns` (ended while spinning or not): no clock, so no
 * check depends on how fast or how loaded the machine is. */
static void end_wait(struct spin_wait *s, int64_t waited_ns, bool while_spinning)
{
    spin_wait_end_after(s, while_spinning, waited_ns);
}

static void policy_checks(void)
{
    struct spin_wait s;
    spin_wait_init(&s);
    check(s.bound_ns == SPIN_WAIT_MAX_NS, "spin policy: starts with the longest bound",
          "bound %lld", (long long)s.bound_ns);

    /* Spins that keep giving up (a slow host, an idle worker, a peer on the same CPU)
     * must switch the spin off within a few waits. */
    int waits = 0;
    while (s.bound_ns > 0 && waits < 100) {
        end_wait(&s, 3 * SPIN_WAIT_MAX_NS, false);
        waits++;
    }
    check(s.bound_ns == 0 && waits <= 6,
          "spin policy: spins that give up switch the spin off within 6 waits "
          "[guard spin-adaptive-off]",
          "bound %lld after %d blocked waits", (long long)s.bound_ns, waits);

    /* Off means off for SPIN_WAIT_OFF_WAITS waits, then one short spin tries again. */
    unsigned off = 0;
    while (s.bound_ns == 0 && off < 10 * SPIN_WAIT_OFF_WAITS) {
        end_wait(&s, 3 * SPIN_WAIT_MAX_NS, false);
        off++;
    }
    check(off == SPIN_WAIT_OFF_WAITS && s.bound_ns == SPIN_WAIT_PROBE_NS,
          "spin policy: off for SPIN_WAIT_OFF_WAITS waits, then a short spin tries again",
          "off for %u waits (want %u), then bound %lld (want %lld)", off,
          SPIN_WAIT_OFF_WAITS, (long long)s.bound_ns, (long long)SPIN_WAIT_PROBE_NS);

    /* Answers caught while spinning keep it on, and the bound follows the latency. */
    spin_wait_init(&s);
    for (int i = 0; i < 50; i++)
        end_wait(&s, 5000, true);
    check(s.bound_ns >= 10000 && s.bound_ns <= 12000,
          "spin policy: answers caught at 5 us keep the spin on, at about twice that",
          "bound %lld after 50 caught waits of 5 us", (long long)s.bound_ns);
    check(s.caught == 50 && s.blocked == 0, "spin policy: counts caught and blocked waits",
          "caught %llu blocked %llu", (unsigned long long)s.caught,
          (unsigned long long)s.blocked);

    /* An answer found only after the bound (the spinner was preempted, e.g. by its
     * peer on the same CPU) did not pay: it counts as a spin that gave up. */
    spin_wait_init(&s);
    end_wait(&s, 2 * SPIN_WAIT_MAX_NS, true);
    check(s.bound_ns == SPIN_WAIT_MAX_NS / 2 && s.caught == 0 && s.blocked == 1,
          "spin policy: an answer found after the bound counts as a spin that gave up "
          "[guard spin-preempted-is-failure]",
          "bound %lld caught %llu blocked %llu", (long long)s.bound_ns,
          (unsigned long long)s.caught, (unsigned long long)s.blocked);

    /* Never longer than the maximum, whatever the latency seen. */
    spin_wait_init(&s);
    for (int i = 0; i < 20; i++)
        end_wait(&s, SPIN_WAIT_MAX_NS - 1000, true);
    check(s.bound_ns <= SPIN_WAIT_MAX_NS, "spin policy: the bound never exceeds the maximum",
          "bound %lld", (long long)s.bound_ns);

    /* spin_wait_more is false once the bound is spent, and always when off. */
    spin_wait_init(&s);
    s.began_ns = spin_wait_now_ns() - 2 * SPIN_WAIT_MAX_NS;
    bool spent = !spin_wait_more(&s);
    s.bound_ns = 0;
    spin_wait_begin(&s);
    check(spent && !spin_wait_more(&s),
          "spin policy: no more spinning once the bound is spent, none when off",
          "spent bound still spinning: %s; off still spinning: %s", spent ? "no" : "yes",
          spin_wait_more(&s) ? "yes" : "no");
}

/* ================================================================== part 2: real worker */

static struct test_host *the_host;

static pid_t run_script(struct pool *pool, const char *script, const char *want,
                        const char *name)
{
    struct activation_request req;
    flow_request_for(&req, script);
    struct host host = test_host_interface(the_host);
    struct activation_outcome out;
    pool_run(pool, "spin", POOL_USE_FLOW, &req, &host, &out);
    bool ok = out.status == ACTIVATION_COMPLETED && out.value != NULL &&
              strcmp(out.value, want) == 0;
    char what[512];
    activation_describe(&out, what, sizeof what);
    check(ok, name, "%s (want value %s)", what, want);
    pid_t pid = out.pid;
    activation_outcome_free(&out);
    return pid;
}

static void worker_checks(void)
{
    if (!require_binary(harness_test_worker(), "spin: the test worker"))
        return;
    the_host = test_host_new();
    struct pool_config cfg;
    pool_config_defaults(&cfg);
    cfg.worker_path = harness_test_worker();
    struct pool *pool = pool_new(&cfg);
    if (pool == NULL || the_host == NULL) {
        fail("spin: setup", "out of memory");
        return;
    }

    /* Answered at once: the waits both sides spin through. */
    pid_t pid = run_script(pool,
                           "let s = 0; for (let i = 0; i < 3000; i++) "
                           "s += (await ops.call('test', 'echo', i))[0]; return s;",
                           "4498500",
                           "spin: 3000 host calls answered at once all complete, in order");
    /* After it, with nothing to read, the worker's spin must end in a blocking read: a
     * spin without a bound would keep it running (and burning CPU) forever. */
    char why[256] = "";
    bool blocked = pid > 0 && wait_blocked_reading_stdin(pid, 1, 10000, why, sizeof why);
    check(blocked,
          "spin: an idle worker ends its spin blocked in read(0) [guard spin-bounded]", "%s",
          pid > 0 ? why : "no worker pid");

    /* Answered late (1 ms, twenty times the longest spin): every wait gives up and
     * blocks; the answers still arrive, and the next calls answered at once as well. */
    run_script(pool,
               "let s = 0; for (let i = 0; i < 20; i++) { await ops.call('test', 'sleep', 1); "
               "s += (await ops.call('test', 'echo', i))[0]; } return s;",
               "190", "spin: calls answered late, between calls answered at once, complete");

    /* Synchronous calls (Date.now) wait for their Deliver in the same read. */
    run_script(pool,
               "let n = 0; for (let i = 0; i < 500; i++) if (Date.now() > 0) n++; return n;",
               "500", "spin: 500 synchronous host calls complete");

    /* Back to back: the worker's next Activate may already be in the pipe. */
    bool all = true;
    for (int i = 0; i < 50 && all; i++) {
        char script[64];
        char want[16];
        snprintf(script, sizeof script, "return %d + (await ops.call('test', 'echo', 1))[0];", i);
        snprintf(want, sizeof want, "%d", i + 1);
        struct activation_request req;
        flow_request_for(&req, script);
        struct host host = test_host_interface(the_host);
        struct activation_outcome out;
        pool_run(pool, "spin", POOL_USE_FLOW, &req, &host, &out);
        all = out.status == ACTIVATION_COMPLETED && out.value != NULL &&
              strcmp(out.value, want) == 0;
        activation_outcome_free(&out);
    }
    check(all, "spin: 50 activations back to back each complete with their own value", "%s",
          all ? "" : "an activation failed or returned another value");

    pool_free(pool);
    test_host_free(the_host);
}

int main(void)
{
    policy_checks();
    worker_checks();
    return harness_finish();
}
