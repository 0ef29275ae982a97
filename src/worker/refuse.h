/* Refusal and raw stderr output for the worker.
 *
 * Every confinement failure ends the worker the same way: one line
 * "refusing to run unconfined: <token>" on stderr, exit status 70, nothing on stdout.
 * Output goes through write(2) directly, never stdio: stdio may call fstat or allocate
 * on first use, which the seccomp allowlist would kill. */
#ifndef BASAL_WORKER_REFUSE_H
#define BASAL_WORKER_REFUSE_H

#include <stddef.h>

#define WORKER_EXIT_REFUSED 70
#define WORKER_EXIT_USAGE 64
#define WORKER_EXIT_PROTOCOL 3

/* Writes the refusal line for token and exits 70. Never returns. */
__attribute__((noreturn)) void refuse_unconfined(const char *token);

/* Writes s to fd 2 in full (retrying on EINTR and short writes); errors are ignored
 * because there is nowhere left to report them. */
void stderr_write(const char *s);

/* Formats into a stack buffer and writes it to fd 2. */
__attribute__((format(printf, 1, 2))) void stderr_printf(const char *fmt, ...);

#endif
