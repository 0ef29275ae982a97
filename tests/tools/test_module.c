/* A module program for the tests of ops_module_invoke (tests/t_ops_module.c).
 *
 *   test_module --log FILE [--prefix-spaces N]
 *
 * Reads the request {"module", "op", "args", "idempotency_key"} from stdin to EOF,
 * appends the line "op key args-json\n" to FILE (O_APPEND, fsync) and replies by op:
 *   echo     {"result": args}
 *   add      args {"a": n, "b": n}: {"result": a + b}
 *   fail     {"error": {"code": "no_such_ticket", ...}}
 *   badcode  an error with the code "Bad Code!"
 *   garbage  text that is not JSON
 *   exit3    exits 3 without a reply
 *   sleep    writes "test_module pid P child C" on stderr (C a child in the same
 *            process group, also sleeping) and sleeps 30 s (for timeouts)
 *   big      a reply of more than 2 MiB
 *   stderr   2000 bytes on stderr (ending "END-OF-STDERR"), then exit 1
 *   detach   a child leaves the group (setsid) holding stdout/stderr for 30 s, logging
 *            "detached PID"; the program replies {"result": "detached"} and exits 0
 *   env      {"result": {"cwd": ..., "env": [...], "fds": [...], "pgid_is_pid": bool}}
 *   other    {"error": {"code": "unknown_op", ...}}
 * With --prefix-spaces N it first writes N spaces on stdout (valid leading JSON
 * whitespace) before reading anything, so a parent that writes the whole request
 * before reading the reply deadlocks with a large request. */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* A child that leaves the process group (setsid) holding stdout and stderr open and
 * sleeps 30 s; it writes "detached N" (its pid) to the log first. The program itself
 * replies {"result": "detached"} and exits 0. */
static int do_detach(const char *log)
{
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        (void)setsid();
        int fd = open(log, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd >= 0) {
            char line[64];
            int n = snprintf(line, sizeof line, "detached %ld\n", (long)getpid());
            (void)write_all(fd, line, (size_t)n);
            (void)fsync(fd);
            close(fd);
        }
        sleep(30);
        _exit(0);
    }
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
    pid_t child = fork();
    if (child == 0) {
        sleep(30);
        _exit(0);
    }
    char line[96];
    int n = snprintf(line, sizeof line, "test_module pid %d child %d\n", (int)getpid(), (int)child);
    if (write_all(2, line, (size_t)n) != 0)
        return 1;
    sleep(30);
    return 0;
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
    return reply_json(json_pack("{s:{s:s,s:o,s:o,s:b}}", "result", "cwd", cwd, "env", env, "fds",
                                fds, "pgid_is_pid", getpgrp() == getpid()));
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
    json_t *req = json_loadb(input, len, 0, &je);
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
    } else {
        rc = reply_error("unknown_op", "no such op");
    }
    json_decref(req);
    return rc;
}
