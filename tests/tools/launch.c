/* launch: sets up a hostile or specific environment, then execs a program in place
 * (the pid stays the same, so a test's pidfd and /proc views follow the program).
 *
 *   launch [options] -- PROGRAM ARGS...
 *
 * Options (applied in the order listed, whatever order they are given in, except
 * that stderr is replaced last so launch's own errors stay visible until then):
 *   --stdin=pipe         keep the stdin the test gave (default)
 *   --stdin=file         a regular file opened read-only (it holds a few bytes)
 *   --stdin=fifo         a named FIFO opened read-only (no writer)
 *   --stdin=fifo-rdwr    a named FIFO opened read-write
 *   --stdin=socket       one end of a Unix stream socketpair
 *   --stdin=pipe-write   the write end of a fresh anonymous pipe
 *   --stdin=pipe-rdwr    an anonymous pipe reopened read-write (pipefs, O_RDWR)
 *   --stdout=pipe        keep (default)  | pipe-read (read end of a fresh pipe)
 *                                        | file (a regular file opened write-only)
 *   --stderr=pipe        keep (default)  | pipe-read
 *   --plant-fd=N[:null|:socket]
 *                        open /dev/null (default) or a Unix socket at descriptor N,
 *                        left open across exec; repeatable
 *   --fake-proc          a private mount namespace with a tmpfs over /proc, holding
 *                        only a "self" symlink to the program's pid (so only the
 *                        filesystem type gives it away)
 *   --pid-ns             run the program as pid 1 of a new pid namespace while /proc
 *                        stays the outer one, so /proc/self names another pid (a
 *                        container that did not remount /proc). launch then stays
 *                        the parent and exits with the program's status (or dies by
 *                        its signal), so only the exit status and output of such a
 *                        run are meaningful to a test, not its pid.
 *   --read-implies-exec  the READ_IMPLIES_EXEC personality in the new program.
 *                        personality() before exec is not enough: x86_64 and arm64
 *                        both clear the flag when they exec a 64-bit ELF. So a helper
 *                        process ptrace-injects personality() into the new program at
 *                        the return from execve, before its first instruction runs.
 *   --map-at-exec=shared|wx|exec-stack
 *                        the same injection into the new program: an mmap of a
 *                        shared anonymous page, or of a private read-write-execute
 *                        page; or (exec-stack) an mprotect making the program's whole
 *                        [stack] mapping, found in its /proc/<pid>/maps, read-write-
 *                        execute. exec-stack needs the real /proc, so it cannot be
 *                        combined with --fake-proc (launch exits 125).
 *                        The injection is implemented for x86_64 only; elsewhere
 *                        these options make launch exit 125 (a test then fails
 *                        visibly rather than passing without the condition).
 *   --drop-uid=N         setgroups({}), setresgid(N), setresuid(N) before exec
 *   --inject=SYSCALL:ERRNO[:ARG=VALUE|:ARG!=VALUE]...
 *                        a seccomp filter (libseccomp, default allow) making SYSCALL
 *                        fail with ERRNO (a number or a name such as ENOSYS); with
 *                        conditions, only when every one holds (argument ARG, 0-5,
 *                        equals / differs from VALUE; e.g. seccomp:EPERM:0=1:2!=0).
 *                        ERRNO 0 is a faked success: the call returns 0 and does
 *                        nothing; ERRNO KILL kills the process at the call (SIGSYS),
 *                        a crash at exactly that point. Repeatable. Installed last, just before execve;
 *                        no_new_privs is set only when not root.
 *
 * launch writes nothing on stdout. Its own failures print "launch: ..." on stderr
 * and exit 125 (127 if the exec itself fails); a failure of the exec-time injection
 * kills the new program with SIGKILL, so a test never sees the program run without
 * the environment it asked for. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_LAUNCH_FAILED 125
#define MAX_PLANTS 32
#define MAX_INJECTS 16

enum stdin_mode { IN_PIPE, IN_FILE, IN_FIFO, IN_FIFO_RDWR, IN_SOCKET, IN_PIPE_WRITE, IN_PIPE_RDWR };
enum stdout_mode { OUT_PIPE, OUT_PIPE_READ, OUT_FILE };
enum map_mode { MAP_NONE_AT_EXEC, MAP_SHARED_AT_EXEC, MAP_WX_AT_EXEC, MAP_EXEC_STACK_AT_EXEC };

struct plant {
    int fd;
    bool socket;
};

#define MAX_CONDS 6

struct inject {
    char syscall_name[64];
    int nr;
    int err;
    bool kill; /* ERRNO "KILL": the process dies at the call */
    unsigned cond_count; /* all conditions must hold (AND) */
    struct scmp_arg_cmp conds[MAX_CONDS];
};

struct launch_opts {
    enum stdin_mode in;
    enum stdout_mode out;
    enum stdout_mode err;
    struct plant plants[MAX_PLANTS];
    int plant_count;
    bool fake_proc;
    bool pid_ns;
    bool read_implies_exec;
    enum map_mode map_at_exec;
    bool drop_uid;
    uid_t uid;
    struct inject injects[MAX_INJECTS];
    int inject_count;
    char **program_argv;
};

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    (void)fprintf(stderr, "launch: %s\n", msg);
    exit(EXIT_LAUNCH_FAILED);
}

__attribute__((noreturn)) static void die_errno(const char *what)
{
    die("%s: %s", what, strerror(errno));
}

static void usage(void)
{
    die("usage: launch [--stdin=pipe|file|fifo|fifo-rdwr|socket|pipe-write|pipe-rdwr] "
        "[--stdout=pipe|pipe-read|file] [--stderr=pipe|pipe-read] [--plant-fd=N[:null|:socket]] "
        "[--fake-proc] [--read-implies-exec] [--map-at-exec=shared|wx|exec-stack] [--drop-uid=N] "
        "[--inject=SYSCALL:ERRNO[:ARG=VALUE|:ARG!=VALUE]...] -- PROGRAM ARGS...");
}

/* ---- parsing ------------------------------------------------------------------ */

static const struct {
    const char *name;
    int value;
} ERRNO_NAMES[] = {
    {"EPERM", EPERM},   {"ENOENT", ENOENT},         {"EINTR", EINTR},     {"EIO", EIO},
    {"EBADF", EBADF},   {"EAGAIN", EAGAIN},         {"ENOMEM", ENOMEM},   {"EACCES", EACCES},
    {"EFAULT", EFAULT}, {"EBUSY", EBUSY},           {"EEXIST", EEXIST},   {"EINVAL", EINVAL},
    {"ENFILE", ENFILE}, {"EMFILE", EMFILE},         {"ENOSPC", ENOSPC},   {"E2BIG", E2BIG},
    {"ENOSYS", ENOSYS}, {"EOPNOTSUPP", EOPNOTSUPP}, {"ENOTSUP", ENOTSUP}, {"ESRCH", ESRCH},
};

static bool parse_u64(const char *text, uint64_t *out)
{
    if (*text == '\0' || *text == '-')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

static int parse_errno(const char *text)
{
    for (size_t i = 0; i < sizeof ERRNO_NAMES / sizeof ERRNO_NAMES[0]; i++)
        if (strcmp(text, ERRNO_NAMES[i].name) == 0)
            return ERRNO_NAMES[i].value;
    uint64_t v;
    if (!parse_u64(text, &v) || v > 4095)
        die("--inject: bad errno '%s' (a number 0-4095 or a name like EPERM)", text);
    return (int)v;
}

/* SYSCALL:ERRNO[:ARG=VALUE|:ARG!=VALUE] */
static struct inject parse_inject(const char *spec)
{
    struct inject inj;
    memset(&inj, 0, sizeof inj);
    char copy[256];
    if (strlen(spec) >= sizeof copy)
        die("--inject=%s: too long", spec);
    memcpy(copy, spec, strlen(spec) + 1);
    char *name = copy;
    char *err_text = strchr(name, ':');
    if (err_text == NULL)
        die("--inject=%s: expected SYSCALL:ERRNO", spec);
    *err_text++ = '\0';
    char *conds = strchr(err_text, ':');
    if (conds != NULL)
        *conds++ = '\0';
    if (strlen(name) >= sizeof inj.syscall_name)
        die("--inject=%s: system call name too long", spec);
    memcpy(inj.syscall_name, name, strlen(name) + 1);
    uint64_t number;
    if (parse_u64(name, &number) && number < 4096)
        inj.nr = (int)number;
    else
        inj.nr = seccomp_syscall_resolve_name(name);
    if (inj.nr == __NR_SCMP_ERROR)
        die("--inject: libseccomp does not know the system call '%s'", name);
    if (strcmp(err_text, "KILL") == 0)
        inj.kill = true;
    else
        inj.err = parse_errno(err_text);
    char *save = NULL;
    for (char *cond = conds != NULL ? strtok_r(conds, ":", &save) : NULL; cond != NULL;
         cond = strtok_r(NULL, ":", &save)) {
        if (inj.cond_count == MAX_CONDS)
            die("--inject=%s: at most %d conditions", spec, MAX_CONDS);
        char *eq = strchr(cond, '=');
        if (eq == NULL || eq == cond)
            die("--inject=%s: a condition must be ARG=VALUE or ARG!=VALUE", spec);
        bool not_equal = eq[-1] == '!';
        if (not_equal)
            eq[-1] = '\0';
        *eq = '\0';
        uint64_t arg, value;
        if (!parse_u64(cond, &arg) || arg > 5)
            die("--inject=%s: argument index must be 0-5", spec);
        if (!parse_u64(eq + 1, &value))
            die("--inject=%s: bad value '%s'", spec, eq + 1);
        struct scmp_arg_cmp *c = &inj.conds[inj.cond_count++];
        memset(c, 0, sizeof *c);
        c->arg = (unsigned)arg;
        c->op = not_equal ? SCMP_CMP_NE : SCMP_CMP_EQ;
        c->datum_a = value;
    }
    return inj;
}

static int parse_fd_number(const char *text)
{
    uint64_t v;
    if (!parse_u64(text, &v) || v < 3 || v > (1U << 20))
        die("--plant-fd: descriptor '%s' must be 3 or more", text);
    return (int)v;
}

static void parse_args(int argc, char **argv, struct launch_opts *o)
{
    memset(o, 0, sizeof *o);
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strncmp(a, "--stdin=", 8) == 0) {
            const char *m = a + 8;
            if (strcmp(m, "pipe") == 0)
                o->in = IN_PIPE;
            else if (strcmp(m, "file") == 0)
                o->in = IN_FILE;
            else if (strcmp(m, "fifo") == 0)
                o->in = IN_FIFO;
            else if (strcmp(m, "fifo-rdwr") == 0)
                o->in = IN_FIFO_RDWR;
            else if (strcmp(m, "socket") == 0)
                o->in = IN_SOCKET;
            else if (strcmp(m, "pipe-write") == 0)
                o->in = IN_PIPE_WRITE;
            else if (strcmp(m, "pipe-rdwr") == 0)
                o->in = IN_PIPE_RDWR;
            else
                usage();
        } else if (strncmp(a, "--stdout=", 9) == 0 || strncmp(a, "--stderr=", 9) == 0) {
            enum stdout_mode *mode = a[5] == 'o' ? &o->out : &o->err;
            const char *m = a + 9;
            if (strcmp(m, "pipe") == 0)
                *mode = OUT_PIPE;
            else if (strcmp(m, "pipe-read") == 0)
                *mode = OUT_PIPE_READ;
            else if (strcmp(m, "file") == 0 && mode == &o->out)
                *mode = OUT_FILE;
            else
                usage();
        } else if (strncmp(a, "--plant-fd=", 11) == 0) {
            if (o->plant_count == MAX_PLANTS)
                die("too many --plant-fd");
            char spec[64];
            (void)snprintf(spec, sizeof spec, "%s", a + 11);
            char *kind = strchr(spec, ':');
            struct plant *p = &o->plants[o->plant_count++];
            if (kind != NULL) {
                *kind++ = '\0';
                if (strcmp(kind, "socket") == 0)
                    p->socket = true;
                else if (strcmp(kind, "null") != 0)
                    usage();
            }
            p->fd = parse_fd_number(spec);
        } else if (strcmp(a, "--fake-proc") == 0) {
            o->fake_proc = true;
        } else if (strcmp(a, "--pid-ns") == 0) {
            o->pid_ns = true;
        } else if (strcmp(a, "--read-implies-exec") == 0) {
            o->read_implies_exec = true;
        } else if (strcmp(a, "--map-at-exec=shared") == 0) {
            o->map_at_exec = MAP_SHARED_AT_EXEC;
        } else if (strcmp(a, "--map-at-exec=wx") == 0) {
            o->map_at_exec = MAP_WX_AT_EXEC;
        } else if (strcmp(a, "--map-at-exec=exec-stack") == 0) {
            o->map_at_exec = MAP_EXEC_STACK_AT_EXEC;
        } else if (strncmp(a, "--drop-uid=", 11) == 0) {
            uint64_t uid;
            if (!parse_u64(a + 11, &uid) || uid == 0 || uid > 0x7fffffff)
                die("--drop-uid: '%s' must be a non-root uid", a + 11);
            o->drop_uid = true;
            o->uid = (uid_t)uid;
        } else if (strncmp(a, "--inject=", 9) == 0) {
            if (o->inject_count == MAX_INJECTS)
                die("too many --inject");
            o->injects[o->inject_count++] = parse_inject(a + 9);
        } else {
            usage();
        }
    }
    if (i >= argc)
        usage();
    o->program_argv = argv + i;
}

/* ---- descriptors ---------------------------------------------------------------- */

/* Puts fd at target (which then has no CLOEXEC) and closes fd. */
static void move_fd(int fd, int target)
{
    if (fd == target) {
        if (fcntl(fd, F_SETFD, 0) != 0)
            die_errno("fcntl F_SETFD");
        return;
    }
    if (dup2(fd, target) != target)
        die_errno("dup2");
    close(fd);
}

static void temp_path(char *buf, size_t cap, const char *what)
{
    (void)snprintf(buf, cap, "/tmp/basal-launch-%s-XXXXXX", what);
}

static void setup_stdin(enum stdin_mode mode)
{
    int fds[2];
    char path[128];
    switch (mode) {
    case IN_PIPE:
        return;
    case IN_FILE: {
        temp_path(path, sizeof path, "stdin");
        int w = mkstemp(path);
        if (w < 0)
            die_errno("mkstemp");
        if (write(w, "hello\n", 6) != 6)
            die_errno("write temp file");
        int r = open(path, O_RDONLY | O_CLOEXEC);
        if (r < 0)
            die_errno("open temp file");
        unlink(path);
        close(w);
        move_fd(r, 0);
        return;
    }
    case IN_FIFO:
    case IN_FIFO_RDWR: {
        temp_path(path, sizeof path, "dir");
        if (mkdtemp(path) == NULL)
            die_errno("mkdtemp");
        char fifo[160];
        (void)snprintf(fifo, sizeof fifo, "%s/fifo", path);
        if (mkfifo(fifo, 0600) != 0)
            die_errno("mkfifo");
        /* Read-only with O_NONBLOCK opens at once without a writer; the flag is
         * cleared after, so the only difference from a pipe read end is that this
         * FIFO lives on a filesystem, not pipefs. */
        int flags = mode == IN_FIFO ? O_RDONLY | O_NONBLOCK : O_RDWR;
        int r = open(fifo, flags | O_CLOEXEC);
        if (r < 0)
            die_errno("open fifo");
        if (fcntl(r, F_SETFL, 0) != 0)
            die_errno("fcntl F_SETFL");
        unlink(fifo);
        rmdir(path);
        move_fd(r, 0);
        return;
    }
    case IN_SOCKET:
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
            die_errno("socketpair");
        move_fd(fds[0], 0); /* the peer is CLOEXEC: it closes at exec */
        return;
    case IN_PIPE_WRITE:
        if (pipe2(fds, O_CLOEXEC) != 0)
            die_errno("pipe2");
        move_fd(fds[1], 0);
        return;
    case IN_PIPE_RDWR: {
        if (pipe2(fds, O_CLOEXEC) != 0)
            die_errno("pipe2");
        /* Reopening through /proc gives a new open file of the same pipe (pipefs,
         * S_ISFIFO) with access mode O_RDWR. */
        (void)snprintf(path, sizeof path, "/proc/self/fd/%d", fds[0]);
        int rw = open(path, O_RDWR | O_CLOEXEC);
        if (rw < 0)
            die_errno("reopen pipe read-write");
        move_fd(rw, 0);
        return;
    }
    }
}

static void setup_output(int target, enum stdout_mode mode)
{
    int fds[2];
    switch (mode) {
    case OUT_PIPE:
        return;
    case OUT_PIPE_READ:
        if (pipe2(fds, O_CLOEXEC) != 0)
            die_errno("pipe2");
        move_fd(fds[0], target);
        return;
    case OUT_FILE: {
        char path[128];
        temp_path(path, sizeof path, "stdout");
        int w = mkstemp(path);
        if (w < 0)
            die_errno("mkstemp");
        int wo = open(path, O_WRONLY | O_CLOEXEC);
        if (wo < 0)
            die_errno("open temp file");
        unlink(path);
        close(w);
        move_fd(wo, target);
        return;
    }
    }
}

static void plant_fds(const struct launch_opts *o)
{
    for (int i = 0; i < o->plant_count; i++) {
        const struct plant *p = &o->plants[i];
        int fd;
        if (p->socket) {
            int pair[2];
            if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
                die_errno("socketpair");
            fd = pair[0]; /* pair[1] stays CLOEXEC and closes at exec */
        } else {
            fd = open("/dev/null", O_RDWR | O_CLOEXEC);
            if (fd < 0)
                die_errno("open /dev/null");
        }
        if (dup2(fd, p->fd) != p->fd)
            die("plant descriptor %d: %s", p->fd, strerror(errno));
        if (fcntl(p->fd, F_SETFD, 0) != 0) /* dup2 clears CLOEXEC; say it again */
            die_errno("fcntl F_SETFD");
        if (fd != p->fd)
            close(fd);
    }
}

static void fake_proc(void)
{
    if (unshare(CLONE_NEWNS) != 0)
        die_errno("unshare(CLONE_NEWNS)");
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        die_errno("make / private");
    if (mount("tmpfs", "/proc", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=16k") != 0)
        die_errno("mount tmpfs on /proc");
    char pid[32];
    (void)snprintf(pid, sizeof pid, "%d", (int)getpid());
    if (symlink(pid, "/proc/self") != 0)
        die_errno("symlink /proc/self");
}

/* The program becomes pid 1 of a new pid namespace; launch waits and passes its
 * status on. Returns only in the child. */
static void enter_pid_namespace(void)
{
    if (unshare(CLONE_NEWPID) != 0)
        die_errno("unshare(CLONE_NEWPID)");
    pid_t child = fork();
    if (child < 0)
        die_errno("fork");
    if (child == 0)
        return;
    /* The parent keeps no descriptor the test waits on longer than the child. */
    int status;
    pid_t got;
    do {
        got = waitpid(child, &status, 0);
    } while (got < 0 && errno == EINTR);
    if (got != child)
        die_errno("waitpid");
    if (WIFEXITED(status))
        _exit(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        kill(getpid(), WTERMSIG(status));
    }
    _exit(EXIT_LAUNCH_FAILED);
}

/* ---- exec-time injection (ptrace) ------------------------------------------------- */

struct exec_injection {
    bool personality;
    unsigned long persona;
    enum map_mode map;
    int proc_dir; /* MAP_EXEC_STACK_AT_EXEC: the launcher's /proc/<pid> directory */
};

#if defined(__x86_64__)
/* The raw system call: addresses and data travel as integers, and PEEKTEXT stores
 * the word it reads at *data (the glibc wrapper hides that difference). */
static long xptrace(long request, pid_t pid, unsigned long addr, unsigned long data)
{
    return syscall(SYS_ptrace, request, (long)pid, addr, data);
}

static void helper_fail(pid_t target, const char *what)
{
    (void)fprintf(stderr, "launch: exec-time injection: %s: %s\n", what, strerror(errno));
    kill(target, SIGKILL);
    _exit(EXIT_LAUNCH_FAILED);
}

/* Runs one system call in the stopped tracee: writes a `syscall` instruction at its
 * pc, single-steps it, and restores the text and every register. */
static long inject_syscall(pid_t pid, long nr, const unsigned long args[6])
{
    struct user_regs_struct saved, regs;
    if (xptrace(PTRACE_GETREGS, pid, 0, (unsigned long)&saved) != 0)
        helper_fail(pid, "PTRACE_GETREGS");
    unsigned long addr = saved.rip;
    unsigned long orig = 0;
    if (xptrace(PTRACE_PEEKTEXT, pid, addr, (unsigned long)&orig) != 0)
        helper_fail(pid, "PTRACE_PEEKTEXT");
    unsigned long patched = (orig & ~0xffffUL) | 0x050fUL; /* bytes 0f 05: syscall */
    if (xptrace(PTRACE_POKETEXT, pid, addr, patched) != 0)
        helper_fail(pid, "PTRACE_POKETEXT");
    regs = saved;
    regs.rax = (unsigned long)nr;
    regs.orig_rax = ~0UL;
    regs.rdi = args[0];
    regs.rsi = args[1];
    regs.rdx = args[2];
    regs.r10 = args[3];
    regs.r8 = args[4];
    regs.r9 = args[5];
    if (xptrace(PTRACE_SETREGS, pid, 0, (unsigned long)&regs) != 0)
        helper_fail(pid, "PTRACE_SETREGS");
    if (xptrace(PTRACE_SINGLESTEP, pid, 0, 0) != 0)
        helper_fail(pid, "PTRACE_SINGLESTEP");
    int status;
    if (waitpid(pid, &status, __WALL) != pid || !WIFSTOPPED(status) ||
        (WSTOPSIG(status) & 0x7f) != SIGTRAP) {
        errno = EPROTO;
        helper_fail(pid, "single step did not stop with SIGTRAP");
    }
    if (xptrace(PTRACE_GETREGS, pid, 0, (unsigned long)&regs) != 0)
        helper_fail(pid, "PTRACE_GETREGS after step");
    if (regs.rip != addr + 2) {
        errno = EPROTO;
        helper_fail(pid, "single step ended at an unexpected address");
    }
    long result = (long)regs.rax;
    if (xptrace(PTRACE_POKETEXT, pid, addr, orig) != 0 ||
        xptrace(PTRACE_SETREGS, pid, 0, (unsigned long)&saved) != 0)
        helper_fail(pid, "restore");
    return result;
}

/* Finds the tracee's [stack] line in its maps (read through the /proc/<pid> directory
 * the launcher opened, which stays the same task across its exec): its range and
 * permissions ("rw-p"). Returns false if there is none. */
static bool find_stack(pid_t target, int proc_dir, unsigned long *start, unsigned long *end,
                       char perms[5])
{
    int fd = openat(proc_dir, "maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        helper_fail(target, "open /proc/<pid>/maps");
    FILE *maps = fdopen(fd, "r");
    if (maps == NULL)
        helper_fail(target, "fdopen maps");
    char *line = NULL;
    size_t cap = 0;
    bool found = false;
    while (!found && getline(&line, &cap, maps) > 0) {
        size_t len = strcspn(line, "\n");
        line[len] = '\0';
        const char *label = "[stack]";
        if (len < strlen(label) || strcmp(line + len - strlen(label), label) != 0)
            continue;
        /* "start-end perms ..." */
        char *next;
        errno = 0;
        *start = strtoul(line, &next, 16);
        if (*next != '-')
            continue;
        *end = strtoul(next + 1, &next, 16);
        if (errno != 0 || *next != ' ' || strlen(next + 1) < 4 || next[5] != ' ')
            continue;
        memcpy(perms, next + 1, 4);
        perms[4] = '\0';
        found = true;
    }
    free(line);
    (void)fclose(maps);
    return found;
}

static void make_stack_executable(pid_t target, int proc_dir)
{
    unsigned long start, end;
    char perms[5];
    if (!find_stack(target, proc_dir, &start, &end, perms)) {
        errno = ENOENT;
        helper_fail(target, "no [stack] line in the new program's maps");
    }
    unsigned long args[6] = {start, end - start, PROT_READ | PROT_WRITE | PROT_EXEC, 0, 0, 0};
    long rc = inject_syscall(target, SYS_mprotect, args);
    if (rc < 0) {
        errno = (int)-rc;
        helper_fail(target, "injected mprotect() of the stack");
    }
    if (!find_stack(target, proc_dir, &start, &end, perms) || strcmp(perms, "rwxp") != 0) {
        errno = EPROTO;
        helper_fail(target, "the [stack] mapping did not become rwxp");
    }
}

/* The helper: traces the launcher (its parent) through its execve and injects the
 * requested calls at the return from execve, before the new program's first
 * instruction; then detaches and exits. */
__attribute__((noreturn)) static void exec_helper(pid_t target, int ready_fd,
                                                  const struct exec_injection *inj)
{
    close(0);
    close(1);
    if (xptrace(PTRACE_SEIZE, target, 0,
                PTRACE_O_TRACEEXEC | PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL) != 0)
        helper_fail(target, "PTRACE_SEIZE");
    if (write(ready_fd, "r", 1) != 1)
        helper_fail(target, "write ready");
    close(ready_fd);

    bool after_exec = false;
    for (;;) {
        int status;
        if (waitpid(target, &status, __WALL) != target)
            helper_fail(target, "waitpid");
        if (WIFEXITED(status) || WIFSIGNALED(status))
            _exit(0); /* the launcher ended before exec: it has reported why */
        if (!WIFSTOPPED(status))
            continue;
        int event = status >> 16;
        int sig = WSTOPSIG(status);
        if (event == PTRACE_EVENT_EXEC) {
            /* Inside execve: changes to the return register would be overwritten, so
             * go on to the syscall-exit stop. */
            after_exec = true;
            if (xptrace(PTRACE_SYSCALL, target, 0, 0) != 0)
                helper_fail(target, "PTRACE_SYSCALL");
            continue;
        }
        if (after_exec && sig == (SIGTRAP | 0x80))
            break; /* the syscall-exit stop of execve */
        /* Anything else (a signal, a group stop): pass it on unchanged. */
        int deliver = (event == 0 && sig != SIGTRAP && sig != (SIGTRAP | 0x80)) ? sig : 0;
        if (xptrace(after_exec ? PTRACE_SYSCALL : PTRACE_CONT, target, 0,
                    (unsigned long)deliver) != 0)
            helper_fail(target, "resume");
    }

    if (inj->personality) {
        unsigned long args[6] = {inj->persona, 0, 0, 0, 0, 0};
        long rc = inject_syscall(target, SYS_personality, args);
        if (rc < 0) {
            errno = (int)-rc;
            helper_fail(target, "injected personality()");
        }
        unsigned long query[6] = {0xffffffffUL, 0, 0, 0, 0, 0};
        long now = inject_syscall(target, SYS_personality, query);
        if (now < 0 || ((unsigned long)now & READ_IMPLIES_EXEC) == 0) {
            errno = EPROTO;
            helper_fail(target, "READ_IMPLIES_EXEC did not stick");
        }
    }
    if (inj->map == MAP_EXEC_STACK_AT_EXEC) {
        make_stack_executable(target, inj->proc_dir);
        close(inj->proc_dir);
    } else if (inj->map != MAP_NONE_AT_EXEC) {
        unsigned long prot = inj->map == MAP_SHARED_AT_EXEC
                                 ? PROT_READ | PROT_WRITE
                                 : PROT_READ | PROT_WRITE | PROT_EXEC;
        unsigned long flags = (inj->map == MAP_SHARED_AT_EXEC ? MAP_SHARED : MAP_PRIVATE) |
                              MAP_ANONYMOUS;
        unsigned long args[6] = {0, 4096, prot, flags, (unsigned long)-1L, 0};
        long rc = inject_syscall(target, SYS_mmap, args);
        if (rc < 0 && rc > -4096) {
            errno = (int)-rc;
            helper_fail(target, "injected mmap()");
        }
    }
    if (xptrace(PTRACE_DETACH, target, 0, 0) != 0)
        helper_fail(target, "PTRACE_DETACH");
    _exit(0);
}

static bool exec_injection_needed(const struct launch_opts *o)
{
    return o->read_implies_exec || o->map_at_exec != MAP_NONE_AT_EXEC;
}
#else
static bool exec_injection_needed(const struct launch_opts *o)
{
    if (o->map_at_exec != MAP_NONE_AT_EXEC || o->read_implies_exec)
        die("--map-at-exec and --read-implies-exec are implemented for x86_64 only");
    return false;
}
#endif

static void start_exec_helper(const struct launch_opts *o)
{
    if (!exec_injection_needed(o))
        return;
#if defined(__x86_64__)
    struct exec_injection inj;
    memset(&inj, 0, sizeof inj);
    inj.map = o->map_at_exec;
    inj.proc_dir = -1;
    if (inj.map == MAP_EXEC_STACK_AT_EXEC) {
        /* /proc/self, not /proc/<getpid()>: under --pid-ns getpid() is the inner pid
         * while /proc is the outer one. CLOEXEC: the program never sees it. */
        inj.proc_dir = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (inj.proc_dir < 0)
            die_errno("--map-at-exec=exec-stack: open /proc/self");
    }
    if (o->read_implies_exec) {
        int persona = personality(0xffffffff);
        if (persona < 0)
            die_errno("personality query");
        inj.personality = true;
        inj.persona = (unsigned long)persona | READ_IMPLIES_EXEC;
    }
    int sync[2];
    if (pipe2(sync, O_CLOEXEC) != 0)
        die_errno("pipe2");
    pid_t launcher = getpid();
    pid_t helper = fork();
    if (helper < 0)
        die_errno("fork");
    if (helper == 0) {
        close(sync[0]);
        exec_helper(launcher, sync[1], &inj);
    }
    close(sync[1]);
    if (inj.proc_dir >= 0)
        close(inj.proc_dir);
    char byte;
    ssize_t n;
    do {
        n = read(sync[0], &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1)
        die("the exec-time helper could not attach");
    close(sync[0]);
#endif
}

/* ---- credentials and the errno filter --------------------------------------------- */

static void drop_to(uid_t uid)
{
    gid_t gid = (gid_t)uid;
    if (setgroups(0, NULL) != 0)
        die_errno("setgroups");
    if (setresgid(gid, gid, gid) != 0)
        die_errno("setresgid");
    if (setresuid(uid, uid, uid) != 0)
        die_errno("setresuid");
    uid_t r, e, s;
    if (getresuid(&r, &e, &s) != 0 || r != uid || e != uid || s != uid)
        die("setresuid did not take effect");
}

static scmp_filter_ctx build_filter(const struct launch_opts *o)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == NULL)
        die("seccomp_init failed");
    /* Root needs no no_new_privs to load a filter; leaving it unset keeps the
     * program's own no_new_privs step meaningful. */
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, geteuid() != 0);
    if (rc != 0)
        die("seccomp_attr_set NNP: %s", strerror(-rc));
    for (int i = 0; i < o->inject_count; i++) {
        const struct inject *inj = &o->injects[i];
        rc = seccomp_rule_add_array(ctx,
                                    inj->kill ? SCMP_ACT_KILL_PROCESS
                                              : SCMP_ACT_ERRNO((unsigned)inj->err),
                                    inj->nr,
                                    inj->cond_count, inj->cond_count > 0 ? inj->conds : NULL);
        if (rc != 0)
            die("seccomp rule for %s: %s", inj->syscall_name, strerror(-rc));
    }
    return ctx;
}

int main(int argc, char **argv)
{
    struct launch_opts o;
    parse_args(argc, argv, &o);
    if (o.pid_ns)
        enter_pid_namespace();

    setup_stdin(o.in);
    setup_output(1, o.out);
    plant_fds(&o);
    if (o.fake_proc)
        fake_proc();
    start_exec_helper(&o);
    if (o.drop_uid)
        drop_to(o.uid);
    scmp_filter_ctx filter = o.inject_count > 0 ? build_filter(&o) : NULL;
    /* stderr last: after this, launch's own errors have nowhere to go. */
    setup_output(2, o.err);
    if (filter != NULL) {
        int rc = seccomp_load(filter);
        if (rc != 0)
            die("seccomp_load: %s", strerror(-rc));
    }
    execv(o.program_argv[0], o.program_argv);
    (void)fprintf(stderr, "launch: exec %s: %s\n", o.program_argv[0], strerror(errno));
    return 127;
}
