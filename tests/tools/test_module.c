/* A module program for the tests of ops_module_invoke (tests/t_ops_module.c).
 *
 *   test_module --log FILE [--prefix-spaces N]
 *
 * Reads the request {"module", "op", "args", "idempotency_key"} from stdin to EOF,
 * appends the line "op key args-json\n" to FILE (O_APPEND, fsync) and replies by op:
 *   echo     {"result": args}
 *   accept*  (any op starting "accept") {"accepted": true} when the request says "long_running": true (a
 *            long-running op's module), else an error "not_long_running"
 *   add      args {"a": n, "b": n}: {"result": a + b}
 *   fail     {"error": {"code": "no_such_ticket", ...}}
 *   badcode  an error with the code "Bad Code!"
 *   garbage  text that is not JSON
 *   raw      args a string: that string is the whole reply, byte for byte
 *   exit3    exits 3 without a reply
 *   sleep    writes "test_module pid P child C" on stderr (C a child in the same
 *            process group, also sleeping) and sleeps 30 s (for timeouts)
 *   hold*    (any op starting "hold") args {"fifo": F, "grandchild": bool,
 *            "outlive": bool}: when the test is reading the FIFO F and no earlier
 *            call held (F.held does not exist; it is made now), writes
 *            "hold P G\n" into F (G the grandchild, 0 without one) and waits until the
 *            test closes its end (at most 60 s); the grandchild (a child that left the
 *            group with setsid) waits too, then logs "late grandchild". With outlive
 *            the program first clears its parent-death signal, as a program may. Then
 *            (or at once when nobody reads F) logs "effect OP KEY" and replies
 *            {"result": "held"}
 *   big      a reply of more than 2 MiB
 *   stderr   2000 bytes on stderr (ending "END-OF-STDERR"), then exit 1
 *   detach   a child leaves the group (setsid) holding stdout/stderr for 30 s, logging
 *            "detached PID"; once it has logged, the program replies
 *            {"result": "detached"} and exits 0
 *   env      {"result": {"cwd": ..., "env": [...], "fds": [...], "pgid_is_pid": bool,
 *            "pid": getpid(), "uid": getuid(), "gid": getgid()}}
 *   other    {"error": {"code": "unknown_op", ...}}
 * Every pid it reports is as /proc names it: the program runs as pid 1 of a PID
 * namespace of its own, where getpid() says 1.
 * With --prefix-spaces N it first writes N spaces on stdout (valid leading JSON
 * whitespace) before reading anything, so a parent that writes the whole request
 * before reading the reply deadlocks with a large request. */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int reply_json(json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(v);
    if (text == NULL)
        return 1;
    int rc = write_all(1, text, strlen(text)) == 0 && write_all(1, "\n", 1) == 0 ? 0 : 1;
    free(text);
    return rc;
}

static int reply_error(const char *code, const char *message)
{
    return reply_json(json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message));
}

/* This process's pid as /proc names it (the PID namespace /proc was mounted in, the
 * test's), not as getpid() does inside the module's own namespace. */
static long proc_pid(void)
{
    char buf[32];
    ssize_t n = readlink("/proc/self", buf, sizeof buf - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

static int append_line(const char *path, const char *line)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    int rc = fd >= 0 && write_all(fd, line, strlen(line)) == 0 && fsync(fd) == 0 ? 0 : -1;
    if (fd >= 0)
        close(fd);
    return rc;
}

/* A child that leaves the process group (setsid) holding stdout and stderr open and
 * sleeps 30 s; it writes "detached N" (its pid) to the log first. The program itself
 * replies {"result": "detached"} and exits 0. */
static int do_detach(const char *log)
{
    int p[2];
    if (pipe(p) != 0)
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        (void)setsid();
        close(p[0]);
        char line[64];
        snprintf(line, sizeof line, "detached %ld\n", proc_pid());
        (void)append_line(log, line);
        close(p[1]); /* logged: the program may reply */
        sleep(30);
        _exit(0);
    }
    close(p[1]);
    char byte;
    while (read(p[0], &byte, 1) < 0 && errno == EINTR) {
    }
    close(p[0]);
    return reply_json(json_pack("{s:s}", "result", "detached"));
}

static char *read_stdin(size_t *len)
{
    size_t cap = 65536, used = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        if (used == cap) {
            char *grown = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
            if (grown == NULL) {
                free(buf);
                return NULL;
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t n = read(0, buf + used, cap - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(buf);
            return NULL;
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    *len = used;
    return buf;
}

static int log_request(const char *path, const char *op, const char *key, json_t *args)
{
    char *args_text = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
    if (args_text == NULL)
        return -1;
    size_t len = strlen(op) + strlen(key) + strlen(args_text) + 3;
    char *line = malloc(len + 1);
    if (line == NULL) {
        free(args_text);
        return -1;
    }
    snprintf(line, len + 1, "%s %s %s\n", op, key, args_text);
    free(args_text);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    int rc = fd >= 0 && write_all(fd, line, len) == 0 && fsync(fd) == 0 ? 0 : -1;
    if (fd >= 0)
        close(fd);
    free(line);
    return rc;
}

static int do_sleep(void)
{
    int p[2];
    if (pipe(p) != 0)
        return 1;
    pid_t child = fork();
    if (child == 0) {
        close(p[0]);
        long me = proc_pid();
        (void)write_all(p[1], (const char *)&me, sizeof me);
        close(p[1]);
        sleep(30);
        _exit(0);
    }
    close(p[1]);
    long child_pid = -1;
    ssize_t got = read(p[0], &child_pid, sizeof child_pid);
    close(p[0]);
    if (child < 0 || got != (ssize_t)sizeof child_pid)
        return 1;
    char line[96];
    int n = snprintf(line, sizeof line, "test_module pid %ld child %ld\n", proc_pid(), child_pid);
    if (write_all(2, line, (size_t)n) != 0)
        return 1;
    sleep(30);
    return 0;
}

/* Waits until nobody reads the FIFO whose write end fd is (POLLERR), at most 60 s. */
static void wait_released(int fd)
{
    struct pollfd p = {fd, 0, 0};
    while (poll(&p, 1, 60000) < 0 && errno == EINTR) {
    }
}

static int do_hold(const char *log, const char *op, const char *key, json_t *args)
{
    const char *fifo = json_string_value(json_object_get(args, "fifo"));
    bool grandchild = json_is_true(json_object_get(args, "grandchild"));
    bool outlive = json_is_true(json_object_get(args, "outlive"));
    int fd = fifo != NULL ? open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC) : -1;
    char held[PATH_MAX];
    if (fd >= 0 && (size_t)snprintf(held, sizeof held, "%s.held", fifo) < sizeof held) {
        int marker = open(held, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (marker < 0) { /* an earlier call held already: this one does not */
            close(fd);
            fd = -1;
        } else {
            close(marker);
        }
    }
    if (fd >= 0) {
        if (outlive)
            (void)prctl(PR_SET_PDEATHSIG, 0);
        int p[2] = {-1, -1};
        long grand = 0;
        if (grandchild && pipe(p) == 0) {
            pid_t g = fork();
            if (g == 0) {
                (void)setsid();
                close(p[0]);
                long me = proc_pid();
                (void)write_all(p[1], (const char *)&me, sizeof me);
                close(p[1]);
                wait_released(fd);
                (void)append_line(log, "late grandchild\n");
                _exit(0);
            }
            close(p[1]);
            if (g < 0 || read(p[0], &grand, sizeof grand) != (ssize_t)sizeof grand)
                grand = -1;
            close(p[0]);
        }
        char line[96];
        int n = snprintf(line, sizeof line, "hold %ld %ld\n", proc_pid(), grand);
        (void)write_all(fd, line, (size_t)n);
        wait_released(fd);
        close(fd);
    }
    char effect[256];
    snprintf(effect, sizeof effect, "effect %s %s\n", op, key);
    if (append_line(log, effect) != 0)
        return 1;
    return reply_json(json_pack("{s:s}", "result", "held"));
}

extern char **environ;

static int do_env(void)
{
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL)
        return 1;
    json_t *env = json_array(), *fds = json_array();
    for (char **e = environ; *e != NULL; e++)
        json_array_append_new(env, json_string(*e));
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return 1;
    const struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        if (entry->d_name[0] == '.')
            continue;
        int fd = (int)strtol(entry->d_name, NULL, 10);
        if (fd != dirfd(d))
            json_array_append_new(fds, json_integer(fd));
    }
    closedir(d);
    cpu_set_t cpus;
    json_int_t cpu_count = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : -1;
    return reply_json(json_pack("{s:{s:s,s:o,s:o,s:b,s:I,s:I,s:I,s:I}}", "result", "cwd", cwd,
                                "env", env, "fds", fds, "pgid_is_pid", getpgrp() == getpid(),
                                "pid", (json_int_t)getpid(), "uid", (json_int_t)getuid(), "gid",
                                (json_int_t)getgid(), "cpus", cpu_count));
}

static int do_big(void)
{
    size_t n = (2u << 20) + 4096;
    char *s = malloc(n + 1);
    if (s == NULL)
        return 1;
    memset(s, 'x', n);
    s[n] = '\0';
    json_t *v = json_pack("{s:s}", "result", s);
    free(s);
    return reply_json(v);
}

static int do_stderr(void)
{
    char buf[2000];
    memset(buf, 'e', sizeof buf);
    static const char end[] = "END-OF-STDERR";
    memcpy(buf + sizeof buf - (sizeof end - 1), end, sizeof end - 1);
    (void)write_all(2, buf, sizeof buf);
    return 1;
}

int main(int argc, char **argv)
{
    const char *log_path = NULL;
    long prefix = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--log") == 0)
            log_path = argv[i + 1];
        else if (strcmp(argv[i], "--prefix-spaces") == 0)
            prefix = strtol(argv[i + 1], NULL, 10);
    }
    if (log_path == NULL) {
        fputs("usage: test_module --log FILE [--prefix-spaces N]\n", stderr);
        return 2;
    }
    if (prefix > 0) {
        char *spaces = malloc((size_t)prefix);
        if (spaces == NULL)
            return 1;
        memset(spaces, ' ', (size_t)prefix);
        int rc = write_all(1, spaces, (size_t)prefix);
        free(spaces);
        if (rc != 0)
            return 1;
    }
    size_t len = 0;
    char *input = read_stdin(&len);
    if (input == NULL)
        return 1;
    json_error_t je;
    json_t *req = json_loadb(input, len, JSON_ALLOW_NUL, &je);
    free(input);
    const char *op = json_string_value(json_object_get(req, "op"));
    const char *key = json_string_value(json_object_get(req, "idempotency_key"));
    json_t *args = json_object_get(req, "args");
    if (op == NULL || args == NULL) {
        fputs("test_module: bad request\n", stderr);
        return 1;
    }
    if (log_request(log_path, op, key != NULL ? key : "-", args) != 0) {
        fputs("test_module: cannot write the log\n", stderr);
        return 1;
    }
    int rc;
    if (strcmp(op, "echo") == 0) {
        rc = reply_json(json_pack("{s:O}", "result", args));
    } else if (strncmp(op, "accept", 6) == 0) {
        /* A long-running op's module: it takes the call and completes it later. */
        rc = json_is_true(json_object_get(req, "long_running"))
                 ? reply_json(json_pack("{s:b}", "accepted", 1))
                 : reply_error("not_long_running", "the request did not say long_running");
    } else if (strcmp(op, "add") == 0) {
        json_t *a = json_object_get(args, "a"), *b = json_object_get(args, "b");
        if (!json_is_number(a) || !json_is_number(b))
            rc = reply_error("invalid_arguments", "add takes {a, b}");
        else if (json_is_integer(a) && json_is_integer(b))
            rc = reply_json(json_pack("{s:I}", "result",
                                      json_integer_value(a) + json_integer_value(b)));
        else
            rc = reply_json(json_pack("{s:f}", "result", json_number_value(a) + json_number_value(b)));
    } else if (strcmp(op, "fail") == 0) {
        rc = reply_error("no_such_ticket", "ticket 42 does not exist");
    } else if (strcmp(op, "badcode") == 0) {
        rc = reply_error("Bad Code!", "a code outside the form");
    } else if (strcmp(op, "garbage") == 0) {
        rc = write_all(1, "this is not JSON\n", 17) == 0 ? 0 : 1;
    } else if (strcmp(op, "raw") == 0 && json_is_string(args)) {
        rc = write_all(1, json_string_value(args), json_string_length(args)) == 0 ? 0 : 1;
    } else if (strcmp(op, "exit3") == 0) {
        rc = 3;
    } else if (strcmp(op, "sleep") == 0) {
        rc = do_sleep();
    } else if (strcmp(op, "env") == 0) {
        rc = do_env();
    } else if (strcmp(op, "big") == 0) {
        rc = do_big();
    } else if (strcmp(op, "stderr") == 0) {
        rc = do_stderr();
    } else if (strcmp(op, "detach") == 0) {
        rc = do_detach(log_path);
    } else if (strncmp(op, "hold", 4) == 0) {
        rc = do_hold(log_path, op, key != NULL ? key : "-", args);
    } else {
        rc = reply_error("unknown_op", "no such op");
    }
    json_decref(req);
    return rc;
}
