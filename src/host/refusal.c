/* A builtin's refusal (host/refusal.h). */
#include "host/refusal.h"

#include <stdarg.h>
#include <stdio.h>

int refuse(struct refusal *r, const char *code, const char *fmt, ...)
{
    r->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
    return -1;
}
