/* Descriptor close: descriptors planted by whoever starts the worker are gone before
 * its first read [guard: descriptor close, confinement steps 2 and 5].
 *
 * tests/tools/launch plants descriptors 3 (/dev/null), 64 (a Unix socket) and 1023
 * (/dev/null), all without CLOEXEC, then execs the worker in place. The test waits
 * until the worker is blocked in read(0) with its seccomp filter in force, the point
 * where it waits for Hello, and looks from outside: /proc/<pid>/fd must list exactly
 * 0, 1 and 2, and /proc/<pid>/status must show Seccomp 2, NoNewPrivs 1, Threads 1.
 *
 * Control: the same planting in front of /bin/cat, which closes nothing, shows 3, 64
 * and 1023 open at the same point (blocked reading stdin): the planting works, so the
 * worker's empty table is the worker's doing. */
#include "lib/harness.h"

#include <stdio.h>
#include <string.h>

#define TIMEOUT_MS 15000

static const struct proc_opts EMPTY_ENV = {false, 0, 0, 0, HARNESS_EMPTY_ENV};

static void describe_fds(const int *fds, int n, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n && i < 64 && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%s%d", i ? "," : "", fds[i]);
}

static bool has_fd(const int *fds, int n, int fd)
{
    for (int i = 0; i < n && i < 64; i++)
        if (fds[i] == fd)
            return true;
    return false;
}

/* The planted launch of a program, seen from /proc while it blocks in read(0). */
struct planted_launch {
    struct proc p;
    bool ready;     /* blocked in read(0) within TIMEOUT_MS */
    char why[512];  /* why it was not */
    int fds[64];
    int n;          /* descriptors listed in fds, or -1 */
    char seen[256]; /* fds as "0,1,2" */
};

/* Starts the launcher planting fds 3, 64 and 1023 in front of program (and arg, if not
 * NULL), waits until it blocks in read(0) with min_filters seccomp filters, and lists
 * its descriptors. False (after "not ok - name") if the launcher did not start. */
static bool planted_start(struct planted_launch *l, const char *program, const char *arg,
                          int min_filters, const char *name)
{
    const char *argv[] = {harness_launcher(), "--plant-fd=3", "--plant-fd=64:socket",
                          "--plant-fd=1023", "--", program, arg, NULL};
    if (proc_start(&l->p, argv, &EMPTY_ENV) != 0) {
        fail(name, "cannot start the launcher");
        return false;
    }
    l->why[0] = '\0';
    l->ready = wait_blocked_reading_stdin(l->p.pid, min_filters, TIMEOUT_MS, l->why,
                                          sizeof l->why);
    l->n = l->ready ? proc_list_fds(l->p.pid, l->fds, 64) : -1;
    l->seen[0] = '\0';
    if (l->n > 0)
        describe_fds(l->fds, l->n, l->seen, sizeof l->seen);
    return true;
}

/* The planted launch of the worker, seen while it blocks in read(0). */
static void check_worker(const char *label, const char *worker)
{
    char name[256];
    (void)snprintf(name, sizeof name,
                   "descriptors (%s worker): planted fds 3, 64, 1023 are closed before the "
                   "first read [guard descriptor close]",
                   label);
    struct planted_launch l;
    if (!planted_start(&l, worker, "--landlock=required", 1, name))
        return;
    long seccomp = proc_status_number(l.p.pid, "Seccomp");
    long nnp = proc_status_number(l.p.pid, "NoNewPrivs");
    long threads = proc_status_number(l.p.pid, "Threads");
    check(l.ready && l.n == 3 && l.fds[0] == 0 && l.fds[1] == 1 && l.fds[2] == 2, name,
          "ready=%d (%s); /proc/%d/fd lists [%s], want 0,1,2", l.ready, l.why, (int)l.p.pid,
          l.seen);

    (void)snprintf(name, sizeof name,
                   "descriptors (%s worker): while it waits for Hello, /proc shows Seccomp 2, "
                   "NoNewPrivs 1, Threads 1",
                   label);
    check(l.ready && seccomp == 2 && nnp == 1 && threads == 1, name,
          "ready=%d; Seccomp %ld, NoNewPrivs %ld, Threads %ld", l.ready, seccomp, nnp, threads);

    struct proc_result r = proc_finish(&l.p, NULL, 0, TIMEOUT_MS);
    (void)snprintf(name, sizeof name,
                   "descriptors (%s worker): it was the live worker: EOF on stdin ends it "
                   "with exit 0",
                   label);
    check(proc_exited_with(&r, 0) && r.out_len == 0 && r.err_len == 0, name, "%s",
          proc_describe(&r));
    proc_result_free(&r);
}

static void check_control(void)
{
    const char *name = "descriptors control: the same planting in front of /bin/cat leaves "
                       "fds 3, 64 and 1023 open";
    struct planted_launch l;
    if (!planted_start(&l, "/bin/cat", NULL, 0, name))
        return;
    check(l.ready && has_fd(l.fds, l.n, 3) && has_fd(l.fds, l.n, 64) &&
              has_fd(l.fds, l.n, 1023),
          name, "ready=%d (%s); /proc/%d/fd lists [%s]", l.ready, l.why, (int)l.p.pid, l.seen);
    struct proc_result r = proc_finish(&l.p, NULL, 0, TIMEOUT_MS);
    check(proc_exited_with(&r, 0), "descriptors control: cat exits 0 at EOF", "%s",
          proc_describe(&r));
    proc_result_free(&r);
}

int main(void)
{
    bool have = require_binary(harness_launcher(), "descriptors: the launcher is built");
    have = require_binary(harness_release_worker(), "descriptors: the release worker is built") &&
           have;
    have = require_binary(harness_test_worker(), "descriptors: the test worker is built") && have;
    if (!have)
        return harness_finish();
    check_control();
    check_worker("release", harness_release_worker());
    check_worker("test", harness_test_worker());
    return harness_finish();
}
