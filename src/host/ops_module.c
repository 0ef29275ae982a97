/* Operator-registered modules: the catalog (home/modules.json) and one invocation of
 * a module program per ops.call (see ops_module.h for the contract). */
#include "host/ops_module.h"
#include "host/child_run.h"
#include "base/user_ns_map.h"
#include "host/module_endpoint.h"

#include "base/clock.h"
#include "base/json_fields.h"
#include "base/json_js.h"
#include "base/json_out.h"
#include "base/json_text.h"

#include "base/names.h"
#include "base/process_identity.h"
#include "base/thread_affinity.h"
#include "proto/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARG_MAX_BYTES 4096 /* one program argument */
#define MESSAGE_MAX 1024   /* bytes of a module's own error message passed on */
#define CODE_MAX 32        /* a module's error code: 1-32 of [a-z0-9_] */

/* ---- catalog ------------------------------------------------------------------------ */

/* A name key (module or op) at path. */
static int want_name(struct field_check *c, const char *key, const char *path)
{
    if (!object_name_valid(key))
        return field_fail(c, path, "not a name (1-63 of [a-z0-9_.-], starting with a-z or 0-9)");
    return 0;
}

static int parse_program(struct field_check *c, json_t *v, const char *path, char **out)
{
    if (!json_is_string(v))
        return field_fail(c, path, "must be a string");
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n >= PATH_MAX || strlen(s) != n)
        return field_fail(c, path, "must be a path of 1 to %d bytes", PATH_MAX - 1);
    if (s[0] != '/')
        return field_fail(c, path, "must be an absolute path");
    struct stat st;
    if (stat(s, &st) != 0)
        return field_fail(c, path, "cannot use the program: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return field_fail(c, path, "the program is not a regular file");
    if ((st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) == 0 || access(s, X_OK) != 0)
        return field_fail(c, path, "the program is not executable");
    *out = field_dup(c, path, s);
    return *out != NULL ? 0 : -1;
}

static int parse_endpoint(struct field_check *c, json_t *v, const char *path, char **out)
{
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return field_fail(c, path, "must be a string");
    char why[256];
    if (module_endpoint_check(json_string_value(v), why, sizeof why) != 0)
        return field_fail(c, path, "%s", why);
    *out = field_dup(c, path, json_string_value(v));
    return *out != NULL ? 0 : -1;
}

static int parse_args(struct field_check *c, json_t *v, const char *path, struct ops_module *m)
{
    if (!json_is_array(v))
        return field_fail(c, path, "must be a list of strings");
    size_t n = json_array_size(v);
    if (n > OPS_MAX_PROGRAM_ARGS)
        return field_fail(c, path, "%zu entries, more than the %u allowed", n, OPS_MAX_PROGRAM_ARGS);
    m->args = calloc(n + 1, sizeof *m->args);
    if (m->args == NULL)
        return field_fail(c, path, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char at[FIELD_PATH_CAP];
        json_t *e = json_array_get(v, i);
        int k = snprintf(at, sizeof at, "%s[%zu]", path, i);
        if (k < 0 || (size_t)k >= sizeof at)
            return field_fail(c, path, "path too long");
        if (!json_is_string(e))
            return field_fail(c, at, "must be a string");
        if (json_string_length(e) > ARG_MAX_BYTES ||
            strlen(json_string_value(e)) != json_string_length(e))
            return field_fail(c, at, "must be at most %d bytes without NUL", ARG_MAX_BYTES);
        if ((m->args[i] = field_dup(c, at, json_string_value(e))) == NULL)
            return -1;
        m->arg_count = i + 1;
    }
    return 0;
}

static int parse_op(struct field_check *c, const char *name, json_t *v, const char *path,
                    struct ops_op *op)
{
    static const char *const keys[] = {"kind", "idempotent", "long_running",
                                       "completion_timeout_s", "completion_event", NULL};
    char sub[FIELD_PATH_CAP];
    if (want_name(c, name, path) != 0 || field_want_object(c, v, path, keys) != 0)
        return -1;
    if ((op->name = field_dup(c, path, name)) == NULL)
        return -1;
    field_key_path(sub, sizeof sub, path, "kind");
    json_t *f = json_object_get(v, "kind");
    if (f == NULL)
        return field_fail(c, sub, "missing");
    const char *kind = json_string_value(f);
    if (kind == NULL || (strcmp(kind, "query") != 0 && strcmp(kind, "mutate") != 0))
        return field_fail(c, sub, "must be \"query\" or \"mutate\"");
    op->mutate = strcmp(kind, "mutate") == 0;
    if ((f = json_object_get(v, "idempotent")) != NULL) {
        field_key_path(sub, sizeof sub, path, "idempotent");
        if (!json_is_boolean(f))
            return field_fail(c, sub, "must be true or false");
        op->idempotent = json_is_true(f);
    }
    if ((f = json_object_get(v, "long_running")) != NULL) {
        field_key_path(sub, sizeof sub, path, "long_running");
        if (!json_is_boolean(f))
            return field_fail(c, sub, "must be true or false");
        op->long_running = json_is_true(f);
    }
    op->completion_timeout_s = OPS_COMPLETION_TIMEOUT_DEFAULT_S;
    if ((f = json_object_get(v, "completion_timeout_s")) != NULL) {
        field_key_path(sub, sizeof sub, path, "completion_timeout_s");
        if (!op->long_running)
            return field_fail(c, sub, "only a \"long_running\": true op has one");
        long long limit;
        if (field_want_int(c, f, sub, 1, OPS_COMPLETION_TIMEOUT_MAX_S, &limit) != 0)
            return -1;
        op->completion_timeout_s = (uint32_t)limit;
    }
    if ((f = json_object_get(v, "completion_event")) != NULL) {
        field_key_path(sub, sizeof sub, path, "completion_event");
        if (!op->long_running)
            return field_fail(c, sub, "only a \"long_running\": true op has one");
        if (!json_is_string(f) || strlen(json_string_value(f)) != json_string_length(f) ||
            !object_name_valid(json_string_value(f)))
            return field_fail(c, sub, "must be an event name (1-63 of [a-z0-9_.-], starting"
                              " with [a-z0-9])");
        if ((op->completion_event = field_dup(c, sub, json_string_value(f))) == NULL)
            return -1;
    }
    return 0;
}

static int parse_module(struct field_check *c, const char *name, json_t *v, const char *path,
                        struct ops_module *m)
{
    static const char *const keys[] = {"program", "endpoint", "args", "timeout_ms",
                                       "max_reply_bytes", "ops", NULL};
    char sub[FIELD_PATH_CAP];
    json_t *f;
    m->timeout_ms = OPS_TIMEOUT_DEFAULT_MS;
    m->max_reply_bytes = OPS_REPLY_DEFAULT_BYTES;
    if (want_name(c, name, path) != 0 || field_want_object(c, v, path, keys) != 0)
        return -1;
    if ((m->name = field_dup(c, path, name)) == NULL)
        return -1;
    json_t *program = json_object_get(v, "program"), *endpoint = json_object_get(v, "endpoint");
    if ((program == NULL) == (endpoint == NULL))
        return field_fail(c, path, "needs exactly one of \"program\" and \"endpoint\"");
    if (endpoint != NULL) {
        field_key_path(sub, sizeof sub, path, "endpoint");
        if (parse_endpoint(c, endpoint, sub, &m->endpoint) != 0)
            return -1;
    } else {
        field_key_path(sub, sizeof sub, path, "program");
        if (parse_program(c, program, sub, &m->program) != 0)
            return -1;
    }
    field_key_path(sub, sizeof sub, path, "args");
    if ((f = json_object_get(v, "args")) != NULL && endpoint != NULL) {
        return field_fail(c, sub, "only a program module takes args");
    } else if (f != NULL) {
        if (parse_args(c, f, sub, m) != 0)
            return -1;
    } else if ((m->args = calloc(1, sizeof *m->args)) == NULL) {
        return field_fail(c, sub, "out of memory");
    }
    long long limit = 0;
    field_key_path(sub, sizeof sub, path, "timeout_ms");
    if ((f = json_object_get(v, "timeout_ms")) != NULL) {
        if (field_want_int(c, f, sub, 1, OPS_TIMEOUT_MAX_MS, &limit) != 0)
            return -1;
        m->timeout_ms = (uint32_t)limit;
    }
    field_key_path(sub, sizeof sub, path, "max_reply_bytes");
    if ((f = json_object_get(v, "max_reply_bytes")) != NULL) {
        if (field_want_int(c, f, sub, 1, OPS_REPLY_MAX_BYTES, &limit) != 0)
            return -1;
        m->max_reply_bytes = (uint32_t)limit;
    }
    field_key_path(sub, sizeof sub, path, "ops");
    if ((f = json_object_get(v, "ops")) == NULL)
        return field_fail(c, sub, "missing");
    if (!json_is_object(f))
        return field_fail(c, sub, "must be an object");
    size_t n = json_object_size(f);
    if (n > 0 && (m->ops = calloc(n, sizeof *m->ops)) == NULL)
        return field_fail(c, sub, "out of memory");
    const char *key;
    json_t *val;
    json_object_foreach(f, key, val) {
        char at[FIELD_PATH_CAP];
        field_key_path(at, sizeof at, sub, key);
        if (m->op_count >= n) /* cannot happen: the object did not change */
            return field_fail(c, at, "internal error");
        m->op_count++;
        if (parse_op(c, key, val, at, &m->ops[m->op_count - 1]) != 0)
            return -1;
    }
    return 0;
}

/* A string member of a sink's entry, which must name something of the catalog. */
static int sink_name_field(struct field_check *c, json_t *v, const char *path, const char *key,
                           char **out)
{
    char sub[FIELD_PATH_CAP];
    field_key_path(sub, sizeof sub, path, key);
    json_t *f = json_object_get(v, key);
    if (f == NULL)
        return field_fail(c, sub, "missing");
    if (!json_is_string(f) || !object_name_valid(json_string_value(f)))
        return field_fail(c, sub,
                          "must be a name (1-63 of [a-z0-9_.-], starting with a-z or 0-9)");
    *out = field_dup(c, sub, json_string_value(f));
    return *out != NULL ? 0 : -1;
}

/* One entry of "sinks", after "modules" was read: its op must be a mutation of the
 * catalog, since an emit changes the world and is journaled as one. */
static int parse_sink(struct field_check *c, const char *name, json_t *v, const char *path,
                      struct ops_catalog *catalog, struct ops_sink *sink)
{
    static const char *const keys[] = {"module", "op", NULL};
    char sub[FIELD_PATH_CAP];
    if (want_name(c, name, path) != 0 || field_want_object(c, v, path, keys) != 0)
        return -1;
    if ((sink->name = field_dup(c, path, name)) == NULL ||
        sink_name_field(c, v, path, "module", &sink->module) != 0 ||
        sink_name_field(c, v, path, "op", &sink->op) != 0)
        return -1;
    const struct ops_module *m = NULL;
    const struct ops_op *op = ops_catalog_find(catalog, sink->module, sink->op, &m);
    if (op == NULL) {
        bool module_known = false;
        for (size_t i = 0; i < catalog->count && !module_known; i++)
            module_known = strcmp(catalog->modules[i].name, sink->module) == 0;
        field_key_path(sub, sizeof sub, path, module_known ? "op" : "module");
        return module_known
                   ? field_fail(c, sub, "module %s has no op %s", sink->module, sink->op)
                   : field_fail(c, sub, "no module %s in \"modules\"", sink->module);
    }
    if (!op->mutate) {
        field_key_path(sub, sizeof sub, path, "op");
        return field_fail(c, sub, "%s.%s is a query; a sink's op must be \"mutate\"",
                          sink->module, sink->op);
    }
    if (op->long_running) { /* an emit is answered at once: it cannot wait for days */
        field_key_path(sub, sizeof sub, path, "op");
        return field_fail(c, sub, "%s.%s is long_running; a sink's op must answer at once",
                          sink->module, sink->op);
    }
    return 0;
}

static int parse_sinks(struct field_check *c, json_t *sinks, struct ops_catalog *out)
{
    if (!json_is_object(sinks))
        return field_fail(c, "sinks", "must be an object");
    size_t n = json_object_size(sinks);
    if (n > 0 && (out->sinks = calloc(n, sizeof *out->sinks)) == NULL)
        return field_fail(c, "sinks", "out of memory");
    const char *key;
    json_t *val;
    json_object_foreach(sinks, key, val) {
        char at[FIELD_PATH_CAP];
        field_key_path(at, sizeof at, "sinks", key);
        if (out->sink_count >= n)
            return field_fail(c, at, "internal error");
        out->sink_count++;
        if (parse_sink(c, key, val, at, out, &out->sinks[out->sink_count - 1]) != 0)
            return -1;
    }
    return 0;
}

static int parse_catalog(struct field_check *c, json_t *root, struct ops_catalog *out)
{
    static const char *const keys[] = {"modules", "sinks", NULL};
    if (field_want_object(c, root, "", keys) != 0)
        return -1;
    json_t *mods = json_object_get(root, "modules");
    if (mods == NULL)
        return field_fail(c, "modules", "missing");
    if (!json_is_object(mods))
        return field_fail(c, "modules", "must be an object");
    size_t n = json_object_size(mods);
    if (n > 0 && (out->modules = calloc(n, sizeof *out->modules)) == NULL)
        return field_fail(c, "modules", "out of memory");
    const char *key;
    json_t *val;
    json_object_foreach(mods, key, val) {
        char at[FIELD_PATH_CAP];
        field_key_path(at, sizeof at, "modules", key);
        if (out->count >= n)
            return field_fail(c, at, "internal error");
        out->count++;
        if (parse_module(c, key, val, at, &out->modules[out->count - 1]) != 0)
            return -1;
    }
    json_t *sinks = json_object_get(root, "sinks");
    return sinks != NULL ? parse_sinks(c, sinks, out) : 0;
}

/* Reads the catalog file (opened as fd) after checking who may have written it. */
static int read_catalog(struct field_check *c, int fd, char **buf_out, size_t *len_out)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return field_fail(c, "", "cannot stat: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return field_fail(c, "", "not a regular file");
    if (st.st_uid != geteuid())
        return field_fail(c, "", "owned by uid %u, not by the operator (uid %u)", (unsigned)st.st_uid,
                    (unsigned)geteuid());
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return field_fail(c, "", "group- or world-writable (mode %04o); make it 0600 or 0644",
                    (unsigned)(st.st_mode & 07777));
    char *buf = malloc(OPS_CATALOG_MAX_BYTES + 2);
    if (buf == NULL)
        return field_fail(c, "", "out of memory");
    size_t len = 0;
    while (len < OPS_CATALOG_MAX_BYTES + 1) {
        ssize_t r = read(fd, buf + len, OPS_CATALOG_MAX_BYTES + 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            return field_fail(c, "", "cannot read: %s", strerror(e));
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    if (len > OPS_CATALOG_MAX_BYTES) {
        free(buf);
        return field_fail(c, "", "more than the %u bytes allowed", OPS_CATALOG_MAX_BYTES);
    }
    buf[len] = '\0';
    *buf_out = buf;
    *len_out = len;
    return 0;
}

int ops_catalog_load(const char *home, struct ops_catalog *out, char *err, size_t err_cap)
{
    struct field_check c = {err, err_cap, OPS_CATALOG_FILE};
    memset(out, 0, sizeof *out);
    if (err != NULL && err_cap > 0)
        err[0] = '\0';
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", home, OPS_CATALOG_FILE) >= sizeof path)
        return field_fail(&c, "", "the data home path is too long");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0; /* no catalog: no modules */
        return field_fail(&c, "", "cannot open %s: %s", path, strerror(errno));
    }
    char *buf = NULL;
    size_t len = 0;
    int rc = read_catalog(&c, fd, &buf, &len);
    close(fd);
    if (rc != 0)
        return -1;
    json_t *root = field_load_document(&c, "", buf, len, 0);
    free(buf);
    if (root == NULL)
        return -1;
    rc = parse_catalog(&c, root, out);
    json_decref(root);
    if (rc != 0)
        ops_catalog_free(out);
    return rc;
}

void ops_catalog_free(struct ops_catalog *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->count; i++) {
        struct ops_module *m = &c->modules[i];
        free(m->name);
        free(m->program);
        free(m->endpoint);
        for (size_t j = 0; m->args != NULL && j < m->arg_count; j++)
            free(m->args[j]);
        free(m->args);
        for (size_t j = 0; j < m->op_count; j++) {
            free(m->ops[j].name);
            free(m->ops[j].completion_event);
        }
        free(m->ops);
    }
    free(c->modules);
    for (size_t i = 0; i < c->sink_count; i++) {
        free(c->sinks[i].name);
        free(c->sinks[i].module);
        free(c->sinks[i].op);
    }
    free(c->sinks);
    memset(c, 0, sizeof *c);
}

const struct ops_op *ops_catalog_find(const struct ops_catalog *c, const char *module,
                                      const char *op, const struct ops_module **module_out)
{
    if (module_out != NULL)
        *module_out = NULL;
    if (c == NULL || module == NULL || op == NULL)
        return NULL;
    for (size_t i = 0; i < c->count; i++) {
        const struct ops_module *m = &c->modules[i];
        if (strcmp(m->name, module) != 0)
            continue;
        for (size_t j = 0; j < m->op_count; j++) {
            if (strcmp(m->ops[j].name, op) == 0) {
                if (module_out != NULL)
                    *module_out = m;
                return &m->ops[j];
            }
        }
        return NULL;
    }
    return NULL;
}

const struct ops_op *ops_catalog_sink(const struct ops_catalog *c, const char *name,
                                      const struct ops_module **module_out)
{
    if (module_out != NULL)
        *module_out = NULL;
    for (size_t i = 0; c != NULL && name != NULL && i < c->sink_count; i++)
        if (strcmp(c->sinks[i].name, name) == 0)
            return ops_catalog_find(c, c->sinks[i].module, c->sinks[i].op, module_out);
    return NULL;
}

/* ---- invocation --------------------------------------------------------------------- */

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void close_pair(int fds[2])
{
    close_fd(&fds[0]);
    close_fd(&fds[1]);
}

/* How the program's process is made: as the init of a PID namespace of its own, so
 * that when it ends, by itself or killed, the kernel kills everything it started
 * (whatever group or session a descendant moved to); and with a parent-death signal,
 * so that it ends when ck-basal does. Only a clone() can put the child itself in a
 * new PID namespace (unshare() moves only the children of its caller).
 *
 * CLONE_NEWPID needs CAP_SYS_ADMIN. Without it the namespace is made inside a new
 * user namespace (CLONE_NEWUSER, where unprivileged user namespaces are allowed),
 * mapping only the caller's own uid and gid, so the program sees itself as the same
 * user (setgroups is denied there, as the kernel requires for an unprivileged gid
 * map). Where the kernel allows neither, the program does not run: basal gives no
 * weaker guarantee silently. */
struct spawn_plan {
    bool own_user_ns;   /* the child must map its user (set before the clone) */
    char uid_map[64];   /* "U U 1", formatted before the clone */
    char gid_map[64];
    int go_fd;          /* the child's end of the go pipe */
    int go_parent_fd;   /* the parent's end: the child closes its copy first */
    int ready_fd;       /* the child's end of the ready pipe */
};

/* Between the clone and exec: async-signal-safe calls only. */
static void exec_module_child(const struct ops_module *m, const struct spawn_plan *plan,
                              int in_fd, int out_fd, int err_fd)
{
    static const char exec_failed[] = "basal: cannot execute the module program\n";
    static const char map_failed[] = "basal: cannot map the user into the module's namespace\n";
    close(plan->go_parent_fd);
    /* SIGKILL when the parent dies. The kernel sends it when the THREAD that made
     * this process exits: ck-basal is single-threaded; a parent with threads must
     * make module processes from a thread that lives as long as the call. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        _exit(127);
    thread_affinity_unpin_child(); /* not the burst's CPU for the program's whole run */
    /* The race with a parent that dies before the prctl (getppid() cannot tell: it
     * is 0 in a new PID namespace): the parent sends the go byte only after this
     * ready byte, so after the prctl. A parent that died before it never sent go, and
     * its death closed the pipe (EOF); one that dies after it kills us. */
    if (write(plan->ready_fd, "r", 1) != 1)
        _exit(127);
    close(plan->ready_fd);
    char go = 0;
    ssize_t got;
    while ((got = read(plan->go_fd, &go, 1)) < 0 && errno == EINTR) {
    }
    if (got != 1 || go != 'g')
        _exit(127);
    /* The exec below sets dumpability anew. */
    if (plan->own_user_ns && !user_ns_map_self(plan->uid_map, plan->gid_map)) {
        (void)!write(err_fd, map_failed, sizeof map_failed - 1);
        _exit(127);
    }
    (void)setpgid(0, 0);
    if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
        _exit(127);
    child_run_reset_in_child(3U);
    if (chdir("/") != 0)
        _exit(127);
    static char path_env[] = "PATH=/usr/bin:/bin";
    char *const env[] = {path_env, NULL};
    char *argv[OPS_MAX_PROGRAM_ARGS + 2];
    size_t argc = 0;
    argv[argc++] = m->program;
    for (size_t i = 0; i < m->arg_count && i < OPS_MAX_PROGRAM_ARGS; i++)
        argv[argc++] = m->args[i];
    argv[argc] = NULL;
    execve(m->program, argv, env);
    (void)!write(2, exec_failed, sizeof exec_failed - 1);
    _exit(127);
}

/* clone3's arguments as the kernel's first struct clone_args: eight 64-bit words,
 * flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls. */
enum { CLONE3_FLAGS = 0, CLONE3_EXIT_SIGNAL = 4, CLONE3_WORDS = 8 };

/* A fork() into a new PID namespace (flags | CLONE_NEWPID): clone3, or clone on a
 * kernel without it. Returns like fork (0 in the child). */
static pid_t clone_into(unsigned long flags)
{
    uint64_t args[CLONE3_WORDS];
    memset(args, 0, sizeof args);
    args[CLONE3_FLAGS] = flags | CLONE_NEWPID;
    args[CLONE3_EXIT_SIGNAL] = SIGCHLD;
    long pid = syscall(SYS_clone3, args, sizeof args);
    if (pid < 0 && errno == ENOSYS) /* flags first: x86-64, arm64 and most others */
        pid = syscall(SYS_clone, flags | CLONE_NEWPID | SIGCHLD, 0UL, 0UL, 0UL, 0UL);
    return (pid_t)pid;
}

/* Starts the program (waiting on the go pipe) in its own PID namespace. Returns its
 * pid, or -1 with the reason in why. */
static pid_t clone_module(const struct ops_module *m, struct spawn_plan *plan, int in_fd,
                          int out_fd, int err_fd, char *why, size_t why_cap)
{
    plan->own_user_ns = false;
    pid_t pid = clone_into(0);
    if (pid < 0 && (errno == EPERM || errno == EINVAL)) {
        int first = errno;
        plan->own_user_ns = true; /* before the clone: the child reads it */
        pid = clone_into(CLONE_NEWUSER);
        if (pid < 0) {
            int second = errno;
            snprintf(why, why_cap,
                     "cannot start the program in a PID namespace of its own (CLONE_NEWPID: %s;"
                     " with a user namespace: %s): basal runs module programs only where the"
                     " kernel ends what they start when they end (run as root, or allow"
                     " unprivileged user namespaces)",
                     strerror(first), strerror(second));
            return -1;
        }
    } else if (pid < 0) {
        snprintf(why, why_cap, "cannot start the program: clone: %s", strerror(errno));
        return -1;
    }
    if (pid == 0)
        exec_module_child(m, plan, in_fd, out_fd, err_fd);
    return pid;
}

/* Starts the program; hook (may be NULL) learns who its process is before it may run.
 * Returns 0, or -1 with the reason in why (nothing of the program ran). */
static int spawn(const struct ops_module *m, const struct ops_process_hook *hook, struct child_run *r,
                 char *why, size_t why_cap)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, go[2] = {-1, -1};
    int ready[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
        pipe2(go, O_CLOEXEC) != 0 || pipe2(ready, O_CLOEXEC) != 0) {
        snprintf(why, why_cap, "cannot start the program: pipe: %s", strerror(errno));
        goto fail;
    }
    struct spawn_plan plan;
    memset(&plan, 0, sizeof plan);
    snprintf(plan.uid_map, sizeof plan.uid_map, "%lu %lu 1\n", (unsigned long)geteuid(),
             (unsigned long)geteuid());
    snprintf(plan.gid_map, sizeof plan.gid_map, "%lu %lu 1\n", (unsigned long)getegid(),
             (unsigned long)getegid());
    plan.go_fd = go[0];
    plan.go_parent_fd = go[1];
    plan.ready_fd = ready[1];
    pid_t pid = clone_module(m, &plan, in[0], out[1], err[1], why, why_cap);
    close_fd(&go[0]);
    close_fd(&ready[1]);
    if (pid < 0)
        goto fail;
    /* Both sides set the group, so a kill of -pid works whichever runs first (this
     * one fails harmlessly once the child has exec'd). */
    (void)setpgid(pid, pid);
    close_fd(&in[0]);
    close_fd(&out[1]);
    close_fd(&err[1]);
    child_run_started(r, pid, in[1], out[0], err[0]);
    /* Once the process is ready (its parent-death signal set) it waits for the go
     * byte: its identity is stable and nothing of the program has run. Whoever
     * records it does so now, or the program never runs. */
    struct process_identity who;
    char ready_byte = 0;
    ssize_t got;
    while ((got = read(ready[0], &ready_byte, 1)) < 0 && errno == EINTR) {
    }
    close_fd(&ready[0]);
    int rc = 0;
    if (got != 1) {
        snprintf(why, why_cap, "cannot start the program: its process ended before it was"
                 " ready");
        rc = -1;
    } else if (process_identity_of(pid, &who) != 0) {
        snprintf(why, why_cap, "cannot read the program's process (pid %ld): %s", (long)pid,
                 strerror(errno));
        rc = -1;
    } else if (hook != NULL && hook->started != NULL &&
               hook->started(hook->ctx, &who, why, why_cap) != 0) {
        rc = -1;
    } else if (write(go[1], "g", 1) != 1) {
        snprintf(why, why_cap, "cannot start the program: %s", strerror(errno));
        rc = -1;
    }
    close_fd(&go[1]);
    if (rc != 0)
        child_run_close(r);
    return rc;
fail: /* nothing was started: every pipe end still open is closed */
    close_pair(in);
    close_pair(out);
    close_pair(err);
    close_pair(go);
    close_pair(ready);
    return -1;
}

/* Rejects with code and "module M op O: <what>[; stderr: <tail>]" (no 512-byte cut,
 * so the whole tail fits). */
/* Rejects with {"code": code, "message": message[0..len)}; code is a JSON string the
 * caller keeps (NULL: no memory). Returns 0 or -1. */
static int reject_with(struct host_settlement *out, json_t *code, const char *message,
                       size_t len)
{
    json_t *error = json_object();
    json_t *msg = json_stringn(message, len);
    int rc = -1;
    if (error != NULL && code != NULL && msg != NULL && json_object_set(error, "code", code) == 0 &&
        json_object_set(error, "message", msg) == 0)
        rc = host_fulfil_json(out, error);
    json_decref(msg);
    json_decref(error);
    if (rc == 0)
        out->settlement = PROTO_SETTLEMENT_REJECTED;
    return rc;
}

__attribute__((format(printf, 5, 6))) static int reject_run(struct host_settlement *out,
                                                             const char *code,
                                                             const struct child_run *r,
                                                             const char *who, const char *fmt,
                                                             ...)
{
    char what[768], tail[CHILD_RUN_TAIL + 1], message[1536];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (r != NULL)
        child_run_stderr_line(r, tail, sizeof tail);
    else
        tail[0] = '\0';
    snprintf(message, sizeof message, "%s: %s%s%s", who, what, tail[0] != '\0' ? "; stderr: " : "",
             tail);
    json_t *c = json_string(code);
    int rc = reject_with(out, c, message, strlen(message));
    json_decref(c);
    return rc;
}

static bool code_valid(const char *s, size_t n)
{
    if (n == 0 || n > CODE_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'))
            return false;
    }
    return true;
}

/* The module's own rejection {"code": C, "message": S}, S cut at MESSAGE_MAX bytes. */
static int reject_module(struct host_settlement *out, json_t *code, json_t *message)
{
    const char *s = json_string_value(message);
    size_t len = utf8_truncate((const uint8_t *)s, json_string_length(message), MESSAGE_MAX);
    return reject_with(out, code, s, len);
}

static int settle_reply(const char *reply, size_t reply_len, const struct child_run *r,
                        const char *who, bool long_running, struct host_settlement *out);

/* Settles from a finished run. */
static int settle(const struct child_run *r, const char *who, uint32_t timeout_ms,
                  bool long_running, struct host_settlement *out)
{
    if (r->timed_out)
        return reject_run(out, HOST_CODE_TIMEOUT, r, who, "no reply within %u ms (killed)",
                          timeout_ms);
    if (r->too_large)
        return reject_run(out, HOST_CODE_TOO_LARGE, r, who, "reply larger than %u bytes (killed)",
                          (unsigned)r->out_max);
    if (WIFSIGNALED(r->status))
        return reject_run(out, HOST_CODE_MODULE_ERROR, r, who, "killed by signal %d",
                          WTERMSIG(r->status));
    if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0)
        return reject_run(out, HOST_CODE_MODULE_ERROR, r, who, "exit status %d",
                          WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1);
    return settle_reply(r->out, r->out_len, r, who, long_running, out);
}

/* True if reply[0..len) is {"accepted": true} (any spacing). */
static bool reply_accepted(const char *reply, size_t len)
{
    json_t *v = json_loadb(reply, len, JSON_REJECT_DUPLICATES, NULL);
    bool accepted = json_is_object(v) && json_object_size(v) == 1 &&
                    json_is_true(json_object_get(v, "accepted"));
    json_decref(v);
    return accepted;
}

/* Settles from a module's whole reply, a program's stdout or an endpoint's body (r,
 * for the stderr tail, is NULL for an endpoint). A long-running op's module may answer
 * {"accepted": true} instead: OPS_MODULE_ACCEPTED, *out untouched. */
static int settle_reply(const char *reply, size_t reply_len, const struct child_run *r,
                        const char *who, bool long_running, struct host_settlement *out)
{
    /* Held to the grammar a worker's value is (any JSON text), never converted: the
     * result goes on as the module wrote it, a number beyond 64 bits or a double with
     * its digits. */
    if (reply_len == 0 || !utf8_valid((const uint8_t *)reply, reply_len) ||
        !json_text_valid(reply, reply_len))
        return reject_run(out, HOST_CODE_MODULE_ERROR, r, who, "the reply is not JSON");
    if (long_running && reply_accepted(reply, reply_len))
        return OPS_MODULE_ACCEPTED;
    size_t key_at, key_len, value_at, value_len;
    json_t *key = NULL;
    if (json_js_sole_member(reply, reply_len, &key_at, &key_len, &value_at, &value_len))
        key = json_loadb(reply + key_at, key_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    const char *name = json_string_value(key);
    bool is_result = name != NULL && json_string_length(key) == 6 && strcmp(name, "result") == 0;
    bool is_error = name != NULL && json_string_length(key) == 5 && strcmp(name, "error") == 0;
    json_decref(key);
    if (is_result) {
        char *text = json_js_compact(reply + value_at, value_len);
        int rc = text != NULL ? host_fulfil_text(out, text) : -1;
        free(text);
        return rc;
    }
    json_t *error = is_error ? json_loadb(reply + value_at, value_len,
                                          JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL)
                             : NULL;
    json_t *code = json_object_get(error, "code"), *message = json_object_get(error, "message");
    int rc;
    if (!is_error) {
        rc = reject_run(out, HOST_CODE_MODULE_ERROR, r, who,
                        long_running ? "the reply must be {\"accepted\": true}, {\"result\": ...}"
                                       " or {\"error\": {\"code\", \"message\"}}"
                                     : "the reply must be {\"result\": ...} or {\"error\": "
                                       "{\"code\", \"message\"}}");
    } else if (!json_is_object(error) || json_object_size(error) != 2 || !json_is_string(code) ||
               !json_is_string(message)) {
        rc = reject_run(out, HOST_CODE_MODULE_ERROR, r, who,
                        "the reply's error must be {\"code\": string, \"message\": string}");
    } else if (!code_valid(json_string_value(code), json_string_length(code))) {
        rc = reject_run(out, HOST_CODE_MODULE_ERROR, r, who,
                        "the reply's error code is not 1-32 of [a-z0-9_]");
    } else {
        rc = reject_module(out, code, message);
    }
    json_decref(error);
    return rc;
}

int ops_module_completion(const char *reply, size_t reply_len, struct host_settlement *out,
                          char *why, size_t why_cap)
{
    json_t *v = NULL;
    if (reply_len > 0 && utf8_valid((const uint8_t *)reply, reply_len) &&
        json_text_valid(reply, reply_len))
        v = json_loadb(reply, reply_len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
    json_t *error = json_object_get(v, "error");
    json_t *code = json_object_get(error, "code");
    bool ok = json_is_object(v) && json_object_size(v) == 1 &&
              (json_object_get(v, "result") != NULL ||
               (json_is_object(error) && json_object_size(error) == 2 && json_is_string(code) &&
                json_is_string(json_object_get(error, "message")) &&
                code_valid(json_string_value(code), json_string_length(code))));
    json_decref(v);
    if (!ok) {
        snprintf(why, why_cap, "the completion must be a module's reply: {\"result\": ...} or"
                 " {\"error\": {\"code\": 1-32 of [a-z0-9_], \"message\": string}}");
        return -1;
    }
    /* Settled as the module's reply would have been, the value as written. */
    return settle_reply(reply, reply_len, NULL, "the module's completion", false, out) == 0
               ? 0
               : (snprintf(why, why_cap, "out of memory"), -1);
}

static char *build_request(const struct ops_module *m, const char *op, json_t *args,
                           const char *key, bool long_running, size_t *len)
{
    json_t *req = json_object();
    json_t *k = key != NULL ? json_string(key) : json_null();
    json_t *mod = json_string(m->name), *o = json_string(op);
    char *text = NULL;
    if (req != NULL && k != NULL && mod != NULL && o != NULL &&
        json_object_set(req, "module", mod) == 0 && json_object_set(req, "op", o) == 0 &&
        json_object_set(req, "args", args) == 0 && json_object_set(req, "idempotency_key", k) == 0 &&
        (!long_running || json_object_set_new(req, "long_running", json_true()) == 0))
        text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    json_decref(k);
    json_decref(mod);
    json_decref(o);
    return json_text_as_line(text, len); /* newline-terminated, then EOF */
}

/* One POST to the module's endpoint; settles like a program's stdout. */
static int invoke_endpoint(const struct ops_module *m, const char *who, const char *request,
                           size_t request_len, const char *key, bool long_running,
                           struct host_settlement *out)
{
    char *reply = NULL, why[768];
    size_t reply_len = 0;
    switch (module_endpoint_post(m->endpoint, request, request_len, key, m->timeout_ms,
                                 m->max_reply_bytes, &reply, &reply_len, why, sizeof why)) {
    case MODULE_ENDPOINT_REPLY:
        break;
    case MODULE_ENDPOINT_TIMEOUT:
        return reject_run(out, HOST_CODE_TIMEOUT, NULL, who, "%s", why);
    case MODULE_ENDPOINT_TOO_LARGE:
        return reject_run(out, HOST_CODE_TOO_LARGE, NULL, who, "%s", why);
    default:
        return reject_run(out, HOST_CODE_MODULE_ERROR, NULL, who, "%s", why);
    }
    int rc = settle_reply(reply, reply_len, NULL, who, long_running, out);
    free(reply);
    return rc;
}

int ops_module_invoke(const struct ops_module *m, const char *op, const char *args_json,
                      const char *idempotency_key, const struct ops_process_hook *hook,
                      struct host_settlement *out)
{
    char who[160];
    snprintf(who, sizeof who, "module %.63s op %.63s", m->name, op != NULL ? op : "?");
    if (op == NULL)
        return reject_run(out, HOST_CODE_INVALID_ARGUMENTS, NULL, who, "no op");
    json_error_t je;
    json_t *args = args_json != NULL ? json_loads(args_json, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je)
                                    : json_null();
    if (args == NULL)
        return reject_run(out, HOST_CODE_INVALID_ARGUMENTS, NULL, who, "args are not JSON");
    const struct ops_op *entry = NULL;
    for (size_t i = 0; i < m->op_count && entry == NULL; i++)
        if (strcmp(m->ops[i].name, op) == 0)
            entry = &m->ops[i];
    bool long_running = entry != NULL && entry->long_running;
    size_t request_len = 0;
    char *request = build_request(m, op, args, idempotency_key, long_running, &request_len);
    json_decref(args);
    if (request == NULL)
        return -1;
    if (m->endpoint != NULL) {
        int rc = invoke_endpoint(m, who, request, request_len, idempotency_key, long_running,
                                 out);
        free(request);
        return rc;
    }

    struct child_run r;
    if (child_run_init(&r, request, request_len, m->max_reply_bytes) != 0) {
        free(request);
        return -1;
    }

    /* A program that exits without reading must not kill us with SIGPIPE: block it
     * for the call (writes then fail with EPIPE) and take any it raised. */
    sigset_t pipe_set, old_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    (void)sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE) == 1;
    (void)pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);

    int rc;
    char why[768];
    if (spawn(m, hook, &r, why, sizeof why) != 0) {
        rc = reject_run(out, HOST_CODE_MODULE_ERROR, NULL, who, "%s", why);
    } else {
        child_run_pump(&r, monotonic_ms() + m->timeout_ms);
        rc = settle(&r, who, m->timeout_ms, long_running, out);
    }
    child_run_close(&r);

    if (!was_pending) {
        struct timespec zero = {0, 0};
        sigemptyset(&pending);
        if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1)
            (void)sigtimedwait(&pipe_set, NULL, &zero);
    }
    (void)pthread_sigmask(SIG_SETMASK, &old_set, NULL);
    free(request);
    return rc;
}
