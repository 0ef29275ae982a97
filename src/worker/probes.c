/* Confinement probes: one forbidden capability each. See probes.h for the contract.
 *
 * Each attempt is a direct system call (syscall(2), or a glibc wrapper that is only
 * that system call), so the call seccomp sees is the one the probe names and nothing
 * forbidden runs between "ready" and it. Attempts that need some descriptor use fd 0
 * (stdin, the read end of a pipe): descriptors opened before confinement do not
 * survive it, and fd 0 lets the unconfined control reach the call (ENOTDIR,
 * ENOTSOCK, EBADF) without touching anything outside the process. */
#include "worker/probes.h"

#include "worker/refuse.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/io_uring.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Every mapping a probe makes: a multiple of any page size Linux uses. */
#define PROBE_MAP_LEN ((size_t)64 * 1024)
#define PROBE_STACK_LEN ((size_t)64 * 1024)

/* Files and addresses the attempts name. None of them has to exist. */
#define PROBE_READ_PATH "/etc/passwd"
#define PROBE_LINK_PATH "/proc/self/exe"
#define PROBE_UNIX_PATH "/run/ck-basal-probe.sock"
/* Below vm.mmap_min_addr, so never mapped in any process. */
#define PROBE_BOGUS_ADDR ((uintptr_t)0x1000)

typedef int (*probe_prepare_fn)(struct probe_ctx *ctx);
typedef int (*probe_arm_fn)(struct probe_ctx *ctx);
typedef long (*probe_attempt_fn)(struct probe_ctx *ctx);

struct probe {
    const char *name;
    probe_prepare_fn prepare; /* optional, unconfined, before confinement */
    probe_arm_fn arm;         /* optional, confined, admitted calls only, before "ready" */
    probe_attempt_fn attempt; /* the one forbidden call; returns rc, errno set if -1 */
};

/* The thread the clone-thread probe starts clears this at exit (CLONE_CHILD_CLEARTID).
 * Static, not in the caller's ctx, so the kernel's write can never outlive it. */
static pid_t thread_tid_word;

/* ---- shared helpers ---- */

/* A private anonymous read-write mapping: the only kind the allowlist admits. */
static int arm_map(struct probe_ctx *ctx, int slot)
{
    void *p = mmap(NULL, PROBE_MAP_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED)
        return -1;
    ctx->map[slot] = p;
    ctx->map_len[slot] = PROBE_MAP_LEN;
    return 0;
}

/* Records a descriptor a successful unconfined attempt created. */
static long keep_fd(struct probe_ctx *ctx, long rc)
{
    if (rc >= 0)
        ctx->fd = (int)rc;
    return rc;
}

/* A mapping attempt reports 0 on success (the address is not interesting). */
static long keep_map(struct probe_ctx *ctx, int slot, void *p)
{
    if (p == MAP_FAILED)
        return -1;
    ctx->map[slot] = p;
    ctx->map_len[slot] = PROBE_MAP_LEN;
    return 0;
}

/* A probe whose call does not exist on this architecture: still "ready" and a result. */
__attribute__((unused)) static long not_applicable(void)
{
    errno = ENOSYS;
    return -1;
}

/* ---- prepare (unconfined) ---- */

static int prepare_create(struct probe_ctx *ctx)
{
    unsigned int salt = 0;
    /* pid-unique, plus a random part so a stale file from a reused pid cannot make
     * the control fail with EEXIST. */
    if (getrandom(&salt, sizeof salt, 0) != (ssize_t)sizeof salt)
        return -1;
    int n = snprintf(ctx->path, sizeof ctx->path, "/tmp/ck-basal-probe-%ld-%08x",
                     (long)ctx->self_pid, salt);
    if (n < 0 || (size_t)n >= sizeof ctx->path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/* ---- arm (confined, admitted calls only) ---- */

static int arm_one_map(struct probe_ctx *ctx)
{
    return arm_map(ctx, 0);
}

static int arm_two_maps(struct probe_ctx *ctx)
{
    return arm_map(ctx, 0) != 0 ? -1 : arm_map(ctx, 1);
}

static int arm_thread_stack(struct probe_ctx *ctx)
{
    void *p = mmap(NULL, PROBE_STACK_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED)
        return -1;
    ctx->stack = p;
    ctx->stack_len = PROBE_STACK_LEN;
    return 0;
}

/* ---- attempts ---- */

static long attempt_open(struct probe_ctx *ctx)
{
    return keep_fd(ctx, syscall(SYS_openat, AT_FDCWD, PROBE_READ_PATH, O_RDONLY | O_CLOEXEC));
}

static long attempt_create(struct probe_ctx *ctx)
{
    long rc = syscall(SYS_openat, AT_FDCWD, ctx->path,
                      O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (rc >= 0)
        ctx->created = 1;
    return keep_fd(ctx, rc);
}

static long attempt_stat(struct probe_ctx *ctx)
{
    struct stat st;
    (void)ctx;
#if defined(SYS_newfstatat)
    return syscall(SYS_newfstatat, AT_FDCWD, PROBE_READ_PATH, &st, 0);
#else
    return fstatat(AT_FDCWD, PROBE_READ_PATH, &st, 0);
#endif
}

static long attempt_readlink(struct probe_ctx *ctx)
{
    char buf[256];
    (void)ctx;
    return syscall(SYS_readlinkat, AT_FDCWD, PROBE_LINK_PATH, buf, sizeof buf);
}

static long attempt_getdents(struct probe_ctx *ctx)
{
    char buf[256];
    (void)ctx;
    return syscall(SYS_getdents64, 0, buf, sizeof buf);
}

static long attempt_socket_tcp(struct probe_ctx *ctx)
{
    return keep_fd(ctx, syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
}

static long attempt_socket_udp(struct probe_ctx *ctx)
{
    return keep_fd(ctx, syscall(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
}

static long attempt_socket_unix(struct probe_ctx *ctx)
{
    return keep_fd(ctx, syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
}

static long attempt_socket_netlink(struct probe_ctx *ctx)
{
    return keep_fd(ctx, syscall(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0));
}

static long attempt_connect_unix(struct probe_ctx *ctx)
{
    struct sockaddr_un sun;
    (void)ctx;
    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    memcpy(sun.sun_path, PROBE_UNIX_PATH, sizeof PROBE_UNIX_PATH);
    return syscall(SYS_connect, 0, &sun, (socklen_t)sizeof sun);
}

/* socket is the first refused call under seccomp; the connect is what Landlock alone
 * (seccomp switched off in a test build) must refuse with EACCES. */
static long attempt_connect_tcp(struct probe_ctx *ctx)
{
    struct sockaddr_in sin;
    long rc = keep_fd(ctx, syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (rc < 0)
        return rc;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)ctx->port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return syscall(SYS_connect, ctx->fd, &sin, (socklen_t)sizeof sin);
}

static long attempt_execve(struct probe_ctx *ctx)
{
    static char path[] = "/nonexistent/ck-basal-probe";
    char *argv[] = {path, NULL};
    char *envp[] = {NULL};
    (void)ctx;
    return syscall(SYS_execve, path, argv, envp);
}

/* The raw clone fork() makes, without glibc's fork handlers around it. */
static long attempt_fork(struct probe_ctx *ctx)
{
    long rc = syscall(SYS_clone, (unsigned long)SIGCHLD, 0UL, 0UL, 0UL, 0UL);
    if (rc == 0)
        _exit(0);
    if (rc > 0)
        ctx->child = (pid_t)rc;
    return rc;
}

static int thread_main(void *arg)
{
    (void)arg;
    return 0; /* glibc's clone then makes the exit (thread) system call */
}

/* glibc's clone(3) is the bare clone system call plus a child trampoline that runs
 * thread_main on the armed stack; pthread_create would add calls of its own first. */
static long attempt_clone_thread(struct probe_ctx *ctx)
{
    const int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                      CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
    char *top = (char *)ctx->stack + ctx->stack_len;
    return clone(thread_main, top, flags, NULL, &thread_tid_word, NULL, &thread_tid_word);
}

static long attempt_kill_parent(struct probe_ctx *ctx)
{
    return syscall(SYS_kill, ctx->parent_pid, 0);
}

static long attempt_tgkill_other(struct probe_ctx *ctx)
{
    return syscall(SYS_tgkill, ctx->parent_pid, ctx->parent_pid, 0);
}

static long attempt_ptrace(struct probe_ctx *ctx)
{
    long word = 0;
    return syscall(SYS_ptrace, (long)PTRACE_PEEKDATA, ctx->parent_pid, 0L, &word);
}

static long attempt_process_vm_readv(struct probe_ctx *ctx)
{
    char buf[16];
    struct iovec local = {.iov_base = buf, .iov_len = sizeof buf};
    struct iovec remote = {.iov_base = (void *)PROBE_BOGUS_ADDR /* NOLINT(performance-no-int-to-ptr): a deliberately unmapped address */, .iov_len = sizeof buf};
    return syscall(SYS_process_vm_readv, ctx->parent_pid, &local, 1UL, &remote, 1UL, 0UL);
}

static long attempt_mmap_exec(struct probe_ctx *ctx)
{
    return keep_map(ctx, 0,
                    mmap(NULL, PROBE_MAP_LEN, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
                         -1, 0));
}

static long attempt_mprotect_exec(struct probe_ctx *ctx)
{
    return mprotect(ctx->map[0], ctx->map_len[0], PROT_READ | PROT_EXEC);
}

static long attempt_mmap_shared(struct probe_ctx *ctx)
{
    return keep_map(ctx, 0,
                    mmap(NULL, PROBE_MAP_LEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                         -1, 0));
}

/* Moves the first armed mapping onto the second; rc 0 when it moved. */
static long attempt_mremap_fixed(struct probe_ctx *ctx)
{
    long rc = syscall(SYS_mremap, ctx->map[0], ctx->map_len[0], ctx->map_len[1],
                      (unsigned long)(MREMAP_MAYMOVE | MREMAP_FIXED), ctx->map[1]);
    return rc == -1 ? -1 : 0;
}

static long attempt_madvise_free(struct probe_ctx *ctx)
{
    return madvise(ctx->map[0], ctx->map_len[0], MADV_FREE);
}

static long attempt_io_uring(struct probe_ctx *ctx)
{
#if defined(SYS_io_uring_setup)
    struct io_uring_params params;
    memset(&params, 0, sizeof params);
    return keep_fd(ctx, syscall(SYS_io_uring_setup, 1U, &params));
#else
    (void)ctx;
    return not_applicable();
#endif
}

static long attempt_userfaultfd(struct probe_ctx *ctx)
{
#if defined(SYS_userfaultfd)
    return keep_fd(ctx, syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
#else
    (void)ctx;
    return not_applicable();
#endif
}

/* getpid (39) in the x32 table: an x86_64-arch number with bit 30 set. */
static long attempt_x32_getpid(struct probe_ctx *ctx)
{
    (void)ctx;
#if defined(__x86_64__) && defined(__X32_SYSCALL_BIT)
    return syscall(__X32_SYSCALL_BIT | 39L);
#else
    return not_applicable();
#endif
}

/* getpid (20) through the i386 entry. Without IA-32 emulation the int faults
 * (SIGSEGV) before any filter runs; with it, seccomp sees AUDIT_ARCH_I386. */
static long attempt_int80_getpid(struct probe_ctx *ctx)
{
    (void)ctx;
#if defined(__x86_64__)
    long ret;
    __asm__ volatile("int $0x80"
                     : "=a"(ret)
                     : "a"(20L)
                     : "memory", "cc", "r8", "r9", "r10", "r11");
    int r = (int)ret; /* an i386 result is 32 bits */
    if (r < 0 && r > -4096) {
        errno = -r;
        return -1;
    }
    return r;
#else
    return not_applicable();
#endif
}

static long attempt_read_fd1(struct probe_ctx *ctx)
{
    char c;
    (void)ctx;
    return syscall(SYS_read, 1, &c, (size_t)1);
}

static long attempt_write_fd0(struct probe_ctx *ctx)
{
    static const char c = 'x';
    (void)ctx;
    return syscall(SYS_write, 0, &c, (size_t)1);
}

/* The system call itself: glibc's clock_gettime would answer from the vDSO. */
static long attempt_clock_boottime(struct probe_ctx *ctx)
{
    struct timespec ts;
    (void)ctx;
    return syscall(SYS_clock_gettime, (long)CLOCK_BOOTTIME, &ts);
}

/* A shared (non-private) wait whose expected value does not match: EAGAIN at once. */
static long attempt_futex_shared(struct probe_ctx *ctx)
{
    int word = 1;
    (void)ctx;
    return syscall(SYS_futex, &word, (long)FUTEX_WAIT, 0L, NULL, NULL, 0L);
}

static long attempt_prctl(struct probe_ctx *ctx)
{
    (void)ctx;
    return syscall(SYS_prctl, (long)PR_GET_DUMPABLE, 0L, 0L, 0L, 0L);
}

static long attempt_seccomp(struct probe_ctx *ctx)
{
    unsigned int action = SECCOMP_RET_KILL_PROCESS;
    (void)ctx;
    return syscall(SYS_seccomp, (long)SECCOMP_GET_ACTION_AVAIL, 0L, &action);
}

/* ---- the table: what each probe proves the confined worker cannot do ---- */

static const struct probe probes[] = {
    /* name               prepare         arm               attempt */
    {"open",              NULL,           NULL,             attempt_open},             /* open a file (openat /etc/passwd) */
    {"create",            prepare_create, NULL,             attempt_create},           /* create a file (openat O_CREAT|O_EXCL under /tmp) */
    {"stat",              NULL,           NULL,             attempt_stat},             /* read file metadata, which Landlock does not stop */
    {"readlink",          NULL,           NULL,             attempt_readlink},         /* read a symlink, which Landlock does not stop */
    {"getdents",          NULL,           NULL,             attempt_getdents},         /* list a directory (getdents64 on fd 0) */
    {"socket-tcp",        NULL,           NULL,             attempt_socket_tcp},       /* create a TCP socket */
    {"socket-udp",        NULL,           NULL,             attempt_socket_udp},       /* create a UDP socket, which Landlock does not stop */
    {"socket-unix",       NULL,           NULL,             attempt_socket_unix},      /* create a Unix socket */
    {"socket-netlink",    NULL,           NULL,             attempt_socket_netlink},   /* create a netlink socket, which Landlock does not stop */
    {"connect-unix",      NULL,           NULL,             attempt_connect_unix},     /* connect to a path-based Unix socket (connect on fd 0) */
    {"connect-tcp",       NULL,           NULL,             attempt_connect_tcp},      /* TCP to 127.0.0.1:port; Landlock alone refuses the connect */
    {"execve",            NULL,           NULL,             attempt_execve},           /* execute a program */
    {"fork",              NULL,           NULL,             attempt_fork},             /* start a process (clone with SIGCHLD) */
    {"clone-thread",      NULL,           arm_thread_stack, attempt_clone_thread},     /* start a thread (clone CLONE_VM|CLONE_THREAD) */
    {"kill-parent",       NULL,           NULL,             attempt_kill_parent},      /* signal another process (kill parent, signal 0) */
    {"tgkill-other",      NULL,           NULL,             attempt_tgkill_other},     /* signal another thread (tgkill parent, signal 0) */
    {"ptrace",            NULL,           NULL,             attempt_ptrace},           /* ptrace another process (PEEKDATA, unattached) */
    {"process-vm-readv",  NULL,           NULL,             attempt_process_vm_readv}, /* read another process's memory */
    {"mmap-exec",         NULL,           NULL,             attempt_mmap_exec},        /* map executable memory */
    {"mprotect-exec",     NULL,           arm_one_map,      attempt_mprotect_exec},    /* make a private mapping executable */
    {"mmap-shared",       NULL,           NULL,             attempt_mmap_shared},      /* map shared memory */
    {"io-uring",          NULL,           NULL,             attempt_io_uring},         /* set up io_uring, which bypasses per-call filtering */
    {"userfaultfd",       NULL,           NULL,             attempt_userfaultfd},      /* create a userfaultfd */
    {"x32-getpid",        NULL,           NULL,             attempt_x32_getpid},       /* enter through the x32 syscall numbers */
    {"int80-getpid",      NULL,           NULL,             attempt_int80_getpid},     /* enter through the i386 entry (int 0x80) */
    {"read-fd1",          NULL,           NULL,             attempt_read_fd1},         /* read is admitted on fd 0 only */
    {"write-fd0",         NULL,           NULL,             attempt_write_fd0},        /* write is admitted on fds 1 and 2 only */
    {"clock-boottime",    NULL,           NULL,             attempt_clock_boottime},   /* clock_gettime of a clock outside the three */
    {"futex-shared",      NULL,           NULL,             attempt_futex_shared},     /* futex is admitted for private ops only */
    {"prctl",             NULL,           NULL,             attempt_prctl},            /* prctl at all (PR_GET_DUMPABLE) */
    {"seccomp",           NULL,           NULL,             attempt_seccomp},          /* seccomp at all (GET_ACTION_AVAIL) */
    {"mremap-fixed",      NULL,           arm_two_maps,     attempt_mremap_fixed},     /* mremap onto a chosen address (MAYMOVE|FIXED) */
    {"madvise-free",      NULL,           arm_one_map,      attempt_madvise_free},     /* madvise other than DONTNEED (MADV_FREE) */
};

#define PROBE_COUNT (sizeof probes / sizeof probes[0])

/* ---- API ---- */

const struct probe *probe_find(const char *name)
{
    for (size_t i = 0; i < PROBE_COUNT; i++) {
        if (strcmp(probes[i].name, name) == 0)
            return &probes[i];
    }
    return NULL;
}

const char *probe_name(const struct probe *probe)
{
    return probe->name;
}

size_t probe_count(void)
{
    return PROBE_COUNT;
}

const char *probe_name_at(size_t i)
{
    return i < PROBE_COUNT ? probes[i].name : NULL;
}

int probe_prepare(const struct probe *probe, struct probe_ctx *ctx)
{
    if (ctx->port == 0)
        ctx->port = PROBE_DEFAULT_PORT;
    ctx->parent_pid = getppid();
    ctx->self_pid = getpid();
    ctx->path[0] = '\0';
    ctx->fd = -1;
    ctx->child = 0;
    ctx->created = 0;
    for (int i = 0; i < 2; i++) {
        ctx->map[i] = NULL;
        ctx->map_len[i] = 0;
    }
    ctx->stack = NULL;
    ctx->stack_len = 0;
    if (probe->prepare != NULL && probe->prepare(ctx) != 0) {
        stderr_printf("probe-prepare-failed %s errno=%d\n", probe->name, errno);
        return -1;
    }
    return 0;
}

/* Waits (bounded) for the clone-thread probe's thread to exit, so its stack can go. */
static int thread_gone(void)
{
    const struct timespec ms = {.tv_sec = 0, .tv_nsec = 1000000};
    for (int i = 0; i < 1000; i++) {
        if (__atomic_load_n(&thread_tid_word, __ATOMIC_ACQUIRE) == 0)
            return 1;
        (void)nanosleep(&ms, NULL);
    }
    return 0;
}

/* Releases what an attempt that returned created. Only an unconfined run (or a
 * run whose seccomp filter let the attempt through) gets here with anything to do. */
static void probe_release(struct probe_ctx *ctx)
{
    if (ctx->fd >= 0) {
        (void)close(ctx->fd);
        ctx->fd = -1;
    }
    if (ctx->created) {
        (void)unlink(ctx->path);
        ctx->created = 0;
    }
    if (ctx->child > 0) {
        int status;
        (void)waitpid(ctx->child, &status, 0);
        ctx->child = 0;
    }
    if (ctx->stack != NULL && thread_gone()) {
        (void)munmap(ctx->stack, ctx->stack_len);
        ctx->stack = NULL;
    }
    for (int i = 0; i < 2; i++) {
        if (ctx->map[i] != NULL) {
            (void)munmap(ctx->map[i], ctx->map_len[i]);
            ctx->map[i] = NULL;
        }
    }
}

int probe_run(const struct probe *probe, struct probe_ctx *ctx)
{
    if (probe->arm != NULL && probe->arm(ctx) != 0) {
        stderr_printf("probe-arm-failed %s errno=%d\n", probe->name, errno);
        return 1;
    }
    stderr_printf("ready %s\n", probe->name);
    errno = 0;
    long rc = probe->attempt(ctx);
    int err = errno;
    stderr_printf("result %s rc=%ld errno=%d\n", probe->name, rc, err);
    probe_release(ctx);
    return 0;
}
