/* The data home: the one directory that holds basal's store, logs and ops socket
 * (basal.md sections 1 and 8). Owner-only: directories 0700, files 0600.
 *
 * datahome_default() names it: $XDG_DATA_HOME/cortexkit/basal if XDG_DATA_HOME is set
 * to an absolute path, else $HOME/.local/share/cortexkit/basal; with neither it
 * refuses (the operator passes --home DIR).
 *
 * datahome_prepare() makes it safe to use:
 *   - sets the process umask to 0077, so every file made later is owner-only;
 *   - with create, makes missing directories (the leaf and its missing ancestors,
 *     e.g. the cortexkit parent) with mode 0700;
 *   - refuses a leaf that is a symbolic link, not a directory, or not owned by the
 *     current user (checked on the opened directory, O_NOFOLLOW, not on a name);
 *   - narrows a leaf wider than 0700 to 0700 and says so in the report. */
#ifndef BASAL_STORE_DATAHOME_H
#define BASAL_STORE_DATAHOME_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define DATAHOME_SUFFIX "cortexkit/basal"

struct datahome_report {
    bool created;      /* the leaf did not exist and was made */
    bool narrowed;     /* the leaf was wider than 0700 and was narrowed */
    mode_t prior_mode; /* its permission bits before (07777 mask); 0700 if created */
};

/* Writes the default data home into out. Returns 0, or -1 with a one-line reason in
 * err (no environment to derive it from, or too long). */
int datahome_default(char *out, size_t cap, char *err, size_t err_cap);

/* Prepares path as described above. report may be NULL. Returns 0, or -1 with a
 * one-line reason in err. Without create, a missing leaf is an error. */
int datahome_prepare(const char *path, bool create, struct datahome_report *report, char *err,
                     size_t err_cap);

#endif
