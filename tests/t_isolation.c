/* Isolation between activations on one worker (docs/engine.md: a fresh runtime and
 * context per activation), driven through the pool with the real test-build worker.
 *
 * One activation leaves everything a script can leave: globals (assigned and `var`),
 * attempts on the prototypes it can reach, a promise chain that never ends (pending
 * jobs), a reaction on a promise that never settles, a host call it did not await,
 * and a secret reachable from a global and a closure. The next activation of the same
 * flow, on the same worker process, must see exactly what an activation on a fresh
 * worker sees. Shown red by running the next activation in the previous one's engine. */
#include "supervisor/pool.h"
#include "host/test_host.h"
#include "lib/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEAVER_BODY \
    "globalThis.leakGlobal = 'A';\n" \
    "var leakVar = 'A';\n" \
    "for (const target of [Object.prototype, Array.prototype, Promise.prototype, JSON, Math,\n" \
    "                      Object.getPrototypeOf(async function () {}), globalThis]) {\n" \
    "  try { target.polluted = 'A'; } catch (e) {}\n" \
    "  try { Object.defineProperty(target, 'polluted', { value: 'A' }); } catch (e) {}\n" \
    "}\n" \
    "try { Array.prototype.push = function () { return 'A'; }; } catch (e) {}\n" \
    "(async () => { for (;;) { await null; globalThis.tick = (globalThis.tick || 0) + 1; } })();\n" \
    "new Promise(() => {}).then(() => { globalThis.late = 'A'; });\n" \
    "ops.call('test', 'echo', 'late-A').then((v) => { globalThis.lateHost = v; });\n" \
    "globalThis.secret = 'SECRET-' + 'A'.repeat(1000);\n" \
    "const keep = new Map([['k', globalThis.secret]]);\n" \
    "globalThis.getSecret = () => keep.get('k');\n" \
    /* end of LEAVER_BODY */

static const char LEAVER[] = LEAVER_BODY "return 'left';\n";

/* What an activation sees: every global name, the traces of the leaver, and whether
 * leftover jobs run while it waits. */
#define LOOKER_BODY \
    "for (let i = 0; i < 50; i++) await null;\n" \
    "const seen = {\n" \
    "  globals: Object.getOwnPropertyNames(globalThis).sort().join(','),\n" \
    "  leakGlobal: typeof leakGlobal, leakVar: typeof leakVar,\n" \
    "  objectPolluted: typeof ({}).polluted, arrayPolluted: typeof [].polluted,\n" \
    "  promisePolluted: typeof Promise.resolve().polluted, jsonPolluted: typeof JSON.polluted,\n" \
    "  mathPolluted: typeof Math.polluted, globalPolluted: typeof globalThis.polluted,\n" \
    "  push: [1].push(2),\n" \
    "  tick: typeof globalThis.tick, late: typeof globalThis.late,\n" \
    "  lateHost: typeof globalThis.lateHost,\n" \
    "  secret: typeof globalThis.secret, getSecret: typeof globalThis.getSecret,\n" \
    "};\n" \
    "return seen;\n"

static const char LOOKER[] = LOOKER_BODY;
/* The control: the looker in the leaver's own context must see the leftovers, or the
 * looker could not tell a leak from isolation. */
static const char SAME_CONTEXT[] = LEAVER_BODY LOOKER_BODY;

static struct test_host *the_host;

/* Runs script on the flow's worker; *value gets the completed value (caller frees) or
 * NULL. Returns the serving pid. */
static pid_t run(struct pool *pool, const char *script, char **value, char *what, size_t cap)
{
    struct activation_request req;
    memset(&req, 0, sizeof req);
    activation_request_defaults(&req, PROTO_PROFILE_FLOW);
    req.script = script;
    req.script_len = strlen(script);
    req.deadline_ms = 60000;
    struct host host = test_host_interface(the_host);
    struct activation_outcome out;
    pool_run(pool, "isolation", POOL_USE_FLOW, &req, &host, &out);
    activation_describe(&out, what, cap);
    *value = out.status == ACTIVATION_COMPLETED && out.value != NULL ? strdup(out.value) : NULL;
    pid_t pid = out.pid;
    activation_outcome_free(&out);
    return pid;
}

int main(void)
{
    if (!require_binary(harness_test_worker(), "isolation: the test worker"))
        return harness_finish();
    the_host = test_host_new();
    struct pool_config cfg;
    pool_config_defaults(&cfg);
    cfg.worker_path = harness_test_worker();
    struct pool *fresh_pool = pool_new(&cfg), *pool = pool_new(&cfg);
    if (the_host == NULL || fresh_pool == NULL || pool == NULL) {
        fail("isolation: setup", "out of memory");
        return harness_finish();
    }

    char what[1024];
    char *baseline = NULL, *left = NULL, *after = NULL;
    pid_t fresh_pid = run(fresh_pool, LOOKER, &baseline, what, sizeof what);
    check(baseline != NULL && fresh_pid > 0, "isolation: a fresh worker's view is taken", "%s",
          what);

    pid_t leaver_pid = run(pool, LEAVER, &left, what, sizeof what);
    check(left != NULL && strcmp(left, "\"left\"") == 0,
          "isolation: the leaving activation completes", "%s", what);
    pid_t looker_pid = run(pool, LOOKER, &after, what, sizeof what);
    check(after != NULL && looker_pid == leaver_pid && looker_pid > 0,
          "isolation: the next activation runs on the same worker process", "%s (pids %d, %d)",
          what, (int)leaver_pid, (int)looker_pid);

    if (baseline != NULL && after != NULL) {
        harness_note("fresh view: %.300s", baseline);
        check(strcmp(after, baseline) == 0,
              "isolation: after an activation that left globals, prototype writes, pending "
              "jobs, an unsettled promise, an unawaited host call and a reachable secret, the "
              "next one on the same worker sees what a fresh worker sees "
              "[guard fresh-runtime-per-activation]",
              "after: %.600s | fresh: %.600s", after, baseline);
        static const char *const untouched[] = {
            "\"leakGlobal\":\"undefined\"", "\"leakVar\":\"undefined\"",
            "\"objectPolluted\":\"undefined\"", "\"arrayPolluted\":\"undefined\"",
            "\"promisePolluted\":\"undefined\"", "\"push\":2",
            "\"tick\":\"undefined\"", "\"late\":\"undefined\"", "\"lateHost\":\"undefined\"",
            "\"secret\":\"undefined\"", "\"getSecret\":\"undefined\"",
        };
        bool all = true;
        const char *missing = "";
        for (size_t i = 0; i < sizeof untouched / sizeof untouched[0]; i++) {
            if (strstr(after, untouched[i]) == NULL) {
                all = false;
                missing = untouched[i];
                break;
            }
        }
        check(all, "isolation: none of the leaver's globals, prototype writes, job results or "
                   "secret is visible, and no leftover job ran",
              "missing %s in %.600s", missing, after);
    }
    /* The control, on a worker of its own. */
    char *same = NULL;
    struct pool *control_pool = pool_new(&cfg);
    if (control_pool != NULL) {
        (void)run(control_pool, SAME_CONTEXT, &same, what, sizeof what);
        pool_free(control_pool);
    }
    check(same != NULL && baseline != NULL && strcmp(same, baseline) != 0 &&
              strstr(same, "\"leakGlobal\":\"string\"") != NULL &&
              strstr(same, "\"tick\":\"number\"") != NULL &&
              strstr(same, "\"secret\":\"string\"") != NULL,
          "isolation (control): the same looker inside the leaving context does see its "
          "globals, its running jobs and its secret",
          "%.600s", same != NULL ? same : what);
    free(same);
    free(baseline);
    free(left);
    free(after);
    pool_free(fresh_pool);
    pool_free(pool);
    test_host_free(the_host);
    return harness_finish();
}
