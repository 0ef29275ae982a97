/* One driving host per PostgreSQL store (store_hold_driver, store/store.h).
 *
 * The guard proved: a run's owner is "pid:PID:START" of a process on its host
 * (store/runs.h), which another host cannot judge: its /proc would call a live node's
 * owner gone and take its runs over, repeating their effects. So on PostgreSQL the
 * process that claims runs, cancels them or judges their owners holds an advisory lock
 * of the database for its life, naming its host, and a process of another host (here
 * a serve and a CLI of another data home posing as another host, BASAL_TEST_HOST_ID)
 * is refused with one line naming the holder. Without the guard the second serve would
 * start (and the check would time out) and `cancel` would answer "unknown run".
 *
 * The controls: a process of the same host is not refused (its cancel reaches "unknown
 * run"); the other host's serve starts once the first is SIGKILLed (the server drops a
 * dead session's lock, so a killed node never wedges the store); read-only commands
 * (`runs`) work beside a driving serve. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/pg_test.h"
#include "lib/serve_home.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REFUSAL "a process on another host drives the runs of this PostgreSQL store"
#define OTHER_HOST "BASAL_TEST_HOST_ID=node-b"

static char store_env[1100];

/* The CLI on the test's store; other_host: posing as another host. */
static struct proc_result on_store(const char *home, bool other_host, const char *const *args,
                                   int timeout_ms)
{
    char *const envp[] = {store_env, other_host ? (char *)OTHER_HOST : NULL, NULL};
    struct cli_opts o = {.envp = envp, .timeout_ms = timeout_ms};
    return cli_run(home, &o, args);
}

/* Advisory locks on the driving key (0x6261736100000003) granted in the database. */
static long driver_locks(const char *uri)
{
    char out[64];
    if (test_pg_sql(uri,
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                    " AND classid = 1650553697 AND objid = 3 AND database ="
                    " (SELECT oid FROM pg_database WHERE datname = current_database());",
                    out, sizeof out) != 0)
        return -1;
    return strtol(out, NULL, 10);
}

static bool one_line_with(const struct proc_result *r, const char *needle)
{
    const char *nl = strchr(r->err, '\n');
    return strstr(r->err, needle) != NULL && nl != NULL && nl[1] == '\0';
}

int main(void)
{
    char uri[1024], root[] = "/tmp/basal-t-pg-driver.XXXXXX";
    if (test_pg_database("t_pg_driver", uri, sizeof uri) != 0) {
        fail("pg driver: a test database", "%s", uri);
        return harness_finish();
    }
    if (mkdtemp(root) == NULL) {
        fail("pg driver: a scratch dir", "mkdtemp failed");
        return harness_finish();
    }
    snprintf(store_env, sizeof store_env, "BASAL_STORE=%s", uri);
    struct test_home a, b;
    test_home_paths(&a, root, "a");
    test_home_paths(&b, root, "b");
    for (int i = 0; i < 2; i++) {
        struct proc_result r = on_store(i == 0 ? a.home : b.home, false, ARGS("setup"), 0);
        if (!check(proc_exited_with(&r, 0), "pg driver: setup of a node's data home on the store",
                   "%s", proc_describe(&r))) {
            proc_result_free(&r);
            return harness_finish();
        }
        proc_result_free(&r);
    }

    const char *const env[] = {store_env, NULL};
    const char *const other_env[] = {store_env, OTHER_HOST, NULL};
    struct test_serve first;
    if (!check(test_serve_start(&first, &a, NULL, env), "pg driver: the first node's serve starts",
               "log: %s", first.log))
        return harness_finish();
    check_int_eq(driver_locks(uri), 1, "pg driver: the first serve holds the driving lock");

    struct proc_result second = on_store(b.home, true, ARGS("serve"), 30000);
    char pid_text[64];
    snprintf(pid_text, sizeof pid_text, "ck-basal pid %ld on ", (long)first.p.pid);
    check(!second.timed_out && second.exited && second.exit_code != 0 &&
              one_line_with(&second, REFUSAL) && strstr(second.err, pid_text) != NULL,
          "pg driver: another host's serve is refused with one line naming the driving one",
          "%s; stderr: %s", proc_describe(&second), second.err);
    proc_result_free(&second);

    struct proc_result cancel = on_store(b.home, true, ARGS("cancel", "1"), 0);
    check(cancel.exited && cancel.exit_code != 0 && one_line_with(&cancel, REFUSAL),
          "pg driver: another host's cancel is refused (it could judge no owner)",
          "%s; stderr: %s", proc_describe(&cancel), cancel.err);
    proc_result_free(&cancel);

    struct proc_result here = on_store(b.home, false, ARGS("cancel", "1"), 0);
    check(here.exited && strstr(here.err, "unknown run 1") != NULL,
          "pg driver: control: a process of the same host drives beside it (cancel reaches"
          " the run's lookup)",
          "%s; stderr: %s", proc_describe(&here), here.err);
    proc_result_free(&here);

    struct proc_result list = on_store(b.home, true, ARGS("runs"), 0);
    check(proc_exited_with(&list, 0), "pg driver: control: reading runs beside the driving serve",
          "%s", proc_describe(&list));
    proc_result_free(&list);

    kill(first.p.pid, SIGKILL);
    check_int_eq(test_serve_end(&first, SERVE_HOME_TIMEOUT_MS), 128 + SIGKILL,
                 "pg driver: the first serve is SIGKILLed");
    /* No event tells the test when the server has seen the dead session: poll. */
    long held = 1;
    for (int i = 0; i < 1000 && (held = driver_locks(uri)) != 0; i++)
        usleep(10000);
    check_int_eq(held, 0, "pg driver: the killed serve's lock is dropped by the server");
    struct test_serve after;
    if (check(test_serve_start(&after, &b, NULL, other_env),
              "pg driver: control: the other host's serve starts once the first is killed",
              "log: %s", after.log))
        check_int_eq(test_serve_stop(&after), 0, "pg driver: the second serve stops cleanly");
    else
        proc_kill(&after.p);
    return harness_finish();
}
