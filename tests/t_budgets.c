/* Budgets, the wall deadline, crashes and what they do to the pool, end to end:
 * build/<variant>/bin/ck-basal --json exec ... --health with the test-build worker.
 *
 * Every run prints one JSON object with the pid of the worker that served it, so
 * replacement and reuse are proven by pids; the health line proves the counters.
 * Each check names the guard it proves. */
#include "lib/harness.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One exec: its runs (JSON objects, in order) and its health (or NULL). */
struct exec_result {
    struct proc_result proc;
    json_t *runs[16];
    size_t run_count;
    json_t *health;
};

static void exec_free(struct exec_result *e)
{
    for (size_t i = 0; i < e->run_count; i++)
        json_decref(e->runs[i]);
    json_decref(e->health);
    proc_result_free(&e->proc);
}

/* ck-basal --json exec <args> --health */
static struct exec_result run_exec(const char *const args[])
{
    struct exec_result e;
    memset(&e, 0, sizeof e);
    const char *argv[40];
    size_t n = 0;
    argv[n++] = harness_test_parent();
    argv[n++] = "--json";
    argv[n++] = "exec";
    for (size_t i = 0; args[i] != NULL && n < 38; i++)
        argv[n++] = args[i];
    argv[n++] = "--health";
    argv[n] = NULL;
    e.proc = proc_run(argv, NULL, 0, 120000);
    const char *at = e.proc.out;
    while (at != NULL && *at != '\0') {
        size_t len = strcspn(at, "\n");
        json_error_t error;
        json_t *line = json_loadb(at, len, 0, &error);
        if (json_object_get(line, "health") != NULL) {
            json_decref(e.health);
            e.health = json_incref(json_object_get(line, "health"));
            json_decref(line);
        } else if (line != NULL && e.run_count < 16) {
            e.runs[e.run_count++] = line;
        } else {
            json_decref(line);
        }
        at += len;
        if (*at == '\n')
            at++;
    }
    return e;
}

static const char *field(const struct exec_result *e, size_t run, const char *name)
{
    if (run >= e->run_count)
        return "";
    const char *v = json_string_value(json_object_get(e->runs[run], name));
    return v != NULL ? v : "";
}

static long long pid_of(const struct exec_result *e, size_t run)
{
    return run < e->run_count ? json_integer_value(json_object_get(e->runs[run], "pid")) : -1;
}

static long long wall_of(const struct exec_result *e, size_t run)
{
    return run < e->run_count ? json_integer_value(json_object_get(e->runs[run], "wall_ms")) : -1;
}

static long long counter(const struct exec_result *e, const char *group, const char *name)
{
    json_t *g = json_object_get(e->health, group);
    json_t *v = json_object_get(g, name);
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* A short description of an exec for check details. */
static const char *describe(const struct exec_result *e)
{
    static char text[1200];
    snprintf(text, sizeof text, "%s; out: %.900s", proc_describe(&e->proc), e->proc.out);
    return text;
}

static bool process_gone(long long pid)
{
    return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

static const char *ok_script;

/* Runs `script` (which must exhaust `budget`) and then ok.js in one exec: the first
 * ends as that budget, the second completes on a different, new worker, and the first
 * worker is gone. */
static void expect_budget(const char *name, const char *script, const char *budget,
                          const char *const options[], long long min_wall)
{
    const char *args[24];
    size_t n = 0;
    args[n++] = script;
    args[n++] = ok_script;
    for (size_t i = 0; options[i] != NULL && n < 22; i++)
        args[n++] = options[i];
    args[n] = NULL;
    struct exec_result e = run_exec(args);
    char check_name[400];
    snprintf(check_name, sizeof check_name, "budget: %s ends as budget exhausted: %s "
                                            "[guard %s-budget]", name, budget, budget);
    char words[64];
    snprintf(words, sizeof words, "budget exhausted: %s", budget);
    check(proc_exited_with(&e.proc, 1) && e.run_count == 2 &&
              strcmp(field(&e, 0, "outcome"), "budget_exhausted") == 0 &&
              strcmp(field(&e, 0, "budget"), budget) == 0 &&
              strcmp(field(&e, 0, "message"), words) == 0 && wall_of(&e, 0) >= min_wall,
          check_name, "%s", describe(&e));
    snprintf(check_name, sizeof check_name,
             "pool: after %s exhausted its %s budget, a new worker serves the next run and the "
             "old one is gone [guard retire-on-budget]",
             name, budget);
    check(e.run_count == 2 && strcmp(field(&e, 1, "outcome"), "completed") == 0 &&
              pid_of(&e, 1) > 0 && pid_of(&e, 1) != pid_of(&e, 0) && process_gone(pid_of(&e, 0)) &&
              counter(&e, "counters", "killed") >= 1 && counter(&e, "counters", "retired") >= 1 &&
              counter(&e, "counters", "crashed") == 0,
          check_name, "%s", describe(&e));
    exec_free(&e);
}

static void test_cpu(void)
{
    const char *cpu100[] = {"--cpu-ms", "100", NULL};
    expect_budget("a tight loop", harness_tmp_file("loop.js", "for (;;) {}\n"), "cpu", cpu100, 100);
    expect_budget("a tight loop inside try/catch",
                  harness_tmp_file("loop_try.js",
                              "for (;;) { try { for (;;) {} } catch (e) {} finally { } }\n"
                              "return 'escaped';\n"),
                  "cpu", cpu100, 100);
    expect_budget("a tight loop after an awaited host call",
                  harness_tmp_file("loop_after_call.js",
                              "await ops.call('test', 'sleep', [20]);\n"
                              "await ops.call('test', 'echo', [1]);\nfor (;;) {}\n"),
                  "cpu", cpu100, 100);

    /* Waiting on the parent is not CPU: 600 ms of host waits inside 50 ms of CPU. */
    const char *sleeper = harness_tmp_file(
        "sleeps.js",
        "for (let i = 0; i < 6; i++) await ops.call('test', 'sleep', [100]);\nreturn 'slept';\n");
    const char *args[] = {sleeper, "--cpu-ms", "50", NULL};
    struct exec_result e = run_exec(args);
    check(proc_exited_with(&e.proc, 0) && strcmp(field(&e, 0, "outcome"), "completed") == 0 &&
              strcmp(field(&e, 0, "message"), "\"slept\"") == 0 && wall_of(&e, 0) >= 600,
          "budget: 600 ms of test.sleep fits inside a 50 ms CPU budget (waits on the parent "
          "are not counted) [guard cpu-budget-thread-clock]",
          "%s", describe(&e));
    exec_free(&e);
}

static void test_memory_and_stack(void)
{
    const char *heap2m[] = {"--heap-bytes", "2097152", NULL};
    expect_budget("allocating 32 MiB (in 64 KiB pieces) under a 2 MiB heap",
                  harness_tmp_file("alloc.js",
                              "const keep = [];\n"
                              "for (let i = 0; i < 512; i++) keep.push(new Uint8Array(1 << 16));\n"
                              "return keep.length;\n"),
                  "memory", heap2m, 0);
    expect_budget("filling a 2 MiB heap with small objects",
                  harness_tmp_file("alloc_small.js",
                              "const keep = [];\n"
                              "for (let i = 0; i < 4000000; i++) keep.push({i});\n"
                              "return keep.length;\n"),
                  "memory", heap2m, 0);
    /* Live bytes stay under the budget (each pass drops what it kept), but every pass
     * leaves its strings' blocks in a size class the next one cannot reuse: without
     * the cap on what the engine's heap may hold (twice the budget) this completes
     * with about 90 MiB held under a 4 MiB budget. */
    const char *heap4m[] = {"--heap-bytes", "4194304", NULL};
    expect_budget("fragmenting a 4 MiB heap across size classes, under 2 MiB live at a time "
                  "[guard heap-footprint-cap]",
                  harness_tmp_file("alloc_classes.js",
                              "let total = 0;\n"
                              "for (let len = 24; len <= 1000; len += 16) {\n"
                              "  const keep = [], count = Math.floor(1500000 / (len + 32));\n"
                              "  for (let i = 0; i < count; i++)\n"
                              "    keep.push('x'.repeat(len - 10) + (1000000000 + i));\n"
                              "  total += keep.length;\n"
                              "}\n"
                              "return total;\n"),
                  "memory", heap4m, 0);
    const char *stack64k[] = {"--stack-bytes", "65536", NULL};
    expect_budget("deep recursion under a 64 KiB stack",
                  harness_tmp_file("recurse.js",
                              "function down(n) { return down(n + 1) + 1; }\nreturn down(0);\n"),
                  "stack", stack64k, 0);
}

/* A caught out-of-memory error whose activation completes keeps its worker; the next
 * activation of the same flow runs on the same pid and sees nothing of the last one. */
static void test_caught_oom_keeps_worker(void)
{
    const char *catcher = harness_tmp_file(
        "catch_oom.js",
        "globalThis.leftover = 'from the first run';\n"
        "let caught = 'no';\n"
        "try { const big = new Uint8Array(32 << 20); caught = 'allocated ' + big.length; }\n"
        "catch (e) { caught = 'caught'; }\n"
        "return caught;\n");
    const char *looker = harness_tmp_file(
        "look.js", "return [typeof globalThis.leftover, typeof leftover];\n");
    const char *args[] = {catcher, looker, "--heap-bytes", "2097152", NULL};
    struct exec_result e = run_exec(args);
    check(e.run_count == 2 && strcmp(field(&e, 0, "outcome"), "completed") == 0 &&
              strcmp(field(&e, 0, "message"), "\"caught\"") == 0,
          "budget: an out-of-memory error the script catches lets its activation complete",
          "%s", describe(&e));
    check(e.run_count == 2 && pid_of(&e, 0) > 0 && pid_of(&e, 1) == pid_of(&e, 0),
          "pool: a caught memory error whose activation completes keeps its worker (same pid "
          "next run) [guard keep-on-caught-error]",
          "%s", describe(&e));
    check(e.run_count == 2 && strcmp(field(&e, 1, "message"), "[\"undefined\",\"undefined\"]") == 0,
          "engine: the next activation on that worker sees none of the previous one's globals "
          "[guard fresh-runtime-per-activation]",
          "%s", describe(&e));
    exec_free(&e);
}

/* Builtins that loop in native code without reaching QuickJS's bytecode polls (the
 * cases of issue 10, item 8): with patch 0003 and the CPU timer each ends as cpu under
 * a 200 ms budget, long before the 60 s wall deadline that used to end them. The
 * bound on the wall time is loose on purpose (a loaded machine); the point is cpu,
 * not deadline. The last case never polls at all (a test hook spinning in C): the CPU
 * timer's backstop ends it. */
static void test_native_loops(void)
{
    static const struct {
        const char *file, *what, *text;
    } CASES[] = {
        {"json_loop.js", "JSON.stringify of a 200 000-element array in a loop",
         "const a = []; for (let i = 0; i < 200000; i++) a.push(i);\nfor (;;) JSON.stringify(a);\n"},
        {"regexp_scan.js", "a bounded but slow regexp scan",
         "return /a{1,3000}b/.test('a'.repeat(200000));\n"},
        {"regexp_catastrophic.js", "a catastrophic regexp",
         "return /(a+)+$/.test('a'.repeat(40) + 'b');\n"},
        {"join_sparse.js", "join of a sparse array of length 2^32-1",
         "const a = []; a.length = 2 ** 32 - 1; return a.join('').length;\n"},
        {"last_index_of_sparse.js", "lastIndexOf of a sparse array of length 2^32-1",
         "const a = []; a.length = 2 ** 32 - 1; return a.lastIndexOf(1);\n"},
        {"includes_huge.js", "includes on {length: 2**53-1}",
         "return Array.prototype.includes.call({length: 2 ** 53 - 1}, 1);\n"},
        {"reverse_huge.js", "reverse on {length: 2**53-1}",
         "return Array.prototype.reverse.call({length: 2 ** 53 - 1}).length;\n"},
        {"copy_within_huge.js", "copyWithin on {length: 2**53-1}",
         "return Array.prototype.copyWithin.call({length: 2 ** 53 - 1}, 0, 1).length;\n"},
        {"native_spin.js", "native code that never polls (the CPU timer's backstop)",
         "return __basalTestNativeSpin();\n"},
    };
    enum { COUNT = sizeof CASES / sizeof CASES[0] };
    const char *args[COUNT + 8];
    size_t n = 0;
    for (size_t i = 0; i < COUNT; i++)
        args[n++] = harness_tmp_file(CASES[i].file, CASES[i].text);
    args[n++] = ok_script;
    args[n++] = "--cpu-ms";
    args[n++] = "200";
    args[n++] = "--heap-bytes";
    args[n++] = "67108864";
    args[n++] = "--deadline-ms";
    args[n++] = "60000";
    args[n] = NULL;
    struct exec_result e = run_exec(args);
    for (size_t i = 0; i < COUNT; i++) {
        char name[300];
        snprintf(name, sizeof name,
                 "budget: %s ends as budget exhausted: cpu (200 ms budget), well before the "
                 "60 s wall deadline [guard cpu-budget-native]",
                 CASES[i].what);
        check(i < e.run_count && strcmp(field(&e, i, "outcome"), "budget_exhausted") == 0 &&
                  strcmp(field(&e, i, "budget"), "cpu") == 0 &&
                  strcmp(field(&e, i, "message"), "budget exhausted: cpu") == 0 &&
                  wall_of(&e, i) < 15000,
              name, "%s", describe(&e));
        if (i < e.run_count)
            harness_note("%s: ended after %lld ms of wall time", CASES[i].what, wall_of(&e, i));
    }
    check(e.run_count == COUNT + 1 && strcmp(field(&e, COUNT, "outcome"), "completed") == 0 &&
              counter(&e, "counters", "crashed") == 0 && e.health != NULL,
          "pool: after them the parent serves the next run, and no worker counts as crashed",
          "%s", describe(&e));
    exec_free(&e);
}

static void test_deadline_and_sigsys(void)
{
    const char *spin = harness_tmp_file("spin.js", "for (;;) {}\n");
    const char *args[] = {spin, ok_script, "--cpu-ms", "60000", "--deadline-ms", "500", NULL};
    struct exec_result e = run_exec(args);
    check(e.run_count == 2 && strcmp(field(&e, 0, "outcome"), "deadline") == 0 &&
              strcmp(field(&e, 0, "message"), "deadline") == 0 && wall_of(&e, 0) >= 500 &&
              wall_of(&e, 0) < 5000 && process_gone(pid_of(&e, 0)),
          "deadline: a worker past the 500 ms wall deadline is killed at it [guard wall-deadline]",
          "%s", describe(&e));
    check(e.health != NULL && counter(&e, "worker_confinement", "sigsys_deaths") == 0 &&
              counter(&e, "counters", "killed") >= 1 && counter(&e, "counters", "crashed") == 0,
          "health: a deadline kill counts as killed, not as a SIGSYS death "
          "[guard sigsys-deaths-only-sigsys]",
          "%s", describe(&e));
    check(e.run_count == 2 && strcmp(field(&e, 1, "outcome"), "completed") == 0 &&
              pid_of(&e, 1) != pid_of(&e, 0),
          "pool: the run after a deadline kill gets a new worker", "%s", describe(&e));
    exec_free(&e);

    const char *forbidden = harness_tmp_file("forbidden.js",
                                        "await ops.call('test', 'echo', ['before']);\n"
                                        "__basalTestForbiddenSyscall();\nreturn 'survived';\n");
    const char *args2[] = {forbidden, ok_script, NULL};
    e = run_exec(args2);
    check(e.run_count == 2 && strcmp(field(&e, 0, "outcome"), "worker_crashed") == 0 &&
              strcmp(field(&e, 0, "signal"), "SIGSYS") == 0 &&
              strcmp(field(&e, 0, "message"), "worker crashed: SIGSYS") == 0,
          "seccomp: a forbidden system call mid-activation kills the worker by SIGSYS "
          "[guard seccomp-kill]",
          "%s", describe(&e));
    check(e.health != NULL && counter(&e, "worker_confinement", "sigsys_deaths") == 1 &&
              counter(&e, "counters", "crashed") == 1,
          "health: that death increments worker_confinement.sigsys_deaths by exactly one "
          "[guard sigsys-deaths-counted]",
          "%s", describe(&e));
    check(e.run_count == 2 && strcmp(field(&e, 1, "outcome"), "completed") == 0 &&
              pid_of(&e, 1) != pid_of(&e, 0),
          "pool: the run after a SIGSYS death gets a new worker", "%s", describe(&e));
    exec_free(&e);
}

/* A native stack overflow inside the engine (SIGSEGV) fails only its activation.
 *
 * QuickJS 2021's JSON.stringify recurses on the native stack without a stack check
 * (quickjs-2021-03-27.md, defect 2): 100 000 nested arrays overflow the worker's 8 MiB
 * stack. The nested-Proxy Array.isArray overflow (defect 1, CVE-2023-31922) is a
 * pair of mutual tail calls that gcc -O2 compiles into a loop, so in our build it
 * returns true instead of crashing; it is run too, and must end either way with the
 * parent alive. */
static void test_segv(void)
{
    const char *nested = harness_tmp_file(
        "nested_json.js",
        "let a = [];\nfor (let i = 0; i < 100000; i++) a = [a];\n"
        "return JSON.stringify(a).length;\n");
    const char *args[] = {nested, ok_script, "--heap-bytes", "268435456", "--cpu-ms", "20000",
                          NULL};
    struct exec_result e = run_exec(args);
    check(proc_exited_with(&e.proc, 1) && e.run_count == 2 &&
              strcmp(field(&e, 0, "outcome"), "worker_crashed") == 0 &&
              strcmp(field(&e, 0, "signal"), "SIGSEGV") == 0 &&
              strcmp(field(&e, 0, "message"), "worker crashed: SIGSEGV") == 0,
          "crash: a native stack overflow in the engine (nested JSON.stringify) kills the "
          "worker by SIGSEGV and fails only that activation [guard crash-isolated]",
          "%s", describe(&e));
    check(e.health != NULL && counter(&e, "counters", "crashed") == 1 &&
              counter(&e, "worker_confinement", "sigsys_deaths") == 0 &&
              counter(&e, "runs", "worker_crashed") == 1 && counter(&e, "counters", "killed") == 0,
          "health: the SIGSEGV death counts as crashed, not killed and not a SIGSYS death",
          "%s", describe(&e));
    check(e.run_count == 2 && strcmp(field(&e, 1, "outcome"), "completed") == 0 &&
              pid_of(&e, 1) > 0 && pid_of(&e, 1) != pid_of(&e, 0) && process_gone(pid_of(&e, 0)),
          "pool: the next activation after the crash gets a new worker", "%s", describe(&e));
    exec_free(&e);

    const char *proxies = harness_tmp_file(
        "proxies.js",
        "let p = [];\nfor (let i = 0; i < 500000; i++) p = new Proxy(p, {});\n"
        "return Array.isArray(p);\n");
    const char *args2[] = {proxies, ok_script, "--heap-bytes", "268435456", "--cpu-ms", "20000",
                           NULL};
    e = run_exec(args2);
    const char *outcome = field(&e, 0, "outcome");
    bool ended = (strcmp(outcome, "completed") == 0 && strcmp(field(&e, 0, "message"), "true") == 0) ||
                 (strcmp(outcome, "worker_crashed") == 0 &&
                  strcmp(field(&e, 0, "signal"), "SIGSEGV") == 0 &&
                  pid_of(&e, 1) != pid_of(&e, 0));
    check(ended && e.run_count == 2 && strcmp(field(&e, 1, "outcome"), "completed") == 0 &&
              e.health != NULL,
          "crash: Array.isArray on 500 000 nested Proxies ends (true, or SIGSEGV on a new "
          "worker next) and the parent serves the next run",
          "%s", describe(&e));
    harness_note("nested-Proxy Array.isArray: %s", field(&e, 0, "message"));
    exec_free(&e);
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "budgets: ck-basal test build present") ||
        !require_binary(harness_test_worker(), "budgets: ck-basal-worker test build present"))
        return harness_finish();
    if (harness_tmpdir("budgets") == NULL)
        return harness_finish();
    /* A copy: harness_tmp_file's paths live in a ring of 16 buffers. */
    char *ok_copy = strdup(harness_tmp_file("ok.js", "return 'ok';\n"));
    if (ok_copy == NULL)
        return harness_finish();
    ok_script = ok_copy;
    test_cpu();
    test_memory_and_stack();
    test_caught_oom_keeps_worker();
    test_native_loops();
    test_deadline_and_sigsys();
    test_segv();
    harness_remove_tmpdir();
    free(ok_copy);
    return harness_finish();
}
