/* What the Windows launcher (worker_launch_windows.c) adds to worker_launch.h: a
 * failed launch's named reason, and ending a worker it started. On Linux the same jobs
 * are errno and worker_proc.c's waitpid; Windows has no pid to wait on or signal, so
 * the launcher keeps the process and job handles it owns for each worker it started. */
#ifndef BASAL_SUPERVISOR_WORKER_LAUNCH_WINDOWS_H
#define BASAL_SUPERVISOR_WORKER_LAUNCH_WINDOWS_H

#include <stdbool.h>
#include <sys/types.h>

/* Why this thread's last worker_launch failed: "<token>: <detail>" with the step that
 * failed as its token (appcontainer-profile, restricted-token, job, create-process,
 * thread-token, check-primary-token, check-thread-token, check-job,
 * check-job-membership, resume, ...); "" after a launch that succeeded. */
const char *worker_launch_failure(void);

/* Waits up to timeout_ms for the worker pid (started by worker_launch) to exit on its
 * own, else terminates its job (every thread of the process); then closes the job and
 * process handles. Returns its exit code and sets *killed when the termination was
 * needed; -1 for a pid this launcher does not own. */
long worker_launch_end(pid_t pid, int timeout_ms, bool *killed);

/* Terminates the worker's job at once (the parent's deadline), without waiting or
 * closing anything: worker_launch_end still reaps it. Returns 0, or -1 for an unknown
 * pid. Safe from another thread than the one that waits in worker_launch_end. */
int worker_launch_terminate(pid_t pid);

#endif
