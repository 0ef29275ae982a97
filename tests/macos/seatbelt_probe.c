/* The macOS worker's confinement, on macOS (make macos-probe; the CI job runs it).
 * Each probe runs in a fresh child: once unconfined (the control, which shows the
 * probe can succeed) and once after the worker's own confine() (confine_macos.c, the
 * embedded worker.sb), where every forbidden one must fail and the allowed ones (stdio,
 * signalling itself) must still work. Also: a descriptor the parent leaked is closed by
 * confine(). Prints "ok - ..." / "not ok - ..." lines like the suite; exits 1 on any
 * failure. Built only on macOS: on Linux, make macos-check compiles it for
 * arm64-apple-macos13 against tests/macos/macos_decls.h. */
#include "worker/confine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <servers/bootstrap.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
static int listen_port;
static const char *scratch_path = "/tmp/basal-seatbelt-probe.tmp";

static void result(bool passed, const char *name, const char *detail)
{
    if (passed) {
        printf("ok - %s\n", name);
    } else {
        printf("not ok - %s: %s\n", name, detail);
        failures++;
    }
    fflush(stdout);
}

/* Each probe returns 0 when the capability worked, 1 when it was denied. */
static int probe_file_read(void)
{
    int fd = open("/etc/hosts", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    (void)close(fd);
    return 0;
}

static int probe_file_write(void)
{
    int fd = open(scratch_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return 1;
    (void)close(fd);
    return 0;
}

static int probe_network(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 1;
    struct sockaddr_in to;
    memset(&to, 0, sizeof to);
    to.sin_family = AF_INET;
    to.sin_port = htons((uint16_t)listen_port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = connect(fd, (const struct sockaddr *)&to, sizeof to);
    (void)close(fd);
    return rc == 0 ? 0 : 1;
}

static int probe_exec(void)
{
    char arg0[] = "/usr/bin/true";
    char *const argv[] = {arg0, NULL};
    char *const envp[] = {NULL};
    pid_t pid;
    if (posix_spawn(&pid, arg0, NULL, NULL, argv, envp) != 0)
        return 1;
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return 1;
    return 0;
}

static int probe_service_lookup(void)
{
    mach_port_t port = 0;
    return bootstrap_look_up(bootstrap_port, "com.apple.system.notification_center", &port) ==
                   KERN_SUCCESS
               ? 0
               : 1;
}

static int probe_signal_parent(void)
{
    return kill(getppid(), 0) == 0 ? 0 : 1;
}

static int probe_signal_self(void)
{
    return kill(getpid(), 0) == 0 ? 0 : 1;
}

static int probe_stdout(void)
{
    static const char line[] = "# stdout still works\n";
    return write(1, line, sizeof line - 1) == (ssize_t)(sizeof line - 1) ? 0 : 1;
}

struct probe {
    const char *name;
    int (*run)(void);
    bool allowed_confined;
};

static const struct probe PROBES[] = {
    {"opening a file for reading", probe_file_read, false},
    {"creating a file", probe_file_write, false},
    {"connecting to a loopback listener", probe_network, false},
    {"executing /usr/bin/true", probe_exec, false},
    {"looking up a Mach service", probe_service_lookup, false},
    {"signalling the parent", probe_signal_parent, false},
    {"signalling itself", probe_signal_self, true},
    {"writing to stdout", probe_stdout, true},
};

/* Runs probe in a child, confined or not; returns its exit status (0 worked, 1 denied,
 * 70 confine refused, -1 no status). */
static int run_child(const struct probe *probe, bool confined)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (confined) {
            struct confine_options options;
            memset(&options, 0, sizeof options);
            options.landlock_policy = LANDLOCK_POLICY_REQUIRED;
            (void)confine(&options);
        }
        _exit(probe->run());
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

static int listen_loopback(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in at;
    memset(&at, 0, sizeof at);
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof at;
    if (fd < 0 || bind(fd, (const struct sockaddr *)&at, sizeof at) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&at, &len) != 0)
        return -1;
    listen_port = ntohs(at.sin_port);
    return fd;
}

/* A descriptor the parent left open is closed by confine() before the profile. */
static void check_leaked_descriptor_closed(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        /* Far above the descriptors confine() itself opens (its kqueues reuse the low
         * numbers it closed), so a leak shows as this number still open. */
        int leaked = fcntl(open("/dev/null", O_RDONLY), F_DUPFD, 100);
        if (leaked < 100)
            _exit(2);
        struct confine_options options;
        memset(&options, 0, sizeof options);
        (void)confine(&options);
        _exit(fcntl(leaked, F_GETFD) == -1 && errno == EBADF ? 0 : 1);
    }
    int status = 0;
    bool passed = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                  WEXITSTATUS(status) == 0;
    result(passed, "seatbelt: confine() closes a leaked descriptor above stdio",
           "the descriptor was still open");
}

int main(void)
{
    int listener = listen_loopback();
    if (listener < 0) {
        result(false, "seatbelt: a loopback listener for the network probe", strerror(errno));
        return 1;
    }
    char name[160], detail[160];
    for (size_t i = 0; i < sizeof PROBES / sizeof PROBES[0]; i++) {
        const struct probe *probe = &PROBES[i];
        (void)unlink(scratch_path);
        int control = run_child(probe, false);
        snprintf(name, sizeof name, "seatbelt control: unconfined, %s works", probe->name);
        snprintf(detail, sizeof detail, "child status %d", control);
        result(control == 0, name, detail);
        (void)unlink(scratch_path);
        int confined = run_child(probe, true);
        snprintf(name, sizeof name, "seatbelt: confined, %s %s", probe->name,
                 probe->allowed_confined ? "still works" : "is denied");
        snprintf(detail, sizeof detail, "child status %d (0 worked, 1 denied, 70 refused)", confined);
        result(confined == (probe->allowed_confined ? 0 : 1), name, detail);
    }
    (void)unlink(scratch_path);
    check_leaked_descriptor_closed();
    (void)close(listener);
    return failures == 0 ? 0 : 1;
}
