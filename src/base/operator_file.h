/* Reading a catalog the operator writes into the data home (tools.json; modules.json
 * makes the same checks in host/ops_module.c): who may have written it decides whether
 * basal trusts it.
 *
 * The file must be a regular file owned by the user basal runs as, neither group- nor
 * world-writable (0600 or 0644), not a symbolic link, and at most cap bytes (the caller
 * checks its encoding). A missing file is not an error: the caller decides what it
 * means (an empty catalog). */
#ifndef BASAL_BASE_OPERATOR_FILE_H
#define BASAL_BASE_OPERATOR_FILE_H

#include <stddef.h>

/* Reads path into a malloc'd, NUL-terminated *bytes of *len bytes. Returns 1 (read),
 * 0 (the file does not exist: *bytes NULL), or -1 with one line in err that does not
 * repeat the file's name ("group- or world-writable (mode 0664); make it 0600 or
 * 0644"). */
int operator_file_read(const char *path, size_t cap, char **bytes, size_t *len, char *err,
                       size_t err_cap);

#endif
