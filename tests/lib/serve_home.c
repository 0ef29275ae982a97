#include "serve_home.h"

#include "store_view.h"
#include "test_store.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct proc_result test_home_cli(const struct test_home *h, bool json, const char *const *args)
{
    struct cli_opts opts = {.json = json, .envp = NULL};
    return cli_run(h->home, &opts, args);
}

void test_home_paths(struct test_home *h, const char *root, const char *name)
{
    memset(h, 0, sizeof *h);
    sfmt(h->dir, sizeof h->dir, "%s/%s", root, name);
    if (mkdir(h->dir, 0755) != 0 && errno != EEXIST)
        fail("test home: mkdir", "%s: %s", h->dir, strerror(errno));
    sfmt(h->home, sizeof h->home, "%s/home", h->dir);
    sfmt(h->db, sizeof h->db, "%s/basal.db", h->home);
    sfmt(h->sock, sizeof h->sock, "%s/ops.sock", h->home);
}

void test_home_begin(struct test_home *h, const char *root, const char *name)
{
    test_home_paths(h, root, name);
    struct proc_result r = test_home_cli(h, false, ARGS("setup"));
    if (!proc_exited_with(&r, 0))
        fail("test home: setup", "%s: %s", proc_describe(&r), r.err);
    proc_result_free(&r);
}

bool test_home_flow(const struct test_home *h, const char *id, int version,
                    const char *trigger_json, const char *script)
{
    char dir[PATH_MAX + 48], manifest[2048], why[1024];
    sfmt(dir, sizeof dir, "%s/flow-%s-v%d", h->dir, id, version);
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":%d,\"purpose\":\"test flow\","
         "\"trigger\":%s,\"limits\":{\"cpu_ms\":10000}}",
         id, version, trigger_json);
    if (!flow_dir_write(dir, manifest, script)) {
        fprintf(stderr, "  flow %s: cannot write %s\n", id, dir);
        return false;
    }
    if (cli_install_approve(h->home, NULL, dir, id, version, why, sizeof why) != FLOW_ADDED) {
        fprintf(stderr, "  %s\n", why);
        return false;
    }
    return true;
}

bool test_home_hold_catalog(const struct test_home *h)
{
    char catalog[2048], path[PATH_MAX + 32], log[PATH_MAX + 32];
    sfmt(log, sizeof log, "%s/effects.log", h->dir);
    sfmt(catalog, sizeof catalog, "{\"modules\": {" TEST_HOLD_MODULE_JSON "}}",
         harness_path("test/tools/test_module"), log);
    sfmt(path, sizeof path, "%s/modules.json", h->home);
    return write_text_file(path, catalog, 0600);
}

int test_home_held_flow(const struct test_home *h, const char *id, const char *trigger_json,
                        const char *ret)
{
    char fifo[PATH_MAX + 48], script[PATH_MAX + 256], manifest_tail[1024];
    sfmt(fifo, sizeof fifo, "%s/%s.fifo", h->dir, id);
    sfmt(script, sizeof script, "await ops.call('hold', 'hold_query', {fifo: '%s'});\nreturn %s;\n",
         fifo, ret);
    sfmt(manifest_tail, sizeof manifest_tail,
         "%s,\"ops\":[{\"module\":\"hold\",\"op\":\"hold_query\"}]", trigger_json);
    if (mkfifo(fifo, 0600) != 0) {
        fprintf(stderr, "  held flow %s: mkfifo %s: %s\n", id, fifo, strerror(errno));
        return -1;
    }
    if (!test_home_flow(h, id, 1, manifest_tail, script))
        return -1;
    int fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        fprintf(stderr, "  held flow %s: open %s: %s\n", id, fifo, strerror(errno));
    return fd;
}

long long test_home_sql(const struct test_home *h, const char *sql)
{
    return store_number(h->db, sql);
}

bool test_serve_wait_log(struct test_serve *s, const char *needle, int timeout_ms)
{
    return test_serve_wait_log_count(s, needle, 1, timeout_ms);
}

bool test_serve_wait_log_count(struct test_serve *s, const char *needle, int count,
                               int timeout_ms)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        if (test_serve_log_count(s, needle) >= count)
            return true;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long spent =
            (now.tv_sec - start.tv_sec) * 1000LL + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (spent >= timeout_ms || s->p.err_fd < 0)
            return false;
        struct pollfd p = {s->p.err_fd, POLLIN, 0};
        if (poll(&p, 1, (int)(timeout_ms - spent)) <= 0)
            continue;
        if (s->len + 1 >= sizeof s->log) /* keep going with a fresh buffer */
            s->len = 0;
        ssize_t n = read(s->p.err_fd, s->log + s->len, sizeof s->log - 1 - s->len);
        if (n <= 0) {
            close(s->p.err_fd);
            s->p.err_fd = -1;
            continue;
        }
        s->len += (size_t)n;
        s->log[s->len] = '\0';
    }
}

int test_serve_log_count(const struct test_serve *s, const char *needle)
{
    int n = 0;
    size_t len = strlen(needle);
    for (const char *p = strstr(s->log, needle); p != NULL; p = strstr(p + len, needle))
        n++;
    return n;
}

bool test_serve_start(struct test_serve *s, const struct test_home *h, const char *const *extra,
                      const char *const *env)
{
    memset(s, 0, sizeof *s);
    const char *argv[24];
    int n = 0;
    argv[n++] = harness_test_parent();
    argv[n++] = "--home";
    argv[n++] = h->home;
    const char *uri = test_store_uri(h->home);
    if (uri != NULL) {
        argv[n++] = "--store";
        argv[n++] = uri;
    }
    argv[n++] = "serve";
    for (int i = 0; extra != NULL && extra[i] != NULL && n < 23; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    /* The test's environment plus env. */
    size_t count = 0, add = 0;
    while (environ[count] != NULL)
        count++;
    while (env != NULL && env[add] != NULL)
        add++;
    char **envp = calloc(count + add + 1, sizeof *envp);
    if (envp == NULL)
        return false;
    memcpy(envp, environ, count * sizeof *envp);
    for (size_t i = 0; i < add; i++)
        envp[count + i] = strdup(env[i]);
    struct proc_opts opts = {false, PROC_PIPE, PROC_PIPE, PROC_PIPE, envp};
    int started = proc_start(&s->p, argv, &opts);
    for (size_t i = 0; i < add; i++)
        free(envp[count + i]);
    free(envp);
    if (started != 0)
        return false;
    s->up = test_serve_wait_log(s, "event=ready", SERVE_HOME_TIMEOUT_MS);
    return s->up;
}

int test_serve_end(struct test_serve *s, int timeout_ms)
{
    (void)test_serve_wait_log(s, "\n\n(never)", timeout_ms > 0 ? 10 : 0); /* what is there */
    struct proc_result r = proc_finish(&s->p, NULL, 0, timeout_ms);
    if (r.err != NULL && s->len + strlen(r.err) + 1 < sizeof s->log) {
        memcpy(s->log + s->len, r.err, strlen(r.err) + 1);
        s->len += strlen(r.err);
    }
    int code = -1;
    if (r.started && !r.timed_out && WIFEXITED(r.status))
        code = WEXITSTATUS(r.status);
    else if (r.started && !r.timed_out && WIFSIGNALED(r.status))
        code = 128 + WTERMSIG(r.status);
    proc_result_free(&r);
    return code;
}

int test_serve_stop(struct test_serve *s)
{
    kill(s->p.pid, SIGTERM);
    return test_serve_end(s, SERVE_HOME_TIMEOUT_MS);
}

char *test_ops_request(const struct test_home *h, const char *request_json)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    sfmt(a.sun_path, sizeof a.sun_path, "%s", h->sock);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return NULL;
    }
    size_t len = strlen(request_json);
    bool sent = send(fd, request_json, len, MSG_NOSIGNAL) == (ssize_t)len &&
                send(fd, "\n", 1, MSG_NOSIGNAL) == 1;
    size_t cap = 1 << 16, got = 0;
    char *reply = sent ? malloc(cap) : NULL;
    while (reply != NULL && got + 1 < cap) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, SERVE_HOME_TIMEOUT_MS) <= 0)
            break;
        ssize_t n = read(fd, reply + got, cap - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        if (memchr(reply, '\n', got) != NULL)
            break;
    }
    close(fd);
    if (reply != NULL)
        reply[got] = '\0';
    return reply;
}

bool test_serve_clock(const struct test_home *h, long long ms)
{
    char req[128];
    sfmt(req, sizeof req, "{\"cmd\":\"test.clock\",\"args\":{\"ms\":%lld}}", ms);
    char *text = test_ops_request(h, req);
    json_t *reply = text != NULL ? json_loads(text, 0, NULL) : NULL;
    bool good = json_is_true(json_object_get(reply, "ok"));
    if (!good)
        fprintf(stderr, "  test.clock: %s\n", text != NULL ? text : "(no reply)");
    json_decref(reply);
    free(text);
    return good;
}

bool test_effect_log_next(char **cursor, char op[32], char key[96], int *n)
{
    for (char *line = *cursor, *next; line != NULL && *line != '\0'; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        const char *nat = strstr(line, "\"n\":");
        if (sscanf(line, "%31s %95s", op, key) != 2 || nat == NULL)
            continue;
        *n = (int)strtol(nat + 4, NULL, 10);
        *cursor = next;
        return true;
    }
    *cursor = NULL;
    return false;
}
