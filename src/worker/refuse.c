#include "worker/refuse.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void stderr_write(const char *s)
{
    size_t len = strlen(s);
    while (len > 0) {
        ssize_t n = write(2, s, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        s += n;
        len -= (size_t)n;
    }
}

void stderr_printf(const char *fmt, ...)
{
    char line[512] = "";
    va_list ap;
    va_start(ap, fmt);
    /* vsnprintf only formats into memory: no system call. */
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n >= 0)
        stderr_write(line);
}

void refuse_unconfined(const char *token)
{
    stderr_printf("refusing to run unconfined: %s\n", token);
    _exit(WORKER_EXIT_REFUSED);
}
