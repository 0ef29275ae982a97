/* git.* for flows: argument checks, the repository decision, one bounded git run per
 * call and the parsing of its output (git_builtin.h has the contract). */
#include "host/git_builtin.h"
#include "host/child_run.h"

#include "base/clock.h"
#include "host/git_sandbox.h"
#include "host/refusal.h"
#include "base/thread_affinity.h"
#include "proto/utf8.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOST_CODE_NOT_TEXT_GIT "not_text"
#define GIT_PATH_MAX 4096u

/* Every configuration that could make git run a program, read more than the
 * repository, or write, set on the command line (which wins over the repository's
 * own config and its includes). */
static const char *const GIT_CONFIG[] = {
    "core.hooksPath=/dev/null", "core.fsmonitor=false", "core.pager=cat",
    "core.sshCommand=false", "core.askPass=false", "core.gitProxy=", "diff.external=",
    "diff.submodule=short", "protocol.allow=never", "log.showSignature=false",
    "gpg.program=false", "gpg.ssh.program=false", "gpg.x509.program=false",
    "log.mailmap=false", "mailmap.file=", "mailmap.blob=", "gc.auto=0",
    "maintenance.auto=false", "i18n.logOutputEncoding=UTF-8", "color.ui=false",
    "log.decorate=false", "core.untrackedCache=false", "credential.helper=",
    "fetch.recurseSubmodules=false", "submodule.recurse=false",
};
#define GIT_CONFIG_COUNT (sizeof GIT_CONFIG / sizeof GIT_CONFIG[0])

static char *const GIT_ENV[] = {
    "PATH=/usr/bin:/bin", "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
    "GIT_CONFIG_SYSTEM=/dev/null", "GIT_TERMINAL_PROMPT=0", "GIT_LITERAL_PATHSPECS=1",
    "GIT_NO_REPLACE_OBJECTS=1", "GIT_OPTIONAL_LOCKS=0", "GIT_ATTR_NOSYSTEM=1",
    /* The environment's list beats every protocol.*.allow of the repository's config:
     * an empty one allows no transport at all. No lazy fetch of a promisor's objects
     * (git 2.39.4 and later). */
    "GIT_ALLOW_PROTOCOL=", "GIT_PROTOCOL_FROM_USER=0", "GIT_NO_LAZY_FETCH=1",
    /* No index (a path that does not exist in git's sandbox: an empty file would be an
     * invalid index): nothing of a working tree is read in place of a blob, and
     * fsmonitor and the untracked cache have nothing to look at. */
    GIT_SANDBOX_INDEX_ENV, NULL,
};

enum git_kind { GIT_LOG, GIT_REV_PARSE, GIT_DESCRIBE_TAGS, GIT_SHOW, GIT_DIFF, GIT_LS_FILES };

static const struct {
    const char *name;
    enum git_kind kind;
} KINDS[] = {
    {"git.log", GIT_LOG},   {"git.revParse", GIT_REV_PARSE}, {"git.describeTags", GIT_DESCRIBE_TAGS},
    {"git.show", GIT_SHOW}, {"git.diff", GIT_DIFF},          {"git.lsFiles", GIT_LS_FILES},
};

static int kind_of(const char *name, enum git_kind *out)
{
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (strcmp(KINDS[i].name, name) == 0) {
            *out = KINDS[i].kind;
            return 0;
        }
    return -1;
}


/* ---- arguments -------------------------------------------------------------------------- */

struct git_call {
    enum git_kind kind;
    const char *name;
    const char *repo;           /* as the script gave it */
    char gitdir[PATH_MAX];
    int gitdir_fd;              /* O_PATH of the checked git directory; -1 before */
    const char *rev, *rev2;     /* rev2: git.diff's "to" */
    const char *path;           /* git.show's file, git.log's path */
    const char *paths[GIT_MAX_PATHS];
    size_t path_count;
    long long max_count, skip;
    bool name_only;
};

static bool has_control(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return true;
    return false;
}

/* A revision: 1-256 bytes, no control characters, not starting with '-'. */
static int want_rev(const struct git_call *c, json_t *v, const char *what, const char **out,
                    struct refusal *why)
{
    if (!json_is_string(v))
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "%s: %s must be a string", c->name, what);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n > GIT_REV_MAX || strlen(s) != n || has_control(s, n))
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "%s: %s must be 1-%u bytes without"
                      " control characters", c->name, what, GIT_REV_MAX);
    if (s[0] == '-')
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "%s: %s '%.64s' starts with '-'",
                      c->name, what, s);
    *out = s;
    return 0;
}

/* A path inside the repository's tree: 1-4096 bytes without NUL or control characters. */
static int want_path(const struct git_call *c, json_t *v, const char **out, struct refusal *why)
{
    if (!json_is_string(v))
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "%s: a path must be a string", c->name);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n > GIT_PATH_MAX || strlen(s) != n || has_control(s, n))
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "%s: a path must be 1-%u bytes without"
                      " control characters", c->name, GIT_PATH_MAX);
    *out = s;
    return 0;
}

static int want_paths(struct git_call *c, json_t *v, struct refusal *why)
{
    if (!json_is_array(v) || json_array_size(v) > GIT_MAX_PATHS)
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "%s: paths must be a list of at most %u"
                      " strings", c->name, GIT_MAX_PATHS);
    for (size_t i = 0; i < json_array_size(v); i++)
        if (want_path(c, json_array_get(v, i), &c->paths[i], why) != 0)
            return -1;
    c->path_count = json_array_size(v);
    return 0;
}

static int want_int(const struct git_call *c, json_t *v, const char *what, long long lo,
                    long long hi, long long *out, struct refusal *why)
{
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "%s: %s must be an integer %lld..%lld",
                      c->name, what, lo, hi);
    *out = json_integer_value(v);
    return 0;
}

/* The options object (absent or null: none); only the keys the kind has. */
static int parse_options(struct git_call *c, json_t *o, struct refusal *why)
{
    if (o == NULL || json_is_null(o))
        return 0;
    if (!json_is_object(o))
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "%s: options must be an object", c->name);
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        int rc;
        if (strcmp(key, "rev") == 0 && c->kind != GIT_DIFF)
            rc = want_rev(c, v, "rev", &c->rev, why);
        else if (strcmp(key, "path") == 0 && c->kind == GIT_LOG)
            rc = want_path(c, v, &c->path, why);
        else if (strcmp(key, "maxCount") == 0 && c->kind == GIT_LOG)
            rc = want_int(c, v, "maxCount", 1, GIT_LOG_MAX_COUNT, &c->max_count, why);
        else if (strcmp(key, "skip") == 0 && c->kind == GIT_LOG)
            rc = want_int(c, v, "skip", 0, 1000000, &c->skip, why);
        else if (strcmp(key, "paths") == 0 && (c->kind == GIT_DIFF || c->kind == GIT_LS_FILES))
            rc = want_paths(c, v, why);
        else if (strcmp(key, "nameOnly") == 0 && c->kind == GIT_DIFF && json_is_boolean(v))
            rc = (c->name_only = json_is_true(v), 0);
        else
            rc = refuse(why, HOST_CODE_INVALID_ARGUMENTS, "%s: unknown or malformed option"
                        " '%.64s'", c->name, key);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static int parse_args(struct git_call *c, const json_t *args, struct refusal *why)
{
    size_t n = json_array_size(args);
    static const size_t MIN_ARGS[] = {[GIT_LOG] = 1, [GIT_REV_PARSE] = 2, [GIT_DESCRIBE_TAGS] = 1,
                                      [GIT_SHOW] = 2, [GIT_DIFF] = 3, [GIT_LS_FILES] = 1};
    static const size_t MAX_ARGS[] = {[GIT_LOG] = 2, [GIT_REV_PARSE] = 2, [GIT_DESCRIBE_TAGS] = 2,
                                      [GIT_SHOW] = 3, [GIT_DIFF] = 4, [GIT_LS_FILES] = 2};
    const json_t *repo = json_array_get(args, 0);
    if (!json_is_array(args) || n < MIN_ARGS[c->kind] || n > MAX_ARGS[c->kind] ||
        !json_is_string(repo))
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "%s: wrong arguments (the repository"
                      " path first, a string)", c->name);
    c->repo = json_string_value(repo);
    if (c->repo[0] != '/' || strlen(c->repo) != json_string_length(repo) ||
        json_string_length(repo) >= PATH_MAX)
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "%s: the repository must be an absolute"
                      " path without NUL", c->name);
    c->rev = "HEAD";
    c->max_count = GIT_LOG_DEFAULT_COUNT;
    switch (c->kind) {
    case GIT_LOG:
    case GIT_DESCRIBE_TAGS:
    case GIT_LS_FILES:
        return parse_options(c, json_array_get(args, 1), why);
    case GIT_REV_PARSE:
        return want_rev(c, json_array_get(args, 1), "rev", &c->rev, why);
    case GIT_SHOW:
        if (want_rev(c, json_array_get(args, 1), "rev", &c->rev, why) != 0)
            return -1;
        if (n == 3 && want_path(c, json_array_get(args, 2), &c->path, why) != 0)
            return -1;
        if (c->path != NULL && strchr(c->rev, ':') != NULL)
            return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "%s: with a path, rev may not"
                          " contain ':'", c->name);
        return 0;
    case GIT_DIFF:
        if (want_rev(c, json_array_get(args, 1), "from", &c->rev, why) != 0 ||
            want_rev(c, json_array_get(args, 2), "to", &c->rev2, why) != 0)
            return -1;
        return parse_options(c, json_array_get(args, 3), why);
    }
    return -1;
}

/* ---- the repository ----------------------------------------------------------------------- */

/* ---- the git directory's walk ------------------------------------------------------------ */

#define WALK_MAX_ENTRIES 2000000L
#define WALK_MAX_DEPTH 32
#define CONFIG_MAX (1 << 20)

/* Files of a git directory that make git read another repository's objects or refs,
 * or rewrite history from a file. */
static const char *const BORROWING[] = {
    "commondir", "objects/info/alternates", "objects/info/http-alternates", "info/grafts",
};

struct walk {
    const struct git_call *c;
    struct refusal *why;
    dev_t dev;
    long entries;
    char rel[PATH_MAX]; /* the entry's path inside the git directory */
};

/* Opens the directory name under dir_fd without crossing a mount (a bind mount of
 * the same file system included) or following a link: EXDEV or ELOOP if it would. */
static int open_subdir(int dir_fd, const char *name)
{
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH;
    return (int)syscall(SYS_openat2, dir_fd, name, &how, sizeof how);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Every entry under dir_fd (whose path in the git directory is w->rel) must be a
 * directory or regular file of the git directory's own file system; no symbolic
 * link, mount point, socket or device anywhere, no borrowing file and no promisor
 * pack. */
static int walk_dir(struct walk *w, int dir_fd, int depth)
{
    if (depth > WALK_MAX_DEPTH) {
        close(dir_fd);
        return refuse(w->why, HOST_CODE_DENIED, "%s: %s: %s is nested too deep", w->c->name,
                      w->c->gitdir, w->rel);
    }
    DIR *d = fdopendir(dir_fd); /* owns dir_fd from here */
    if (d == NULL) {
        int saved = errno;
        close(dir_fd);
        return refuse(w->why, HOST_CODE_IO_ERROR, "%s: %s/%s: %s", w->c->name, w->c->gitdir,
                      w->rel, strerror(saved));
    }
    size_t base = strlen(w->rel);
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (errno = 0, e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (++w->entries > WALK_MAX_ENTRIES) {
            rc = refuse(w->why, HOST_CODE_DENIED, "%s: %s has more than %ld entries", w->c->name,
                        w->c->gitdir, WALK_MAX_ENTRIES);
            break;
        }
        if ((size_t)snprintf(w->rel + base, sizeof w->rel - base, "%s%s", base > 0 ? "/" : "",
                             e->d_name) >= sizeof w->rel - base) {
            rc = refuse(w->why, HOST_CODE_DENIED, "%s: a path in %s is too long", w->c->name,
                        w->c->gitdir);
            break;
        }
        /* The entry's type from the directory itself where the file system gives it
         * (no stat of each of thousands of loose objects); a directory is opened (no
         * link followed) and its own device compared. A mount on a single file is not
         * seen here, but git's sandbox binds the git directory without the mounts
         * below it, so git sees the file beneath. */
        struct stat st;
        memset(&st, 0, sizeof st);
        st.st_dev = w->dev;
        int sub = -1;
        bool typed = e->d_type == DT_REG || e->d_type == DT_LNK || e->d_type == DT_DIR;
        if (e->d_type == DT_DIR) {
            sub = open_subdir(dirfd(d), e->d_name);
            st.st_mode = S_IFDIR;
            if (sub < 0 && errno == EXDEV)
                st.st_dev = (dev_t)~w->dev; /* a mount point: refused below */
            else if (sub < 0 || fstat(sub, &st) != 0)
                st.st_mode = errno == ELOOP || errno == ENOTDIR ? S_IFLNK : 0;
        } else if (typed) {
            st.st_mode = e->d_type == DT_REG ? S_IFREG : S_IFLNK;
        }
        if (!typed && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = refuse(w->why, HOST_CODE_IO_ERROR, "%s: %s/%s: %s", w->c->name, w->c->gitdir,
                        w->rel, strerror(errno));
        } else if (S_ISLNK(st.st_mode)) {
            rc = refuse(w->why, HOST_CODE_DENIED, "%s: %s/%s is a symbolic link (it could lead"
                        " out of the granted repository): refused", w->c->name, w->c->gitdir,
                        w->rel);
        } else if (st.st_dev != w->dev) {
            rc = refuse(w->why, HOST_CODE_DENIED, "%s: %s/%s is on another file system or"
                        " mount than the git directory: refused", w->c->name, w->c->gitdir,
                        w->rel);
        } else if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            rc = refuse(w->why, HOST_CODE_DENIED, "%s: %s/%s is not a directory or a regular"
                        " file: refused", w->c->name, w->c->gitdir, w->rel);
        } else if (S_ISREG(st.st_mode) && strncmp(w->rel, "objects/", 8) == 0 &&
                   (ends_with(w->rel, ".promisor") || strcmp(w->rel, "objects/info/promisor") == 0)) {
            rc = refuse(w->why, HOST_CODE_DENIED, "%s: %s is a partial clone (%s): refused,"
                        " git would fetch its missing objects from elsewhere", w->c->name,
                        w->c->gitdir, w->rel);
        } else {
            for (size_t i = 0; rc == 0 && i < sizeof BORROWING / sizeof BORROWING[0]; i++)
                if (strcmp(w->rel, BORROWING[i]) == 0)
                    rc = refuse(w->why, HOST_CODE_DENIED, "%s: %s borrows objects or refs from"
                                " another repository (%s): refused", w->c->name, w->c->gitdir,
                                w->rel);
            if (rc == 0 && S_ISDIR(st.st_mode) && sub < 0) { /* typed by fstatat */
                sub = open_subdir(dirfd(d), e->d_name);
                struct stat again;
                if (sub < 0 && errno == EXDEV)
                    rc = refuse(w->why, HOST_CODE_DENIED, "%s: %s/%s is on another file"
                                " system or mount than the git directory: refused", w->c->name,
                                w->c->gitdir, w->rel);
                else if (sub < 0 || fstat(sub, &again) != 0 || again.st_dev != st.st_dev ||
                         again.st_ino != st.st_ino)
                    rc = refuse(w->why, HOST_CODE_DENIED, "%s: %s/%s changed while it was"
                                " checked: refused", w->c->name, w->c->gitdir, w->rel);
            }
            if (rc == 0 && S_ISDIR(st.st_mode)) {
                rc = walk_dir(w, sub, depth + 1);
                sub = -1;
            }
        }
        if (sub >= 0)
            close(sub);
    }
    if (rc == 0 && errno != 0)
        rc = refuse(w->why, HOST_CODE_IO_ERROR, "%s: %s: %s", w->c->name, w->c->gitdir,
                    strerror(errno));
    closedir(d);
    w->rel[base] = '\0';
    return rc;
}

/* A config of the git directory (name: "config", "config.worktree") that makes it a
 * partial clone or includes other files is refused; what git would read from those is
 * not checked here. Matched as bytes, case-insensitively: a key or section name is a
 * run of those letters whatever else the line holds (a false match only refuses). */
static int check_config(const struct git_call *c, int dir_fd, const char *name,
                        struct refusal *why)
{
    int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? 0 : refuse(why, HOST_CODE_IO_ERROR, "%s: %s/%s: %s", c->name,
                                            c->gitdir, name, strerror(errno));
    char *text = malloc(CONFIG_MAX + 1);
    size_t len = 0;
    ssize_t n = 0;
    while (text != NULL && len < CONFIG_MAX &&
           ((n = read(fd, text + len, CONFIG_MAX - len)) > 0 || (n < 0 && errno == EINTR)))
        len += n > 0 ? (size_t)n : 0;
    char extra;
    bool too_big = text != NULL && len == CONFIG_MAX && read(fd, &extra, 1) > 0;
    close(fd);
    if (text == NULL || n < 0 || too_big) {
        free(text);
        return refuse(why, HOST_CODE_DENIED, "%s: %s/%s cannot be checked (%s): refused",
                      c->name, c->gitdir, name, too_big ? "over 1 MiB" : "unreadable");
    }
    text[len] = '\0';
    for (size_t i = 0; i < len; i++) /* NUL bytes must not end the search early */
        if (text[i] == '\0')
            text[i] = ' ';
    static const struct {
        const char *needle, *what;
    } WORDS[] = {
        {"partialclone", "a partial clone: git would fetch its missing objects from elsewhere"},
        {"promisor", "a partial clone: git would fetch its missing objects from elsewhere"},
        {"include", "it includes other config files"},
    };
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof WORDS / sizeof WORDS[0]; i++)
        if (strcasestr(text, WORDS[i].needle) != NULL)
            rc = refuse(why, HOST_CODE_DENIED, "%s: %s/%s: %s (\"%s\"): refused", c->name,
                        c->gitdir, name, WORDS[i].what, WORDS[i].needle);
    free(text);
    return rc;
}

/* Opens the git directory (no link followed) and checks all of it. */
static int check_gitdir(struct git_call *c, struct refusal *why)
{
    c->gitdir_fd = open(c->gitdir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int dir_fd = c->gitdir_fd >= 0 ? openat(c->gitdir_fd, ".", O_RDONLY | O_DIRECTORY |
                                                                 O_CLOEXEC)
                                   : -1;
    struct stat st;
    if (dir_fd < 0 || fstat(dir_fd, &st) != 0) {
        int saved = errno;
        if (dir_fd >= 0)
            close(dir_fd);
        return refuse(why, HOST_CODE_IO_ERROR, "%s: %s: %s", c->name, c->gitdir,
                      strerror(saved));
    }
    struct walk *w = malloc(sizeof *w);
    if (w == NULL) {
        close(dir_fd);
        return refuse(why, HOST_CODE_IO_ERROR, "%s: out of memory", c->name);
    }
    w->c = c;
    w->why = why;
    w->dev = st.st_dev;
    w->entries = 0;
    w->rel[0] = '\0';
    int walk_fd = dup(dir_fd);
    int rc = walk_fd >= 0 ? walk_dir(w, walk_fd, 0)
                          : refuse(why, HOST_CODE_IO_ERROR, "%s: %s: %s", c->name, c->gitdir,
                                   strerror(errno));
    free(w);
    if (rc == 0)
        rc = check_config(c, dir_fd, "config", why);
    if (rc == 0)
        rc = check_config(c, dir_fd, "config.worktree", why);
    close(dir_fd);
    return rc;
}

static int owned(const struct git_call *c, const char *path, struct refusal *why)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return refuse(why, HOST_CODE_IO_ERROR, "%s: %s: %s", c->name, path, strerror(errno));
    if (st.st_uid != geteuid())
        return refuse(why, HOST_CODE_DENIED, "%s: %s is owned by uid %u, not by the user basal"
                      " runs as (uid %u)", c->name, path, (unsigned)st.st_uid,
                      (unsigned)geteuid());
    return 0;
}

/* The repository must be exactly a granted one; decides its git directory. */
static int resolve_repo(const struct git_grants *g, struct git_call *c, struct refusal *why)
{
    char real[PATH_MAX], root[PATH_MAX];
    if (realpath(c->repo, real) == NULL)
        return refuse(why, HOST_CODE_DENIED, "%s: '%.200s' is not a granted repository", c->name,
                      c->repo);
    bool granted = false;
    for (size_t i = 0; i < g->count && !granted; i++)
        granted = realpath(g->repos[i], root) != NULL && strcmp(root, real) == 0;
    if (!granted)
        return refuse(why, HOST_CODE_DENIED, "%s: '%.200s' is not a granted repository", c->name,
                      c->repo);
    char dotgit[PATH_MAX];
    struct stat st;
    if ((size_t)snprintf(dotgit, sizeof dotgit, "%s/.git", real) >= sizeof dotgit)
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "%s: path too long", c->name);
    if (lstat(dotgit, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return refuse(why, HOST_CODE_DENIED, "%s: %s is %s, not the repository's own git"
                          " directory (a linked worktree or submodule points elsewhere: grant"
                          " the repository that holds it)", c->name, dotgit,
                          S_ISLNK(st.st_mode) ? "a symbolic link" : "a file");
        snprintf(c->gitdir, sizeof c->gitdir, "%s", dotgit);
    } else if (errno == ENOENT) {
        snprintf(c->gitdir, sizeof c->gitdir, "%s", real); /* bare */
    } else {
        return refuse(why, HOST_CODE_IO_ERROR, "%s: %s: %s", c->name, dotgit, strerror(errno));
    }
    if (owned(c, real, why) != 0 || owned(c, c->gitdir, why) != 0)
        return -1;
    return check_gitdir(c, why);
}

/* One call, parsed once: what the grant check and the run both use. */
struct git_request {
    struct git_call c;
    bool granted; /* git_builtin_grant passed (c.gitdir_fd is the checked git directory) */
};

static int refusal_out(const struct refusal *why, char *code, size_t code_cap, char *reason,
                  size_t reason_cap)
{
    snprintf(code, code_cap, "%s", why->code);
    snprintf(reason, reason_cap, "%s", why->reason);
    return -1;
}

void git_request_free(struct git_request *req)
{
    if (req == NULL)
        return;
    if (req->c.gitdir_fd >= 0)
        close(req->c.gitdir_fd);
    free(req);
}

int git_builtin_parse(const char *kind, const void *args, struct git_request **out, char *code,
                      size_t code_cap, char *reason, size_t reason_cap)
{
    *out = NULL;
    struct git_request *req = calloc(1, sizeof *req);
    struct refusal why = {HOST_CODE_IO_ERROR, "git: out of memory"};
    if (req == NULL)
        return refusal_out(&why, code, code_cap, reason, reason_cap);
    req->c.gitdir_fd = -1;
    req->c.name = kind;
    if (kind_of(kind, &req->c.kind) != 0)
        refuse(&why, HOST_CODE_INVALID_ARGUMENTS, "%.64s is not a git call", kind);
    else if (parse_args(&req->c, args, &why) == 0) {
        *out = req;
        return 0;
    }
    git_request_free(req);
    return refusal_out(&why, code, code_cap, reason, reason_cap);
}

int git_builtin_grant(const struct git_grants *grants, struct git_request *req, char *code,
                      size_t code_cap, char *reason, size_t reason_cap)
{
    struct refusal why = {NULL, ""};
    if (resolve_repo(grants, &req->c, &why) != 0)
        return refusal_out(&why, code, code_cap, reason, reason_cap);
    req->granted = true;
    return 0;
}

/* ---- running git ---------------------------------------------------------------------------- */

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static const char *git_program(void)
{
#ifdef BASAL_TEST_HOOKS
    const char *fake = getenv("BASAL_TEST_GIT_PROGRAM");
    if (fake != NULL && fake[0] == '/')
        return fake;
#endif
    static const char *const CANDIDATES[] = {"/usr/bin/git", "/usr/local/bin/git"};
    for (size_t i = 0; i < sizeof CANDIDATES / sizeof CANDIDATES[0]; i++)
        if (access(CANDIDATES[i], X_OK) == 0)
            return CANDIDATES[i];
    return NULL;
}

static long git_timeout_ms(void)
{
#ifdef BASAL_TEST_HOOKS
    const char *v = getenv("BASAL_TEST_GIT_TIMEOUT_MS");
    char *end = NULL;
    long ms = v != NULL ? strtol(v, &end, 10) : 0;
    if (v != NULL && end != v && *end == '\0' && ms > 0)
        return ms;
#endif
    return GIT_TIMEOUT_MS;
}

/* What the child reports when it cannot confine or start git (one write: atomic). */
struct start_failure {
    int err;
    char step[120];
};

static void report_failure(int fd, const char *step, int err)
{
    struct start_failure f;
    memset(&f, 0, sizeof f);
    f.err = err;
    size_t n = strlen(step);
    memcpy(f.step, step, n < sizeof f.step - 1 ? n : sizeof f.step - 1);
    (void)!write(fd, &f, sizeof f);
}

/* In the child, between fork and exec: only async-signal-safe calls. */
__attribute__((noreturn)) static void exec_git(const char *program, char *const argv[],
                                               const struct git_sandbox *sb, pid_t parent,
                                               int out_fd, int err_fd, int report_fd)
{
    /* Killed with the parent; if it already died, the signal was never armed. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127);
    thread_affinity_unpin_child(); /* not the burst's CPU for git's whole run */
    (void)setpgid(0, 0);
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
        report_failure(report_fd, "its standard streams", errno);
        _exit(127);
    }
    const char *step = "";
    int err = 0;
    if (git_sandbox_enter(sb, &step, &err) != 0) {
        report_failure(report_fd, step, err);
        _exit(126);
    }
    /* The report pipe stays open (as 3) until the exec closes it. */
    if (report_fd != 3 && dup3(report_fd, 3, O_CLOEXEC) != 3) {
        report_failure(report_fd, "its report pipe", errno);
        _exit(127);
    }
    child_run_reset_in_child(4U);
    execve(program, argv, GIT_ENV);
    report_failure(3, "the exec of git", errno);
    _exit(127);
}

/* Starts git in its sandbox. 0 (git runs), or -1 with the reason in why. */
static int spawn(const char *program, char *const argv[], const struct git_call *c,
                 struct child_run *r, long long deadline, char *why, size_t why_cap)
{
    struct git_sandbox *sb = git_sandbox_prepare(program, c->gitdir_fd, c->gitdir, why, why_cap);
    if (sb == NULL)
        return -1;
    int out[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1};
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
        pipe2(report, O_CLOEXEC) != 0) {
        snprintf(why, why_cap, "cannot start git: pipe: %s", strerror(errno));
        close_fd(&out[0]);
        close_fd(&out[1]);
        close_fd(&err[0]);
        close_fd(&err[1]);
        git_sandbox_release(sb);
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        exec_git(program, argv, sb, parent, out[1], err[1], report[1]);
    int fork_errno = errno;
    git_sandbox_release(sb);
    close_fd(&out[1]);
    close_fd(&err[1]);
    close_fd(&report[1]);
    if (pid < 0) {
        snprintf(why, why_cap, "cannot start git: fork: %s", strerror(fork_errno));
        close_fd(&out[0]);
        close_fd(&err[0]);
        close_fd(&report[0]);
        return -1;
    }
    (void)setpgid(pid, pid); /* both sides: a kill of -pid works whichever runs first */
    child_run_started(r, pid, -1, out[0], err[0]);
    /* The report pipe closes at the exec; a failure to confine comes first. */
    struct start_failure f;
    ssize_t got = -1;
    long long left;
    while ((left = deadline - monotonic_ms()) > 0) {
        struct pollfd p = {report[0], POLLIN, 0};
        int rc = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if ((rc < 0 && errno == EINTR) || rc == 0)
            continue; /* the loop's condition decides whether the deadline passed */
        if (rc > 0)
            while ((got = read(report[0], &f, sizeof f)) < 0 && errno == EINTR) {
            }
        break;
    }
    close_fd(&report[0]);
    if (got == 0)
        return 0;
    child_run_close(r);
    if (got == (ssize_t)sizeof f) {
        f.step[sizeof f.step - 1] = '\0';
        snprintf(why, why_cap, "cannot confine git: %s: %s (basal never runs git unconfined)",
                 f.step, strerror(f.err));
    } else {
        snprintf(why, why_cap, "cannot start git within the deadline");
    }
    return -1;
}

/* ---- command lines ---------------------------------------------------------------------------- */

#define ARGV_MAX (8 + 2 * GIT_CONFIG_COUNT + 24 + GIT_MAX_PATHS)

struct argv_buf {
    char *argv[ARGV_MAX];
    size_t n;
    char owned[6][PATH_MAX + GIT_REV_MAX + 64]; /* built arguments */
    size_t owned_n;
};

static void push(struct argv_buf *a, const char *s)
{
    if (a->n + 1 < ARGV_MAX)
        memcpy(&a->argv[a->n++], &s, sizeof s); /* execve's argv is not const */
    a->argv[a->n] = NULL;
}

__attribute__((format(printf, 2, 3))) static void pushf(struct argv_buf *a, const char *fmt, ...)
{
    if (a->owned_n >= sizeof a->owned / sizeof a->owned[0])
        return;
    char *slot = a->owned[a->owned_n++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(slot, sizeof a->owned[0], fmt, ap);
    va_end(ap);
    push(a, slot);
}

/* Test builds: BASAL_TEST_GIT_NO_OVERRIDES=1 leaves out every override of the
 * repository's config (the -c list and the --no-* options), to show that git's
 * sandbox alone stops what they name. */
static bool overrides_on(void)
{
#ifdef BASAL_TEST_HOOKS
    const char *off = getenv("BASAL_TEST_GIT_NO_OVERRIDES");
    if (off != NULL && strcmp(off, "1") == 0)
        return false;
#endif
    return true;
}

static void push_override(struct argv_buf *a, const char *s)
{
    if (overrides_on())
        push(a, s);
}

static void build_argv(const struct git_call *c, const char *program, struct argv_buf *a)
{
    memset(a, 0, sizeof *a);
    push(a, program);
    push_override(a, "--no-pager");
    pushf(a, "--git-dir=%s", c->gitdir);
    for (size_t i = 0; i < GIT_CONFIG_COUNT && overrides_on(); i++) {
        push(a, "-c");
        push(a, GIT_CONFIG[i]);
    }
    switch (c->kind) {
    case GIT_LOG:
        push(a, "log");
        push(a, "--no-color");
        push_override(a, "--no-show-signature");
        push(a, "--no-notes");
        push_override(a, "--no-ext-diff");
        push_override(a, "--no-textconv");
        push(a, "-z");
        push(a, "--format=%H%x00%P%x00%an%x00%ae%x00%at%x00%cn%x00%ce%x00%ct%x00%B");
        pushf(a, "--max-count=%lld", c->max_count);
        pushf(a, "--skip=%lld", c->skip);
        push(a, "--end-of-options");
        push(a, c->rev);
        push(a, "--");
        if (c->path != NULL)
            push(a, c->path);
        break;
    case GIT_REV_PARSE:
        push(a, "rev-parse");
        push(a, "--verify");
        push(a, "--quiet");
        push(a, "--end-of-options");
        push(a, c->rev);
        break;
    case GIT_DESCRIBE_TAGS:
        push(a, "describe");
        push(a, "--tags");
        push(a, "--end-of-options");
        push(a, c->rev);
        break;
    case GIT_SHOW:
        if (c->path != NULL) {
            push(a, "cat-file");
            push(a, "blob");
            push(a, "--end-of-options");
            pushf(a, "%s:%s", c->rev, c->path);
        } else {
            push(a, "show");
            push(a, "--no-color");
            push_override(a, "--no-ext-diff");
            push_override(a, "--no-textconv");
            push_override(a, "--no-show-signature");
            push(a, "--no-notes");
            push(a, "-O/dev/null");
            push(a, "--end-of-options");
            push(a, c->rev);
            push(a, "--");
        }
        break;
    case GIT_DIFF:
        push(a, "diff");
        push(a, "--no-color");
        push_override(a, "--no-ext-diff");
        push_override(a, "--no-textconv");
        push(a, "-O/dev/null");
        if (c->name_only) {
            push(a, "--name-only");
            push(a, "-z");
        }
        push(a, "--end-of-options");
        push(a, c->rev);
        push(a, c->rev2);
        push(a, "--");
        for (size_t i = 0; i < c->path_count; i++)
            push(a, c->paths[i]);
        break;
    case GIT_LS_FILES:
        push(a, "ls-tree");
        push(a, "-r");
        push(a, "-z");
        push(a, "--name-only");
        push(a, "--full-tree");
        /* ls-tree takes no "--": after --end-of-options every argument is the tree and
         * then paths (a "--" would be a path). */
        push(a, "--end-of-options");
        push(a, c->rev);
        for (size_t i = 0; i < c->path_count; i++)
            push(a, c->paths[i]);
        break;
    }
}

/* ---- results ------------------------------------------------------------------------------------ */

/* bytes[0..n) with every invalid UTF-8 sequence replaced by U+FFFD, as a JSON string. */
static json_t *lossy_string(const char *bytes, size_t n)
{
    if (utf8_valid((const uint8_t *)bytes, n))
        return json_stringn(bytes, n);
    char *buf = malloc(n * 3 + 1);
    if (buf == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned char b = (unsigned char)bytes[i];
        size_t len = b < 0x80 ? 1 : (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3
                                 : (b & 0xf8) == 0xf0 ? 4 : 0;
        if (len > 0 && i + len <= n && utf8_valid((const uint8_t *)bytes + i, len)) {
            memcpy(buf + o, bytes + i, len);
            o += len;
            i += len;
        } else {
            buf[o++] = (char)0xef; /* U+FFFD */
            buf[o++] = (char)0xbf;
            buf[o++] = (char)0xbd;
            i++;
        }
    }
    json_t *v = json_stringn(buf, o);
    free(buf);
    return v;
}

/* The NUL-terminated fields of out[0..len): pointers into out (which gets a NUL at
 * len), at most cap. Returns the count, or -1 if there are more. */
static long split_nul(char *out, size_t len, char **fields, size_t *lens, size_t cap)
{
    out[len] = '\0';
    size_t count = 0;
    for (size_t at = 0; at < len;) {
        size_t l = strlen(out + at);
        if (count == cap)
            return -1;
        fields[count] = out + at;
        lens[count++] = l;
        at += l + 1;
    }
    return (long)count;
}

static json_t *person(char **f, const size_t *l)
{
    json_t *p = json_object();
    json_t *name = lossy_string(f[0], l[0]), *email = lossy_string(f[1], l[1]);
    long long t = strtoll(f[2], NULL, 10);
    if (p == NULL || name == NULL || email == NULL ||
        json_object_set_new(p, "name", name) != 0 || json_object_set_new(p, "email", email) != 0 ||
        json_object_set_new(p, "time", json_integer(t)) != 0) {
        json_decref(p);
        return NULL;
    }
    return p;
}

#define LOG_FIELDS 9

static json_t *parse_log(struct child_run *r)
{
    size_t cap = (size_t)GIT_LOG_MAX_COUNT * LOG_FIELDS;
    char **f = calloc(cap, sizeof *f);
    size_t *l = calloc(cap, sizeof *l);
    json_t *list = json_array();
    long count = (f != NULL && l != NULL && list != NULL && r->out != NULL)
                     ? split_nul(r->out, r->out_len, f, l, cap)
                     : r->out == NULL ? 0 : -1;
    bool ok = list != NULL && count >= 0 && count % LOG_FIELDS == 0;
    for (long i = 0; ok && i < count; i += LOG_FIELDS) {
        char **c = f + i;
        size_t *cl = l + i;
        json_t *commit = json_object(), *parents = json_array();
        ok = commit != NULL && parents != NULL;
        for (char *p = c[1], *save = NULL, *tok; ok && (tok = strtok_r(p, " ", &save)) != NULL;
             p = NULL)
            ok = json_array_append_new(parents, json_string(tok)) == 0;
        json_t *author = ok ? person(c + 2, cl + 2) : NULL;
        json_t *committer = ok ? person(c + 5, cl + 5) : NULL;
        json_t *message = ok ? lossy_string(c[8], cl[8]) : NULL;
        ok = ok && author != NULL && committer != NULL && message != NULL &&
             json_object_set_new(commit, "commit", json_string(c[0])) == 0 &&
             json_object_set(commit, "parents", parents) == 0 &&
             json_object_set(commit, "author", author) == 0 &&
             json_object_set(commit, "committer", committer) == 0 &&
             json_object_set(commit, "message", message) == 0 &&
             json_array_append(list, commit) == 0;
        json_decref(commit);
        json_decref(parents);
        json_decref(author);
        json_decref(committer);
        json_decref(message);
    }
    free(f);
    free(l);
    if (!ok) {
        json_decref(list);
        return NULL;
    }
    return list;
}

static json_t *parse_names(struct child_run *r)
{
    json_t *list = json_array();
    if (list == NULL || r->out == NULL)
        return list;
    r->out[r->out_len] = '\0';
    for (size_t at = 0; at < r->out_len;) {
        size_t l = strlen(r->out + at);
        if (json_array_append_new(list, lossy_string(r->out + at, l)) != 0) {
            json_decref(list);
            return NULL;
        }
        at += l + 1;
    }
    return list;
}

/* One line of output without its newline (rev-parse, describe). */
static json_t *parse_line(struct child_run *r)
{
    size_t n = r->out_len;
    while (n > 0 && (r->out[n - 1] == '\n' || r->out[n - 1] == '\r'))
        n--;
    return lossy_string(r->out, n);
}

static int settle(const struct git_call *c, struct child_run *r, long timeout_ms,
                  struct host_settlement *out)
{
    char tail[CHILD_RUN_TAIL + 1];
    child_run_stderr_line(r, tail, sizeof tail);
    if (r->timed_out)
        return host_reject(out, HOST_CODE_TIMEOUT, "%s: git did not finish within %ld ms"
                           " (killed)", c->name, timeout_ms);
    if (r->too_large)
        return host_reject(out, HOST_CODE_TOO_LARGE, "%s: git's output is over %u bytes"
                           " (killed)", c->name, GIT_OUTPUT_MAX);
    int code = WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
    if (code != 0) {
        if (c->kind == GIT_REV_PARSE && code == 1)
            return host_reject(out, HOST_CODE_NOT_FOUND, "%s: no object named '%.64s'",
                               c->name, c->rev);
        if (c->kind == GIT_SHOW && c->path != NULL)
            return host_reject(out, HOST_CODE_NOT_FOUND, "%s: %s", c->name,
                               tail[0] != '\0' ? tail : "no such file at that revision");
        return host_reject(out, HOST_CODE_GIT_ERROR, "%s: git %s%d%s%s", c->name,
                           WIFEXITED(r->status) ? "exited " : "died by signal ",
                           WIFEXITED(r->status) ? code : WTERMSIG(r->status),
                           tail[0] != '\0' ? ": " : "", tail);
    }
    if (c->kind == GIT_SHOW && c->path != NULL) {
        if (!utf8_valid((const uint8_t *)(r->out), r->out_len))
            return host_reject(out, HOST_CODE_NOT_TEXT_GIT, "%s: %s at %s is not UTF-8 text",
                               c->name, c->path, c->rev);
        json_t *v = json_stringn(r->out, r->out_len);
        int rc = v != NULL ? host_fulfil_json(out, v) : -1;
        json_decref(v);
        return rc;
    }
    json_t *v;
    switch (c->kind) {
    case GIT_LOG:
        v = parse_log(r);
        break;
    case GIT_LS_FILES:
        v = parse_names(r);
        break;
    case GIT_DIFF:
        v = c->name_only ? parse_names(r) : lossy_string(r->out, r->out_len);
        break;
    case GIT_REV_PARSE:
    case GIT_DESCRIBE_TAGS:
        v = parse_line(r);
        break;
    default:
        v = lossy_string(r->out, r->out_len);
        break;
    }
    if (v == NULL)
        return host_reject(out, HOST_CODE_GIT_ERROR, "%s: git's output did not parse", c->name);
    int rc = host_fulfil_json(out, v);
    json_decref(v);
    return rc;
}

int git_builtin_run(struct git_request *req, long long deadline_at_ms,
                    struct host_settlement *out)
{
    struct git_call c = req->c; /* moved out: the run closes the git directory */
    const char *kind = c.name;
    req->c.gitdir_fd = -1;
    if (!req->granted || c.gitdir_fd < 0) { /* fail closed: git runs only where granted */
        close_fd(&c.gitdir_fd);
        return host_reject(out, HOST_CODE_DENIED, "%s: the repository was not granted", kind);
    }
    const char *program = git_program();
    if (program == NULL) {
        close_fd(&c.gitdir_fd);
        return host_reject(out, HOST_CODE_GIT_ERROR, "%s: git is not installed"
                           " (/usr/bin/git)", kind);
    }
    long timeout_ms = git_timeout_ms();
    long long deadline = monotonic_ms() + timeout_ms;
    if (deadline_at_ms > 0 && deadline_at_ms < deadline) {
        deadline = deadline_at_ms;
        if (deadline <= monotonic_ms()) {
            close_fd(&c.gitdir_fd);
            return host_reject(out, HOST_CODE_TIMEOUT, "%s: the activation's wall deadline"
                               " has passed", kind);
        }
    }
    struct argv_buf *a = malloc(sizeof *a);
    if (a == NULL) {
        close_fd(&c.gitdir_fd);
        return -1;
    }
    build_argv(&c, program, a);
    struct child_run r;
    if (child_run_init(&r, NULL, 0, GIT_OUTPUT_MAX) != 0) {
        close_fd(&c.gitdir_fd);
        free(a);
        return -1;
    }
    int rc;
    char why_start[REFUSAL_REASON_MAX];
    if (spawn(program, a->argv, &c, &r, deadline, why_start, sizeof why_start) != 0) {
        rc = host_reject(out, HOST_CODE_GIT_ERROR, "%s: %s", kind, why_start);
    } else {
        child_run_pump(&r, deadline);
        rc = settle(&c, &r, timeout_ms, out);
    }
    child_run_close(&r);
    close_fd(&c.gitdir_fd);
    free(a);
    return rc;
}
