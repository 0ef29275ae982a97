/* What a running serve refuses, and the docs that quote it (issue 23 sections 1 and 6):
 *
 *   1. an unknown flow is an error in every command that takes a flow id, through a
 *      running serve: exit 1, "unknown flow 'nosuch'", nothing stored changes; a drain
 *      of an unknown flow leaves no gate behind (a flow installed later under that name
 *      runs) [guard: handle_drain checks flows_known];
 *   2. a data home of mode 0755: serve narrows it to 0700 and logs event=home_narrowed,
 *      as docs/ops-protocol.md says [guard: cmd_serve passes the narrowing on];
 *   3. docs/operations.md quotes what the code prints: a second serve's line, the
 *      console truncation line, and "Where things live" names ops.sock, serve.lock and
 *      the upgrade snapshots;
 *   4. serve stopping (SIGTERM, a run in flight holding it in its grace): a request gets
 *      the one-line refusal "serve is stopping" (raw socket and CLI), a client still
 *      connected when the socket closes gets it too, and no run is admitted after the
 *      logged stopping line [guard: ops_server_refuse_new, refuse_the_rest; and
 *      close_admission, whose ordering against an admission under way is a race this
 *      test does not force].
 * Every wait is on an event (serve's log, the held module's FIFO, a reply). */
#include "lib/harness.h"
#include "lib/serve_home.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define TIMEOUT_MS 120000

static char g_root[PATH_MAX];

static char *doc_text(const char *name)
{
    char path[PATH_MAX];
    sfmt(path, sizeof path, "%s/../docs/%s", harness_build_dir(), name);
    return read_text_file(path);
}

/* A count of everything the refused commands could have touched. */
static long long store_digest(const struct test_home *h)
{
    return test_home_sql(h, "SELECT (SELECT count(*) FROM flows) * 1000000 + "
                            "(SELECT count(*) FROM runs) * 10000 + (SELECT count(*) FROM audit) "
                            "* 100 + (SELECT count(*) FROM schedules)");
}

/* ---- 1. unknown flows ------------------------------------------------------------- */

static void test_unknown_flows(void)
{
    struct test_home h;
    test_home_begin(&h, g_root, "unknown");
    bool made = test_home_flow(&h, "known", 1, "{\"manual\":true}", "return 1;\n");
    struct test_serve s;
    if (!check(made && test_serve_start(&s, &h, NULL, NULL),
               "refusals: a flow and a serve for the unknown-flow checks", "%.300s", s.log))
        return;
    static const char HASH[] =
        "0000000000000000000000000000000000000000000000000000000000000000";
    /* The drain first: the runs after it would say "draining" if it left a gate. enable
     * names another flow, since it would clear such a gate. */
    struct {
        const char *what;
        const char *const *args;
        const char *name;
    } cases[] = {
        {"flow drain", ARGS("flow", "drain", "nosuch"), "nosuch"},
        {"run", ARGS("run", "nosuch"), "nosuch"},
        {"run --detach", ARGS("run", "nosuch", "--detach"), "nosuch"},
        {"flow disable", ARGS("flow", "disable", "nosuch"), "nosuch"},
        {"flow show", ARGS("flow", "show", "nosuch"), "nosuch"},
        {"flow schedule", ARGS("flow", "schedule", "nosuch"), "nosuch"},
        {"flow approve", ARGS("flow", "approve", "nosuch", "--version", "1", "--code-hash", HASH),
         "nosuch"},
        {"runs", ARGS("runs", "nosuch"), "nosuch"},
        {"flow enable", ARGS("flow", "enable", "ghost"), "ghost"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long long before = store_digest(&h);
        struct proc_result r = test_home_cli(&h, false, cases[i].args);
        long long after = store_digest(&h);
        char name[200], message[64];
        sfmt(name, sizeof name,
             "refusals: %s of an unknown flow under serve: exit 1, \"unknown flow '%s'\", "
             "nothing stored changes",
             cases[i].what, cases[i].name);
        sfmt(message, sizeof message, "unknown flow '%s'", cases[i].name);
        check(proc_exited_with(&r, 1) && strstr(r.err, message) != NULL &&
                  strchr(r.err, '\n') == r.err + r.err_len - 1 && before == after && before > 0,
              name, "%s; stdout %.120s; store %lld -> %lld", proc_describe(&r), r.out, before,
              after);
        proc_result_free(&r);
    }
    check(test_serve_log_count(&s, "event=flow_draining") == 0,
          "refusals: serve logged no drain of the unknown flow", "%.400s", s.log);
    /* The flow installed under that name afterwards runs: no drain gate was left. */
    bool later = test_home_flow(&h, "nosuch", 1, "{\"manual\":true}", "return 7;\n");
    struct proc_result r = test_home_cli(&h, false, ARGS("run", "nosuch"));
    check(later && proc_exited_with(&r, 0) && strstr(r.err, "draining") == NULL,
          "refusals: a flow installed later under the refused name runs (the refused drain left "
          "no gate) [guard: handle_drain checks flows_known]",
          "%s %s", proc_describe(&r), r.err);
    proc_result_free(&r);
    test_serve_stop(&s);
}

/* ---- 2 and 3. the home's mode, the documented lines ------------------------------- */

/* line with the digits after "(pid " replaced by N. */
static void pid_to_n(const char *line, char *out, size_t cap)
{
    const char *p = strstr(line, "(pid ");
    if (p == NULL) {
        sfmt(out, cap, "%s", line);
        return;
    }
    p += 5;
    const char *q = p;
    while (*q >= '0' && *q <= '9')
        q++;
    sfmt(out, cap, "%.*sN%s", (int)(p - line), line, q);
}

static void test_home_mode_and_doc_lines(void)
{
    struct test_home h;
    test_home_begin(&h, g_root, "mode");
    chmod(h.home, 0755);
    struct test_serve s;
    bool up = test_serve_start(&s, &h, NULL, NULL);
    struct stat st;
    bool narrowed = stat(h.home, &st) == 0 && (st.st_mode & 07777) == 0700;
    check(up && narrowed && strstr(s.log, "event=home_narrowed") != NULL &&
              strstr(s.log, "from=0755 to=0700") != NULL,
          "refusals: serve on a 0755 home narrows it to 0700, logs event=home_narrowed and "
          "starts [guard: cmd_serve passes the narrowing on]",
          "up %d, mode %o; log %.300s", up, st.st_mode & 07777, s.log);
    char *protocol = doc_text("ops-protocol.md");
    check(protocol != NULL && strstr(protocol, "event=home_narrowed home=... from=0755 to=0700") &&
              strstr(protocol, "the serve refuses to start (\"data home") == NULL,
          "refusals: docs/ops-protocol.md says a 0755 home is narrowed and logged, not refused",
          "%s", "the doc says otherwise");
    free(protocol);

    char *ops = doc_text("operations.md");
    /* The second serve's line, as the doc quotes it. */
    struct proc_result second = test_home_cli(&h, false, ARGS("serve"));
    const char *at = strstr(second.err, "event=start_failed");
    char line[512] = "", quoted[600] = "";
    if (at != NULL) {
        sfmt(line, sizeof line, "%s", at);
        line[strcspn(line, "\n")] = '\0';
        pid_to_n(line, quoted, sizeof quoted);
    }
    check(proc_exited_with(&second, 1) && at != NULL && ops != NULL && strstr(ops, quoted) != NULL,
          "refusals: docs/operations.md quotes a second serve's line as serve prints it",
          "%s; printed '%s' (as N: '%s')", proc_describe(&second), line, quoted);
    proc_result_free(&second);

    /* Where things live: what a running serve has in the home, and the snapshots. */
    char path[PATH_MAX + 32];
    sfmt(path, sizeof path, "%s/ops.sock", h.home);
    bool sock = lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
    sfmt(path, sizeof path, "%s/serve.lock", h.home);
    bool lock = lstat(path, &st) == 0 && S_ISREG(st.st_mode);
    const char *where = ops != NULL ? strstr(ops, "## Where things live") : NULL;
    check(sock && lock && where != NULL && strstr(where, "| `ops.sock` |") != NULL &&
              strstr(where, "| `serve.lock` |") != NULL &&
              strstr(where, "| `basal.db.pre-upgrade-vN-YYYYMMDDTHHMMSSZ` |") != NULL,
          "refusals: \"Where things live\" names ops.sock and serve.lock (both in the home of a "
          "running serve) and the upgrade snapshots",
          "socket %d, lock %d, section %d", sock, lock, where != NULL);
    test_serve_stop(&s);

    /* The console truncation line, as exec prints it. */
    const char *script = harness_tmp_file("big.js", "for (let i = 0; i < 2000; i++) "
                                                    "console.log('x'.repeat(60) + i);\nreturn 1;\n");
    const char *argv[] = {harness_test_parent(), "exec", script, "--profile", "codemode", NULL};
    struct proc_result r = proc_run(argv, NULL, 0, TIMEOUT_MS);
    char last[256] = "";
    if (r.err_len > 1) {
        const char *end = r.err + r.err_len - 1; /* the final newline */
        const char *begin = end;
        while (begin > r.err && begin[-1] != '\n')
            begin--;
        sfmt(last, sizeof last, "`%.*s`", (int)(end - begin), begin);
    }
    check(proc_exited_with(&r, 0) && strstr(last, "truncated") != NULL && ops != NULL &&
              strstr(ops, last) != NULL,
          "refusals: docs/operations.md quotes exec's console truncation line as printed",
          "%s; last stderr line %s", proc_describe(&r), last);
    proc_result_free(&r);
    free(ops);
}

/* ---- 4. stopping ------------------------------------------------------------------ */

/* A connection to the ops socket that sends nothing (yet). */
static int connect_silent(const struct test_home *h)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    sfmt(a.sun_path, sizeof a.sun_path, "%s", h->sock);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static bool reply_is_stopping(const char *text)
{
    json_t *o = text != NULL ? json_loads(text, 0, NULL) : NULL;
    bool good = json_is_false(json_object_get(o, "ok")) &&
                json_integer_value(json_object_get(o, "exit")) == 1 &&
                json_is_string(json_object_get(o, "error")) &&
                strcmp(json_string_value(json_object_get(o, "error")), "serve is stopping") == 0;
    json_decref(o);
    return good;
}

static void test_stopping(void)
{
    struct test_home h;
    test_home_begin(&h, g_root, "stopping");
    int fifo_fd = test_home_hold_catalog(&h)
                      ? test_home_held_flow(&h, "busy", "{\"manual\":true}", "1")
                      : -1;
    bool made = fifo_fd >= 0 && test_home_flow(&h, "other", 1, "{\"manual\":true}", "return 2;\n");
    struct test_serve s;
    if (!check(made && test_serve_start(&s, &h, ARGS("--grace-seconds", "120"), NULL),
               "refusals: a held flow and a serve with a long grace", "%.300s", s.log))
        return;
    struct proc_result r = test_home_cli(&h, false, ARGS("run", "busy", "--detach"));
    bool held = proc_exited_with(&r, 0) && hold_line_read(fifo_fd, TIMEOUT_MS);
    proc_result_free(&r);
    check(held, "refusals: the run in flight holds (serve will stay in its grace)", "%.300s",
          s.log);
    kill(s.p.pid, SIGTERM);
    bool stopping = test_serve_wait_log(&s, "event=stopping", TIMEOUT_MS);
    check(stopping, "refusals: serve logs event=stopping and waits for the held run", "%.300s",
          s.log);

    char *reply = test_ops_request(&h, "{\"cmd\":\"run\",\"args\":{\"flow\":\"other\"}}");
    check(reply_is_stopping(reply),
          "refusals: a run request while serve is stopping gets the one-line refusal "
          "\"serve is stopping\" [guard: ops_server_refuse_new]",
          "reply %s", reply != NULL ? reply : "(none: the connection closed)");
    free(reply);
    reply = test_ops_request(&h, "{\"cmd\":\"runs\",\"args\":{}}");
    check(reply_is_stopping(reply), "refusals: a read (runs) while stopping is refused the same way",
          "reply %s", reply != NULL ? reply : "(none)");
    free(reply);
    r = test_home_cli(&h, false, ARGS("run", "other"));
    check(proc_exited_with(&r, 1) && strcmp(r.err, "ck-basal run: serve is stopping\n") == 0,
          "refusals: ck-basal run while serve is stopping: exit 1, 'ck-basal run: serve is "
          "stopping'",
          "%s %s", proc_describe(&r), r.err);
    proc_result_free(&r);
    r = test_home_cli(&h, false, ARGS("runs"));
    check(proc_exited_with(&r, 1) && strstr(r.err, "serve is stopping") != NULL,
          "refusals: ck-basal runs while serve is stopping: exit 1, 'serve is stopping'", "%s %s",
          proc_describe(&r), r.err);
    proc_result_free(&r);

    /* A client connected and silent when the socket closes. */
    int silent = connect_silent(&h);
    close(fifo_fd); /* the held run ends; serve stops */
    int code = test_serve_end(&s, TIMEOUT_MS);
    char got[256] = "";
    if (silent >= 0) {
        size_t n = 0;
        for (;;) {
            struct pollfd p = {silent, POLLIN, 0};
            if (poll(&p, 1, TIMEOUT_MS) <= 0)
                break;
            ssize_t k = read(silent, got + n, sizeof got - 1 - n);
            if (k <= 0)
                break;
            n += (size_t)k;
            got[n] = '\0';
            if (strchr(got, '\n') != NULL || n + 1 >= sizeof got)
                break;
        }
        close(silent);
    }
    check(silent >= 0 && reply_is_stopping(got),
          "refusals: a client still connected when serve closes its socket gets \"serve is "
          "stopping\", not a bare reset [guard: refuse_the_rest]",
          "got '%s'", got);
    check(code == 0 && strstr(s.log, "event=stopped") != NULL, "refusals: serve then stops, exit 0",
          "exit %d; %.300s", code, s.log);
    const char *line = strstr(s.log, "event=stopping");
    check(line != NULL && strstr(line, "event=run_admitted") == NULL &&
              test_home_sql(&h, "SELECT count(*) FROM runs") == 1 &&
              test_home_sql(&h, "SELECT count(*) FROM runs WHERE flow_id = 'busy' AND state = "
                                "'succeeded'") == 1,
          "refusals: nothing admitted after the stopping line; the held run finished in the "
          "grace (close_admission also orders the line after admissions already under way: "
          "not shown red here, it needs a race)",
          "runs %lld; log %.500s", test_home_sql(&h, "SELECT count(*) FROM runs"), s.log);
}

int main(void)
{
    const char *root = harness_tmpdir("serve-refusals");
    if (root == NULL)
        return harness_finish();
    sfmt(g_root, sizeof g_root, "%s", root);
    test_unknown_flows();
    test_home_mode_and_doc_lines();
    test_stopping();
    harness_remove_tree(g_root);
    return harness_finish();
}
