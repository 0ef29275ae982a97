#include "cli_home.h"
#include "test_store.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cli_argv(const char **argv, size_t cap, const char *parent, bool json, const char *home,
              const char *const *args)
{
    size_t n = 0;
    argv[n++] = parent != NULL ? parent : harness_test_parent();
    if (json)
        argv[n++] = "--json";
    if (home != NULL) {
        argv[n++] = "--home";
        argv[n++] = home;
        const char *uri = test_store_uri(home);
        if (uri != NULL) {
            argv[n++] = "--store";
            argv[n++] = uri;
        }
    }
    for (size_t i = 0; args[i] != NULL && n + 1 < cap; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
}

static const struct cli_opts cli_plain = {0};

/* prefix, then cli_argv's words, into argv (cap entries, NULL-ended), and the process
 * options of opts (NULL: plain). Returns the options in force. */
static const struct cli_opts *cli_prepare(const char **argv, size_t cap, const char *home,
                                          const struct cli_opts *opts,
                                          const char *const *args, struct proc_opts *popts)
{
    if (opts == NULL)
        opts = &cli_plain;
    size_t n = 0;
    for (size_t i = 0; opts->prefix != NULL && opts->prefix[i] != NULL && n + 8 < cap; i++)
        argv[n++] = opts->prefix[i];
    cli_argv(argv + n, cap - n, opts->parent, opts->json, home, args);
    *popts = (struct proc_opts){.use_fds = false, .envp = opts->envp};
    return opts;
}

struct proc_result cli_run(const char *home, const struct cli_opts *opts,
                           const char *const *args)
{
    const char *argv[2 * CLI_MAX_ARGS];
    struct proc_opts popts;
    opts = cli_prepare(argv, sizeof argv / sizeof argv[0], home, opts, args, &popts);
    size_t input_len = opts->input != NULL ? strlen(opts->input) : 0;
    return proc_run_opts(argv, &popts, opts->input, input_len,
                         opts->timeout_ms > 0 ? opts->timeout_ms : CLI_TIMEOUT_MS);
}

int cli_start(struct proc *p, const char *home, const struct cli_opts *opts,
              const char *const *args)
{
    const char *argv[2 * CLI_MAX_ARGS];
    struct proc_opts popts;
    cli_prepare(argv, sizeof argv / sizeof argv[0], home, opts, args, &popts);
    return proc_start(p, argv, &popts);
}

struct proc_result cli_home(const char *home, bool json, const char *const *args)
{
    struct cli_opts opts = {.json = json, .envp = HARNESS_EMPTY_ENV};
    return cli_run(home, &opts, args);
}

bool cli_home_setup(const char *home, const char *modules_json, char *why, size_t why_cap)
{
    struct proc_result r = cli_home(home, false, ARGS("setup"));
    bool good = proc_exited_with(&r, 0);
    if (!good)
        sfmt(why, why_cap, "setup: %s: %s", proc_describe(&r), r.err);
    proc_result_free(&r);
    if (good && modules_json != NULL) {
        char path[PATH_MAX + 32];
        sfmt(path, sizeof path, "%s/modules.json", home);
        good = write_text_file(path, modules_json, 0600);
        if (!good)
            sfmt(why, why_cap, "cannot write %s", path);
    }
    return good;
}

bool cli_home_setup_or_fail(const char *home, const char *name, const char *modules_fmt, ...)
{
    char modules[8192], why[1024] = "";
    va_list ap;
    va_start(ap, modules_fmt);
    int len = vsnprintf(modules, sizeof modules, modules_fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= sizeof modules) {
        fail(name, "the modules.json text is longer than %zu bytes", sizeof modules - 1);
        return false;
    }
    if (!cli_home_setup(home, modules, why, sizeof why)) {
        fail(name, "%s", why);
        return false;
    }
    return true;
}

void cli_expect_refusals(const char *home, const struct cli_refusal *rows, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        struct proc_result r = cli_home(home, false, rows[i].args);
        check(proc_exited_with(&r, rows[i].code) && strstr(r.err, rows[i].err) != NULL &&
                  strchr(r.err, '\n') == r.err + r.err_len - 1 && r.out_len == 0,
              rows[i].name, "%s, stderr %s", proc_describe(&r), r.err);
        proc_result_free(&r);
    }
}

bool flow_dir_write(const char *dir, const char *manifest_json, const char *script)
{
    char path[PATH_MAX + 32];
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return false;
    sfmt(path, sizeof path, "%s/flow.js", dir);
    bool good = write_text_file(path, script, 0644);
    sfmt(path, sizeof path, "%s/manifest.json", dir);
    return good && write_text_file(path, manifest_json, 0644);
}

enum flow_added cli_install_approve(const char *home, char *const *envp, const char *dir,
                                    const char *id, int version, char *why, size_t why_cap)
{
    struct cli_opts opts = {.json = true, .envp = envp};
    struct proc_result r = cli_run(home, &opts, ARGS("flow", "install", dir));
    json_t *installed = proc_exited_with(&r, 0) ? cli_output_json(&r) : NULL;
    const char *hash = json_string_value(json_object_get(installed, "code_hash"));
    enum flow_added step = hash != NULL ? FLOW_ADDED : FLOW_INSTALL_FAILED;
    if (step == FLOW_ADDED) {
        proc_result_free(&r);
        char version_text[16];
        sfmt(version_text, sizeof version_text, "%d", version);
        opts.json = false;
        r = cli_run(home, &opts,
                    ARGS("flow", "approve", id, "--version", version_text, "--code-hash", hash));
        if (!proc_exited_with(&r, 0))
            step = FLOW_APPROVE_FAILED;
    }
    if (step != FLOW_ADDED && why != NULL)
        sfmt(why, why_cap, "flow %s %s: %s: %s", step == FLOW_INSTALL_FAILED ? "install" : "approve",
             id, proc_describe(&r), r.err);
    proc_result_free(&r);
    json_decref(installed);
    return step;
}

json_t *cli_output_json(const struct proc_result *r)
{
    return json_loads(r->out, JSON_DECODE_ANY, NULL);
}

const char *json_str_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : "(none)";
}

const char *json_dumped(const json_t *v)
{
    static char buf[2048];
    char *text = v != NULL ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    sfmt(buf, sizeof buf, "%s", text != NULL ? text : "(none)");
    free(text);
    return buf;
}

void cli_output_drop_wall(char *text)
{
    static const char KEY[] = "\"wall_ms\":";
    char *at = strstr(text, KEY);
    if (at == NULL)
        return;
    char *end = at + sizeof KEY - 1;
    while (*end >= '0' && *end <= '9')
        end++;
    memmove(at, end, strlen(end) + 1);
}
