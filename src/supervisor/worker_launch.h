/* Creating one worker process: one contract, one file per operating system, chosen by
 * the Makefile (no #ifdef per platform):
 *   supervisor/worker_launch_linux.c    fork and exec (below)
 *   supervisor/worker_launch_windows.c  built by mk/windows.mk: created suspended with
 *                                       the LPAC token, owned job, explicit handle list,
 *                                       all checked before resume (sandbox.md "Windows")
 *   supervisor/worker_launch_macos.c    posix_spawn, disclaimed from the parent's privacy
 *                                       grants (compile-checked by mk/macos.mk)
 * Every platform's worker_launch starts path with argv, with exactly three fresh pipes
 * as its stdin, stdout and stderr and nothing else of the parent's (no other handle,
 * none of its environment), its resource limits in force before the worker's first
 * instruction, and ends the worker when the parent dies. A launch whose confinement
 * cannot be put in place fails: no worker runs.
 *
 * Linux: an environment of one constant allocator setting, fds 0-2 and nothing else,
 * RLIMIT_AS, RLIMIT_CORE 0, RLIMIT_FSIZE 0, RLIMIT_NOFILE, SIGKILL as its parent-death
 * signal, the signal mask cleared and SIGPIPE default.
 *
 * Windows: the environment is SystemRoot alone, the explicit handle list the three
 * pipes; address_space_bytes is the job's per-process commit limit (it bounds
 * committed memory, not address space); open_files has no Windows counterpart (the
 * worker attests its handle table instead); pid is the process id, and the three fds
 * are the parent's pipe ends as CRT descriptors (_open_osfhandle). Ending a worker
 * and a failed launch's named reason are worker_launch_windows.h's: the launcher owns
 * the process and job handles. The parent dying closes the job, which kills it. */
#ifndef BASAL_SUPERVISOR_WORKER_LAUNCH_H
#define BASAL_SUPERVISOR_WORKER_LAUNCH_H

#include "supervisor/welcome_rules.h"

#include <sys/types.h>

/* Limits in force before the worker runs (Linux: rlimits). */
struct worker_limits {
    unsigned long long address_space_bytes; /* RLIMIT_AS */
    unsigned long open_files;               /* RLIMIT_NOFILE */
};

struct worker_proc {
    pid_t pid;
    int to_worker;   /* write end of the worker's stdin */
    int from_worker; /* read end of the worker's stdout */
    int worker_log;  /* read end of the worker's stderr */
};

/* Starts path with argv (argv[0] is path, NULL-terminated). Fills *out and returns 0,
 * or returns -1 with errno set and nothing started. */
int worker_launch(const char *path, char *const argv[], const struct worker_limits *limits,
                  struct worker_proc *out);

/* The operating system this parent was built for: the only one whose Welcome it accepts
 * (welcome_rules.h). */
enum worker_os worker_launch_host_os(void);

#endif
