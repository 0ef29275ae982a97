/* Operator modules (src/host/ops_module.c) and file sinks (src/host/sink.c), in
 * process. The catalog is written into a temporary data home and points at
 * build/test/tools/test_module, which logs every request it gets and replies as its
 * op says; every refusal is checked for the field path it names and for being one
 * line. */
#include "host/host.h"
#include "host/ops_module.h"
#include "host/sink.h"
#include "base/thread_affinity.h"
#include "lib/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <seccomp.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char home[PATH_MAX];   /* the data home of the catalog tests */
static char log_path[PATH_MAX];
static const char *module_bin;

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes home/modules.json with text and mode. */
static bool write_catalog(const char *text, mode_t mode)
{
    char path[PATH_MAX + 32];
    sfmt(path, sizeof path, "%s/%s", home, OPS_CATALOG_FILE);
    (void)unlink(path); /* a fresh file of ours, whoever owned the last one */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    size_t len = strlen(text);
    bool ok = write(fd, text, len) == (ssize_t)len && fchmod(fd, mode) == 0;
    close(fd);
    return ok;
}

/* One module "t" of the test program with extra fields (", ..." or "") and ops. */
static void one_module(char *buf, size_t cap, const char *extra, const char *ops)
{
    sfmt(buf, cap,
         "{\"modules\": {\"t\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"]%s, "
         "\"ops\": %s}}}",
         module_bin, log_path, extra, ops);
}

/* Loads text as the catalog and expects a one-line refusal containing want. */
static void refuse_mode(const char *text, mode_t mode, const char *want, const char *name)
{
    struct ops_catalog c;
    char err[512] = "";
    if (!write_catalog(text, mode)) {
        fail(name, "cannot write the catalog");
        return;
    }
    int rc = ops_catalog_load(home, &c, err, sizeof err);
    bool zeroed = c.modules == NULL && c.count == 0;
    check(rc == -1 && strstr(err, want) != NULL && strchr(err, '\n') == NULL && zeroed, name,
          "rc %d, error \"%s\", want \"%s\"", rc, err, want);
    if (rc == 0)
        ops_catalog_free(&c);
}

static void refuse(const char *text, const char *want, const char *name)
{
    refuse_mode(text, 0644, want, name);
}

static void refuse_module(const char *extra, const char *ops, const char *want, const char *name)
{
    char buf[8192];
    one_module(buf, sizeof buf, extra, ops);
    refuse(buf, want, name);
}

static void test_catalog_happy(void)
{
    char buf[8192];
    sfmt(buf, sizeof buf,
         "{\"modules\": {"
         "\"tickets\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"], \"timeout_ms\": 5000,"
         "  \"max_reply_bytes\": 4096, \"ops\": {\"lookup\": {\"kind\": \"query\"},"
         "  \"create\": {\"kind\": \"mutate\", \"idempotent\": true},"
         "  \"notify\": {\"kind\": \"mutate\"}}},"
         "\"mail.out\": {\"program\": \"%s\", \"ops\": {}}}}",
         module_bin, log_path, module_bin);
    struct ops_catalog c = {NULL, 0, NULL, 0};
    char err[512] = "";
    if (!check(write_catalog(buf, 0600) && ops_catalog_load(home, &c, err, sizeof err) == 0,
               "catalog: a valid catalog loads", "%s", err))
        return;
    check_int_eq((long long)c.count, 2, "catalog: two modules");
    const struct ops_module *m = NULL;
    const struct ops_op *op = ops_catalog_find(&c, "tickets", "lookup", &m);
    check(op != NULL && m != NULL && strcmp(m->name, "tickets") == 0 && !op->mutate &&
              !op->idempotent,
          "catalog: tickets.lookup is a query, not idempotent", "op %p", (const void *)op);
    op = ops_catalog_find(&c, "tickets", "create", NULL);
    check(op != NULL && op->mutate && op->idempotent, "catalog: tickets.create mutate, idempotent",
          "op %p", (const void *)op);
    op = ops_catalog_find(&c, "tickets", "notify", NULL);
    check(op != NULL && op->mutate && !op->idempotent,
          "catalog: tickets.notify mutate, idempotent by default false", "op %p", (const void *)op);
    if (m != NULL) {
        check(m->timeout_ms == 5000 && m->max_reply_bytes == 4096 && m->arg_count == 2 &&
                  strcmp(m->args[0], "--log") == 0 && m->args[2] == NULL &&
                  strcmp(m->program, module_bin) == 0,
              "catalog: program, args, timeout and reply bound as written", "timeout %u reply %u",
              m->timeout_ms, m->max_reply_bytes);
    }
    m = NULL;
    check(ops_catalog_find(&c, "mail.out", "x", &m) == NULL && m == NULL,
          "catalog: an op not listed is not found", "found");
    check(ops_catalog_find(&c, "nope", "lookup", NULL) == NULL, "catalog: an unknown module is "
          "not found", "found");
    for (size_t i = 0; i < c.count; i++) {
        if (strcmp(c.modules[i].name, "mail.out") == 0)
            check(c.modules[i].timeout_ms == OPS_TIMEOUT_DEFAULT_MS &&
                      c.modules[i].max_reply_bytes == OPS_REPLY_DEFAULT_BYTES &&
                      c.modules[i].arg_count == 0 && c.modules[i].args != NULL &&
                      c.modules[i].args[0] == NULL && c.modules[i].op_count == 0,
                  "catalog: defaults (10 s, 1 MiB, no args)", "timeout %u reply %u",
                  c.modules[i].timeout_ms, c.modules[i].max_reply_bytes);
    }
    ops_catalog_free(&c);
    check(c.modules == NULL && c.count == 0, "catalog: free zeroes", "not zeroed");
}

/* One catalog refused: the whole text, or (text NULL) one_module's with extra and ops. */
struct catalog_refusal {
    const char *text;
    const char *extra, *ops;
    const char *want;
    const char *name;
};

static void test_catalog_refusals(char *scratch_file)
{
    char buf[8192];
    /* The catalogs that name a program of this run. */
    char duplicate_module[PATH_MAX * 2 + 128], not_executable[PATH_MAX + 64],
        directory_program[PATH_MAX + 64], bad_module_name[PATH_MAX + 64],
        seventeen_args[PATH_MAX + 192], number_arg[PATH_MAX + 96];
    sfmt(duplicate_module, sizeof duplicate_module,
         "{\"modules\": {\"t\": {\"program\": \"%s\", \"ops\": {}}, \"t\": {\"program\": \"%s\","
         " \"ops\": {}}}}",
         module_bin, module_bin);
    sfmt(not_executable, sizeof not_executable,
         "{\"modules\": {\"t\": {\"program\": \"%s\", \"ops\": {}}}}", scratch_file);
    sfmt(directory_program, sizeof directory_program,
         "{\"modules\": {\"t\": {\"program\": \"%s\", \"ops\": {}}}}", home);
    sfmt(bad_module_name, sizeof bad_module_name,
         "{\"modules\": {\"Tickets\": {\"program\": \"%s\", \"ops\": {}}}}", module_bin);
    sfmt(seventeen_args, sizeof seventeen_args,
         "{\"modules\": {\"t\": {\"program\": \"%s\", \"args\": [\"1\",\"2\",\"3\",\"4\",\"5\","
         "\"6\",\"7\",\"8\",\"9\",\"10\",\"11\",\"12\",\"13\",\"14\",\"15\",\"16\",\"17\"], "
         "\"ops\": {}}}}",
         module_bin);
    sfmt(number_arg, sizeof number_arg,
         "{\"modules\": {\"t\": {\"program\": \"%s\", \"args\": [\"a\", 2], \"ops\": {}}}}",
         module_bin);
    const struct catalog_refusal REFUSALS[] = {
        /* guard: unknown fields are refused at every level (a typo never silently drops
         * a bound). */
        {"{\"modules\": {}, \"extra\": 1}", NULL, NULL, "modules.json: extra: unknown field",
         "catalog: unknown top-level field refused [guard unknown-field]"},
        {NULL, ", \"color\": \"red\"", "{}", "modules.json: modules.t.color: unknown field",
         "catalog: unknown module field refused [guard unknown-field]"},
        {NULL, "", "{\"x\": {\"kind\": \"query\", \"safe\": true}}",
         "modules.json: modules.t.ops.x.safe: unknown field",
         "catalog: unknown op field refused [guard unknown-field]"},
        /* guard: duplicate keys (which one would win is not the operator's choice). */
        {duplicate_module, NULL, NULL, "duplicate",
         "catalog: duplicate module key refused [guard JSON_REJECT_DUPLICATES]"},
        {NULL, "", "{\"x\": {\"kind\": \"query\", \"kind\": \"mutate\"}}", "duplicate",
         "catalog: duplicate op field refused [guard JSON_REJECT_DUPLICATES]"},
        /* guard: kind is one of two words. */
        {NULL, "", "{\"create\": {\"kind\": \"write\"}}",
         "modules.json: modules.t.ops.create.kind: must be \"query\" or \"mutate\"",
         "catalog: bad op kind refused [guard kind-enum]"},
        {NULL, "", "{\"create\": {}}", "modules.t.ops.create.kind: missing",
         "catalog: missing op kind refused [guard kind-required]"},
        {NULL, "", "{\"x\": {\"kind\": \"query\", \"idempotent\": 1}}",
         "modules.t.ops.x.idempotent: must be true or false",
         "catalog: non-boolean idempotent refused"},
        /* guard: the program is an absolute path (no PATH search, no cwd dependence). */
        {"{\"modules\": {\"t\": {\"program\": \"bin/true\", \"ops\": {}}}}", NULL, NULL,
         "modules.t.program: must be an absolute path",
         "catalog: relative program refused [guard program-absolute]"},
        /* guard: the program exists, is a regular file and is executable. */
        {not_executable, NULL, NULL, "modules.t.program: the program is not executable",
         "catalog: non-executable program refused [guard program-executable]"},
        {"{\"modules\": {\"t\": {\"program\": \"/nonexistent/prog\", \"ops\": {}}}}", NULL, NULL,
         "modules.t.program: cannot use the program",
         "catalog: missing program refused [guard program-exists]"},
        {directory_program, NULL, NULL, "modules.t.program: the program is not a regular file",
         "catalog: directory as program refused [guard program-regular]"},
        /* guard: module and op names have the manifest's name form. */
        {bad_module_name, NULL, NULL, "modules.Tickets: not a name",
         "catalog: bad module name refused [guard name-form]"},
        {NULL, "", "{\"-x\": {\"kind\": \"query\"}}", "modules.t.ops.-x: not a name",
         "catalog: bad op name refused [guard name-form]"},
        {NULL, "", "{\"a b\": {\"kind\": \"query\"}}", "modules.t.ops.\"a b\": not a name",
         "catalog: op name with a space refused, shown quoted [guard name-form]"},
        /* guard: at most 16 program arguments, all strings. */
        {seventeen_args, NULL, NULL, "modules.t.args: 17 entries, more than the 16 allowed",
         "catalog: 17 program args refused [guard max-args]"},
        {number_arg, NULL, NULL, "modules.t.args[1]: must be a string",
         "catalog: non-string arg refused"},
        /* guard: timeout and reply bounds. */
        {NULL, ", \"timeout_ms\": 0", "{}", "modules.t.timeout_ms: must be between 1 and 600000",
         "catalog: timeout_ms 0 refused [guard timeout-bounds]"},
        {NULL, ", \"timeout_ms\": 600001", "{}", "modules.t.timeout_ms: must be between",
         "catalog: timeout_ms over 10 min refused [guard timeout-bounds]"},
        {NULL, ", \"timeout_ms\": \"10s\"", "{}", "modules.t.timeout_ms: must be an integer",
         "catalog: string timeout refused [guard timeout-bounds]"},
        {NULL, ", \"max_reply_bytes\": 8388609", "{}",
         "modules.t.max_reply_bytes: must be between 1 and 8388608",
         "catalog: max_reply_bytes over 8 MiB refused [guard reply-bounds]"},
        {NULL, "", "[]", "modules.t.ops: must be an object", "catalog: ops not an object"},
        {"{\"modules\": {\"t\": {\"program\": \"/bin/true\"}}}", NULL, NULL,
         "modules.t.ops: missing", "catalog: module without ops refused"},
        {"{}", NULL, NULL, "modules.json: modules: missing", "catalog: no modules member refused"},
        {"{\"modules\": ", NULL, NULL, "modules.json: invalid JSON",
         "catalog: invalid JSON refused"},
        {"[]", NULL, NULL, "modules.json: must be an object", "catalog: a list refused"},
    };
    for (size_t i = 0; i < sizeof REFUSALS / sizeof REFUSALS[0]; i++) {
        const struct catalog_refusal *r = &REFUSALS[i];
        if (r->text != NULL)
            refuse(r->text, r->want, r->name);
        else
            refuse_module(r->extra, r->ops, r->want, r->name);
    }
    /* guard: a catalog anyone but the operator could have written is refused. */
    one_module(buf, sizeof buf, "", "{}");
    refuse_mode(buf, 0666, "group- or world-writable",
                "catalog: world-writable catalog refused [guard catalog-mode]");
    refuse_mode(buf, 0620, "group- or world-writable",
                "catalog: group-writable catalog refused [guard catalog-mode]");
    if (geteuid() == 0) {
        /* guard: owned by the operator. Only root can hand a file to another uid. */
        char path[PATH_MAX + 32];
        sfmt(path, sizeof path, "%s/%s", home, OPS_CATALOG_FILE);
        struct ops_catalog c;
        char err[512] = "";
        int rc = write_catalog(buf, 0644) && chown(path, 65534, 65534) == 0
                     ? ops_catalog_load(home, &c, err, sizeof err)
                     : 0;
        check(rc == -1 && strstr(err, "owned by uid 65534") != NULL,
              "catalog: a catalog owned by another uid refused [guard catalog-owner]", "rc %d %s",
              rc, err);
        if (rc == 0)
            ops_catalog_free(&c);
    } else {
        harness_note("catalog owner guard not exercised: chown needs root");
    }
    /* A catalog bigger than the bound is refused without parsing. */
    {
        size_t n = OPS_CATALOG_MAX_BYTES + 16;
        char *big = malloc(n + 1);
        if (big != NULL) {
            memset(big, ' ', n);
            memcpy(big, "{\"modules\": {}}", 15);
            big[n] = '\0';
            refuse(big, "more than the 262144 bytes allowed", "catalog: over 256 KiB refused");
            free(big);
        }
    }
}

static void test_catalog_missing(void)
{
    char empty_home[PATH_MAX + 16];
    sfmt(empty_home, sizeof empty_home, "%s/empty", home);
    struct ops_catalog c;
    memset(&c, 0xff, sizeof c);
    char err[256] = "";
    int rc = mkdir(empty_home, 0700) == 0 ? ops_catalog_load(empty_home, &c, err, sizeof err) : -2;
    check(rc == 0 && c.count == 0 && c.modules == NULL,
          "catalog: a missing modules.json is an empty catalog", "rc %d count %zu %s", rc,
          c.count, err);
    if (rc == 0)
        ops_catalog_free(&c);
}

/* ---- invocation ----------------------------------------------------------------------- */

/* out's value parsed; *code and *message set for a rejection. */
static json_t *settled(const struct host_settlement *out, const char **code, const char **message)
{
    json_error_t je;
    json_t *v = out->value != NULL ? json_loads(out->value, JSON_DECODE_ANY, &je) : NULL;
    *code = "";
    *message = "";
    if (out->settlement == PROTO_SETTLEMENT_REJECTED && json_is_object(v)) {
        const char *c = json_string_value(json_object_get(v, "code"));
        const char *m = json_string_value(json_object_get(v, "message"));
        *code = c != NULL ? c : "";
        *message = m != NULL ? m : "";
    }
    return v;
}

/* Invokes op and expects a rejection with code and a message containing want. */
static void expect_reject(const struct ops_module *m, const char *op, const char *code,
                          const char *want, const char *name)
{
    struct host_settlement out = {0, NULL};
    int rc = ops_module_invoke(m, op, "null", "k-reject", NULL, &out);
    const char *c, *msg;
    json_t *v = settled(&out, &c, &msg);
    check(rc == 0 && out.settlement == PROTO_SETTLEMENT_REJECTED && strcmp(c, code) == 0 &&
              strstr(msg, want) != NULL,
          name, "rc %d, settlement %d, value %s, want code %s with \"%s\"", rc, out.settlement,
          out.value != NULL ? out.value : "(null)", code, want);
    json_decref(v);
    host_settlement_free(&out);
}

/* True if the log holds the line exactly. */
static bool log_has(const char *line)
{
    char *text = read_text_file(log_path);
    bool found = text != NULL && output_has_line(text, line);
    free(text);
    return found;
}

/* Waits (by pidfd, never a sleep) until pid has exited; true if it is gone or a zombie. */
static bool process_ends(pid_t pid, int timeout_ms)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        return errno == ESRCH;
    struct pollfd p = {fd, POLLIN, 0};
    int rc;
    while ((rc = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
    }
    close(fd);
    return rc == 1;
}

static void test_invoke(void)
{
    char buf[8192];
    sfmt(buf, sizeof buf,
         "{\"modules\": {"
         "\"t\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"], \"timeout_ms\": 20000,"
         "  \"ops\": {}},"
         "\"slow\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"], \"timeout_ms\": 200,"
         "  \"ops\": {}},"
         "\"pre\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\", \"--prefix-spaces\","
         "  \"1048576\"], \"timeout_ms\": 20000, \"max_reply_bytes\": 8388608, \"ops\": {}}}}",
         module_bin, log_path, module_bin, log_path, module_bin, log_path);
    struct ops_catalog c = {NULL, 0, NULL, 0};
    char err[512] = "";
    if (!check(write_catalog(buf, 0644) && ops_catalog_load(home, &c, err, sizeof err) == 0,
               "invoke: catalog loads", "%s", err))
        return;
    const struct ops_module *t = NULL, *slow = NULL, *pre = NULL;
    for (size_t i = 0; i < c.count; i++) {
        if (strcmp(c.modules[i].name, "t") == 0)
            t = &c.modules[i];
        if (strcmp(c.modules[i].name, "slow") == 0)
            slow = &c.modules[i];
        if (strcmp(c.modules[i].name, "pre") == 0)
            pre = &c.modules[i];
    }
    if (!check(t != NULL && slow != NULL && pre != NULL, "invoke: modules found", "missing")) {
        ops_catalog_free(&c);
        return;
    }

    /* echo: the args come back as the result, and the request carried the key. */
    struct host_settlement out = {0, NULL};
    const char *args = "{\"x\":[1,\"two\",null,{\"y\":true}],\"s\":\"\\u00e9\\n\"}";
    int rc = ops_module_invoke(t, "echo", args, "key-echo-1", NULL, &out);
    json_error_t je;
    json_t *want = json_loads(args, 0, &je);
    json_t *got = out.value != NULL ? json_loads(out.value, JSON_DECODE_ANY, &je) : NULL;
    check(rc == 0 && out.settlement == PROTO_SETTLEMENT_FULFILLED && json_equal(want, got),
          "invoke: echo returns the args as the result", "rc %d settlement %d value %s", rc,
          out.settlement, out.value != NULL ? out.value : "(null)");
    json_decref(want);
    json_decref(got);
    host_settlement_free(&out);
    char *args_compact = NULL;
    if ((want = json_loads(args, 0, &je)) != NULL)
        args_compact = json_dumps(want, JSON_COMPACT);
    json_decref(want);
    char line[1024];
    sfmt(line, sizeof line, "echo key-echo-1 %s", args_compact != NULL ? args_compact : "?");
    free(args_compact);
    check(log_has(line), "invoke: the request carries op, idempotency key and args",
          "no log line \"%s\"", line);

    rc = ops_module_invoke(t, "add", "{\"a\":2,\"b\":40}", "key-add", NULL, &out);
    check(rc == 0 && out.settlement == PROTO_SETTLEMENT_FULFILLED && out.value != NULL &&
              strcmp(out.value, "42") == 0,
          "invoke: add 2 + 40 is 42", "rc %d value %s", rc, out.value != NULL ? out.value : "-");
    host_settlement_free(&out);

    /* A module's own rejection passes through, code and message. */
    expect_reject(t, "fail", "no_such_ticket", "ticket 42 does not exist",
                  "invoke: the module's error code and message pass through");
    expect_reject(t, "whatever", "unknown_op", "no such op",
                  "invoke: unknown op is the module's own unknown_op");
    /* guard: the code must be 1-32 of [a-z0-9_], else module_error. */
    expect_reject(t, "badcode", HOST_CODE_MODULE_ERROR, "error code is not 1-32 of [a-z0-9_]",
                  "invoke: a code outside the form is module_error [guard reply-code-form]");
    /* guard: the reply must be one JSON object. */
    expect_reject(t, "garbage", HOST_CODE_MODULE_ERROR, "the reply is not JSON",
                  "invoke: a reply that is not JSON is module_error [guard reply-json]");
    /* guard: a non-zero exit status is module_error, whatever was printed. */
    expect_reject(t, "exit3", HOST_CODE_MODULE_ERROR, "exit status 3",
                  "invoke: exit 3 is module_error [guard exit-status]");
    /* guard: the stderr tail goes into the message. */
    expect_reject(t, "stderr", HOST_CODE_MODULE_ERROR, "END-OF-STDERR",
                  "invoke: the stderr tail is in the message [guard stderr-tail]");
    /* guard: stdout is bounded by max_reply_bytes (1 MiB here; the reply is 2 MiB+). */
    expect_reject(t, "big", HOST_CODE_TOO_LARGE, "reply larger than 1048576 bytes",
                  "invoke: a reply over max_reply_bytes is too_large [guard reply-bound]");

    /* guard: a reply is settled once the program has exited, even while a descendant
     * that left its group holds the pipes (no timeout, and no kill of a reaped pid). */
    long long t_detach = mono_ms();
    rc = ops_module_invoke(t, "detach", "null", "key-detach", NULL, &out);
    long long took_detach = mono_ms() - t_detach;
    check(rc == 0 && out.settlement == PROTO_SETTLEMENT_FULFILLED && out.value != NULL &&
              strcmp(out.value, "\"detached\"") == 0 && took_detach < 5000,
          "invoke: an exited program's reply is settled though a detached child holds its"
          " pipes [guard exit-grace]",
          "rc %d after %lld ms: %s", rc, took_detach, out.value != NULL ? out.value : "-");
    host_settlement_free(&out);
    char *detach_log = read_text_file(log_path);
    const char *det = detach_log != NULL ? strstr(detach_log, "detached ") : NULL;
    long detached = det != NULL ? strtol(det + 9, NULL, 10) : 0;
    /* The detached child left the group and the session, but not the program's PID
     * namespace: it ended with the program. */
    if (check(detached > 1, "invoke: the detached child logged its pid", "log: %s",
              detach_log != NULL ? detach_log : "(none)"))
        check(process_ends((pid_t)detached, 5000),
              "invoke: a child that left the program's group and session ends with the program"
              " [guard module-pid-namespace]",
              "child %ld still running", detached);
    free(detach_log);

    /* guard: the deadline. timeout_ms 200 against a 30 s sleep: invoke returns soon,
     * the program and the child it started in its group are gone. */
    long long t0 = mono_ms();
    rc = ops_module_invoke(slow, "sleep", "null", "key-sleep", NULL, &out);
    long long took = mono_ms() - t0;
    const char *code, *msg;
    got = settled(&out, &code, &msg);
    check(rc == 0 && strcmp(code, HOST_CODE_TIMEOUT) == 0 && took < 5000,
          "invoke: no reply within timeout_ms is timeout [guard deadline]",
          "rc %d after %lld ms: %s", rc, took, out.value != NULL ? out.value : "-");
    long pid = 0, child = 0;
    const char *at = strstr(msg, "test_module pid ");
    if (at != NULL) {
        char *end = NULL;
        pid = strtol(at + strlen("test_module pid "), &end, 10);
        if (strncmp(end, " child ", 7) == 0)
            child = strtol(end + 7, NULL, 10);
    }
    if (check(pid > 0 && child > 0,
              "invoke: the timed-out module's stderr is in the message", "message \"%s\"", msg)) {
        check(kill((pid_t)pid, 0) == -1 && errno == ESRCH,
              "invoke: the timed-out program is killed and reaped [guard deadline-kill]",
              "pid %ld still exists", pid);
        check(process_ends((pid_t)child, 5000),
              "invoke: its child in the same process group is killed too [guard kill-pgid]",
              "child %ld still running", child);
    }
    json_decref(got);
    host_settlement_free(&out);

    /* The contract's environment: PATH only, cwd /, fds 0-2, own process group. */
    rc = ops_module_invoke(t, "env", "null", "key-env", NULL, &out);
    got = out.value != NULL ? json_loads(out.value, 0, &je) : NULL;
    json_t *env = json_object_get(got, "env"), *fds = json_object_get(got, "fds");
    check(rc == 0 && json_array_size(env) == 1 &&
              strcmp(json_string_value(json_array_get(env, 0)), "PATH=/usr/bin:/bin") == 0,
          "invoke: the environment is only PATH=/usr/bin:/bin [guard empty-env]", "value %s",
          out.value != NULL ? out.value : "-");
    const char *cwd = json_string_value(json_object_get(got, "cwd"));
    check(cwd != NULL && strcmp(cwd, "/") == 0, "invoke: the working directory is /", "cwd %s",
          cwd != NULL ? cwd : "-");
    bool fds_ok = json_array_size(fds) == 3;
    for (size_t i = 0; fds_ok && i < 3; i++) {
        json_int_t fd = json_integer_value(json_array_get(fds, i));
        fds_ok = fd >= 0 && fd <= 2;
    }
    check(fds_ok, "invoke: only descriptors 0, 1, 2 reach the program [guard close-range]",
          "value %s", out.value != NULL ? out.value : "-");
    check(json_is_true(json_object_get(got, "pgid_is_pid")),
          "invoke: the program leads its own process group", "value %s",
          out.value != NULL ? out.value : "-");
    check(json_integer_value(json_object_get(got, "pid")) == 1,
          "invoke: the program is the init (pid 1) of a PID namespace of its own"
          " [guard module-pid-namespace]",
          "value %s", out.value != NULL ? out.value : "-");
    check(json_integer_value(json_object_get(got, "uid")) == (json_int_t)geteuid() &&
              json_integer_value(json_object_get(got, "gid")) == (json_int_t)getegid(),
          "invoke: the program runs as the caller's own uid and gid", "value %s",
          out.value != NULL ? out.value : "-");
    json_decref(got);
    host_settlement_free(&out);

    /* A host call made while its thread is pinned for a burst (supervisor/colocate.c)
     * must not start a program pinned to that one CPU for its whole run. */
    cpu_set_t all;
    if (sched_getaffinity(0, sizeof all, &all) == 0 && CPU_COUNT(&all) > 1) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
        for (int noted = 0; noted < 2; noted++) {
            (void)sched_setaffinity(0, sizeof one, &one);
            if (noted)
                thread_affinity_note_pinned(&all);
            rc = ops_module_invoke(t, "env", "null", noted ? "key-pin" : "key-pin-control", NULL,
                                   &out);
            thread_affinity_note_unpinned();
            (void)sched_setaffinity(0, sizeof all, &all);
            got = out.value != NULL ? json_loads(out.value, 0, &je) : NULL;
            json_int_t cpus = json_integer_value(json_object_get(got, "cpus"));
            if (noted)
                check(rc == 0 && cpus == CPU_COUNT(&all),
                      "invoke: a program started during a burst's pin gets the mask from before "
                      "the pin [guard module-not-pinned]",
                      "the program may use %lld CPUs, want %d", (long long)cpus, CPU_COUNT(&all));
            else
                check(rc == 0 && cpus == 1,
                      "invoke (control): a program started by a pinned thread inherits the pin "
                      "when nothing restores it",
                      "the program may use %lld CPUs, want 1", (long long)cpus);
            json_decref(got);
            host_settlement_free(&out);
        }
    } else {
        fail("invoke: a program started during a burst's pin gets the mask from before the pin",
             "this test needs two CPUs to run on");
    }

    /* guard: no deadlock. The program writes 1 MiB before it reads a 2 MiB request; a
     * parent that wrote the whole request before reading would hang until the
     * deadline. */
    size_t big_len = 2u << 20;
    char *big = malloc(big_len + 3);
    if (big != NULL) {
        big[0] = '"';
        memset(big + 1, 'r', big_len);
        big[big_len + 1] = '"';
        big[big_len + 2] = '\0';
        t0 = mono_ms();
        rc = ops_module_invoke(pre, "echo", big, "key-big", NULL, &out);
        took = mono_ms() - t0;
        check(rc == 0 && out.settlement == PROTO_SETTLEMENT_FULFILLED && out.value != NULL &&
                  strcmp(out.value, big) == 0,
              "invoke: a large request and a large reply do not deadlock [guard poll-loop]",
              "rc %d settlement %d after %lld ms, %zu bytes", rc, out.settlement, took,
              out.value != NULL ? strlen(out.value) : 0);
        host_settlement_free(&out);
    }

    /* guard: a program that exits without reading its stdin gives EPIPE, never a
     * SIGPIPE that kills the caller (whose SIGPIPE is at its default here). */
    struct ops_module tru;
    memset(&tru, 0, sizeof tru);
    char name[] = "tru", prog[] = "/bin/true";
    char *no_args[] = {NULL};
    tru.name = name;
    tru.program = prog;
    tru.args = no_args;
    tru.timeout_ms = 10000;
    tru.max_reply_bytes = 1024;
    void (*old)(int) = signal(SIGPIPE, SIG_DFL);
    if (big != NULL) {
        rc = ops_module_invoke(&tru, "x", big, "key-true", NULL, &out);
        const char *c2, *m2;
        got = settled(&out, &c2, &m2);
        check(rc == 0 && strcmp(c2, HOST_CODE_MODULE_ERROR) == 0,
              "invoke: a program that never reads its request: module_error, caller alive "
              "[guard sigpipe]",
              "rc %d value %s", rc, out.value != NULL ? out.value : "-");
        json_decref(got);
        host_settlement_free(&out);
    }
    signal(SIGPIPE, old);
    free(big);

    /* Args that are not JSON are the caller's error. */
    rc = ops_module_invoke(t, "echo", "{nope", "key-bad", NULL, &out);
    got = settled(&out, &code, &msg);
    check(rc == 0 && strcmp(code, HOST_CODE_INVALID_ARGUMENTS) == 0,
          "invoke: args that are not JSON are invalid_arguments", "value %s",
          out.value != NULL ? out.value : "-");
    json_decref(got);
    host_settlement_free(&out);
    check(!log_has("echo key-bad {nope"), "invoke: nothing is run for bad args", "logged");
    ops_catalog_free(&c);
}

/* ---- sinks ------------------------------------------------------------------------------ */

static bool fulfilled_bytes(const struct host_settlement *out, long long *bytes)
{
    json_error_t je;
    json_t *v = out->value != NULL ? json_loads(out->value, 0, &je) : NULL;
    json_t *b = json_object_get(v, "bytes");
    bool ok = out->settlement == PROTO_SETTLEMENT_FULFILLED && json_is_integer(b);
    *bytes = ok ? json_integer_value(b) : -1;
    json_decref(v);
    return ok;
}

static bool rejected_with(const struct host_settlement *out, const char *code)
{
    const char *c, *m;
    json_t *v = settled(out, &c, &m);
    bool ok = out->settlement == PROTO_SETTLEMENT_REJECTED && strcmp(c, code) == 0;
    json_decref(v);
    return ok;
}

static void test_sinks(const char *tmp)
{
    char sink_home[PATH_MAX], path[PATH_MAX + 64];
    sfmt(sink_home, sizeof sink_home, "%s/sinkhome", tmp);
    if (!check(mkdir(sink_home, 0700) == 0, "sink: setup home", "%s", strerror(errno)))
        return;
    struct sink_record r1 = {"my-flow", 7, 3, "k-one", "{\"n\":1,\"s\":\"a\\nb\"}"};
    struct sink_record r2 = {"my-flow", 8, 0, "k-two", "[true,null]"};
    struct host_settlement out = {0, NULL};
    long long b1 = -1, b2 = -1;
    int rc1 = sink_append(sink_home, "out", &r1, &out);
    bool ok1 = rc1 == 0 && fulfilled_bytes(&out, &b1);
    host_settlement_free(&out);
    int rc2 = sink_append(sink_home, "out", &r2, &out);
    bool ok2 = rc2 == 0 && fulfilled_bytes(&out, &b2);
    check(ok1 && ok2, "sink: two records appended, each fulfilled with {bytes}", "rc %d %d %s",
          rc1, rc2, out.value != NULL ? out.value : "-");
    host_settlement_free(&out);

    sfmt(path, sizeof path, "%s/sinks/out.jsonl", sink_home);
    char *text = read_text_file(path);
    check(text != NULL && (long long)strlen(text) == b1 + b2, "sink: the file holds both lines",
          "%zu bytes, reported %lld + %lld", text != NULL ? strlen(text) : 0, b1, b2);
    json_t *lines[2] = {NULL, NULL};
    size_t count = 0;
    for (char *p = text, *nl; p != NULL && (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
        json_error_t je;
        if (count < 2)
            lines[count] = json_loadb(p, (size_t)(nl - p), 0, &je);
        count++;
    }
    check(count == 2 && lines[0] != NULL && lines[1] != NULL, "sink: two lines, each JSON",
          "%zu lines", count);
    if (lines[0] != NULL && lines[1] != NULL) {
        json_error_t je;
        json_t *item = json_loads(r1.item_json, 0, &je);
        check(strcmp(json_string_value(json_object_get(lines[0], "flow")), "my-flow") == 0 &&
                  json_integer_value(json_object_get(lines[0], "run")) == 7 &&
                  json_integer_value(json_object_get(lines[0], "position")) == 3 &&
                  strcmp(json_string_value(json_object_get(lines[0], "key")), "k-one") == 0 &&
                  json_integer_value(json_object_get(lines[0], "at")) > 1600000000000LL &&
                  json_equal(json_object_get(lines[0], "item"), item) &&
                  json_object_size(lines[0]) == 6,
              "sink: the first line has flow, run, position, key, at and item", "%s",
              text != NULL ? text : "-");
        json_decref(item);
        check(strcmp(json_string_value(json_object_get(lines[1], "key")), "k-two") == 0 &&
                  json_is_array(json_object_get(lines[1], "item")),
              "sink: the second line is the second record", "%s", text != NULL ? text : "-");
    }
    json_decref(lines[0]);
    json_decref(lines[1]);
    free(text);

    struct stat st;
    check(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600, "sink: the file is 0600",
          "mode %o", (unsigned)(st.st_mode & 07777));
    sfmt(path, sizeof path, "%s/sinks", sink_home);
    check(stat(path, &st) == 0 && (st.st_mode & 07777) == 0700, "sink: the directory is 0700",
          "mode %o", (unsigned)(st.st_mode & 07777));

    check_int_eq(sink_contains_key(sink_home, "out", "k-two"), 1,
                 "sink: contains_key finds a written key");
    check_int_eq(sink_contains_key(sink_home, "out", "k-three"), 0,
                 "sink: contains_key does not find another key");
    check_int_eq(sink_contains_key(sink_home, "out", "k-on"), 0,
                 "sink: contains_key compares whole keys, not prefixes");
    check_int_eq(sink_contains_key(sink_home, "other", "k-one"), 0,
                 "sink: contains_key on a sink never written is 0");
    check_int_eq(sink_contains_key(tmp, "out", "k-one"), 0,
                 "sink: contains_key without a sinks directory is 0");

    /* A torn last line (no newline) is ended before the next record. */
    sfmt(path, sizeof path, "%s/sinks/torn.jsonl", sink_home);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        (void)!write(fd, "{\"key\":\"k-tor", 13);
        close(fd);
    }
    struct sink_record r3 = {"f", 1, 1, "k-after", "1"};
    int rc = sink_append(sink_home, "torn", &r3, &out);
    host_settlement_free(&out);
    check(rc == 0 && sink_contains_key(sink_home, "torn", "k-after") == 1,
          "sink: a record after a torn line is a line of its own", "rc %d", rc);

    /* guard: the sink name has the manifest's name form (no path tricks). */
    rc = sink_append(sink_home, "../escape", &r1, &out);
    check(rc == 0 && rejected_with(&out, HOST_CODE_INVALID_ARGUMENTS),
          "sink: a name with a path refused [guard sink-name-form]", "%s",
          out.value != NULL ? out.value : "-");
    host_settlement_free(&out);
    /* guard: a line is bounded. */
    size_t n = SINK_LINE_MAX_BYTES;
    char *huge = malloc(n + 3);
    if (huge != NULL) {
        huge[0] = '"';
        memset(huge + 1, 'h', n);
        huge[n + 1] = '"';
        huge[n + 2] = '\0';
        struct sink_record r4 = {"f", 1, 1, "k-huge", huge};
        rc = sink_append(sink_home, "out", &r4, &out);
        check(rc == 0 && rejected_with(&out, HOST_CODE_TOO_LARGE),
              "sink: a line over 1 MiB is too_large [guard line-bound]", "%.200s",
              out.value != NULL ? out.value : "-");
        host_settlement_free(&out);
        free(huge);
    }

    /* guard: O_NOFOLLOW on the sink file. A planted symlink is not followed. */
    char target[PATH_MAX + 32];
    sfmt(target, sizeof target, "%s/target", tmp);
    fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    sfmt(path, sizeof path, "%s/sinks/evil.jsonl", sink_home);
    rc = symlink(target, path) == 0 ? sink_append(sink_home, "evil", &r1, &out) : -2;
    check(rc == 0 && rejected_with(&out, HOST_CODE_IO_ERROR) && stat(target, &st) == 0 &&
              st.st_size == 0,
          "sink: a symlinked sink file refused, its target untouched [guard file-O_NOFOLLOW]",
          "rc %d %s", rc, out.value != NULL ? out.value : "-");
    host_settlement_free(&out);
    check_int_eq(sink_contains_key(sink_home, "evil", "k-one"), -1,
                 "sink: contains_key refuses a symlinked sink file [guard file-O_NOFOLLOW]");

    /* guard: O_NOFOLLOW|O_DIRECTORY on home/sinks. A symlinked directory is refused. */
    char home2[PATH_MAX], elsewhere[PATH_MAX + 16];
    sfmt(home2, sizeof home2, "%s/sinkhome2", tmp);
    sfmt(elsewhere, sizeof elsewhere, "%s/elsewhere", tmp);
    sfmt(path, sizeof path, "%s/sinks", home2);
    rc = mkdir(home2, 0700) == 0 && mkdir(elsewhere, 0700) == 0 && symlink(elsewhere, path) == 0
             ? sink_append(home2, "out", &r1, &out)
             : -2;
    sfmt(path, sizeof path, "%s/out.jsonl", elsewhere);
    check(rc == 0 && rejected_with(&out, HOST_CODE_IO_ERROR) && access(path, F_OK) != 0,
          "sink: a symlinked sinks directory refused, nothing written through it "
          "[guard dir-O_NOFOLLOW]",
          "rc %d %s", rc, out.value != NULL ? out.value : "-");
    host_settlement_free(&out);

    /* guard: a sinks directory others can write is refused. */
    char home3[PATH_MAX];
    sfmt(home3, sizeof home3, "%s/sinkhome3", tmp);
    sfmt(path, sizeof path, "%s/sinks", home3);
    rc = mkdir(home3, 0700) == 0 && mkdir(path, 0700) == 0 && chmod(path, 0777) == 0
             ? sink_append(home3, "out", &r1, &out)
             : -2;
    check(rc == 0 && rejected_with(&out, HOST_CODE_IO_ERROR),
          "sink: a world-writable sinks directory refused [guard dir-mode]", "rc %d %s", rc,
          out.value != NULL ? out.value : "-");
    host_settlement_free(&out);
}

/* Reads what a forked child wrote to fd until it closes it (at most cap - 1 bytes,
 * NUL-terminated in buf), closes fd and reaps the child into *status. Returns the
 * bytes read. */
static size_t child_reply(int fd, pid_t child, char *buf, size_t cap, int *status)
{
    size_t used = 0;
    ssize_t n;
    while (used + 1 < cap && (n = read(fd, buf + used, cap - 1 - used)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        used += (size_t)n;
    }
    buf[used] = '\0';
    close(fd);
    (void)waitpid(child, status, 0);
    return used;
}

/* As a user without CAP_SYS_ADMIN the PID namespace is made inside a user namespace
 * mapping only that user: the program is pid 1 and sees its own uid and gid. Where
 * the kernel allows no unprivileged user namespace the call must be refused instead,
 * nothing run (fail closed): the check follows what this kernel allows. */
static void test_invoke_unprivileged(void)
{
    const uid_t nobody = 65534;
    /* Outside the test's own 0700 directory: uid 65534 must reach its log. */
    char dir[PATH_MAX], log[PATH_MAX];
    sfmt(dir, sizeof dir, "%s/basal-ops-nobody-XXXXXX", harness_tmp_root());
    if (!check(mkdtemp(dir) != NULL && chown(dir, nobody, nobody) == 0,
               "invoke unprivileged: a directory for uid 65534", "%s: %s", dir, strerror(errno)))
        return;
    sfmt(log, sizeof log, "%s/calls.log", dir);
    char *args[] = {"--log", log, NULL};
    /* A copy the user can execute: the checkout may sit under a 0700 directory. */
    char program[PATH_MAX];
    sfmt(program, sizeof program, "%s/test_module", dir);
    if (!check(copy_file(module_bin, program, 0755) && chown(program, nobody, nobody) == 0,
               "invoke unprivileged: the module program copied where uid 65534 reaches it",
               "%s: %s", program, strerror(errno)))
        return;
    struct ops_module m = {.name = "t", .program = program, .args = args,
                           .arg_count = 2, .timeout_ms = 20000,
                           .max_reply_bytes = OPS_REPLY_DEFAULT_BYTES};
    int p[2];
    if (pipe(p) != 0)
        return;
    pid_t child = fork();
    if (child == 0) {
        close(p[0]);
        if (setgroups(0, NULL) != 0 || setresgid(nobody, nobody, nobody) != 0 ||
            setresuid(nobody, nobody, nobody) != 0)
            _exit(3);
        /* What this kernel lets an unprivileged user do: 1 if a user namespace can be
         * made here (in a throwaway child). */
        pid_t probe = fork();
        if (probe == 0)
            _exit(unshare(CLONE_NEWUSER | CLONE_NEWPID) == 0 ? 0 : 1);
        int status = 0;
        (void)waitpid(probe, &status, 0);
        char allowed = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? '1' : '0';
        struct host_settlement out = {0, NULL};
        int rc = ops_module_invoke(&m, "env", "null", "key-nobody", NULL, &out);
        char head[2] = {allowed, out.settlement == PROTO_SETTLEMENT_FULFILLED ? 'F' : 'R'};
        (void)!write(p[1], head, 2);
        if (rc == 0 && out.value != NULL)
            (void)!write(p[1], out.value, strlen(out.value));
        _exit(0);
    }
    close(p[1]);
    char buf[8192];
    int status = 0;
    size_t used = child_reply(p[0], child, buf, sizeof buf, &status);
    if (!check(used >= 2, "invoke unprivileged: the child as uid 65534 invoked the program",
               "status %d, read %zu bytes", status, used))
        return;
    json_error_t je;
    json_t *got = json_loads(buf + 2, 0, &je);
    if (buf[0] == '1') {
        check(buf[1] == 'F' && json_integer_value(json_object_get(got, "pid")) == 1 &&
                  json_integer_value(json_object_get(got, "uid")) == nobody &&
                  json_integer_value(json_object_get(got, "gid")) == nobody,
              "invoke unprivileged: the program is pid 1 of its own namespace, as the same"
              " user (in a user namespace) [guard module-pid-namespace]",
              "reply %s", buf + 2);
    } else {
        const char *message = json_string_value(json_object_get(got, "message"));
        check(buf[1] == 'R' && message != NULL &&
                  strstr(message, "PID namespace of its own") != NULL,
              "invoke unprivileged: without user namespaces the call is refused, nothing run"
              " [guard module-pid-namespace fail-closed]",
              "reply %s", buf + 2);
    }
    json_decref(got);
    harness_remove_tree(dir);
}

/* Where the kernel refuses a PID namespace both ways (here: a seccomp filter makes
 * clone3 unknown and a clone with CLONE_NEWPID refused, as a kernel or container
 * without them answers), the call is rejected and the program never runs. */
static void test_invoke_fails_closed(void)
{
    char *args[] = {"--log", log_path, NULL};
    char program[PATH_MAX];
    sfmt(program, sizeof program, "%s", module_bin);
    struct ops_module m = {.name = "t", .program = program, .args = args,
                           .arg_count = 2, .timeout_ms = 20000,
                           .max_reply_bytes = OPS_REPLY_DEFAULT_BYTES};
    long long before = file_line_count(log_path);
    int p[2];
    if (pipe(p) != 0)
        return;
    pid_t child = fork();
    if (child == 0) {
        close(p[0]);
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (ctx == NULL ||
            seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) != 0 ||
            seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWPID, CLONE_NEWPID)) != 0 ||
            seccomp_load(ctx) != 0)
            _exit(3);
        struct host_settlement out = {0, NULL};
        int rc = ops_module_invoke(&m, "echo", "null", "key-closed", NULL, &out);
        if (rc == 0 && out.value != NULL)
            (void)!write(p[1], out.value, strlen(out.value));
        _exit(out.settlement == PROTO_SETTLEMENT_REJECTED ? 0 : 4);
    }
    close(p[1]);
    char buf[4096];
    int status = 0;
    (void)child_reply(p[0], child, buf, sizeof buf, &status);
    long long after = file_line_count(log_path);
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
              strstr(buf, "PID namespace of its own") != NULL && after == before,
          "invoke: where the kernel allows no PID namespace the call is rejected and the"
          " program never runs [guard module-pid-namespace fail-closed]",
          "status %d, %lld -> %lld log lines, reply %s", status, before, after, buf);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    module_bin = harness_path("test/tools/test_module");
    if (!harness_tmpdir_copy("ops", home, sizeof home) ||
        !require_binary(module_bin, "ops: test_module built"))
        return harness_finish();
    sfmt(log_path, sizeof log_path, "%s/calls.log", home);
    const char *plain = harness_tmp_file("plain-file", "not a program\n");
    char scratch[PATH_MAX];
    sfmt(scratch, sizeof scratch, "%s", plain);
    chmod(scratch, 0644);

    test_catalog_happy();
    test_catalog_refusals(scratch);
    test_catalog_missing();
    test_invoke();
    test_invoke_unprivileged();
    test_invoke_fails_closed();
    test_sinks(home);

    harness_remove_tree(home);
    return harness_finish();
}
