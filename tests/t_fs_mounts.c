/* fs calls refuse a path that reaches the data home or /proc by a mount or a link
 * inside a granted root, through the real ck-basal (host/fs_builtin.c, open_beneath).
 * Needs root: the test enters a private mount namespace of its own (unshare
 * CLONE_NEWNS, / made private), so no mount it makes is seen outside it.
 *
 *   1. Inside a granted read+write root G: G/home-bind is a bind mount of the data
 *      home, G/proc-bind one of /proc, G/home-link a symbolic link to the data home.
 *      Control (unconfined): this process reads the data home's secret.txt through
 *      G/home-bind and /proc's self/comm through G/proc-bind, so the mounts are there.
 *   2. A flow's fs.read, fs.list and fs.write through G/home-bind are "denied", and so
 *      are fs.read and fs.list through G/proc-bind [guard: RESOLVE_NO_XDEV below the
 *      root, and no component may be the data home or /proc by device and inode];
 *      fs.read through G/home-link is "denied" [guard: the resolved path must lie
 *      under the root]. Nothing was written into the data home. Control: the same flow
 *      reads G/plain.txt.
 *   3. Two granted roots that are mount points: a bind mount of a directory inside the
 *      data home (no path check can see it) is denied for fs.read and fs.list [guard:
 *      a mount root on the data home's device at or above a root is refused when the
 *      data home holds it]; control: the same read unconfined works, and a root
 *      bind-mounted from elsewhere is served.
 *   4. A kernel without openat2 (a seccomp filter answering it ENOSYS, in a child that
 *      then runs ck-basal): the plain read is "denied", saying openat2 is missing
 *      [guard: ENOSYS refuses, never falls back to open]. */
#include "lib/harness.h"
#include "lib/serve_home.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_root[PATH_MAX];

static const char *SCRIPT =
    "const g = trigger.g, out = {};\n"
    "async function probe(name, f) {\n"
    "  try { await f(); out[name] = 'served'; }\n"
    "  catch (e) { out[name] = (e.data && e.data.code) || String(e);\n"
    "              out[name + '_message'] = e.message; }\n"
    "}\n"
    "await probe('plain', () => fs.read(g + '/plain.txt'));\n"
    "await probe('home_read', () => fs.read(g + '/home-bind/secret.txt'));\n"
    "await probe('home_list', () => fs.list(g + '/home-bind'));\n"
    "await probe('home_write', () => fs.write(g + '/home-bind/planted.txt', 'x'));\n"
    "await probe('proc_read', () => fs.read(g + '/proc-bind/self/comm'));\n"
    "await probe('proc_list', () => fs.list(g + '/proc-bind/self'));\n"
    "await probe('link_read', () => fs.read(g + '/home-link/secret.txt'));\n"
    "return out;\n";

static const char *INNER_SCRIPT =
    "const out = {};\n"
    "async function probe(name, f) {\n"
    "  try { await f(); out[name] = 'served'; }\n"
    "  catch (e) { out[name] = (e.data && e.data.code) || String(e);\n"
    "              out[name + '_message'] = e.message; }\n"
    "}\n"
    "await probe('inner_read', () => fs.read(trigger.inner + '/secret.txt'));\n"
    "await probe('inner_list', () => fs.list(trigger.inner));\n"
    "await probe('other_read', () => fs.read(trigger.other + '/plain.txt'));\n"
    "return out;\n";

static bool make_dir(const char *path)
{
    return mkdir(path, 0755) == 0 || errno == EEXIST;
}

/* The result object of a `--json run` output, or NULL. */
static json_t *run_result(const char *out)
{
    json_t *o = json_loads(out, 0, NULL);
    json_t *result = json_incref(json_object_get(o, "result"));
    json_decref(o);
    if (json_is_string(result)) { /* the result may come as JSON text */
        json_t *parsed = json_loads(json_string_value(result), 0, NULL);
        json_decref(result);
        result = parsed;
    }
    return result;
}

static const char *field(const json_t *o, const char *name)
{
    const char *v = json_string_value(json_object_get(o, name));
    return v != NULL ? v : "(missing)";
}

static void expect(const json_t *result, const char *name, const char *want, const char *what)
{
    char msg[64];
    sfmt(msg, sizeof msg, "%s_message", name);
    check(strcmp(field(result, name), want) == 0, what, "got %s (%s)", field(result, name),
          field(result, msg));
}

/* What one call of the flow must have met: result[key] is want. */
struct expected_outcome {
    const char *key;
    const char *want;
    const char *name;
};

/* Runs flow with trigger (the check named ran: it succeeded with an object result), then
 * expect() of each row on that result. */
static void run_flow_expecting(const struct test_home *h, const char *flow, const char *trigger,
                               const char *ran, const struct expected_outcome *rows,
                               size_t count)
{
    struct proc_result r = test_home_cli(h, true, ARGS("run", flow, "--trigger", trigger));
    json_t *result = run_result(r.out);
    if (check(proc_exited_with(&r, 0) && json_is_object(result), ran, "%s: %.400s%.300s",
              proc_describe(&r), r.out, r.err)) {
        for (size_t i = 0; i < count; i++)
            expect(result, rows[i].key, rows[i].want, rows[i].name);
    }
    json_decref(result);
    proc_result_free(&r);
}

/* Runs the flow in a child whose openat2 answers ENOSYS; its stdout, or NULL. */
static char *run_without_openat2(const struct test_home *h, const char *trigger)
{
    char out_path[PATH_MAX + 32];
    sfmt(out_path, sizeof out_path, "%s/no-openat2.out", h->dir);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        int nr = seccomp_syscall_resolve_name("openat2");
        if (fd < 0 || ctx == NULL || nr == __NR_SCMP_ERROR ||
            seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0) != 0 || seccomp_load(ctx) != 0)
            _exit(97);
        if (dup2(fd, 1) < 0)
            _exit(98);
        const char *argv[CLI_MAX_ARGS];
        cli_argv(argv, CLI_MAX_ARGS, NULL, true, h->home, ARGS("run", "mounts", "--trigger", trigger));
        execv(argv[0], (char *const *)(void *)argv);
        _exit(99);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) >= 97)
        return NULL;
    return read_text_file(out_path);
}

static void test_mounts(void)
{
    struct test_home h;
    test_home_begin(&h, g_root, "mounts");
    char g[PATH_MAX + 16], path[PATH_MAX + 64], home_bind[PATH_MAX + 32], proc_bind[PATH_MAX + 32];
    sfmt(g, sizeof g, "%s/granted", h.dir);
    sfmt(home_bind, sizeof home_bind, "%s/home-bind", g);
    sfmt(proc_bind, sizeof proc_bind, "%s/proc-bind", g);
    bool built = make_dir(g) && make_dir(home_bind) && make_dir(proc_bind);
    sfmt(path, sizeof path, "%s/plain.txt", g);
    built = built && write_text_file(path, "plain", 0644);
    sfmt(path, sizeof path, "%s/secret.txt", h.home);
    built = built && write_text_file(path, "top secret", 0600);
    sfmt(path, sizeof path, "%s/home-link", g);
    built = built && symlink(h.home, path) == 0;
    /* Two more roots, each a mount point: one will be a bind mount of a directory
     * inside the data home, the other of a directory elsewhere. */
    char inner_src[PATH_MAX + 32], inner_root[PATH_MAX + 32], other_src[PATH_MAX + 32],
        other_root[PATH_MAX + 32];
    sfmt(inner_src, sizeof inner_src, "%s/inner", h.home);
    sfmt(inner_root, sizeof inner_root, "%s/inner-root", h.dir);
    sfmt(other_src, sizeof other_src, "%s/other", h.dir);
    sfmt(other_root, sizeof other_root, "%s/other-root", h.dir);
    built = built && make_dir(inner_src) && make_dir(inner_root) && make_dir(other_src) &&
            make_dir(other_root);
    sfmt(path, sizeof path, "%s/secret.txt", inner_src);
    built = built && write_text_file(path, "inner secret", 0600);
    sfmt(path, sizeof path, "%s/plain.txt", other_src);
    built = built && write_text_file(path, "other", 0644);
    char inner_more[PATH_MAX * 2 + 64];
    sfmt(inner_more, sizeof inner_more, "{\"manual\":true},\"fs\":{\"read\":[\"%s\",\"%s\"]}",
         inner_root, other_root);
    built = built && test_home_flow(&h, "inner", 1, inner_more, INNER_SCRIPT);
    char manifest_more[PATH_MAX * 2 + 64];
    sfmt(manifest_more, sizeof manifest_more,
         "{\"manual\":true},\"fs\":{\"read\":[\"%s\"],\"write\":[\"%s\"]}", g, g);
    built = built && test_home_flow(&h, "mounts", 1, manifest_more, SCRIPT);
    if (!check(built, "fs mounts: granted root and flow built", "%s", strerror(errno)))
        return;

    /* Mounts from here on are this process's own. */
    bool mounted = unshare(CLONE_NEWNS) == 0 &&
                   mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
                   mount(h.home, home_bind, NULL, MS_BIND, NULL) == 0 &&
                   mount("/proc", proc_bind, NULL, MS_BIND, NULL) == 0 &&
                   mount(inner_src, inner_root, NULL, MS_BIND, NULL) == 0 &&
                   mount(other_src, other_root, NULL, MS_BIND, NULL) == 0;
    if (!check(mounted, "fs mounts: bind mounts in a private mount namespace", "%s",
               strerror(errno)))
        return;
    sfmt(path, sizeof path, "%s/secret.txt", home_bind);
    char *secret = read_text_file(path);
    sfmt(path, sizeof path, "%s/self/comm", proc_bind);
    char *comm = read_text_file(path);
    check(secret != NULL && strcmp(secret, "top secret") == 0 && comm != NULL && comm[0] != '\0',
          "fs mounts: control: unconfined, the data home and /proc are readable through the "
          "bind mounts", "secret %s, comm %s", secret != NULL ? secret : "unreadable",
          comm != NULL ? comm : "unreadable");
    free(secret);
    free(comm);

    char trigger[PATH_MAX + 32];
    sfmt(trigger, sizeof trigger, "{\"g\":\"%s\"}", g);
    static const struct expected_outcome THROUGH_MOUNTS[] = {
        {"plain", "served", "fs mounts: control: a file of the root is read"},
        {"home_read", "denied",
         "fs mounts: fs.read through a bind mount of the data home is denied [guard: "
         "no mount crossed below a root; no component is the data home]"},
        {"home_list", "denied",
         "fs mounts: fs.list of a bind mount of the data home is denied [same guard]"},
        {"home_write", "denied",
         "fs mounts: fs.write into a bind mount of the data home is denied [same guard]"},
        {"proc_read", "denied",
         "fs mounts: fs.read through a bind mount of /proc is denied [guard: no mount "
         "crossed below a root; no component is /proc]"},
        {"proc_list", "denied",
         "fs mounts: fs.list through a bind mount of /proc is denied [same guard]"},
        {"link_read", "denied",
         "fs mounts: fs.read through a link to the data home is denied [guard: the "
         "resolved path lies under the root]"},
    };
    run_flow_expecting(&h, "mounts", trigger, "fs mounts: the flow ran", THROUGH_MOUNTS,
                       sizeof THROUGH_MOUNTS / sizeof THROUGH_MOUNTS[0]);
    sfmt(path, sizeof path, "%s/planted.txt", h.home);
    check(access(path, F_OK) != 0 && errno == ENOENT,
          "fs mounts: nothing was written into the data home", "%s exists", path);

    sfmt(path, sizeof path, "%s/secret.txt", inner_root);
    secret = read_text_file(path);
    check(secret != NULL && strcmp(secret, "inner secret") == 0,
          "fs mounts: control: unconfined, a directory of the data home is readable through "
          "a granted root bind-mounted from it", "%s", secret != NULL ? secret : "unreadable");
    free(secret);
    char inner_trigger[PATH_MAX * 2 + 64];
    sfmt(inner_trigger, sizeof inner_trigger, "{\"inner\":\"%s\",\"other\":\"%s\"}",
         inner_root, other_root);
    static const struct expected_outcome MOUNTED_ROOTS[] = {
        {"inner_read", "denied",
         "fs mounts: fs.read under a root that is a bind mount of a directory of the data "
         "home is denied [guard: a mount root on the home's device that the home holds]"},
        {"inner_list", "denied", "fs mounts: fs.list of that root is denied [same guard]"},
        {"other_read", "served", "fs mounts: control: a root bind-mounted from elsewhere is read"},
    };
    run_flow_expecting(&h, "inner", inner_trigger, "fs mounts: the flow with mounted roots ran",
                       MOUNTED_ROOTS, sizeof MOUNTED_ROOTS / sizeof MOUNTED_ROOTS[0]);

    char *no_openat2 = run_without_openat2(&h, trigger);
    json_t *result = no_openat2 != NULL ? run_result(no_openat2) : NULL;
    check(result != NULL && strcmp(field(result, "plain"), "denied") == 0 &&
              strstr(field(result, "plain_message"), "openat2") != NULL,
          "fs mounts: without openat2 (ENOSYS) every fs call is denied, saying why [guard: "
          "ENOSYS refuses]", "%.600s", no_openat2 != NULL ? no_openat2 : "(no output)");
    json_decref(result);
    free(no_openat2);

    /* Before the tree is removed: nothing below these may be touched. */
    (void)umount2(home_bind, MNT_DETACH);
    (void)umount2(proc_bind, MNT_DETACH);
    (void)umount2(inner_root, MNT_DETACH);
    (void)umount2(other_root, MNT_DETACH);
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "fs mounts: the test build"))
        return harness_finish();
    if (!check(geteuid() == 0, "fs mounts: runs as root (bind mounts need it)",
               "euid %ld", (long)geteuid()))
        return harness_finish();
    sfmt(g_root, sizeof g_root, "%s", harness_tmpdir("fs-mounts"));
    test_mounts();
    harness_remove_tmpdir();
    return harness_finish();
}
