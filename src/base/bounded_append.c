#include "base/bounded_append.h"

#include <stdlib.h>
#include <string.h>

#define FIRST_CAP 4096

enum bounded_append_result bounded_append(char **data, size_t *len, size_t *cap, size_t max,
                                          const void *bytes, size_t n)
{
    if (n > max - *len)
        return BOUNDED_OVER;
    if (*data == NULL || *len + n > *cap) {
        size_t grown_cap = *cap < FIRST_CAP ? FIRST_CAP : *cap;
        while (grown_cap < *len + n)
            grown_cap *= 2;
        if (grown_cap > max)
            grown_cap = max;
        char *grown = realloc(*data, grown_cap + 1); /* + 1: the NUL */
        if (grown == NULL)
            return BOUNDED_NO_MEMORY;
        *data = grown;
        *cap = grown_cap;
    }
    if (n > 0)
        memcpy(*data + *len, bytes, n);
    *len += n;
    (*data)[*len] = '\0';
    return BOUNDED_APPENDED;
}
