#include "base/error_line.h"

#include <stdarg.h>
#include <stdio.h>

int error_line(char *err, size_t cap, const char *fmt, ...)
{
    if (err != NULL && cap > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
        for (char *p = err; *p != '\0'; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
    }
    return -1;
}
