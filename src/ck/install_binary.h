/* Installing one program file the way a running system can take it: the new bytes are
 * written beside the target under a temporary name, flushed to disk, given mode 0755,
 * and only then renamed over the target in one step, so a process that starts the
 * target at any moment finds either the whole old file or the whole new one. Staging
 * and committing are separate so a caller can stage every file first and rename them
 * in the order it needs (ck upgrade: the worker before the parent). */
#ifndef BASAL_CK_INSTALL_BINARY_H
#define BASAL_CK_INSTALL_BINARY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct staged_binary {
    char target[PATH_MAX]; /* DIR/NAME it will replace */
    char temp[PATH_MAX];   /* DIR/.NAME.ck-XXXXXX, complete and flushed; "" once renamed */
    bool in_place;         /* source and target are one file: nothing to do */
};

/* Copies source into a temporary file in dir (which must exist) for dir/name.
 * Returns 0, or -1 with a one-line reason in err (no temporary file is left). */
int binary_stage(const char *source, const char *dir, const char *name,
                 struct staged_binary *out, char *err, size_t err_cap);

/* Renames the staged file over its target and flushes the directory. 0, or -1 with a
 * one-line reason (the temporary file is then removed). */
int binary_commit(struct staged_binary *b, char *err, size_t err_cap);

/* Removes a staged file that was not committed (no-op otherwise). */
void binary_discard(struct staged_binary *b);

/* True when the files at a and b have the same bytes (false if either is unreadable). */
bool binary_same_bytes(const char *a, const char *b);

/* Makes dir and its missing ancestors, mode 0755. 0, or -1 with a one-line reason. */
int binary_dir_make(const char *dir, char *err, size_t err_cap);

#endif
