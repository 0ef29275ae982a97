/* A flow's worker ends when its flow stops, through the real ck-basal serve
 * (supervisor/pool.h, pool_release_flow; serve/daemon.c; flows/run_driver.c). Serve
 * runs with --spares 0, so every worker alive is one bound to a flow: a child of serve.
 *
 *   1. `flow disable ID`: the worker its run left bound to the flow is gone (ESRCH,
 *      reaped) when the command returns [guard: released at disable]. Control: the same
 *      worker was alive after the run, before the disable.
 *   2. `flow drain ID`: the same when the drain returns [guard: released at drain].
 *   3. a run whose host stopped serving it (the per-run call limit): when `run`
 *      returns, no worker of the flow is alive [guard: released when the host stops].
 *      Control: a run that ended normally leaves its worker alive (1.).
 *   4. serve stopping: once serve has exited, no worker of it is alive (pool_free kills
 *      and reaps). */
#include "lib/harness.h"
#include "lib/serve_home.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_KIDS 16

static char g_root[PATH_MAX];

/* The children of pid (from /proc/N/stat), at most cap. */
static int children_of(pid_t pid, pid_t *kids, int cap)
{
    DIR *d = opendir("/proc");
    if (d == NULL)
        return -1;
    int n = 0;
    const struct dirent *e;
    while ((e = readdir(d)) != NULL && n < cap) {
        char *end;
        long child = strtol(e->d_name, &end, 10);
        if (*end != '\0' || child <= 0)
            continue;
        char path[64];
        sfmt(path, sizeof path, "/proc/%ld/stat", child);
        char *stat = read_text_file(path);
        if (stat == NULL)
            continue;
        /* "pid (comm) state ppid ...": comm may hold spaces, so from the last ')'. */
        const char *close_paren = strrchr(stat, ')');
        if (close_paren != NULL && close_paren[1] == ' ' && close_paren[2] != '\0' &&
            close_paren[3] == ' ') {
            char state = close_paren[2];
            long ppid = strtol(close_paren + 4, &end, 10);
            if (ppid == (long)pid && state != 'Z')
                kids[n++] = (pid_t)child;
        }
        free(stat);
    }
    closedir(d);
    return n;
}

/* The one worker serve holds, or 0 (with why) if it holds none or several. */
static pid_t only_worker(pid_t serve, char *why, size_t cap)
{
    pid_t kids[MAX_KIDS];
    int n = children_of(serve, kids, MAX_KIDS);
    sfmt(why, cap, "serve has %d children", n);
    return n == 1 ? kids[0] : 0;
}

static bool gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

static bool cli_ok(const struct test_home *h, const char *const *args, const char *want,
                   const char *name)
{
    struct proc_result r = test_home_cli(h, false, args);
    bool good = check(proc_exited_with(&r, 0) && strstr(r.out, want) != NULL, name,
                      "%s: %.300s%.300s", proc_describe(&r), r.out, r.err);
    proc_result_free(&r);
    return good;
}

static void test_released(void)
{
    struct test_home h;
    test_home_begin(&h, g_root, "release");
    /* The second flow passes the per-run call limit and catches every refusal: the
     * activation completes, but the host stopped serving the run at the limit. */
    bool flows = test_home_flow(&h, "plain", 1, "{\"manual\":true}", "return 1;") &&
                 test_home_flow(&h, "greedy", 1, "{\"manual\":true}",
                                "for (let i = 0; i < 10010; i++) {\n"
                                "  try { await kv.get('k'); } catch (e) {}\n"
                                "}\nreturn 2;\n");
    if (!check(flows, "flow workers: flows installed", "see stderr"))
        return;
    struct test_serve s;
    if (!test_serve_start(&s, &h, ARGS("--spares", "0"), NULL)) {
        fail("flow workers: serve starts", "%.400s", s.log);
        return;
    }
    char why[64];
    pid_t worker = 0;
    if (cli_ok(&h, ARGS("run", "plain"), "succeeded", "flow workers: a run through serve")) {
        worker = only_worker(s.p.pid, why, sizeof why);
        check(worker > 0 && !gone(worker),
              "flow workers: control: the run left its worker alive, bound to the flow",
              "%s", why);
    }
    if (worker > 0 &&
        cli_ok(&h, ARGS("flow", "disable", "plain"), "disabled", "flow workers: disable"))
        check(gone(worker),
              "flow workers: the worker is gone when `flow disable` returns [guard: released at "
              "disable]", "pid %ld still exists", (long)worker);

    worker = 0;
    if (cli_ok(&h, ARGS("flow", "enable", "plain"), "enabled", "flow workers: enable") &&
        cli_ok(&h, ARGS("run", "plain"), "succeeded", "flow workers: a second run"))
        worker = only_worker(s.p.pid, why, sizeof why);
    check(worker > 0, "flow workers: control: the second run left its worker alive", "%s", why);
    if (worker > 0 &&
        cli_ok(&h, ARGS("flow", "drain", "plain"), "drained", "flow workers: drain"))
        check(gone(worker),
              "flow workers: the worker is gone when `flow drain` returns [guard: released at "
              "drain]", "pid %ld still exists", (long)worker);

    struct proc_result r = test_home_cli(&h, false, ARGS("run", "greedy"));
    check(proc_exited_with(&r, 1) && strstr(r.out, "failed") != NULL &&
              strstr(r.out, "limit") != NULL,
          "flow workers: a run past the call limit fails (its host stopped)", "%s: %.300s%.300s",
          proc_describe(&r), r.out, r.err);
    proc_result_free(&r);
    pid_t kids[MAX_KIDS];
    int n = children_of(s.p.pid, kids, MAX_KIDS);
    check(n == 0,
          "flow workers: no worker is alive when that run returns [guard: released when the "
          "host stops]", "serve has %d children (first %ld)", n, n > 0 ? (long)kids[0] : 0L);

    worker = 0;
    if (cli_ok(&h, ARGS("flow", "enable", "plain"), "enabled", "flow workers: enable again") &&
        cli_ok(&h, ARGS("run", "plain"), "succeeded", "flow workers: a third run"))
        worker = only_worker(s.p.pid, why, sizeof why);
    int code = test_serve_stop(&s);
    check(code == 0 && worker > 0 && gone(worker),
          "flow workers: no worker outlives serve's stop", "exit %d, worker %ld", code,
          (long)worker);
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "flow workers: the test build"))
        return harness_finish();
    sfmt(g_root, sizeof g_root, "%s", harness_tmpdir("flow-workers"));
    test_released();
    harness_remove_tmpdir();
    return harness_finish();
}
