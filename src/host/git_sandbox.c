/* git's confinement: namespaces, a read-only root of its own and Landlock
 * (git_sandbox.h has the contract). Everything that needs allocation, formatting or
 * the real filesystem's names is done in the parent (git_sandbox_prepare); the child
 * only makes system calls on what the plan holds. */
#include "host/git_sandbox.h"
#include "base/user_ns_map.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h> /* ElfW: the ELF types of this machine's word size */
#include <linux/securebits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Landlock as the kernel documents it (Debian 12's <linux/landlock.h> stops at ABI 2). */
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_EXECUTE (1ULL << 0)
#define LL_WRITE_FILE (1ULL << 1)
#define LL_READ_FILE (1ULL << 2)
#define LL_READ_DIR (1ULL << 3)
#define LL_MAKE_REG (1ULL << 8)
#define LL_FS_ABI1 ((1ULL << 13) - 1) /* EXECUTE .. MAKE_SYM */
#define LL_FS_REFER (1ULL << 13)      /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)   /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)  /* ABI 5 */
#define LL_NET_TCP ((1ULL << 0) | (1ULL << 1)) /* ABI 4: bind, connect */
#define LL_SCOPES ((1ULL << 0) | (1ULL << 1))  /* ABI 6: abstract unix, signals */
#define LL_FILE_RIGHTS (LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)

/* The kernel reads the fields it knows from the size passed (cppcheck cannot see
 * that use). */
struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; // cppcheck-suppress unusedStructMember
    uint64_t scoped;             // cppcheck-suppress unusedStructMember
};

struct ll_path_beneath {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

/* The root is staged on a tmpfs over /tmp in git's own mount namespace (what was
 * there stays reachable through the descriptors opened before). */
#define STAGE "/tmp"
#define MAX_BINDS 16
#define MAX_LINKS 8
#define TARGET_MAX (PATH_MAX + 8)

/* A bind's source is opened again in the child, in its new mount namespace (a
 * descriptor of the parent's namespace cannot be bound there), and must still be the
 * file the parent checked (device and inode). */
struct bind {
    char path[PATH_MAX];       /* the source, the same path in git's view */
    dev_t dev;
    ino_t ino;
    char target[TARGET_MAX];   /* STAGE + path */
    bool is_file;
    unsigned long remount;     /* MS_REMOUNT | MS_BIND | read-only | the source's locked flags */
};

struct link {
    char path[TARGET_MAX];     /* STAGE + /bin etc. */
    char target[PATH_MAX];
};

struct git_sandbox {
    struct bind binds[MAX_BINDS];
    size_t bind_count;
    struct link links[MAX_LINKS];
    size_t link_count;
    char gitdir[PATH_MAX];
    char uid_map[64], gid_map[64];
    int ruleset_fd;
};

/* What git needs besides the repository. */
struct git_install {
    const char *program, *exec_dir, *share_dir;
};

static const struct git_install INSTALLS[] = {
    {"/usr/bin/git", "/usr/lib/git-core", "/usr/share/git-core"},
    {"/usr/local/bin/git", "/usr/local/libexec/git-core", "/usr/local/share/git-core"},
};

/* Directories libraries are loaded from, and the top-level names that are links into
 * /usr on a merged-/usr system (kept as the same links). */
static const char *const LIB_DIRS[] = {"/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib"};
static const char *const TOP_NAMES[] = {"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"};

#define LL_LIB (LL_READ_FILE)
#define LL_GITDIR (LL_READ_FILE | LL_READ_DIR)

static int fail(char *why, size_t cap, const char *what)
{
    snprintf(why, cap, "cannot confine git: %s: %s", what, strerror(errno));
    return -1;
}

static int landlock_abi(void)
{
#ifdef BASAL_TEST_HOOKS
    const char *fake = getenv("BASAL_TEST_GIT_LANDLOCK_ABI");
    if (fake != NULL && strcmp(fake, "0") == 0)
        return 0;
#endif
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    return abi >= 1 ? (int)abi : 0;
}

static uint64_t fs_rights(int abi)
{
    uint64_t r = LL_FS_ABI1;
    if (abi >= 2)
        r |= LL_FS_REFER;
    if (abi >= 3)
        r |= LL_FS_TRUNCATE;
    if (abi >= 5)
        r |= LL_FS_IOCTL_DEV;
    return r;
}

/* Adds a rule letting the sandbox do rights beneath fd (a directory) or on it (a
 * file: only file rights apply). */
static int allow(const struct git_sandbox *sb, int fd, bool is_file, uint64_t rights,
                 uint64_t handled)
{
    struct ll_path_beneath rule = {rights & handled & (is_file ? LL_FILE_RIGHTS : ~0ULL), fd};
    return (int)syscall(SYS_landlock_add_rule, sb->ruleset_fd, LL_RULE_PATH_BENEATH, &rule, 0U);
}

/* The flags of the source's mount that a bind in a user namespace must keep (the
 * kernel refuses a remount that would drop them). */
static unsigned long kept_flags(int fd)
{
    struct statfs fs;
    unsigned long keep = 0;
    if (fstatfs(fd, &fs) != 0)
        return 0;
    if (fs.f_flags & ST_NOSUID)
        keep |= MS_NOSUID;
    if (fs.f_flags & ST_NODEV)
        keep |= MS_NODEV;
    if (fs.f_flags & ST_NOEXEC)
        keep |= MS_NOEXEC;
    if (fs.f_flags & ST_NOATIME)
        keep |= MS_NOATIME;
    if (fs.f_flags & ST_NODIRATIME)
        keep |= MS_NODIRATIME;
    if (fs.f_flags & ST_RELATIME)
        keep |= MS_RELATIME;
    return keep;
}

/* Binds path (which must exist unless optional) read-only (or writable) at the same
 * path in the view, allowing rights on it. 1 if bound, 0 if optional and absent, -1. */
static int add_bind(struct git_sandbox *sb, const char *path, bool optional, bool writable,
                    uint64_t rights, uint64_t handled, char *why, size_t cap)
{
    if (sb->bind_count == MAX_BINDS) {
        snprintf(why, cap, "cannot confine git: too many binds");
        return -1;
    }
    int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && optional && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
        return 0;
    if (fd < 0)
        return fail(why, cap, path);
    struct stat st;
    if (fstat(fd, &st) != 0 || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) &&
                                !S_ISCHR(st.st_mode))) {
        close(fd);
        snprintf(why, cap, "cannot confine git: %s is not a directory or a file", path);
        return -1;
    }
    struct bind *b = &sb->binds[sb->bind_count];
    b->is_file = !S_ISDIR(st.st_mode);
    b->dev = st.st_dev;
    b->ino = st.st_ino;
    if ((size_t)snprintf(b->path, sizeof b->path, "%s", path) >= sizeof b->path ||
        (size_t)snprintf(b->target, sizeof b->target, "%s%s", STAGE, path) >= sizeof b->target) {
        close(fd);
        snprintf(why, cap, "cannot confine git: %s: path too long", path);
        return -1;
    }
    b->remount = MS_REMOUNT | MS_BIND | (writable ? 0 : MS_RDONLY) | MS_NOSUID |
                 (S_ISCHR(st.st_mode) ? 0 : MS_NODEV) | kept_flags(fd);
    sb->bind_count++;
    int rc = allow(sb, fd, b->is_file, rights, handled);
    close(fd);
    if (rc != 0)
        return fail(why, cap, "a Landlock rule");
    return 1;
}

/* The top-level names: a link (merged /usr) is made again as the same link; a
 * directory of libraries is bound. */
static int add_top_names(struct git_sandbox *sb, uint64_t handled, char *why, size_t cap)
{
    for (size_t i = 0; i < sizeof TOP_NAMES / sizeof TOP_NAMES[0]; i++) {
        struct stat st;
        if (lstat(TOP_NAMES[i], &st) != 0)
            continue;
        if (S_ISLNK(st.st_mode) && sb->link_count < MAX_LINKS) {
            struct link *l = &sb->links[sb->link_count];
            ssize_t n = readlink(TOP_NAMES[i], l->target, sizeof l->target - 1);
            if (n <= 0)
                return fail(why, cap, TOP_NAMES[i]);
            l->target[n] = '\0';
            snprintf(l->path, sizeof l->path, "%s%s", STAGE, TOP_NAMES[i]);
            sb->link_count++;
        } else if (S_ISDIR(st.st_mode) && strncmp(TOP_NAMES[i], "/lib", 4) == 0 &&
                   add_bind(sb, TOP_NAMES[i], true, false, LL_LIB, handled, why, cap) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The ELF interpreter (the dynamic loader) program names, into out; false if it has
 * none (static, or not an ELF file of this machine's word size). */
static bool interpreter_of(const char *program, char *out, size_t cap)
{
    int fd = open(program, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ElfW(Ehdr) eh;
    bool found = false;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
        memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_phentsize == sizeof(ElfW(Phdr)) &&
        eh.e_phnum < 256) {
        for (unsigned i = 0; !found && i < eh.e_phnum; i++) {
            ElfW(Phdr) ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
                break;
            if (ph.p_type != PT_INTERP || ph.p_filesz < 2 || ph.p_filesz > cap)
                continue;
            found = pread(fd, out, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz &&
                    out[ph.p_filesz - 1] == '\0' && out[0] == '/';
        }
    }
    close(fd);
    return found;
}

/* The loader must be executable too (the kernel opens it as it opens the program):
 * that one file, wherever its links lead. */
static int allow_interpreter(struct git_sandbox *sb, const char *program, uint64_t handled,
                             char *why, size_t cap)
{
    char interp[PATH_MAX];
    if (!interpreter_of(program, interp, sizeof interp))
        return 0;
    int fd = open(interp, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return fail(why, cap, interp);
    int rc = allow(sb, fd, true, LL_READ_FILE | LL_EXECUTE, handled);
    close(fd);
    return rc != 0 ? fail(why, cap, "a Landlock rule") : 0;
}

static const struct git_install *install_of(const char *program)
{
    for (size_t i = 0; i < sizeof INSTALLS / sizeof INSTALLS[0]; i++)
        if (strcmp(INSTALLS[i].program, program) == 0)
            return &INSTALLS[i];
    return NULL;
}

/* Test builds: the stand-in's directory, writable and executable, and /usr/bin for
 * its shell and tools. 1 if program is a stand-in, 0 if not, -1. */
static int add_stand_in(struct git_sandbox *sb, const char *program, uint64_t handled,
                        char *why, size_t cap)
{
#ifdef BASAL_TEST_HOOKS
    if (install_of(program) != NULL)
        return 0;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", program);
    char *slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir) {
        snprintf(why, cap, "cannot confine git: stand-in %s has no directory", program);
        return -1;
    }
    *slash = '\0';
    uint64_t own = LL_READ_FILE | LL_READ_DIR | LL_WRITE_FILE | LL_MAKE_REG | LL_EXECUTE |
                   LL_FS_TRUNCATE;
    if (add_bind(sb, dir, false, true, own, handled, why, cap) < 0 ||
        add_bind(sb, "/usr/bin", false, false, LL_READ_FILE | LL_EXECUTE, handled, why, cap) < 0 ||
        allow_interpreter(sb, "/bin/sh", handled, why, cap) != 0)
        return -1;
    return 1;
#else
    (void)sb;
    (void)program;
    (void)handled;
    (void)why;
    (void)cap;
    return 0;
#endif
}

struct git_sandbox *git_sandbox_prepare(const char *program, int gitdir_fd, const char *gitdir,
                                        char *why, size_t why_cap)
{
    size_t index_len = strlen(GIT_SANDBOX_INDEX_FILE);
    if (strncmp(gitdir, GIT_SANDBOX_INDEX_FILE, index_len) == 0 &&
        (gitdir[index_len] == '/' || gitdir[index_len] == '\0')) {
        snprintf(why, why_cap, "cannot confine git: %s lies under %s, the index path it must"
                 " not see", gitdir, GIT_SANDBOX_INDEX_FILE);
        return NULL;
    }
    int abi = landlock_abi();
    if (abi < 1) {
        snprintf(why, why_cap, "cannot confine git: the kernel has no Landlock (basal never"
                 " runs git unconfined)");
        return NULL;
    }
    struct git_sandbox *sb = calloc(1, sizeof *sb);
    if (sb == NULL) {
        snprintf(why, why_cap, "cannot confine git: out of memory");
        return NULL;
    }
    struct ll_ruleset_attr attr = {fs_rights(abi), abi >= 4 ? LL_NET_TCP : 0,
                                   abi >= 6 ? LL_SCOPES : 0};
    size_t attr_size = abi >= 6 ? sizeof attr : abi >= 4 ? 2 * sizeof(uint64_t)
                                                          : sizeof(uint64_t);
    sb->ruleset_fd = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0U);
    if (sb->ruleset_fd < 0) {
        fail(why, why_cap, "landlock_create_ruleset");
        free(sb);
        return NULL;
    }
    snprintf(sb->gitdir, sizeof sb->gitdir, "%s", gitdir);
    snprintf(sb->uid_map, sizeof sb->uid_map, "%lu %lu 1\n", (unsigned long)geteuid(),
             (unsigned long)geteuid());
    snprintf(sb->gid_map, sizeof sb->gid_map, "%lu %lu 1\n", (unsigned long)getegid(),
             (unsigned long)getegid());
    uint64_t handled = attr.handled_access_fs;
    const struct git_install *git = install_of(program);
    int stand_in = add_stand_in(sb, program, handled, why, why_cap);
    bool ok = stand_in >= 0 && add_top_names(sb, handled, why, why_cap) == 0;
    for (size_t i = 0; ok && i < sizeof LIB_DIRS / sizeof LIB_DIRS[0]; i++)
        ok = add_bind(sb, LIB_DIRS[i], true, false, LL_LIB, handled, why, why_cap) >= 0;
    ok = ok && add_bind(sb, "/etc/ld.so.cache", true, false, LL_READ_FILE, handled, why,
                        why_cap) >= 0;
    ok = ok && add_bind(sb, "/dev/null", false, false, LL_READ_FILE | LL_WRITE_FILE, handled,
                        why, why_cap) >= 0;
    if (ok && stand_in == 0) {
        if (git == NULL) {
            snprintf(why, why_cap, "cannot confine git: %s is not a known git install", program);
            ok = false;
        } else {
            ok = add_bind(sb, git->exec_dir, true, false, LL_READ_FILE | LL_EXECUTE, handled,
                          why, why_cap) >= 0 &&
                 add_bind(sb, git->share_dir, true, false, LL_READ_FILE, handled, why,
                          why_cap) >= 0 &&
                 add_bind(sb, git->program, false, false, LL_READ_FILE | LL_EXECUTE, handled,
                          why, why_cap) >= 0 &&
                 allow_interpreter(sb, git->program, handled, why, why_cap) == 0;
        }
    }
    /* The repository last: a bind above it (a stand-in's directory) must not hide it.
     * Its checked descriptor decides which directory that is. */
    struct stat st;
    if (ok && fstat(gitdir_fd, &st) != 0) {
        fail(why, why_cap, gitdir);
        ok = false;
    }
    if (ok && sb->bind_count < MAX_BINDS) {
        struct bind *b = &sb->binds[sb->bind_count++];
        b->is_file = false;
        b->dev = st.st_dev;
        b->ino = st.st_ino;
        snprintf(b->path, sizeof b->path, "%s", gitdir);
        snprintf(b->target, sizeof b->target, "%s%s", STAGE, gitdir);
        b->remount = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC |
                     kept_flags(gitdir_fd);
        if (allow(sb, gitdir_fd, false, LL_GITDIR, handled) != 0)
            ok = fail(why, why_cap, "a Landlock rule") == 0;
    } else if (ok) {
        snprintf(why, why_cap, "cannot confine git: too many binds");
        ok = false;
    }
    if (!ok) {
        git_sandbox_release(sb);
        return NULL;
    }
    return sb;
}

void git_sandbox_release(struct git_sandbox *sb)
{
    if (sb == NULL)
        return;
    if (sb->ruleset_fd >= 0)
        close(sb->ruleset_fd);
    free(sb);
}

/* ---- the child: async-signal-safe calls only ------------------------------------------ */

/* mkdir -p of every directory above path (and path itself unless is_file, which is
 * then created as an empty file to bind over). */
static bool make_mount_point(const char *path, bool is_file)
{
    char p[TARGET_MAX];
    size_t n = strlen(path);
    if (n >= sizeof p)
        return false;
    memcpy(p, path, n + 1);
    for (size_t i = sizeof STAGE; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        bool last = p[i] == '\0';
        p[i] = '\0';
        if (last && is_file) {
            int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
            if (fd < 0 && errno != EEXIST)
                return false;
            if (fd >= 0)
                close(fd);
        } else if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            return false;
        }
        if (!last)
            p[i] = '/';
    }
    return true;
}

/* "/proc/self/fd/N" without stdio. */
static void fd_path(char out[32], int fd)
{
    static const char prefix[] = "/proc/self/fd/";
    memcpy(out, prefix, sizeof prefix - 1);
    char digits[12];
    int n = 0;
    unsigned v = (unsigned)fd;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0 && n < (int)sizeof digits);
    size_t at = sizeof prefix - 1;
    while (n > 0)
        out[at++] = digits[--n];
    out[at] = '\0';
}

#define STEP(name, cond)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            *step = (name);                                                                       \
            *err = errno;                                                                         \
            return -1;                                                                            \
        }                                                                                         \
    } while (0)

int git_sandbox_enter(const struct git_sandbox *sb, const char **step, int *err)
{
    STEP("user, mount and network namespaces (unshare)",
         unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) == 0);
    STEP("the user namespace's maps", user_ns_map_self(sb->uid_map, sb->gid_map));
    STEP("a private mount namespace", mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
    int fds[MAX_BINDS];
    for (size_t i = 0; i < sb->bind_count; i++) {
        struct stat st;
        fds[i] = open(sb->binds[i].path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        errno = fds[i] < 0 ? errno : EXDEV;
        STEP("a bind's source (gone or replaced since it was checked)",
             fds[i] >= 0 && fstat(fds[i], &st) == 0 && st.st_dev == sb->binds[i].dev &&
                 st.st_ino == sb->binds[i].ino);
    }
    STEP("the root's tmpfs", mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                   "mode=0755,size=64k,nr_inodes=256") == 0);
    for (size_t i = 0; i < sb->bind_count; i++) {
        const struct bind *b = &sb->binds[i];
        char source[32];
        fd_path(source, fds[i]);
        STEP("a mount point in the root", make_mount_point(b->target, b->is_file));
        STEP("a bind mount", mount(source, b->target, NULL, MS_BIND, NULL) == 0);
        STEP("a read-only remount", mount(NULL, b->target, NULL, b->remount, NULL) == 0);
        close(fds[i]);
    }
    for (size_t i = 0; i < sb->link_count; i++)
        STEP("a link in the root", symlink(sb->links[i].target, sb->links[i].path) == 0);
    STEP("pivot_root", chdir(STAGE) == 0 && syscall(SYS_pivot_root, ".", ".") == 0 &&
                           umount2(".", MNT_DETACH) == 0 && chdir("/") == 0);
    STEP("the read-only root", mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY |
                                     MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0);
    STEP("the git directory", chdir(sb->gitdir) == 0);
    /* No capability survives the exec, even for a uid 0 (root runs basal). */
    STEP("dropping capabilities",
         prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                      SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                                      SECBIT_NO_CAP_AMBIENT_RAISE |
                                      SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) == 0 &&
             prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0);
    STEP("no_new_privs", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
    STEP("Landlock", syscall(SYS_landlock_restrict_self, sb->ruleset_fd, 0U) == 0);
    /* Prove the domain is in force: the root directory is not readable. */
    int probe = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (probe >= 0)
        close(probe);
    errno = probe >= 0 ? EPERM : errno;
    STEP("Landlock in force", probe < 0 && errno == EACCES);
    return 0;
}
