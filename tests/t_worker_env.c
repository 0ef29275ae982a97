/* The environment a worker starts with (src/supervisor/worker_launch_linux.c, docs/architecture.md
 * "Accepting a worker", docs/engine.md "The worker's allocator"): exactly one entry, the
 * allocator setting, and nothing of the parent's own environment.
 *
 * worker_spawn is given /usr/bin/env as the worker: it prints the environment it was
 * started with on its stdout, the parent's pipe from the worker. */
#include "supervisor/worker_proc.h"
#include "lib/harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char WANT[] = "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576:"
                           "glibc.malloc.trim_threshold=2097152\n";

/* Reads fd to its end (at most cap - 1 bytes kept); returns the length or -1. */
static ssize_t read_all(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0 || len + (size_t)n >= cap - 1) {
            len += (size_t)(n > 0 ? n : 0);
            break;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    return (ssize_t)len;
}

int main(void)
{
    if (access("/usr/bin/env", X_OK) != 0) {
        fail("worker env: setup", "/usr/bin/env is not executable: %s", strerror(errno));
        return harness_finish();
    }
    /* Something of the parent's that must not reach the worker. */
    if (setenv("BASAL_PARENT_CANARY", "parent-secret", 1) != 0) {
        fail("worker env: setup", "setenv: %s", strerror(errno));
        return harness_finish();
    }
    const struct worker_limits limits = {WORKER_FLOW_ADDRESS_SPACE, WORKER_OPEN_FILES};
    struct worker_proc proc;
    if (worker_spawn("/usr/bin/env", NULL, &limits, &proc) != 0) {
        fail("worker env: spawn", "worker_spawn: %s", strerror(errno));
        return harness_finish();
    }
    char out[4096];
    ssize_t len = read_all(proc.from_worker, out, sizeof out);
    int status = worker_finish(&proc, 5000);
    check(len >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "worker env: the spawned program ran and exited 0", "read %zd, status %#x", len,
          (unsigned)status);
    check(strstr(out, "BASAL_PARENT_CANARY") == NULL && strstr(out, "PATH=") == NULL &&
              strstr(out, "HOME=") == NULL,
          "worker env: nothing of the parent's environment reaches the worker "
          "[guard worker-env-parent-free]",
          "environment: %.1000s", out);
    check_str_eq(out, WANT,
                 "worker env: the worker's whole environment is the one allocator setting "
                 "(heap below 1 MiB, trim above 2 MiB)");
    return harness_finish();
}
