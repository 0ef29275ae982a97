/* A growing buffer with a bound: what a child's stdout, a module endpoint's reply and a
 * fetched body are collected in. The buffer doubles as it grows (never past the bound)
 * and stays NUL-terminated, so text can be read in place. */
#ifndef BASAL_BASE_BOUNDED_APPEND_H
#define BASAL_BASE_BOUNDED_APPEND_H

#include <stddef.h>

enum bounded_append_result {
    BOUNDED_APPENDED = 0,
    BOUNDED_OVER,      /* len + n would pass max: nothing was appended */
    BOUNDED_NO_MEMORY, /* the buffer could not grow: nothing was appended */
};

/* Appends n bytes to *data (len bytes used of cap; *data may be NULL with cap 0). */
enum bounded_append_result bounded_append(char **data, size_t *len, size_t *cap, size_t max,
                                          const void *bytes, size_t n);

#endif
