/* The confined worker is non-dumpable [guard dumpable: confinement
 * step 3, PR_SET_DUMPABLE 0].
 *
 * A non-root process of the worker's own uid (65534) must get EPERM from
 * PTRACE_ATTACH and must not be able to read /proc/<pid>/mem, while the same attempts
 * by the same uid on a dumpable control process (/bin/cat) succeed.
 *
 * Shape, the same for the worker and the control:
 *   test (root) --fork--> prober P --fork/exec--> launch --drop-uid=65534 -- TARGET
 * P starts the target while still root, then drops to uid/gid 65534 itself, so
 * prober and target share every credential and P is the target's parent: a Yama
 * ptrace_scope of 1 (attach only to descendants) cannot be what refuses the attach,
 * nor make the control fail. The test (root) waits until the target is blocked in
 * read(0) (for the worker: confined, waiting for Hello), picks a mapped readable
 * address from /proc/<pid>/maps, and tells P to go. P attempts PTRACE_ATTACH (then
 * detaches if it succeeded) and an open + pread of /proc/<pid>/mem at that address,
 * reports the results, closes the target's stdin and reaps it. */
#include "lib/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define TIMEOUT_MS 15000
#define NOBODY 65534

struct report {
    int attach_rc, attach_errno;
    int open_rc, open_errno;
    long read_n;
    int read_errno;
    int target_status; /* wait status of the target after its stdin closed */
    int setup_errno;   /* nonzero: P could not drop privileges */
};

struct go {
    uint64_t addr;
};

static void write_full(int fd, const void *buf, size_t len)
{
    const char *at = buf;
    while (len > 0) {
        ssize_t n = write(fd, at, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(3);
        at += n;
        len -= (size_t)n;
    }
}

/* P: runs in the forked child, never returns. */
__attribute__((noreturn)) static void prober(const char *const target_argv[], int ctl_fd,
                                             int rep_fd)
{
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
        _exit(4);
    pid_t target = fork();
    if (target < 0)
        _exit(4);
    if (target == 0) {
        if (dup2(in[0], 0) != 0 || dup2(out[1], 1) != 1 || dup2(err[1], 2) != 2)
            _exit(127);
        (void)syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
        signal(SIGPIPE, SIG_DFL);
        char *const empty_env[] = {NULL};
        char *args[16] = {NULL}; /* execve wants char *const[]: copy the pointers */
        for (size_t i = 0; i < 15 && target_argv[i] != NULL; i++)
            memcpy(&args[i], &target_argv[i], sizeof args[i]);
        if (args[0] != NULL)
            execve(args[0], args, empty_env);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);

    struct report rep;
    memset(&rep, 0, sizeof rep);
    if (setgroups(0, NULL) != 0 || setresgid(NOBODY, NOBODY, NOBODY) != 0 ||
        setresuid(NOBODY, NOBODY, NOBODY) != 0)
        rep.setup_errno = errno != 0 ? errno : EPERM;
    int32_t pid32 = (int32_t)target;
    write_full(rep_fd, &pid32, sizeof pid32);

    struct go go;
    size_t got = 0;
    while (got < sizeof go) {
        ssize_t n = read(ctl_fd, (char *)&go + got, sizeof go - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* the test gave up: clean up */
            kill(target, SIGKILL);
            (void)waitpid(target, NULL, 0);
            _exit(5);
        }
        got += (size_t)n;
    }

    if (rep.setup_errno == 0) {
        errno = 0;
        rep.attach_rc = (int)ptrace(PTRACE_ATTACH, target, NULL, NULL);
        rep.attach_errno = rep.attach_rc == 0 ? 0 : errno;
        if (rep.attach_rc == 0) {
            int st;
            (void)waitpid(target, &st, __WALL);
            (void)ptrace(PTRACE_DETACH, target, NULL, NULL);
        }
        char path[64];
        (void)snprintf(path, sizeof path, "/proc/%d/mem", (int)target);
        int mem = open(path, O_RDONLY | O_CLOEXEC);
        rep.open_rc = mem < 0 ? -1 : 0;
        rep.open_errno = mem < 0 ? errno : 0;
        rep.read_n = -1;
        if (mem >= 0) {
            unsigned char buf[8];
            ssize_t n = pread(mem, buf, sizeof buf, (off_t)go.addr);
            rep.read_n = (long)n;
            rep.read_errno = n < 0 ? errno : 0;
            close(mem);
        }
    }
    close(in[1]); /* EOF: the worker (or cat) exits */
    int status = 0;
    while (waitpid(target, &status, 0) < 0 && errno == EINTR)
        ;
    rep.target_status = status;
    write_full(rep_fd, &rep, sizeof rep);
    _exit(0);
}

/* First readable mapping of pid that /proc/<pid>/mem can serve (not vvar/vsyscall). */
static bool readable_address(pid_t pid, uint64_t *addr)
{
    char path[64];
    (void)snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    char *maps = read_text_file(path);
    if (maps == NULL)
        return false;
    bool found = false;
    for (char *line = maps; line != NULL && *line != '\0';) {
        char *end = strchr(line, '\n');
        if (end != NULL)
            *end = '\0';
        /* "start-end perms ...": perms follow the first space. */
        char *dash;
        errno = 0;
        unsigned long long start = strtoull(line, &dash, 16);
        const char *perms = strchr(line, ' ');
        if (errno == 0 && dash != line && *dash == '-' && perms != NULL && perms[1] == 'r' &&
            strstr(line, "[vvar") == NULL && strstr(line, "[vsyscall]") == NULL) {
            *addr = start;
            found = true;
            break;
        }
        line = end != NULL ? end + 1 : NULL;
    }
    free(maps);
    return found;
}

static int yama_scope(void)
{
    char *text = read_text_file("/proc/sys/kernel/yama/ptrace_scope");
    if (text == NULL)
        return -1;
    char *end;
    long scope = strtol(text, &end, 10);
    bool number = end != text;
    free(text);
    return number ? (int)scope : -2;
}

struct outcome {
    bool ran;
    char why[512];
    struct report rep;
    char uid_line[128];
    long dumpable_seccomp; /* Seccomp of the target at the time of the attempt */
};

static struct outcome attempt(const char *const target_argv[], int min_filters)
{
    struct outcome o;
    memset(&o, 0, sizeof o);
    int ctl[2], rep[2];
    if (pipe2(ctl, O_CLOEXEC) != 0 || pipe2(rep, O_CLOEXEC) != 0) {
        (void)snprintf(o.why, sizeof o.why, "pipe2: %s", strerror(errno));
        return o;
    }
    fflush(stdout);
    pid_t p = fork();
    if (p < 0) {
        (void)snprintf(o.why, sizeof o.why, "fork: %s", strerror(errno));
        return o;
    }
    if (p == 0) {
        close(ctl[1]);
        close(rep[0]);
        prober(target_argv, ctl[0], rep[1]);
    }
    close(ctl[0]);
    close(rep[1]);

    int32_t target = -1;
    if (fd_read_exact(rep[0], &target, sizeof target, TIMEOUT_MS) != 0) {
        (void)snprintf(o.why, sizeof o.why, "the prober did not report the target pid");
        goto done;
    }
    if (!wait_blocked_reading_stdin(target, min_filters, TIMEOUT_MS, o.why, sizeof o.why))
        goto done;
    (void)proc_status_field(target, "Uid", o.uid_line, sizeof o.uid_line);
    o.dumpable_seccomp = proc_status_number(target, "Seccomp");
    struct go go = {0};
    if (!readable_address(target, &go.addr)) {
        (void)snprintf(o.why, sizeof o.why, "no readable mapping in /proc/%d/maps", (int)target);
        goto done;
    }
    if (fd_write_all(ctl[1], &go, sizeof go, TIMEOUT_MS) != 0 ||
        fd_read_exact(rep[0], &o.rep, sizeof o.rep, TIMEOUT_MS) != 0) {
        (void)snprintf(o.why, sizeof o.why, "no report from the prober: %s", strerror(errno));
        goto done;
    }
    o.ran = true;
done:
    close(ctl[1]); /* a prober still waiting for go cleans up and exits */
    close(rep[0]);
    int pidfd = (int)syscall(SYS_pidfd_open, p, 0U);
    struct pollfd pfd = {.fd = pidfd, .events = POLLIN, .revents = 0};
    if (pidfd < 0 || poll(&pfd, 1, TIMEOUT_MS) != 1)
        kill(p, SIGKILL);
    if (pidfd >= 0)
        close(pidfd);
    (void)waitpid(p, NULL, 0);
    return o;
}

static const char *uid_ok(const struct outcome *o)
{
    return strcmp(o->uid_line, "65534\t65534\t65534\t65534") == 0 ? "" : " (not uid 65534!)";
}

/* A byte-for-byte copy of the release worker in a directory uid 65534 can reach: the
 * checkout may live under a 0700 directory (mktemp -d), where a worker that dropped to
 * uid 65534 could not be executed at all. */
static const char *reachable_copy(const char *worker)
{
    const char *dir = harness_tmpdir("nondumpable");
    if (dir == NULL || chmod(dir, 0755) != 0)
        return NULL;
    static char path[512];
    snprintf(path, sizeof path, "%s/ck-basal-worker", dir);
    return copy_file(worker, path, 0755) ? path : NULL;
}

int main(void)
{
    const char *launcher = harness_launcher();
    const char *release = harness_release_worker();
    if (!require_binary(launcher, "nondumpable: the launcher is built") ||
        !require_binary(release, "nondumpable: the release worker is built"))
        return harness_finish();
    const char *worker = reachable_copy(release);
    if (worker == NULL) {
        fail("nondumpable: copy the release worker where uid 65534 can execute it", "%s",
             strerror(errno));
        harness_remove_tmpdir();
        return harness_finish();
    }
    int scope = yama_scope();
    harness_note("Yama ptrace_scope: %d (-1: no Yama, -2: unreadable); the prober is the "
                 "target's parent",
                 scope);

    /* Control first: the same uid can attach to and read a dumpable process. */
    const char *control_argv[] = {launcher, "--drop-uid=65534", "--", "/bin/cat", NULL};
    struct outcome c = attempt(control_argv, 0);
    check(c.ran && c.rep.setup_errno == 0 && c.rep.attach_rc == 0 && uid_ok(&c)[0] == '\0',
          "nondumpable control: uid 65534 can PTRACE_ATTACH a dumpable process of its uid",
          "%s; setup errno %d; attach rc %d errno %s; target Uid \"%s\"%s%s", c.ran ? "ran" : c.why,
          c.rep.setup_errno, c.rep.attach_rc, strerrorname_np(c.rep.attach_errno) != NULL ? strerrorname_np(c.rep.attach_errno) : "0",
          c.uid_line, uid_ok(&c), scope > 0 ? " (Yama ptrace_scope > 0 may forbid it)" : "");
    check(c.ran && c.rep.open_rc == 0 && c.rep.read_n == 8,
          "nondumpable control: uid 65534 can read /proc/<pid>/mem of a dumpable process",
          "%s; open rc %d errno %d; pread %ld errno %d", c.ran ? "ran" : c.why, c.rep.open_rc,
          c.rep.open_errno, c.rep.read_n, c.rep.read_errno);

    /* The worker, confined and waiting for Hello, as uid 65534. */
    const char *worker_argv[] = {launcher, "--drop-uid=65534", "--", worker,
                                 "--landlock=required", NULL};
    struct outcome w = attempt(worker_argv, 1);
    check(w.ran && w.rep.setup_errno == 0 && w.rep.attach_rc == -1 &&
              w.rep.attach_errno == EPERM && uid_ok(&w)[0] == '\0',
          "nondumpable: PTRACE_ATTACH by the worker's own uid gets EPERM [guard dumpable]",
          "%s; setup errno %d; attach rc %d errno %d; worker Uid \"%s\"%s", w.ran ? "ran" : w.why,
          w.rep.setup_errno, w.rep.attach_rc, w.rep.attach_errno, w.uid_line, uid_ok(&w));
    bool unreadable = (w.rep.open_rc == -1 &&
                       (w.rep.open_errno == EACCES || w.rep.open_errno == EPERM)) ||
                      (w.rep.open_rc == 0 && w.rep.read_n < 0);
    check(w.ran && unreadable,
          "nondumpable: the worker's own uid cannot read /proc/<pid>/mem [guard dumpable]",
          "%s; open rc %d errno %d; pread %ld errno %d", w.ran ? "ran" : w.why, w.rep.open_rc,
          w.rep.open_errno, w.rep.read_n, w.rep.read_errno);
    check(w.ran && w.dumpable_seccomp == 2 && WIFEXITED(w.rep.target_status) &&
              WEXITSTATUS(w.rep.target_status) == 0,
          "nondumpable: the worker probed was confined (Seccomp 2) and exits 0 at EOF",
          "%s; Seccomp %ld; wait status 0x%x", w.ran ? "ran" : w.why, w.dumpable_seccomp,
          (unsigned)w.rep.target_status);
    harness_remove_tmpdir();
    return harness_finish();
}
