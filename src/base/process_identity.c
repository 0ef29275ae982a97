/* Process identities from /proc/<pid>/stat (see process_identity.h). */
#include "base/process_identity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The state letter (field 3) and start time (field 22) of pid. 0, or -1 with errno. */
static int read_stat(pid_t pid, char *state, unsigned long long *start)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[1024];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf - 1)) < 0 && errno == EINTR) {
    }
    int saved = errno;
    close(fd);
    if (n < 0) {
        /* A process that ended between the open and the read reads as ESRCH. */
        errno = saved == ESRCH ? ENOENT : saved;
        return -1;
    }
    buf[n] = '\0';
    /* The command name may hold spaces and ')': the fields restart after the last ')'. */
    const char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ' || p[2] == '\0') {
        errno = EPROTO;
        return -1;
    }
    *state = p[2];
    p += 2; /* field 3 */
    for (int field = 3; field < 22 && p != NULL; field++) {
        p = strchr(p, ' ');
        if (p != NULL)
            p++;
    }
    char *end = NULL;
    *start = p != NULL ? strtoull(p, &end, 10) : 0;
    if (p == NULL || end == p || *start == 0) {
        errno = EPROTO;
        return -1;
    }
    return 0;
}

int process_identity_of(pid_t pid, struct process_identity *out)
{
    char state;
    out->pid = pid;
    out->start_ticks = 0;
    if (pid <= 0) {
        errno = ENOENT;
        return -1;
    }
    return read_stat(pid, &state, &out->start_ticks);
}

enum process_presence process_identity_presence(const struct process_identity *id)
{
    char state = '?';
    unsigned long long start = 0;
    if (id->pid <= 0 || id->start_ticks == 0)
        return PROCESS_GONE;
    if (read_stat(id->pid, &state, &start) != 0)
        return errno == ENOENT ? PROCESS_GONE : PROCESS_UNKNOWN;
    if (start != id->start_ticks)
        return PROCESS_GONE; /* the pid now names another process */
    /* Z: a zombie, X: dead. For the init of a PID namespace either means the whole
     * namespace is empty: the kernel reaps its other processes first. */
    return state == 'Z' || state == 'X' ? PROCESS_GONE : PROCESS_PRESENT;
}
