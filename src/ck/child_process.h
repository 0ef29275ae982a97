/* Running another program from ck: the installed ck-basal (setup, --version) and
 * systemctl. Waits with waitpid; never through a shell. */
#ifndef BASAL_CK_CHILD_PROCESS_H
#define BASAL_CK_CHILD_PROCESS_H

#include <stddef.h>

/* Runs argv[0] (a path, or a name looked up in PATH) with argv, its stdout captured
 * into out (NUL-terminated, at most cap-1 bytes kept; the rest is read and dropped),
 * stderr passed through when quiet_stderr is 0, else discarded. Returns the exit
 * status (0-255), or -1 when it could not be started or died by a signal (err says
 * which). out may be NULL: stdout is then passed through. */
int child_run(char *const argv[], char *out, size_t cap, int quiet_stderr, char *err,
              size_t err_cap);

#endif
