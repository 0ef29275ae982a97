#include "host/fs_builtin.h"

#include "proto/utf8.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Symbolic links followed by hand while classifying a path realpath could not resolve
 * (the kernel's own limit). */
#define FS_MAX_LINK_HOPS 40
/* How much of a path a message quotes. */
#define FS_MESSAGE_PATH_BYTES 200

/* ---- roots ------------------------------------------------------------------------ */

/* The granted roots as resolved for one call. */
struct roots {
    char **real;    /* realpath of each root; NULL for one that does not resolve now */
    bool *writable; /* granted for fs.write */
    size_t count;
};

static void roots_free(struct roots *r)
{
    for (size_t i = 0; i < r->count; i++)
        free(r->real[i]);
    free(r->real);
    free(r->writable);
}

/* Resolves one root into slot i; a root that is missing or relative grants nothing. */
static int root_resolve(struct roots *r, size_t i, const char *root, bool writable)
{
    r->writable[i] = writable;
    r->real[i] = NULL;
    if (root == NULL || root[0] != '/')
        return 0;
    r->real[i] = realpath(root, NULL);
    return r->real[i] == NULL && errno == ENOMEM ? -1 : 0;
}

/* Every root is resolved again at each call: a root replaced since the last call is
 * judged by what it is now. Returns 0, or -1 out of memory. */
static int roots_resolve(const struct fs_grants *g, struct roots *r)
{
    size_t nread = g != NULL ? g->read_count : 0;
    size_t nwrite = g != NULL ? g->write_count : 0;
    r->count = 0;
    r->real = calloc(nread + nwrite + 1, sizeof *r->real);
    r->writable = calloc(nread + nwrite + 1, sizeof *r->writable);
    if (r->real == NULL || r->writable == NULL) {
        roots_free(r);
        return -1;
    }
    for (size_t i = 0; i < nread + nwrite; i++) {
        bool writable = i >= nread;
        const char *root = writable ? g->write_roots[i - nread] : g->read_roots[i];
        r->count = i + 1;
        if (root_resolve(r, i, root, writable) != 0) {
            roots_free(r);
            return -1;
        }
    }
    return 0;
}

/* Component-wise containment of two resolved paths: "/a/b" holds "/a/b" and "/a/b/c",
 * never "/a/bc". */
static bool path_is_under(const char *path, const char *root)
{
    if (strcmp(root, "/") == 0)
        return path[0] == '/';
    size_t n = strlen(root);
    return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

bool fs_root_allowed(const char *root_real, bool writable, const char *home_real, char *why,
                     size_t why_cap)
{
    struct statfs fs;
    if (writable && strcmp(root_real, "/") == 0) {
        snprintf(why, why_cap, "is the whole file system (never granted for writing)");
        return false;
    }
    if (strcmp(root_real, home_real) == 0) {
        snprintf(why, why_cap, "is basal's data home");
        return false;
    }
    if (path_is_under(home_real, root_real)) {
        snprintf(why, why_cap, "contains basal's data home");
        return false;
    }
    if (path_is_under(root_real, home_real)) {
        snprintf(why, why_cap, "lies inside basal's data home");
        return false;
    }
    if (path_is_under(root_real, "/proc") || path_is_under(root_real, "/sys")) {
        snprintf(why, why_cap, "lies under %s (fs runs in basal's own process)",
                 path_is_under(root_real, "/proc") ? "/proc" : "/sys");
        return false;
    }
    /* procfs or sysfs mounted somewhere else is the same thing by another name. */
    if (statfs(root_real, &fs) != 0) {
        snprintf(why, why_cap, "cannot be checked: %s", strerror(errno));
        return false;
    }
    if (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC) {
        snprintf(why, why_cap, "is on a %s file system (fs runs in basal's own process)",
                 fs.f_type == PROC_SUPER_MAGIC ? "proc" : "sysfs");
        return false;
    }
    return true;
}

/* The resolved root holding real (a writable one if want_write), or NULL. */
static const char *root_holding(const struct roots *r, const char *real, bool want_write)
{
    for (size_t i = 0; i < r->count; i++)
        if (r->real[i] != NULL && (!want_write || r->writable[i]) &&
            path_is_under(real, r->real[i]))
            return r->real[i];
    return NULL;
}

/* ---- resolution ------------------------------------------------------------------- */

enum resolve_status {
    RESOLVED,  /* exists; real and root set */
    OUTSIDE,   /* not under any granted root (whether or not it exists) */
    READ_ONLY, /* under a read root only, and a write root was needed */
    MISSING,   /* under a root, does not exist (err ENOENT or ENOTDIR) */
    FAILED,    /* under a root, resolution failed otherwise (err) */
};

struct resolution {
    enum resolve_status status;
    char *real;       /* malloc'd, when RESOLVED */
    const char *root; /* the resolved root holding it (points into struct roots) */
    int err;
};

static enum resolve_status placement(const struct roots *r, const char *real, bool want_write,
                                     const char **root)
{
    *root = root_holding(r, real, want_write);
    if (*root != NULL)
        return RESOLVED;
    return want_write && root_holding(r, real, false) != NULL ? READ_ONLY : OUTSIDE;
}

/* The longest leading part of path (cut at a '/') that realpath resolves, and where
 * the rest starts. "/" always resolves. */
static char *nearest_ancestor(const char *path, const char **rest)
{
    char *prefix = strdup(path);
    if (prefix == NULL)
        return NULL;
    for (;;) {
        const char *slash = strrchr(prefix, '/');
        if (slash == NULL) { /* cannot happen for an absolute path */
            free(prefix);
            errno = EINVAL;
            return NULL;
        }
        size_t cut = (size_t)(slash - prefix);
        prefix[cut == 0 ? 1 : cut] = '\0';
        char *real = realpath(prefix, NULL);
        if (real != NULL || errno == ENOMEM || cut == 0) {
            *rest = path + cut;
            free(prefix);
            return real;
        }
    }
}

/* If the component of rest just below ancestor is a symbolic link, the path it leads
 * to with the remaining components appended (malloc'd) in *next. Returns 0, or -1
 * out of memory. */
static int follow_link(const char *ancestor, const char *rest, char **next)
{
    *next = NULL;
    while (*rest == '/')
        rest++;
    int name_len = (int)strcspn(rest, "/");
    char *child = NULL;
    char *link = malloc(PATH_MAX + 1);
    const char *base = strcmp(ancestor, "/") == 0 ? "" : ancestor;
    if (link == NULL || asprintf(&child, "%s/%.*s", base, name_len, rest) < 0) {
        free(link);
        return -1;
    }
    ssize_t n = readlink(child, link, PATH_MAX);
    free(child);
    if (n > 0) {
        link[n] = '\0';
        if (asprintf(next, "%s/%s%s", link[0] == '/' ? "" : base, link, rest + name_len) < 0) {
            *next = NULL;
            free(link);
            return -1;
        }
    }
    free(link);
    return 0;
}

/* For a path realpath could not resolve (err): where its nearest existing ancestor
 * lies decides between denied and not_found, so nothing is said about paths outside
 * the roots. A dangling link just below that ancestor is to be followed by hand (its
 * target in *next), so one pointing out of the roots is denied too. Returns 0, or -1
 * out of memory. */
static int classify_unresolved(const struct roots *r, const char *path, int err,
                               bool want_write, struct resolution *res, char **next)
{
    const char *rest = NULL;
    *next = NULL;
    char *ancestor = nearest_ancestor(path, &rest);
    if (ancestor == NULL) {
        res->status = OUTSIDE;
        return errno == ENOMEM ? -1 : 0;
    }
    res->status = placement(r, ancestor, want_write, &res->root);
    int rc = 0;
    if (res->status == RESOLVED) {
        res->status = err == ENOENT || err == ENOTDIR ? MISSING : FAILED;
        res->err = err;
        rc = follow_link(ancestor, rest, next);
    }
    free(ancestor);
    return rc;
}

/* Resolves path and places it among the roots. Returns 0, or -1 out of memory. */
static int resolve(const struct roots *r, const char *path, bool want_write,
                   struct resolution *res)
{
    memset(res, 0, sizeof *res);
    char *current = strdup(path);
    for (int hops = 0; current != NULL; hops++) {
        res->real = realpath(current, NULL);
        int err = errno;
        if (res->real != NULL || err == ENOMEM) {
            free(current);
            if (res->real == NULL)
                return -1;
            res->status = placement(r, res->real, want_write, &res->root);
            if (res->status != RESOLVED) {
                free(res->real);
                res->real = NULL;
            }
            return 0;
        }
        char *next = NULL;
        int rc = classify_unresolved(r, current, err, want_write, res, &next);
        free(current);
        current = next;
        if (rc != 0)
            return -1;
        if (next != NULL && hops == FS_MAX_LINK_HOPS) {
            free(next);
            res->status = FAILED;
            res->err = ELOOP;
            return 0;
        }
        if (next == NULL)
            return 0;
    }
    return -1;
}

/* ---- opening a resolved path ---------------------------------------------------- */

/* What no opened component may be, whatever path leads there: the data home, and the
 * roots of /proc and /sys (a bind mount of one inside a granted root has another path
 * but the same device and inode). */
struct forbidden {
    dev_t dev[3];
    ino_t ino[3];
    size_t count;
    char home_real[PATH_MAX]; /* the data home, resolved ("": none to walk) */
};

/* How much of the data home home_holds walks before it gives up (and refuses). */
#define FS_HOME_WALK_DEPTH 8
#define FS_HOME_WALK_ENTRIES 20000u

/* Whether a directory inside the one open at dir_fd (which it closes) is (dev, ino).
 * What cannot be walked, or is too much to walk, counts as held: refused. */
static bool dir_holds(int dir_fd, dev_t dev, ino_t ino, int depth, unsigned *budget)
{
    DIR *d = dir_fd >= 0 ? fdopendir(dir_fd) : NULL;
    if (d == NULL) {
        if (dir_fd >= 0)
            close(dir_fd);
        return true;
    }
    bool held = false;
    const struct dirent *e;
    while (!held && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (*budget == 0 || depth == 0) {
            held = true;
            break;
        }
        (*budget)--;
        struct stat st;
        if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
            continue;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            continue;
        held = (st.st_dev == dev && st.st_ino == ino) ||
               dir_holds(openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC),
                         dev, ino, depth - 1, budget);
    }
    closedir(d);
    return held;
}

/* A mount root on the data home's device, met at or above a granted root, may be a
 * bind mount of a directory inside the data home, which no path check can see: it is
 * refused if the data home holds a directory of its device and inode. */
static bool bound_from_home(const struct forbidden *f, int fd)
{
    if (f->home_real[0] == '\0')
        return false;
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) != 0)
        return true;
    /* A kernel that cannot say whether it is a mount root: treated as one. */
    bool mount_root = (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) == 0 ||
                      (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
    if (!mount_root || makedev(sx.stx_dev_major, sx.stx_dev_minor) != f->dev[0])
        return false;
    unsigned budget = FS_HOME_WALK_ENTRIES;
    return dir_holds(open(f->home_real, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC),
                     makedev(sx.stx_dev_major, sx.stx_dev_minor), (ino_t)sx.stx_ino,
                     FS_HOME_WALK_DEPTH, &budget);
}

static void forbidden_add(struct forbidden *f, const char *path)
{
    struct stat st;
    if (path != NULL && stat(path, &st) == 0) {
        f->dev[f->count] = st.st_dev;
        f->ino[f->count] = st.st_ino;
        f->count++;
    }
}

/* The data home (resolved) and /proc and /sys as they are now. */
static void forbidden_init(struct forbidden *f, const char *home_real)
{
    memset(f, 0, sizeof *f);
    forbidden_add(f, home_real);
    if (f->count == 1) /* dev[0] is the home's */
        snprintf(f->home_real, sizeof f->home_real, "%s", home_real);
    forbidden_add(f, "/proc");
    forbidden_add(f, "/sys");
}

static bool is_forbidden(const struct forbidden *f, int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return true; /* what cannot be told apart is refused */
    for (size_t i = 0; i < f->count; i++)
        if (st.st_dev == f->dev[i] && st.st_ino == f->ino[i])
            return true;
    return false;
}

/* Why open_beneath refused a path (errno is set for OPEN_FAILED). */
enum open_refusal {
    OPEN_FAILED = 1,  /* errno: ENOENT, ELOOP (a link appeared), EXDEV (a mount), ... */
    OPEN_FORBIDDEN,   /* a component is the data home, /proc or /sys */
    OPEN_NO_OPENAT2,  /* the kernel has no openat2 (Linux < 5.6): nothing is opened */
};

static int openat2_one(int dir_fd, const char *name, int flags, bool same_mount)
{
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (unsigned long long)(flags | O_CLOEXEC);
    /* The path was resolved already: a symbolic link met now was swapped in since. */
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                  (same_mount ? RESOLVE_NO_XDEV : 0);
    /* No libc wrapper in the glibc this builds with: the system call itself. */
    long fd = syscall(SYS_openat2, dir_fd, name, &how, sizeof how);
    return (int)fd;
}

/* Opens real (resolved, under root) one component at a time from "/" with openat2:
 * no component may be a symbolic or magic link, none below root may cross a mount
 * point (a bind mount of the data home or of /proc inside a root is refused, whatever
 * its path), and none may be the data home, /proc or /sys by device and inode. The
 * last component is opened with flags. Returns the descriptor, or -1 with *why. */
static int open_beneath(const char *real, const char *root, int flags,
                        const struct forbidden *f, enum open_refusal *why)
{
    *why = OPEN_FAILED;
    size_t root_len = strcmp(root, "/") == 0 ? 0 : strlen(root);
    if (strspn(real, "/") == strlen(real))
        return open("/", flags | O_CLOEXEC); /* a root of "/" itself */
    int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    const char *p = real;
    while (fd >= 0) {
        while (*p == '/')
            p++;
        if (*p == '\0') { /* cannot happen: the last component returned */
            close(fd);
            errno = EINVAL;
            return -1;
        }
        size_t len = strcspn(p, "/");
        char name[NAME_MAX + 1];
        if (len > NAME_MAX) {
            close(fd);
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        p += len;
        bool last = strspn(p, "/") == strlen(p);
        /* Below the root, the root's own mount only; at or above it, any. */
        bool below_root = (size_t)(p - real) > root_len;
        int next = openat2_one(fd, name, last ? flags : O_PATH | O_DIRECTORY, below_root);
        int err = errno;
        close(fd);
        if (next < 0) {
            if (err == ENOSYS)
                *why = OPEN_NO_OPENAT2;
            errno = err;
            return -1;
        }
        if (is_forbidden(f, next) || (!below_root && bound_from_home(f, next))) {
            close(next);
            *why = OPEN_FORBIDDEN;
            return -1;
        }
        if (last)
            return next;
        fd = next;
    }
    return -1;
}

/* Whether the opened descriptor's own path still lies under root: a component
 * swapped for a link between the check and the open shows here. Returns 1 under,
 * 0 not under, -1 if /proc could not tell (errno set). */
static int fd_is_under(int fd, const char *root)
{
    char proc[64];
    char actual[PATH_MAX + 1];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(proc, actual, PATH_MAX);
    if (n <= 0)
        return -1;
    actual[n] = '\0';
    return path_is_under(actual, root) ? 1 : 0;
}

/* ---- the call's context and rejections --------------------------------------------- */

struct fs_call {
    const char *kind;
    const char *path;         /* as the script gave it */
    char shown[FS_MESSAGE_PATH_BYTES + 4]; /* path for messages: cut, control bytes '?' */
    struct roots roots;
    struct forbidden forbidden; /* set by refuse_forbidden_roots */
    const char *temp_tag; /* fs.write's temporary files (NULL: none) */
    struct host_settlement *out;
    bool check_only;  /* fs.write of a dry run: every check, no write */
    bool would_write; /* check_only: every check passed */
    /* What parsing read and authorizing decided, for the operation. */
    const json_t *text;     /* fs.write's text */
    const char *name;       /* fs.write's final component */
    size_t limit;           /* fs.read's maxBytes */
    struct resolution res;  /* the path (fs.write: its directory) placed among the roots */
    bool authorized;        /* under a granted root, every root allowed: may be performed */
};

/* path for a message into shown (FS_MESSAGE_PATH_BYTES + 4): cut, control bytes '?'. */
static void show_text(char *shown, const char *path)
{
    size_t len = strlen(path);
    size_t keep = utf8_truncate((const uint8_t *)path, len, FS_MESSAGE_PATH_BYTES);
    for (size_t i = 0; i < keep; i++) {
        shown[i] = path[i];
        if ((unsigned char)shown[i] < 0x20 || shown[i] == 0x7f)
            shown[i] = '?';
    }
    memcpy(shown + keep, keep < len ? "..." : "", keep < len ? 4 : 1);
}

static void show_path(struct fs_call *c)
{
    show_text(c->shown, c->path);
}

static int reject_errno(struct fs_call *c, const char *what, int err)
{
    return host_reject(c->out, HOST_CODE_IO_ERROR, "%s: %s '%s': %s", c->kind, what, c->shown,
                       strerror(err));
}

/* The rejection for a path that did not resolve under a root. */
static int reject_placement(struct fs_call *c, const struct resolution *res)
{
    switch (res->status) {
    case OUTSIDE:
        return host_reject(c->out, HOST_CODE_DENIED, "%s: '%s' is outside the granted roots",
                           c->kind, c->shown);
    case READ_ONLY:
        return host_reject(c->out, HOST_CODE_DENIED,
                           "%s: '%s' is under a read-only root (not granted for writing)",
                           c->kind, c->shown);
    case MISSING:
        return host_reject(c->out, HOST_CODE_NOT_FOUND, "%s: '%s' does not exist: %s", c->kind,
                           c->shown, strerror(res->err));
    default:
        return reject_errno(c, "cannot resolve", res->err);
    }
}

static int reject_swapped(struct fs_call *c)
{
    return host_reject(c->out, HOST_CODE_DENIED,
                       "%s: '%s' changed while being opened and now leads out of its root",
                       c->kind, c->shown);
}

static int fulfil_and_free(struct host_settlement *out, json_t *value)
{
    if (value == NULL)
        return -1;
    int rc = host_fulfil_json(out, value);
    json_decref(value);
    return rc;
}

/* ---- roots that are never granted -------------------------------------------------- */

/* Every granted root as it resolves now, against the data home as it resolves now
 * (fs_root_allowed): a root replaced by a link, or a data home moved under a root,
 * since the manifest was approved is caught here. Returns 0 if every root may be used,
 * 1 after settling the call as denied, -1 out of memory. */
static int refuse_forbidden_roots(struct fs_call *c, const char *home)
{
    char *home_real = home != NULL ? realpath(home, NULL) : NULL;
    if (home_real == NULL) {
        if (home != NULL && errno == ENOMEM)
            return -1;
        return host_reject(c->out, HOST_CODE_DENIED,
                           "%s: basal's data home cannot be resolved, so no fs call is served",
                           c->kind) == 0 ? 1 : -1;
    }
    forbidden_init(&c->forbidden, home_real);
    int rc = 0;
    for (size_t i = 0; i < c->roots.count && rc == 0; i++) {
        char why[128], shown[FS_MESSAGE_PATH_BYTES + 4];
        const char *root = c->roots.real[i];
        if (root == NULL || fs_root_allowed(root, c->roots.writable[i], home_real, why, sizeof why))
            continue;
        show_text(shown, root);
        rc = host_reject(c->out, HOST_CODE_DENIED,
                         "%s: the granted %s root '%s' %s; no fs call is served while it is "
                         "granted", c->kind, c->roots.writable[i] ? "write" : "read", shown,
                         why) == 0 ? 1 : -1;
    }
    free(home_real);
    return rc;
}

/* ---- arguments -------------------------------------------------------------------- */

/* The path argument: an absolute string without NUL, shorter than PATH_MAX. */
static const char *path_arg(const json_t *args, const char **why)
{
    const json_t *v = json_array_get(args, 0);
    *why = "the path must be a string";
    if (!json_is_string(v))
        return NULL;
    const char *path = json_string_value(v);
    size_t len = json_string_length(v);
    *why = "the path contains a NUL character";
    if (memchr(path, '\0', len) != NULL)
        return NULL;
    *why = "the path is longer than PATH_MAX";
    if (len >= PATH_MAX)
        return NULL;
    *why = "the path must be absolute";
    return path[0] == '/' ? path : NULL;
}

static int reject_args(struct fs_call *c, const char *usage, const char *why)
{
    return host_reject(c->out, HOST_CODE_INVALID_ARGUMENTS, "%s takes %s: %s", c->kind, usage,
                       why);
}

/* fs.read's options: null/absent, or {maxBytes: integer 1..FS_READ_MAX_BYTES}. Returns
 * the limit, or 0 (why set) if the options are malformed. */
static size_t read_limit(const json_t *options, const char **why)
{
    *why = "the options must be an object {maxBytes}";
    if (options == NULL || json_is_null(options))
        return FS_READ_DEFAULT_BYTES;
    if (!json_is_object(options))
        return 0;
    const json_t *value = json_object_get(options, "maxBytes");
    *why = "the only option is maxBytes";
    if (json_object_size(options) != (value != NULL ? 1u : 0u))
        return 0;
    _Static_assert(FS_READ_MAX_BYTES == 8388608, "the message below states the maximum");
    *why = "maxBytes must be an integer from 1 to 8388608";
    if (value == NULL)
        return FS_READ_DEFAULT_BYTES;
    double n = json_is_number(value) ? json_number_value(value) : 0;
    if (!(n >= 1 && n <= (double)FS_READ_MAX_BYTES) || floor(n) != n)
        return 0;
    return (size_t)n;
}

/* ---- fs.read ---------------------------------------------------------------------- */

/* Reads at most limit + 1 bytes of fd (one more shows a file that grew past it). */
static int read_up_to(int fd, char *buf, size_t limit, size_t *got)
{
    *got = 0;
    while (*got <= limit) {
        ssize_t n = read(fd, buf + *got, limit + 1 - *got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        *got += (size_t)n;
    }
    return 0;
}

/* Reads the regular file behind the O_PATH descriptor fd and fulfils with its text. */
static int read_contents(struct fs_call *c, int path_fd, size_t limit)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", path_fd);
    /* Reopening through the descriptor reaches the inode already checked. */
    int fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return reject_errno(c, "cannot open", errno);
    char *buf = malloc(limit + 1);
    if (buf == NULL) {
        close(fd);
        return -1;
    }
    size_t got = 0;
    int rc = read_up_to(fd, buf, limit, &got);
    int err = errno;
    close(fd);
    if (rc != 0)
        rc = reject_errno(c, "cannot read", err);
    else if (got > limit)
        rc = host_reject(c->out, HOST_CODE_TOO_LARGE, "%s: '%s' is larger than %zu bytes",
                         c->kind, c->shown, limit);
    else if (!utf8_valid((const uint8_t *)buf, got))
        rc = host_reject(c->out, HOST_CODE_NOT_TEXT, "%s: '%s' is not valid UTF-8 text",
                         c->kind, c->shown);
    else
        rc = fulfil_and_free(c->out, json_stringn(buf, got));
    free(buf);
    return rc;
}

/* The rejection for a failed open of a resolved path. */
static int reject_open(struct fs_call *c, int err, int flags)
{
    if (err == ENOENT)
        return host_reject(c->out, HOST_CODE_NOT_FOUND, "%s: '%s' does not exist", c->kind,
                           c->shown);
    if (err == ELOOP) /* a component became a link since resolution */
        return reject_swapped(c);
    if (err == EXDEV)
        return host_reject(c->out, HOST_CODE_DENIED,
                           "%s: '%s' lies across a mount point below its root (mounts below a "
                           "granted root are not traversed)", c->kind, c->shown);
    if (err == ENOTDIR && (flags & O_DIRECTORY) != 0)
        return host_reject(c->out, HOST_CODE_INVALID_ARGUMENTS, "%s: '%s' is not a directory",
                           c->kind, c->shown);
    return reject_errno(c, "cannot open", err);
}

/* Opens the resolved path without following a final link and checks the descriptor
 * is still under the root. With O_PATH nothing is opened for reading yet, so a FIFO
 * or device has no effect. Returns the fd, or -1 after settling (*rc holds that
 * settlement's result). */
static int open_checked(struct fs_call *c, const struct resolution *res, int flags, int *rc)
{
    enum open_refusal why;
    int fd = open_beneath(res->real, res->root, flags, &c->forbidden, &why);
    if (fd < 0 && why == OPEN_NO_OPENAT2) {
        /* Without openat2 a mount or link inside a root cannot be refused: no call. */
        *rc = host_reject(c->out, HOST_CODE_DENIED,
                          "%s: this kernel has no openat2 (Linux 5.6 or later is needed), so "
                          "no fs call is served", c->kind);
        return -1;
    }
    if (fd < 0 && why == OPEN_FORBIDDEN) {
        *rc = host_reject(c->out, HOST_CODE_DENIED,
                          "%s: '%s' leads to basal's data home, /proc or /sys (by a mount or "
                          "another path)", c->kind, c->shown);
        return -1;
    }
    if (fd < 0) {
        *rc = reject_open(c, errno, flags);
        return -1;
    }
    int under = fd_is_under(fd, res->root);
    if (under == 1)
        return fd;
    int err = errno;
    close(fd);
    *rc = under == 0 ? reject_swapped(c) : reject_errno(c, "cannot check the opened path of", err);
    return -1;
}

static int do_read(struct fs_call *c, const struct resolution *res, size_t limit)
{
    int rc = 0;
    int fd = open_checked(c, res, O_PATH, &rc);
    if (fd < 0)
        return rc;
    struct stat st;
    if (fstat(fd, &st) != 0)
        rc = reject_errno(c, "cannot stat", errno);
    else if (S_ISDIR(st.st_mode))
        rc = host_reject(c->out, HOST_CODE_INVALID_ARGUMENTS, "%s: '%s' is a directory",
                         c->kind, c->shown);
    else if (!S_ISREG(st.st_mode))
        rc = host_reject(c->out, HOST_CODE_INVALID_ARGUMENTS,
                         "%s: '%s' is not a regular file", c->kind, c->shown);
    else if ((unsigned long long)st.st_size > limit)
        rc = host_reject(c->out, HOST_CODE_TOO_LARGE, "%s: '%s' is larger than %zu bytes",
                         c->kind, c->shown, limit);
    else
        rc = read_contents(c, fd, limit);
    close(fd);
    return rc;
}

/* ---- fs.stat ---------------------------------------------------------------------- */

static const char *type_name(mode_t mode)
{
    return S_ISREG(mode) ? "file" : S_ISDIR(mode) ? "directory" : S_ISLNK(mode) ? "symlink"
                                                                                : "other";
}

static int do_stat(struct fs_call *c, const struct resolution *res)
{
    int rc = 0;
    int fd = open_checked(c, res, O_PATH, &rc);
    if (fd < 0)
        return rc;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = reject_errno(c, "cannot stat", errno);
    } else {
        long long mtime_ms = (long long)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
        rc = fulfil_and_free(c->out, json_pack("{s:s, s:I, s:I}", "type", type_name(st.st_mode),
                                               "size", (json_int_t)st.st_size, "mtimeMs",
                                               (json_int_t)mtime_ms));
    }
    close(fd);
    return rc;
}

/* ---- fs.list ---------------------------------------------------------------------- */

struct listing {
    char **names;
    const char **types;
    size_t count;
};

static void listing_free(struct listing *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->names[i]);
    free(l->names);
    free(l->types);
}

static const char *entry_type(int dir_fd, const struct dirent *e)
{
    switch (e->d_type) {
    case DT_REG:
        return "file";
    case DT_DIR:
        return "directory";
    case DT_LNK:
        return "symlink";
    case DT_UNKNOWN:
        break;
    default:
        return "other";
    }
    struct stat st;
    return fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? type_name(st.st_mode)
                                                                     : "other";
}

enum list_result { LIST_OK, LIST_OOM, LIST_TOO_MANY, LIST_NOT_TEXT, LIST_ERRNO };

/* Reads every entry but "." and ".." of dir into l. */
static enum list_result read_entries(DIR *dir, struct listing *l)
{
    l->names = calloc(FS_LIST_MAX_ENTRIES, sizeof *l->names);
    l->types = calloc(FS_LIST_MAX_ENTRIES, sizeof *l->types);
    if (l->names == NULL || l->types == NULL)
        return LIST_OOM;
    for (;;) {
        errno = 0;
        const struct dirent *e = readdir(dir);
        if (e == NULL)
            return errno == 0 ? LIST_OK : LIST_ERRNO;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (l->count == FS_LIST_MAX_ENTRIES)
            return LIST_TOO_MANY;
        /* A JSON string must be UTF-8; such a name cannot be returned faithfully. */
        if (!utf8_valid((const uint8_t *)e->d_name, strlen(e->d_name)))
            return LIST_NOT_TEXT;
        l->names[l->count] = strdup(e->d_name);
        if (l->names[l->count] == NULL)
            return LIST_OOM;
        l->types[l->count] = entry_type(dirfd(dir), e);
        l->count++;
    }
}

/* Sorts by name, bytewise (strcmp compares as unsigned char), carrying the types. */
struct named_type {
    char *name;
    const char *type;
};

static int compare_names(const void *a, const void *b)
{
    return strcmp(((const struct named_type *)a)->name, ((const struct named_type *)b)->name);
}

static json_t *listing_json(struct listing *l)
{
    struct named_type *sorted = calloc(l->count + 1, sizeof *sorted);
    json_t *list = json_array();
    if (sorted == NULL || list == NULL) {
        free(sorted);
        json_decref(list);
        return NULL;
    }
    for (size_t i = 0; i < l->count; i++)
        sorted[i] = (struct named_type){l->names[i], l->types[i]};
    qsort(sorted, l->count, sizeof *sorted, compare_names);
    for (size_t i = 0; i < l->count; i++) {
        json_t *item = json_pack("{s:s, s:s}", "name", sorted[i].name, "type", sorted[i].type);
        if (item == NULL || json_array_append_new(list, item) != 0) {
            json_decref(list);
            list = NULL;
            break;
        }
    }
    free(sorted);
    return list;
}

static int settle_listing(struct fs_call *c, enum list_result result, int err,
                          struct listing *l)
{
    switch (result) {
    case LIST_OK:
        return fulfil_and_free(c->out, listing_json(l));
    case LIST_TOO_MANY:
        return host_reject(c->out, HOST_CODE_TOO_LARGE, "%s: '%s' has more than %u entries",
                           c->kind, c->shown, FS_LIST_MAX_ENTRIES);
    case LIST_NOT_TEXT:
        return host_reject(c->out, HOST_CODE_NOT_TEXT,
                           "%s: '%s' holds a name that is not valid UTF-8", c->kind, c->shown);
    case LIST_ERRNO:
        return reject_errno(c, "cannot read directory", err);
    default:
        return -1;
    }
}

static int do_list(struct fs_call *c, const struct resolution *res)
{
    int rc = 0;
    int fd = open_checked(c, res, O_RDONLY | O_DIRECTORY, &rc);
    if (fd < 0)
        return rc;
    DIR *dir = fdopendir(fd);
    if (dir == NULL) {
        int err = errno;
        close(fd);
        return err == ENOMEM ? -1 : reject_errno(c, "cannot read directory", err);
    }
    struct listing l = {NULL, NULL, 0};
    enum list_result result = read_entries(dir, &l);
    int err = errno;
    closedir(dir);
    rc = settle_listing(c, result, err, &l);
    listing_free(&l);
    return rc;
}

/* ---- fs.write --------------------------------------------------------------------- */

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

#define TEMP_PREFIX ".basal-tmp-"
#define TEMP_RANDOM_HEX 16
#define TEMP_TAG_MAX 64
/* ".basal-tmp-" tag "-" 16 hex digits and the NUL. */
#define TEMP_NAME_CAP (sizeof TEMP_PREFIX + TEMP_TAG_MAX + 1 + TEMP_RANDOM_HEX + 1)

/* A tag is 1-64 lowercase hex digits (an idempotency key): nothing else reaches a name. */
static bool tag_valid(const char *tag)
{
    size_t n = tag != NULL ? strlen(tag) : 0;
    if (n == 0 || n > TEMP_TAG_MAX)
        return false;
    return strspn(tag, "0123456789abcdef") == n;
}

/* A fresh temporary name in the target's directory: ".basal-tmp-", the tag and '-'
 * when there is one, and 16 random hex digits. */
static int temp_name(char *name, size_t cap, const char *tag)
{
    uint64_t bits = 0;
    if (getrandom(&bits, sizeof bits, 0) != (ssize_t)sizeof bits)
        return -1;
    if (tag_valid(tag))
        snprintf(name, cap, TEMP_PREFIX "%s-%016llx", tag, (unsigned long long)bits);
    else
        snprintf(name, cap, TEMP_PREFIX "%016llx", (unsigned long long)bits);
    return 0;
}

/* Creates a temporary file in dir_fd: O_EXCL with a random name, so nothing already
 * there (a planted link) is ever opened. Returns the fd, or -1 with errno set. */
static int create_temp(int dir_fd, char *tmp, size_t cap, const char *tag)
{
    for (int attempt = 0; attempt < 8; attempt++) {
        if (temp_name(tmp, cap, tag) != 0)
            return -1;
        int fd = openat(dir_fd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

/* Writes text into the temporary file fd and closes it, durably. Returns 0, or -1
 * with errno set and *what naming the failed step. */
static int fill_temp(int fd, const char *text, size_t len, const char **what)
{
    *what = "cannot write";
    int rc = write_all(fd, text, len);
    if (rc == 0) {
        *what = "cannot sync";
        rc = fsync(fd);
    }
    int err = errno;
    if (close(fd) != 0 && rc == 0) {
        *what = "cannot close";
        return -1;
    }
    errno = err;
    return rc;
}

/* Writes text to a temporary file in dir_fd, syncs it, renames it over name and syncs
 * the directory. On failure the temporary file is removed; errno says why and *what
 * names the failed step. */
static int replace_atomically(int dir_fd, const char *name, const char *text, size_t len,
                              const char *tag, const char **what)
{
    char tmp[TEMP_NAME_CAP];
    *what = "cannot create a temporary file for";
    int fd = create_temp(dir_fd, tmp, sizeof tmp, tag);
    if (fd < 0)
        return -1;
    int rc = fill_temp(fd, text, len, what);
    if (rc == 0) {
        *what = "cannot rename over";
        rc = renameat(dir_fd, tmp, dir_fd, name);
    }
    if (rc != 0) {
        int err = errno;
        (void)unlinkat(dir_fd, tmp, 0);
        errno = err;
        return -1;
    }
    *what = "cannot sync the directory of";
    return fsync(dir_fd);
}

/* The final component of path (after the last '/'), which must name an entry. */
static const char *final_name(const char *path)
{
    const char *name = strrchr(path, '/') + 1;
    if (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
        strlen(name) > NAME_MAX)
        return NULL;
    return name;
}

/* The existing target, if any, must be a regular file: a link or anything else is
 * refused (rename would replace a link itself, but refusing it keeps the rule plain). */
static int check_target(struct fs_call *c, int dir_fd, const char *name, bool *ok)
{
    struct stat st;
    *ok = false;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) {
            *ok = true;
            return 0;
        }
        return reject_errno(c, "cannot stat", errno);
    }
    if (S_ISREG(st.st_mode)) {
        *ok = true;
        return 0;
    }
    return host_reject(c->out, HOST_CODE_DENIED, "%s: '%s' exists and is a %s, not a file",
                       c->kind, c->shown,
                       S_ISLNK(st.st_mode) ? "symbolic link" : "non-regular file");
}

static int write_in(struct fs_call *c, int dir_fd, const char *name, const json_t *text)
{
    bool ok = false;
    int rc = check_target(c, dir_fd, name, &ok);
    if (!ok)
        return rc;
    if (c->check_only) {
        c->would_write = true;
        return 0;
    }
    size_t len = json_string_length(text);
    const char *what = NULL;
    if (replace_atomically(dir_fd, name, json_string_value(text), len, c->temp_tag, &what) != 0)
        return reject_errno(c, what, errno);
    return fulfil_and_free(c->out, json_pack("{s:I}", "bytes", (json_int_t)len));
}

/* The directory was authorized (c->res); the target is checked at the open. */
static int do_write(struct fs_call *c)
{
    int rc = 0;
    int dir_fd = open_checked(c, &c->res, O_RDONLY | O_DIRECTORY, &rc);
    if (dir_fd < 0)
        return rc;
    rc = write_in(c, dir_fd, c->name, c->text);
    close(dir_fd);
    return rc;
}

/* ---- the three steps: parse, authorize, perform ----------------------------------- */

static bool is_write(const char *kind)
{
    return strcmp(kind, "fs.write") == 0;
}

static bool fs_kind(const char *kind)
{
    return strcmp(kind, "fs.read") == 0 || strcmp(kind, "fs.list") == 0 ||
           strcmp(kind, "fs.stat") == 0 || is_write(kind);
}

static const char *usage_of(const char *kind)
{
    if (strcmp(kind, "fs.read") == 0)
        return "[path] or [path, {maxBytes}]";
    if (strcmp(kind, "fs.write") == 0)
        return "[path, text]";
    return "[path]";
}

static bool arg_count_ok(const char *kind, size_t n)
{
    if (strcmp(kind, "fs.read") == 0)
        return n == 1 || n == 2;
    return n == (is_write(kind) ? 2u : 1u);
}

/* 1 after a rejection was made (rc its result 0), -1 if none could be. */
static int settled(int rc)
{
    return rc == 0 ? 1 : -1;
}

/* The arguments alone, touching nothing: 0, 1 after settling the call, -1. */
static int parse_call(struct fs_call *c, const char *kind, const json_t *list)
{
    c->kind = kind;
    c->path = "";
    c->limit = FS_READ_DEFAULT_BYTES;
    const char *why = "the arguments must be an array";
    if (!fs_kind(kind))
        return settled(host_reject(c->out, HOST_CODE_DENIED, "'%.100s' is not a file-system"
                                   " call", kind));
    if (!json_is_array(list))
        return settled(reject_args(c, usage_of(kind), why));
    why = "wrong number of arguments";
    if (!arg_count_ok(kind, json_array_size(list)) || (c->path = path_arg(list, &why)) == NULL)
        return settled(reject_args(c, usage_of(kind), why));
    show_path(c);
    c->text = json_array_get(list, 1);
    if (strcmp(kind, "fs.read") == 0 &&
        (c->limit = read_limit(json_array_get(list, 1), &why)) == 0)
        return settled(reject_args(c, usage_of(kind), why));
    if (!is_write(kind))
        return 0;
    if (!json_is_string(c->text))
        return settled(reject_args(c, usage_of(kind), "the text must be a string"));
    if ((c->name = final_name(c->path)) == NULL)
        return settled(host_reject(c->out, HOST_CODE_INVALID_ARGUMENTS,
                                   "%s: '%s' does not end in a file name", c->kind, c->shown));
    if (json_string_length(c->text) > FS_WRITE_MAX_BYTES)
        return settled(host_reject(c->out, HOST_CODE_TOO_LARGE, "%s: the text for '%s' is over"
                                   " %u bytes", c->kind, c->shown, FS_WRITE_MAX_BYTES));
    return 0;
}

/* The grant decision: every granted root allowed as it resolves now (the data home,
 * /proc, /sys), and the path (fs.write: its directory) under a root that grants the
 * call. 0 (c->authorized), 1 after settling the call as denied, -1. A path under a
 * root that does not exist (or does not resolve) is authorized: the operation says
 * not_found (or io_error), as it learns nothing outside the grants. */
static int authorize_call(struct fs_call *c, const struct fs_grants *grants)
{
    if (roots_resolve(grants, &c->roots) != 0)
        return -1;
    int rc = refuse_forbidden_roots(c, grants != NULL ? grants->home : NULL);
    if (rc != 0)
        return rc;
    char *parent = NULL;
    if (is_write(c->kind)) {
        size_t dir_len = (size_t)(c->name - c->path);
        if ((parent = strndup(c->path, dir_len > 1 ? dir_len - 1 : dir_len)) == NULL)
            return -1;
    }
    rc = resolve(&c->roots, parent != NULL ? parent : c->path, is_write(c->kind), &c->res);
    free(parent);
    if (rc != 0)
        return -1;
    if (c->res.status == OUTSIDE || c->res.status == READ_ONLY)
        return settled(reject_placement(c, &c->res));
    c->authorized = true;
    return 0;
}

/* The operation on what was authorized; the opening (openat2, component by component,
 * the data home, /proc and /sys refused by device and inode, the opened path checked
 * again) guards against a path changed since the decision. */
static int perform_call(struct fs_call *c)
{
    if (!c->authorized) /* fail closed: never an unauthorized path */
        return host_reject(c->out, HOST_CODE_DENIED, "%s: '%s' was not authorized", c->kind,
                           c->shown);
    if (c->res.status != RESOLVED)
        return reject_placement(c, &c->res);
    if (is_write(c->kind))
        return do_write(c);
    return strcmp(c->kind, "fs.read") == 0   ? do_read(c, &c->res, c->limit)
           : strcmp(c->kind, "fs.list") == 0 ? do_list(c, &c->res)
                                             : do_stat(c, &c->res);
}

static void call_release(struct fs_call *c)
{
    roots_free(&c->roots);
    free(c->res.real);
    c->res.real = NULL;
    memset(&c->roots, 0, sizeof c->roots);
}

/* The three steps at once, every rejection into out. */
static int fs_call_run(const struct fs_grants *grants, const char *kind, const void *args,
                       struct host_settlement *out, bool check_only, bool *would_write)
{
    struct fs_call c;
    memset(&c, 0, sizeof c);
    c.out = out;
    c.temp_tag = grants != NULL ? grants->temp_tag : NULL;
    c.check_only = check_only;
    int rc = parse_call(&c, kind, args);
    if (rc == 0)
        rc = authorize_call(&c, grants);
    if (rc == 0)
        rc = perform_call(&c);
    call_release(&c);
    if (would_write != NULL)
        *would_write = c.would_write;
    return rc < 0 ? -1 : 0;
}

/* ---- one call's request, from the decision to the operation ------------------------ */

struct fs_request {
    struct fs_call c;
};

void fs_request_free(struct fs_request *req)
{
    if (req == NULL)
        return;
    call_release(&req->c);
    free(req);
}

/* A rejection settled into s, as the decision's code and reason. */
static int refusal_of(struct host_settlement *s, int rc, char *code, size_t code_cap,
                      char *reason, size_t reason_cap)
{
    const char *message = "out of memory";
    json_t *v = rc > 0 && s->value != NULL ? json_loads(s->value, 0, NULL) : NULL;
    const char *c = json_string_value(json_object_get(v, "code"));
    const char *m = json_string_value(json_object_get(v, "message"));
    snprintf(code, code_cap, "%s", c != NULL ? c : HOST_CODE_IO_ERROR);
    snprintf(reason, reason_cap, "%s", m != NULL ? m : message);
    json_decref(v);
    host_settlement_free(s);
    return -1;
}

int fs_builtin_parse(const char *kind, const void *args, struct fs_request **out, char *code,
                     size_t code_cap, char *reason, size_t reason_cap)
{
    *out = NULL;
    struct host_settlement s = {PROTO_SETTLEMENT_REJECTED, NULL};
    struct fs_request *req = calloc(1, sizeof *req);
    if (req == NULL)
        return refusal_of(&s, -1, code, code_cap, reason, reason_cap);
    req->c.out = &s;
    int rc = parse_call(&req->c, kind, args);
    req->c.out = NULL;
    if (rc != 0) {
        fs_request_free(req);
        return refusal_of(&s, rc, code, code_cap, reason, reason_cap);
    }
    *out = req;
    return 0;
}

int fs_builtin_authorize(const struct fs_grants *grants, struct fs_request *req, char *code,
                         size_t code_cap, char *reason, size_t reason_cap)
{
    struct host_settlement s = {PROTO_SETTLEMENT_REJECTED, NULL};
    req->c.out = &s;
    int rc = authorize_call(&req->c, grants);
    req->c.out = NULL;
    return rc == 0 ? 0 : refusal_of(&s, rc, code, code_cap, reason, reason_cap);
}

int fs_builtin_perform(struct fs_request *req, const char *temp_tag, bool check_only,
                       struct host_settlement *out, bool *would_write)
{
    req->c.out = out;
    req->c.temp_tag = temp_tag;
    req->c.check_only = check_only;
    req->c.would_write = false;
    if (check_only)
        out->value = NULL;
    int rc = perform_call(&req->c);
    req->c.out = NULL;
    if (would_write != NULL)
        *would_write = req->c.would_write;
    return rc < 0 ? -1 : 0;
}

/* ---- leftovers of an interrupted fs.write ------------------------------------------ */

/* name is exactly TEMP_PREFIX tag "-" and 16 hex digits. */
static bool is_temp_of(const char *name, const char *tag)
{
    size_t prefix = strlen(TEMP_PREFIX), tag_len = strlen(tag);
    if (strncmp(name, TEMP_PREFIX, prefix) != 0 || strncmp(name + prefix, tag, tag_len) != 0 ||
        name[prefix + tag_len] != '-')
        return false;
    const char *random = name + prefix + tag_len + 1;
    return strlen(random) == TEMP_RANDOM_HEX &&
           strspn(random, "0123456789abcdef") == TEMP_RANDOM_HEX;
}

/* Unlinks every regular file of dir_fd that is a temporary of tag. */
static int remove_tagged(int dir_fd, const char *tag)
{
    int list_fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = list_fd >= 0 ? fdopendir(list_fd) : NULL;
    if (dir == NULL) {
        int err = errno;
        if (list_fd >= 0)
            close(list_fd);
        errno = err;
        return -1;
    }
    int removed = 0;
    const struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        struct stat st;
        if (!is_temp_of(e->d_name, tag) ||
            fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        /* unlinkat never follows a link: had the name just become one, the link
         * itself would go, never what it points to. */
        if (unlinkat(dir_fd, e->d_name, 0) == 0)
            removed++;
    }
    closedir(dir);
    return removed;
}

int fs_builtin_remove_temporaries(const struct fs_grants *grants, const char *path,
                                  const char *tag)
{
    if (!tag_valid(tag) || path == NULL || path[0] != '/' || strlen(path) >= PATH_MAX ||
        final_name(path) == NULL) {
        errno = EINVAL;
        return -1;
    }
    const char *name = final_name(path);
    size_t dir_len = (size_t)(name - path);
    char *parent = strndup(path, dir_len > 1 ? dir_len - 1 : dir_len);
    struct roots roots;
    if (parent == NULL || roots_resolve(grants, &roots) != 0) {
        free(parent);
        errno = ENOMEM;
        return -1;
    }
    struct resolution res;
    int rc = resolve(&roots, parent, true, &res);
    free(parent);
    if (rc != 0) {
        roots_free(&roots);
        errno = ENOMEM;
        return -1;
    }
    int removed = 0;
    if (res.status == RESOLVED) { /* else: not under a write root now, nothing of ours */
        char *home_real = grants != NULL && grants->home != NULL ? realpath(grants->home, NULL)
                                                                 : NULL;
        struct forbidden f;
        forbidden_init(&f, home_real);
        enum open_refusal why;
        /* No data home to tell apart: nothing is opened (as no call is served). */
        int dir_fd = home_real == NULL ? -1
                                       : open_beneath(res.real, res.root, O_RDONLY | O_DIRECTORY,
                                                      &f, &why);
        free(home_real);
        if (dir_fd >= 0 && fd_is_under(dir_fd, res.root) == 1)
            removed = remove_tagged(dir_fd, tag);
        if (dir_fd >= 0)
            close(dir_fd);
    }
    free(res.real);
    roots_free(&roots);
    return removed;
}

int fs_builtin_call(const struct fs_grants *grants, const char *kind, const void *args,
                    struct host_settlement *out)
{
    return fs_call_run(grants, kind, args, out, false, NULL);
}

int fs_builtin_check_write(const struct fs_grants *grants, const void *args,
                           struct host_settlement *out, bool *would_write)
{
    *would_write = false;
    out->value = NULL;
    return fs_call_run(grants, "fs.write", args, out, true, would_write);
}
