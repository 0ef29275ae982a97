/* The kernel's own view of a process, from /proc/<pid>/status. */
#ifndef BASAL_SUPERVISOR_PROC_STATUS_H
#define BASAL_SUPERVISOR_PROC_STATUS_H

#include <sys/types.h>

struct proc_status {
    int seccomp;       /* "Seccomp:" 0 none, 1 strict, 2 filter */
    int no_new_privs;  /* "NoNewPrivs:" */
    int threads;       /* "Threads:" */
    int seccomp_filters; /* "Seccomp_filters:": filters in force, inherited ones included */
};

/* The same for the calling process (pid 0 means self). */

/* Reads the fields; returns 0, or -1 if the file or a field is missing. */
int proc_status_read(pid_t pid, struct proc_status *out);

#endif
