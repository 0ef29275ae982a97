/* The worker's startup refusals (sandbox.md "Linux", basal.md 2).
 *
 * Each case starts the RELEASE worker (build/bin/ck-basal-worker, no test hooks)
 * through tests/tools/launch, which sets up one hostile condition and then execs the
 * worker in place. A refusal must be exactly: exit 70, the single stderr line
 * "refusing to run unconfined: <token>", nothing on stdout. The check name says which
 * guard the case proves, as "[guard <token>]".
 *
 * Every case has a control: the same launch without the hostile option. The control
 * proves the launch itself is fine, so the refusal is due to that one option: the
 * worker confines itself (it is seen blocked in read(0) with its seccomp filter in
 * force, from /proc) and, when the test closes its stdin, exits 0 with no output.
 *
 * Faults are injected with a seccomp errno filter that launch installs just before
 * execve (default allow; ERRNO 0 means the call "succeeds" without doing anything).
 * That filter stays stacked under the worker's own, so a worker that runs with one
 * injected has two filters. */
#include "lib/harness.h"

#include <stdio.h>
#include <string.h>

#define TIMEOUT_MS 15000
#define MAX_ARGS 24

enum expect { REFUSES, RUNS };

struct startup_case {
    const char *what;       /* the hostile condition, for the check name */
    const char *guard;      /* the guard proven (its token, or a description) */
    const char *token;      /* REFUSES: the refusal token; NULL if stderr is unusable */
    const char *policy;     /* worker argument; NULL: --landlock=required */
    const char *hostile[6]; /* launch options of the case */
    const char *common[6];  /* launch options shared with the control */
    enum expect expect;
    bool only_stdio_fds;    /* RUNS: also check /proc/<pid>/fd is exactly 0, 1, 2 */
};

static const char *REQ = "--landlock=required";

static const struct startup_case CASES[] = {
    /* Step 1: the standard descriptors must be anonymous pipes of the right ends. */
    {"stdin a regular file", "stdin-not-pipe-read-end", "stdin-not-pipe-read-end", NULL,
     {"--stdin=file"}, {NULL}, REFUSES, false},
    {"stdin a named FIFO opened read-only", "stdin-not-pipe-read-end (pipefs magic)",
     "stdin-not-pipe-read-end", NULL, {"--stdin=fifo"}, {NULL}, REFUSES, false},
    {"stdin a named FIFO opened read-write", "stdin-not-pipe-read-end", "stdin-not-pipe-read-end",
     NULL, {"--stdin=fifo-rdwr"}, {NULL}, REFUSES, false},
    {"stdin a Unix socket", "stdin-not-pipe-read-end", "stdin-not-pipe-read-end", NULL,
     {"--stdin=socket"}, {NULL}, REFUSES, false},
    {"stdin the write end of a pipe", "stdin-not-pipe-read-end (access mode)",
     "stdin-not-pipe-read-end", NULL, {"--stdin=pipe-write"}, {NULL}, REFUSES, false},
    {"stdin an anonymous pipe opened read-write", "stdin-not-pipe-read-end (access mode)",
     "stdin-not-pipe-read-end", NULL, {"--stdin=pipe-rdwr"}, {NULL}, REFUSES, false},
    {"stdout the read end of a pipe", "stdout-not-pipe-write-end", "stdout-not-pipe-write-end",
     NULL, {"--stdout=pipe-read"}, {NULL}, REFUSES, false},
    {"stdout a regular file", "stdout-not-pipe-write-end", "stdout-not-pipe-write-end", NULL,
     {"--stdout=file"}, {NULL}, REFUSES, false},
    /* The refusal line cannot be written to a read end, so only the status shows. */
    {"stderr the read end of a pipe", "stderr-not-pipe-write-end (exit status only)", NULL, NULL,
     {"--stderr=pipe-read"}, {NULL}, REFUSES, false},
    {"/proc a tmpfs (with a truthful self link), not procfs", "proc-not-procfs (statfs magic)",
     "proc-not-procfs", NULL, {"--fake-proc"}, {NULL}, REFUSES, false},
    {"/proc/self naming another pid (a pid namespace without its own /proc)",
     "proc-not-procfs (/proc/self is this process)", "proc-not-procfs", NULL, {"--pid-ns"},
     {NULL}, REFUSES, false},
    {"READ_IMPLIES_EXEC personality", "read-implies-exec", "read-implies-exec", NULL,
     {"--read-implies-exec"}, {NULL}, REFUSES, false},
    {"a shared mapping present at startup", "shared-mapping", "shared-mapping", NULL,
     {"--map-at-exec=shared"}, {NULL}, REFUSES, false},
    {"a writable+executable mapping present at startup", "writable-executable-mapping",
     "writable-executable-mapping", NULL, {"--map-at-exec=wx"}, {NULL}, REFUSES, false},
    /* The stack is writable too: the specific token must win over the generic one. */
    {"an executable [stack] mapping at startup", "executable-stack", "executable-stack", NULL,
     {"--map-at-exec=exec-stack"}, {NULL}, REFUSES, false},

    /* Step 2 and 5: descriptors above stdio. */
    {"close_range failing with EPERM", "close-descriptors", "close-descriptors", NULL,
     {"--inject=close_range:EPERM"}, {"--plant-fd=3"}, REFUSES, false},
    {"close_range faking success with fd 3 planted", "descriptor-survived (the sweep)",
     "descriptor-survived", NULL, {"--inject=close_range:0"}, {"--plant-fd=3"}, REFUSES, false},
    {"close_range ENOSYS with fds 3 and 64 planted (fallback closes them)",
     "close fallback when close_range is missing", NULL, NULL, {"--inject=close_range:ENOSYS"},
     {"--plant-fd=3", "--plant-fd=64:socket"}, RUNS, true},
    {"close_range ENOSYS and close(3) failing with EIO", "close-descriptors (fallback)",
     "close-descriptors", NULL, {"--inject=close_range:ENOSYS", "--inject=close:EIO:0=3"},
     {"--plant-fd=3"}, REFUSES, false},
    {"close_range ENOSYS and close(64) faking success", "descriptor-survived (fallback)",
     "descriptor-survived", NULL, {"--inject=close_range:ENOSYS", "--inject=close:0:0=64"},
     {"--plant-fd=64"}, REFUSES, false},

    /* Step 3: no_new_privs (PR_SET_NO_NEW_PRIVS = 38) and non-dumpable (PR_SET_DUMPABLE = 4). */
    {"PR_SET_NO_NEW_PRIVS failing with EPERM", "no-new-privs", "no-new-privs", NULL,
     {"--inject=prctl:EPERM:0=38"}, {NULL}, REFUSES, false},
    {"PR_SET_NO_NEW_PRIVS faking success", "no-new-privs (verified with PR_GET)", "no-new-privs",
     NULL, {"--inject=prctl:0:0=38"}, {NULL}, REFUSES, false},
    {"PR_SET_DUMPABLE failing with EPERM", "dumpable", "dumpable", NULL,
     {"--inject=prctl:EPERM:0=4"}, {NULL}, REFUSES, false},
    {"PR_SET_DUMPABLE faking success", "dumpable (verified with PR_GET)", "dumpable", NULL,
     {"--inject=prctl:0:0=4"}, {NULL}, REFUSES, false},

    /* Step 4: Landlock. Unavailability is ENOSYS/EOPNOTSUPP; anything else is a failure. */
    {"Landlock unavailable (ENOSYS) under the required policy", "landlock-unavailable",
     "landlock-unavailable", "--landlock=required", {"--inject=landlock_create_ruleset:ENOSYS"},
     {NULL}, REFUSES, false},
    {"Landlock unavailable (EOPNOTSUPP) under the required policy", "landlock-unavailable",
     "landlock-unavailable", "--landlock=required", {"--inject=landlock_create_ruleset:EOPNOTSUPP"},
     {NULL}, REFUSES, false},
    {"Landlock unavailable (ENOSYS) under the optional policy",
     "optional policy runs without Landlock", NULL, "--landlock=optional",
     {"--inject=landlock_create_ruleset:ENOSYS"}, {NULL}, RUNS, false},
    {"Landlock unavailable (EOPNOTSUPP) under the optional policy",
     "optional policy runs without Landlock", NULL, "--landlock=optional",
     {"--inject=landlock_create_ruleset:EOPNOTSUPP"}, {NULL}, RUNS, false},
    {"landlock_create_ruleset EPERM under the required policy",
     "landlock (EPERM is a failure, not unavailability)", "landlock",
     "--landlock=required", {"--inject=landlock_create_ruleset:EPERM"}, {NULL}, REFUSES, false},
    {"landlock_create_ruleset EPERM under the optional policy",
     "landlock (EPERM is not unavailability)", "landlock", "--landlock=optional",
     {"--inject=landlock_create_ruleset:EPERM"}, {NULL}, REFUSES, false},
    {"landlock_create_ruleset EPERM for the ABI query only", "landlock (ABI query error)",
     "landlock", "--landlock=required", {"--inject=landlock_create_ruleset:EPERM:2=1"}, {NULL},
     REFUSES, false},
    {"landlock_create_ruleset EPERM for the ABI query only, optional policy",
     "landlock (EPERM is not unavailability)", "landlock", "--landlock=optional",
     {"--inject=landlock_create_ruleset:EPERM:2=1"}, {NULL}, REFUSES, false},
    {"landlock_create_ruleset EPERM for the ruleset only", "landlock (ruleset creation)",
     "landlock", "--landlock=required", {"--inject=landlock_create_ruleset:EPERM:2=0"}, {NULL},
     REFUSES, false},
    /* restrict_self is faked too, so only the check of the ruleset fd can refuse. */
    {"landlock_create_ruleset and landlock_restrict_self faking success (ruleset fd 0)",
     "landlock (ruleset fd in stdio range)", "landlock", "--landlock=required",
     {"--inject=landlock_create_ruleset:0:2=0", "--inject=landlock_restrict_self:0"}, {NULL},
     REFUSES, false},
    {"landlock_restrict_self EPERM under the required policy", "landlock (restrict_self)",
     "landlock", "--landlock=required", {"--inject=landlock_restrict_self:EPERM"}, {NULL}, REFUSES,
     false},
    {"landlock_restrict_self EPERM under the optional policy",
     "landlock (EPERM is not unavailability)", "landlock", "--landlock=optional",
     {"--inject=landlock_restrict_self:EPERM"}, {NULL}, REFUSES, false},
    {"landlock_restrict_self faking success", "landlock-not-enforced", "landlock-not-enforced",
     "--landlock=required", {"--inject=landlock_restrict_self:0"}, {NULL}, REFUSES, false},
    {"landlock_restrict_self faking success under the optional policy", "landlock-not-enforced",
     "landlock-not-enforced", "--landlock=optional", {"--inject=landlock_restrict_self:0"}, {NULL},
     REFUSES, false},

    /* Step 6: seccomp. libseccomp probes seccomp() while it builds the filter (action
     * and flag support, with a NULL program), then loads it: SECCOMP_SET_MODE_FILTER
     * (1) with a program. Either failure must refuse. */
    {"seccomp() failing with EPERM (the filter cannot be built)", "seccomp (filter build)",
     "seccomp", NULL, {"--inject=seccomp:EPERM"}, {NULL}, REFUSES, false},
    {"seccomp() failing with EPERM only when the filter is loaded", "seccomp (filter load)",
     "seccomp", NULL, {"--inject=seccomp:EPERM:0=1:2!=0"}, {NULL}, REFUSES, false},
};

struct argv_list {
    const char *v[MAX_ARGS];
    int n;
};

static void add(struct argv_list *a, const char *s)
{
    if (s != NULL && a->n < MAX_ARGS - 1)
        a->v[a->n++] = s;
    a->v[a->n] = NULL;
}

static void add_all(struct argv_list *a, const char *const *list, size_t cap)
{
    for (size_t i = 0; i < cap && list[i] != NULL; i++)
        add(a, list[i]);
}

static int count_injects(const char *const *list, size_t cap)
{
    int n = 0;
    for (size_t i = 0; i < cap && list[i] != NULL; i++)
        if (strncmp(list[i], "--inject=", 9) == 0)
            n++;
    return n;
}

static struct argv_list build_argv(const struct startup_case *c, bool with_hostile,
                                   const char *worker)
{
    struct argv_list a = {{NULL}, 0};
    add(&a, harness_launcher());
    add_all(&a, c->common, sizeof c->common / sizeof c->common[0]);
    if (with_hostile)
        add_all(&a, c->hostile, sizeof c->hostile / sizeof c->hostile[0]);
    add(&a, "--");
    add(&a, worker);
    add(&a, c->policy != NULL ? c->policy : REQ);
    return a;
}

static const struct proc_opts EMPTY_ENV = {false, 0, 0, 0, HARNESS_EMPTY_ENV};

static void check_refusal(const struct startup_case *c, const char *worker)
{
    char name[512];
    (void)snprintf(name, sizeof name, "startup: %s is refused [guard %s]", c->what, c->guard);
    struct argv_list a = build_argv(c, true, worker);
    struct proc_result r = proc_run_opts(a.v, &EMPTY_ENV, NULL, 0, TIMEOUT_MS);
    char want[256];
    if (c->token != NULL)
        (void)snprintf(want, sizeof want, "refusing to run unconfined: %s\n", c->token);
    else
        want[0] = '\0';
    bool ok = proc_exited_with(&r, 70) && r.out_len == 0 && strcmp(r.err, want) == 0;
    check(ok, name, "want exit 70, stderr \"%s\", empty stdout; got %s; stdout \"%.200s\"",
          want, proc_describe(&r), r.out);
    proc_result_free(&r);
}

static bool fds_are_stdio_only(pid_t pid, char *seen, size_t cap)
{
    int fds[64];
    int n = proc_list_fds(pid, fds, 64);
    size_t used = 0;
    seen[0] = '\0';
    for (int i = 0; i < n && i < 64 && used < cap; i++)
        used += (size_t)snprintf(seen + used, cap - used, "%s%d", i ? "," : "", fds[i]);
    return n == 3 && fds[0] == 0 && fds[1] == 1 && fds[2] == 2;
}

/* Starts the launch and requires the worker to reach its first read of stdin with
 * its own filter in force (min_filters counts the injected one too), then closes
 * stdin and requires exit 0 with no output. */
static void check_runs(const char *name, const struct argv_list *a, int min_filters,
                       bool only_stdio_fds)
{
    struct proc p;
    if (proc_start(&p, a->v, &EMPTY_ENV) != 0) {
        fail(name, "cannot start %s", a->v[0]);
        return;
    }
    char why[512] = "";
    bool ready = wait_blocked_reading_stdin(p.pid, min_filters, TIMEOUT_MS, why, sizeof why);
    long seccomp = proc_status_number(p.pid, "Seccomp");
    long nnp = proc_status_number(p.pid, "NoNewPrivs");
    long threads = proc_status_number(p.pid, "Threads");
    char fds[256] = "";
    bool fds_ok = !only_stdio_fds || fds_are_stdio_only(p.pid, fds, sizeof fds);
    struct proc_result r = proc_finish(&p, NULL, 0, TIMEOUT_MS);
    bool ok = ready && seccomp == 2 && nnp == 1 && threads == 1 && fds_ok &&
              proc_exited_with(&r, 0) && r.out_len == 0 && r.err_len == 0;
    check(ok, name,
          "ready=%d (%s), Seccomp %ld, NoNewPrivs %ld, Threads %ld, fds [%s]%s; after stdin "
          "closed: %s",
          ready, why, seccomp, nnp, threads, fds, fds_ok ? "" : " (want 0,1,2)",
          proc_describe(&r));
    proc_result_free(&r);
}

/* Whether some line of a /proc/<pid>/maps text has perms and, if label is not NULL,
 * ends with label ("[stack]"). */
static bool maps_has(const char *maps, const char *perms, const char *label)
{
    for (const char *line = maps; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        const char *field = memchr(line, ' ', len); /* "start-end perms ..." */
        size_t label_len = label != NULL ? strlen(label) : 0;
        if (field != NULL && (size_t)(line + len - field) > strlen(perms) &&
            strncmp(field + 1, perms, strlen(perms)) == 0 &&
            (label == NULL || (len >= label_len &&
                               strncmp(line + len - label_len, label, label_len) == 0)))
            return true;
        if (end == NULL)
            break;
        line = end + 1;
    }
    return false;
}

/* The launcher really delivers the conditions the kernel would otherwise hide: shown
 * on /bin/cat, a program that does not check anything itself. */
static void check_launcher_controls(void)
{
    const char *launcher = harness_launcher();
    {
        const char *argv[] = {launcher, "--read-implies-exec", "--", "/bin/cat",
                              "/proc/self/personality", NULL};
        struct proc_result r = proc_run(argv, NULL, 0, TIMEOUT_MS);
        check(proc_exited_with(&r, 0) && output_has_line(r.out, "00400000"),
              "launcher control: --read-implies-exec leaves READ_IMPLIES_EXEC set after exec",
              "got %s; stdout \"%.100s\"", proc_describe(&r), r.out);
        proc_result_free(&r);
    }
    {
        const char *argv[] = {launcher, "--", "/bin/cat", "/proc/self/personality", NULL};
        struct proc_result r = proc_run(argv, NULL, 0, TIMEOUT_MS);
        check(proc_exited_with(&r, 0) && output_has_line(r.out, "00000000"),
              "launcher control: without the option the personality is clear",
              "got %s; stdout \"%.100s\"", proc_describe(&r), r.out);
        proc_result_free(&r);
    }
    const struct {
        const char *option, *perms, *label, *name;
    } maps[] = {
    {"--map-at-exec=shared", "rw-s", NULL,
     "launcher control: --map-at-exec=shared maps a shared page"},
    {"--map-at-exec=wx", "rwxp", NULL,
     "launcher control: --map-at-exec=wx maps a writable+executable page"},
    {"--map-at-exec=exec-stack", "rwxp", "[stack]",
     "launcher control: --map-at-exec=exec-stack makes the [stack] mapping executable"},
    };
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) {
        const char *with[] = {launcher, maps[i].option, "--", "/bin/cat", "/proc/self/maps", NULL};
        const char *without[] = {launcher, "--", "/bin/cat", "/proc/self/maps", NULL};
        struct proc_result r = proc_run(with, NULL, 0, TIMEOUT_MS);
        struct proc_result plain = proc_run(without, NULL, 0, TIMEOUT_MS);
        const char *label = maps[i].label != NULL ? maps[i].label : "";
        bool has = maps_has(r.out, maps[i].perms, maps[i].label);
        bool plain_has = maps_has(plain.out, maps[i].perms, maps[i].label);
        check(proc_exited_with(&r, 0) && has && proc_exited_with(&plain, 0) && !plain_has,
              maps[i].name, "with the option: %s, %s %s line %s; without: %s %s line %s",
              proc_describe(&r), maps[i].perms, label, has ? "present" : "missing",
              maps[i].perms, label, plain_has ? "present" : "absent");
        proc_result_free(&r);
        proc_result_free(&plain);
    }
}

int main(void)
{
    const char *worker = harness_release_worker();
    if (!require_binary(worker, "startup: the release worker is built") ||
        !require_binary(harness_launcher(), "startup: the launcher is built"))
        return harness_finish();

    check_launcher_controls();

    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const struct startup_case *c = &CASES[i];
        const size_t hcap = sizeof c->hostile / sizeof c->hostile[0];
        char name[512];
        if (c->expect == REFUSES) {
            check_refusal(c, worker);
        } else {
            (void)snprintf(name, sizeof name,
                           "startup: %s is not a refusal: the worker confines itself and "
                           "waits for Hello [%s]",
                           c->what, c->guard);
            struct argv_list a = build_argv(c, true, worker);
            check_runs(name, &a, 1 + count_injects(c->hostile, hcap), c->only_stdio_fds);
        }
        (void)snprintf(name, sizeof name,
                       "startup control for \"%s\": the same launch without it confines "
                       "and waits; EOF ends it with exit 0",
                       c->what);
        struct argv_list control = build_argv(c, false, worker);
        check_runs(name, &control, 1, false);
    }
    return harness_finish();
}
