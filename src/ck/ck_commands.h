/* ck's two jobs (ck(1), docs/operations.md "Installing" and "Upgrading"), and what
 * they share: where the new binaries come from, where they go, the data home. Each
 * command returns the process exit status: 0 ok (or nothing to do), 1 refused or
 * failed, 2 usage. */
#ifndef BASAL_CK_CK_COMMANDS_H
#define BASAL_CK_CK_COMMANDS_H

#include <limits.h>
#include <stdbool.h>

#define CK_EXIT_OK 0
#define CK_EXIT_REFUSED 1
#define CK_EXIT_USAGE 2

/* Where ck setup puts the binaries by default, under $HOME, and with --system. */
#define CK_USER_PREFIX ".local"
#define CK_SYSTEM_PREFIX "/usr/local"

/* How long ck upgrade --stop waits for the serve to go: the longest grace a serve may
 * have (--grace-seconds 3600) and a minute for the rest of its stop. */
#define CK_STOP_WAIT_SECONDS 3660u

struct ck_options {
    const char *prefix; /* --prefix DIR, NULL: the default */
    bool system;        /* --system */
    const char *from;   /* --from DIR, NULL: the directory of ck itself */
    const char *home;   /* --home DIR, NULL: the default data home */
    bool stop;          /* upgrade --stop */
    bool reinstall;     /* upgrade --reinstall: the same build again */
};

/* Resolved from the options. */
struct ck_paths {
    char from[PATH_MAX]; /* the directory of the new binaries */
    char bin[PATH_MAX];  /* PREFIX/bin */
    char home[PATH_MAX]; /* the data home */
};

/* The programs ck installs, in the order they are renamed into place: the worker
 * before the parent that starts it; ck last, and only when the source has it. */
#define CK_PROGRAM_COUNT 3
extern const char *const CK_PROGRAMS[CK_PROGRAM_COUNT];

/* Fills paths from o. On failure prints "ck COMMAND: reason" and returns -2 (a path
 * option is not absolute: usage) or -1. */
int ck_resolve(const char *command, const struct ck_options *o, struct ck_paths *paths);

/* True when dir/name is a regular file. */
bool ck_has_program(const char *dir, const char *name);

/* Runs BIN/ck-basal --home HOME then the arguments (NULL-terminated), its output
 * passed through. Its exit status, or -1 if it could not run (reason printed). */
int ck_run_installed(const char *command, const struct ck_paths *paths, const char *arg1,
                     const char *arg2);

int ck_setup(const struct ck_options *o);
int ck_upgrade(const struct ck_options *o);

#endif
