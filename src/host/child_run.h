/* Driving a started child program to its end: its stdin written from a buffer, its
 * stdout collected up to a bound, the last bytes of its stderr kept for messages, the
 * program reaped, and its process group killed on every way out (the deadline, too much
 * output, a poll that fails). git (git_builtin.c) and program modules (ops_module.c)
 * run this way; each starts its child its own way and hands over the pid and pipes. */
#ifndef BASAL_HOST_CHILD_RUN_H
#define BASAL_HOST_CHILD_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CHILD_RUN_TAIL 512 /* bytes of stderr kept */

struct child_run {
    pid_t pid;                  /* the group leader: kills go to -pid */
    int pidfd;                  /* -1 where the kernel has no pidfd_open */
    int in_fd, out_fd, err_fd;  /* the parent's ends, non-blocking; -1 when closed */
    const char *input;          /* what stdin gets, then EOF (not owned) */
    size_t input_len, input_off;
    char *out;                  /* stdout, always NUL-terminated after out_len */
    size_t out_len, out_cap, out_max;
    char tail[CHILD_RUN_TAIL];  /* a ring of stderr's last bytes */
    size_t tail_total;
    bool exited, timed_out, too_large;
    int status;                 /* waitpid's; 0x7f00 (as exit 127) if not ours */
};

/* In the child, between fork and exec (async-signal-safe only): closes every
 * descriptor from first_closed up, and gives every signal its default disposition and
 * an empty mask, whatever the parent ignores or blocks. */
void child_run_reset_in_child(unsigned first_closed);

/* Before the child starts: nothing open, input (may be NULL) for its stdin, at most
 * out_max bytes of stdout. Returns 0, or -1 when out of memory. */
int child_run_init(struct child_run *r, const char *input, size_t input_len, size_t out_max);

/* The child runs as pid, leader of its own group; the parent's ends of its pipes
 * (in_fd may be -1: no stdin) now belong to r, made non-blocking. */
void child_run_started(struct child_run *r, pid_t pid, int in_fd, int out_fd, int err_fd);

/* Runs the child to its end, the deadline (monotonic_ms) or too much output; then it
 * is reaped. Once it has exited, its pipes get a short grace for the rest of what it
 * wrote. On return the flags and status say how it ended, and stderr has been read. */
void child_run_pump(struct child_run *r, long long deadline);

/* SIGKILLs the child's group (only while the child is unreaped: after the reap its ids
 * may name somebody else) and reaps it. */
void child_run_kill(struct child_run *r);

/* The stderr tail as one line of printable ASCII, in buf. */
const char *child_run_stderr_line(const struct child_run *r, char *buf, size_t cap);

/* Closes what is open and frees the output; kills the child first if still unreaped. */
void child_run_close(struct child_run *r);

#endif
