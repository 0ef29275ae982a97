/* Starting and ending ck-basal-worker processes.
 *
 * A worker is started with an empty environment, exactly three anonymous pipes as
 * fds 0-2, nothing else open, resource limits set before exec (the confined worker
 * cannot set them itself), and one argument: the Landlock policy. It is killed
 * (SIGKILL, its parent-death signal) when the parent dies, so a worker busy in a
 * script never outlives it. */
#ifndef BASAL_SUPERVISOR_WORKER_PROC_H
#define BASAL_SUPERVISOR_WORKER_PROC_H

#include "supervisor/worker_launch.h"
#include "proto/confinement.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Flow profile defaults: heap budget 8 MiB, with room for the engine, the codec's
 * frames and glibc's arenas. */
#define WORKER_FLOW_ADDRESS_SPACE (512ULL * 1024 * 1024)
/* Codemode profile: heap budget 64 MiB by default, up to CODEMODE_HEAP_MAX. */
#define WORKER_CODEMODE_ADDRESS_SPACE (1024ULL * 1024 * 1024)
/* The largest heap budget each profile's address-space limit leaves room for. */
#define WORKER_FLOW_HEAP_MAX (256ULL * 1024 * 1024)
#define WORKER_CODEMODE_HEAP_MAX (640ULL * 1024 * 1024)
#define WORKER_OPEN_FILES 16UL

/* Finds ck-basal-worker beside the running executable. Test builds also honour
 * BASAL_TEST_WORKER (a build-time hook; release builds have no override).
 * Returns 0, or -1 with a reason in why. */
int worker_locate(char *path, size_t cap, char *why, size_t why_cap);

/* Starts path with argv {path, extra_args..., NULL}. Returns 0 or -1 (errno set). */
int worker_spawn(const char *path, const char *const extra_args[],
                 const struct worker_limits *limits, struct worker_proc *out);

/* The argument that selects a Landlock policy. */
const char *worker_policy_arg(enum landlock_policy policy);

/* Kills (SIGKILL) and reaps the worker, closes its pipes. Returns the wait status. */
int worker_kill(struct worker_proc *proc);

/* Kills and reaps the worker like worker_kill, first keeping what it wrote on stderr
 * (up to cap-1 bytes, NUL-terminated): a refusing worker names its reason there. */
int worker_kill_keep_log(struct worker_proc *proc, char *log, size_t cap);

/* Closes the worker's stdin and reaps it, killing it if it has not exited within
 * timeout_ms. Returns the wait status. */
int worker_finish(struct worker_proc *proc, int timeout_ms);

/* Waits up to timeout_ms (pidfd and poll: no signals, no sleeps) for pid to exit on
 * its own, then SIGKILLs it; reaps it either way. Returns the wait status and sets
 * *killed when the kill was needed. */
int reap_within(pid_t pid, int timeout_ms, bool *killed);

/* Reads whatever the worker wrote on stderr without blocking (up to cap-1 bytes,
 * NUL-terminated). Returns the number of bytes. */
size_t worker_read_log(struct worker_proc *proc, char *buf, size_t cap);

#endif
