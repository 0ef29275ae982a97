/* Reading an operator's input file (a flow's script or manifest) with a size bound:
 * a regular file only, and a larger file refused without reading more than one byte
 * past the bound. */
#ifndef BASAL_BASE_BOUNDED_FILE_H
#define BASAL_BASE_BOUNDED_FILE_H

#include <stddef.h>

/* Reads path (at most cap bytes) into a malloc'd, NUL-terminated *bytes of *len
 * bytes. Returns 0, or -1 with one line in err that starts with label. */
int read_bounded_file(const char *path, const char *label, size_t cap, char **bytes,
                      size_t *len, char *err, size_t err_cap);

#endif
