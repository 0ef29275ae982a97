/* One process, named so that the name cannot come to mean another process: its pid
 * and its start time (field 22 of /proc/<pid>/stat, clock ticks since boot). A pid is
 * reused, but never with the same start time within one boot.
 *
 * Every look goes through /proc of the PID namespace the caller runs in: an identity
 * taken in one namespace means nothing in another (the same holds for the runs'
 * owners, store/runs.h). */
#ifndef BASAL_BASE_PROCESS_IDENTITY_H
#define BASAL_BASE_PROCESS_IDENTITY_H

#include <sys/types.h>

struct process_identity {
    pid_t pid;
    unsigned long long start_ticks; /* never 0 for a process that was read */
};

/* Reads pid's identity. Returns 0, or -1 with errno set (ENOENT: no such process). */
int process_identity_of(pid_t pid, struct process_identity *out);

enum process_presence {
    PROCESS_GONE = 0, /* no process with that pid and start time, or only its zombie */
    PROCESS_PRESENT,  /* still there: it may run */
    PROCESS_UNKNOWN,  /* /proc could not tell (errno set): treat it as present */
};

/* Whether the process id names still exists (and is not a zombie: a zombie runs no
 * more code). */
enum process_presence process_identity_presence(const struct process_identity *id);

#endif
