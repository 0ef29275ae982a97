/* Confinement probes: `ck-basal-worker --confinement-probe=NAME [--no-sandbox]
 * [--probe-port=N]` makes one attempt at one forbidden capability, so tests can prove
 * that the confined worker is killed (SIGSYS) at exactly that system call, and that
 * the same attempt unconfined reaches the kernel and comes back (the control).
 *
 * The worker's main drives a probe like this:
 *
 *     struct probe_ctx ctx = {0};
 *     const struct probe *probe = probe_find(name);   NULL: usage error, exit 64
 *     ctx.port = port;                                 from --probe-port, 0 = default
 *     if (probe_prepare(probe, &ctx) != 0) exit 70;     unconfined setup
 *     confine(...) unless --no-sandbox;                closes every fd > 2, seccomp
 *     return probe_run(probe, &ctx);
 *
 * probe_run writes "ready NAME\n" on stderr, then makes the single attempt: the first
 * system call after that line that the allowlist refuses. If the attempt returns, it
 * writes "result NAME rc=<rc> errno=<errno>\n" (errno is 0 when the call succeeded)
 * and then releases whatever an unconfined attempt created (descriptor, mapping,
 * child, file). All output is write(2) on fd 2; nothing between "ready" and the
 * attempt makes a system call.
 *
 * Every attempt is harmless unconfined, even as root: signal 0, a ptrace request that
 * fails on an unattached process, a read of an unmapped address, an execve of a path
 * that does not exist, a child that exits at once, a file created O_EXCL under /tmp
 * and removed again. */
#ifndef BASAL_WORKER_PROBES_H
#define BASAL_WORKER_PROBES_H

#include <stddef.h>
#include <sys/types.h>

/* connect-tcp connects to 127.0.0.1 on this port when ctx->port is 0 (discard). */
#define PROBE_DEFAULT_PORT 9

#define PROBE_PATH_MAX 96

struct probe;

struct probe_ctx {
    /* Set by the caller before probe_prepare; 0 means PROBE_DEFAULT_PORT. */
    int port;

    /* Filled by probe_prepare, before confinement. */
    pid_t parent_pid;          /* getppid(): the target of the cross-process probes */
    pid_t self_pid;
    char path[PROBE_PATH_MAX]; /* create: /tmp/ck-basal-probe-<pid>-<random> */

    /* Used by probe_run only. */
    int fd;                /* a descriptor an attempt created, closed after the result */
    pid_t child;           /* a child the fork attempt created, reaped after the result */
    int created;           /* create made path, unlinked after the result */
    void *map[2];          /* mappings armed before "ready" or made by the attempt */
    size_t map_len[2];
    void *stack;           /* clone-thread: the new thread's stack */
    size_t stack_len;
};

/* The probe called name, or NULL if there is none. */
const struct probe *probe_find(const char *name);

/* The probe's name (the string probe_find matched). */
const char *probe_name(const struct probe *probe);

/* How many probes there are, and the name of the i-th (NULL when i >= count), so
 * tests and --help can list them. */
size_t probe_count(void);
const char *probe_name_at(size_t i);

/* Unconfined setup, before confinement: fills ctx (except port, which only gets its
 * default) and runs the probe's own preparation. Returns 0, or -1 with a line
 * "probe-prepare-failed NAME errno=E" on stderr. */
int probe_prepare(const struct probe *probe, struct probe_ctx *ctx);

/* After confinement (or instead of it, under --no-sandbox): arms the probe with
 * admitted calls only, writes "ready NAME", makes the one attempt, and if it returns
 * writes the result line and releases what the attempt created. Returns 0 (main
 * exits 0), or 1 if arming failed, with a line "probe-arm-failed NAME errno=E" on
 * stderr and no "ready" line. */
int probe_run(const struct probe *probe, struct probe_ctx *ctx);

#endif
