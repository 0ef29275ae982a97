/* Step 1 of the Linux confinement: the worker refuses to start in an environment it
 * cannot trust. Each check refuses (exit 70 with its token) rather than continuing:
 *   proc-not-procfs        /proc is not a genuine procfs (statfs magic)
 *   not-single-threaded    /proc/self/status shows more than one thread
 *   stdin-not-pipe-read-end, stdout-not-pipe-write-end, stderr-not-pipe-write-end
 *                          fds 0/1/2 must be anonymous pipes (pipefs) opened for
 *                          reading (0) or writing (1, 2)
 *   read-implies-exec      the READ_IMPLIES_EXEC personality is set
 *   writable-executable-mapping, shared-mapping, executable-stack
 *                          a mapping in /proc/self/maps breaks W^X or is shared
 *   proc-unreadable        a /proc file the checks need cannot be read */
#ifndef BASAL_WORKER_STARTUP_CHECKS_H
#define BASAL_WORKER_STARTUP_CHECKS_H

/* Runs every startup check; refuses (never returns) on the first failure. */
void startup_checks_or_refuse(void);

/* The checks on the standard descriptors alone, also used by the refusal tests. */
const char *check_stdio_pipes(void);

#endif
