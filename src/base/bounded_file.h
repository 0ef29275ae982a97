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

/* Reads fd to its end or to cap + 1 bytes, whichever comes first, into a malloc'd
 * *buf (cap + 2 bytes, room for a NUL) of *len bytes: *len > cap tells the caller the
 * file is over its bound. Returns 0, or an errno value (ENOMEM, or read's) with *buf
 * NULL. fd stays open. */
int read_fd_bounded(int fd, size_t cap, char **buf, size_t *len);

#endif
