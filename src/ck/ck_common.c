/* What ck setup and ck upgrade share: the paths they work on, running the installed
 * ck-basal. */
#include "ck/ck_commands.h"

#include "ck/child_process.h"
#include "store/datahome.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const CK_PROGRAMS[CK_PROGRAM_COUNT] = {"ck-basal-worker", "ck-basal", "ck"};

static int fail(const char *command, const char *what)
{
    fprintf(stderr, "ck %s: %s\n", command, what);
    return -1;
}

/* An absolute path without a trailing slash ("/" stays). -2 (usage) if it is not. */
static int absolute(const char *command, const char *option, const char *value, char *out,
                    size_t cap)
{
    char why[PATH_MAX + 64];
    if (value[0] != '/') {
        snprintf(why, sizeof why, "%s must be an absolute path (got '%s')", option, value);
        fail(command, why);
        return -2;
    }
    size_t n = strlen(value);
    while (n > 1 && value[n - 1] == '/')
        n--;
    if (n >= cap) {
        snprintf(why, sizeof why, "%s: path too long", option);
        return fail(command, why);
    }
    memcpy(out, value, n);
    out[n] = '\0';
    return 0;
}

int ck_resolve(const char *command, const struct ck_options *o, struct ck_paths *paths)
{
    char prefix[PATH_MAX], why[PATH_MAX + 128];
    if (o->prefix != NULL) {
        int rc = absolute(command, "--prefix", o->prefix, prefix, sizeof prefix);
        if (rc != 0)
            return rc;
    } else if (o->system) {
        snprintf(prefix, sizeof prefix, "%s", CK_SYSTEM_PREFIX);
    } else {
        const char *home = getenv("HOME");
        if (home == NULL || home[0] != '/')
            return fail(command, "HOME is not an absolute path: give --prefix DIR or --system");
        int n = snprintf(prefix, sizeof prefix, "%s/%s", home, CK_USER_PREFIX);
        if (n <= 0 || (size_t)n >= sizeof prefix)
            return fail(command, "HOME: path too long");
    }
    int n = snprintf(paths->bin, sizeof paths->bin, "%s%sbin", prefix,
                     strcmp(prefix, "/") == 0 ? "" : "/");
    if (n <= 0 || (size_t)n >= sizeof paths->bin)
        return fail(command, "--prefix: path too long");

    if (o->from != NULL) {
        int rc = absolute(command, "--from", o->from, paths->from, sizeof paths->from);
        if (rc != 0)
            return rc;
    } else {
        ssize_t len = readlink("/proc/self/exe", paths->from, sizeof paths->from - 1);
        if (len <= 0 || (size_t)len >= sizeof paths->from - 1)
            return fail(command, "cannot read /proc/self/exe to find the new binaries: "
                                 "give --from DIR");
        paths->from[len] = '\0';
        char *slash = strrchr(paths->from, '/');
        if (slash == NULL)
            return fail(command, "/proc/self/exe is not a path: give --from DIR");
        *(slash == paths->from ? slash + 1 : slash) = '\0';
    }
    struct stat st;
    if (stat(paths->from, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, sizeof why, "%s: not a directory", paths->from);
        return fail(command, why);
    }
    for (int i = 0; i < 2; i++) {
        if (!ck_has_program(paths->from, CK_PROGRAMS[i])) {
            snprintf(why, sizeof why, "%s/%s: no such program (build it with make, or give "
                                      "--from DIR)", paths->from, CK_PROGRAMS[i]);
            return fail(command, why);
        }
    }

    if (o->home != NULL) {
        int rc = absolute(command, "--home", o->home, paths->home, sizeof paths->home);
        if (rc != 0)
            return rc;
    } else {
        char err[512];
        if (datahome_default(paths->home, sizeof paths->home, err, sizeof err) != 0)
            return fail(command, err);
    }
    return 0;
}

bool ck_has_program(const char *dir, const char *name)
{
    char path[PATH_MAX];
    struct stat st;
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    return n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int ck_run_installed(const char *command, const struct ck_paths *paths, const char *arg1,
                     const char *arg2)
{
    /* Copies: exec takes char *const[]. */
    char parent[PATH_MAX + 16], why[512] = "", home_option[] = "--home", home[PATH_MAX],
        first[64] = "", second[64] = "";
    snprintf(parent, sizeof parent, "%s/ck-basal", paths->bin);
    snprintf(home, sizeof home, "%s", paths->home);
    snprintf(first, sizeof first, "%s", arg1);
    if (arg2 != NULL)
        snprintf(second, sizeof second, "%s", arg2);
    char *argv[] = {parent, home_option, home, first, arg2 != NULL ? second : NULL, NULL};
    int status = child_run(argv, NULL, 0, 0, why, sizeof why);
    if (status < 0 || status == 127)
        fprintf(stderr, "ck %s: %s\n", command, why);
    return status;
}
