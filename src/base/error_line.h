/* The parent's one-line errors: every refusal an operator sees is a single line
 * naming the problem, whatever was formatted into it. */
#ifndef BASAL_BASE_ERROR_LINE_H
#define BASAL_BASE_ERROR_LINE_H

#include <stddef.h>

/* Formats into err (if err is not NULL and cap > 0), turns any line break into a
 * space, and returns -1 so a caller can write `return error_line(err, cap, ...)`. */
__attribute__((format(printf, 3, 4))) int error_line(char *err, size_t cap, const char *fmt,
                                                     ...);

#endif
