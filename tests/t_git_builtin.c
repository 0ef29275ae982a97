/* git.* end to end through the real ck-basal and worker (src/host/git_builtin.h,
 * docs/flows.md "git"), on repositories made here with the git program:
 *
 *   1. each call on a normal repository: log (count, path, fields), revParse,
 *      describeTags, show of a file and of a commit, diff and its names, lsFiles; a
 *      bare repository; an unknown revision, a missing file and a file that is not
 *      UTF-8;
 *   2. grants: only a granted repository exactly (a subdirectory, another repository
 *      and /etc are denied; a link to the granted one is the same repository); a
 *      .git file pointing elsewhere, a repository borrowing objects (alternates) and
 *      one owned by another user are denied [guard: exact repository];
 *   3. revisions starting with '-' are refused in every call, and none becomes an
 *      option (no file written by --output) [guard: refs starting with '-'];
 *   4. a hostile repository whose own config sets fsmonitor, a pager, sshCommand, an
 *      external diff, a textconv and a diff command, filters, aliases, a hooks
 *      path, signature verification with a gpg program, and a remote whose
 *      upload-pack is a program: every call runs and no program leaves its mark,
 *      while the same config does run them under a plain git (control) [guard:
 *      hostile repository] (tests/t_git_hostile.c has each trick of issue 23 on
 *      its own, and the sandbox alone);
 *   5. with a stand-in for git (test setting BASAL_TEST_GIT_PROGRAM; it runs in git's
 *      sandbox, src/host/git_sandbox.h): the exact environment and the options before
 *      the revision, output over 1 MiB
 *      (too_large), a git that never ends (timeout, killed), and a git left running
 *      when ck-basal is SIGKILLed dies with it [guard: PR_SET_PDEATHSIG]. */
#include "lib/cli_home.h"
#include "lib/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 120000

static char g_root[PATH_MAX];
static char g_home[PATH_MAX + 32];
static char g_good[PATH_MAX + 32], g_bare[PATH_MAX + 32], g_hostile[PATH_MAX + 32];
static char g_marks[PATH_MAX + 32], g_mark_tool[PATH_MAX + 32];

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A shell command for setting up repositories (never ck-basal's own git runs). */
static bool sh(const char *what, const char *script)
{
    const char *argv[] = {"/bin/sh", "-ec", script, NULL};
    static char *const env[] = {"PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1",
                                "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=Ada",
                                "GIT_AUTHOR_EMAIL=ada@example.org", "GIT_COMMITTER_NAME=Ada",
                                "GIT_COMMITTER_EMAIL=ada@example.org", "LC_ALL=C", NULL};
    struct proc_opts opts = {.use_fds = false, .envp = env};
    struct proc_result r = proc_run_opts(argv, &opts, NULL, 0, 60000);
    bool done = proc_exited_with(&r, 0);
    if (!done)
        fail(what, "%s: %s", proc_describe(&r), r.err);
    proc_result_free(&r);
    return done;
}

static char *sh_out(const char *script)
{
    const char *argv[] = {"/bin/sh", "-ec", script, NULL};
    static char *const env[] = {"PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1",
                                "GIT_CONFIG_GLOBAL=/dev/null", NULL};
    struct proc_opts opts = {.use_fds = false, .envp = env};
    struct proc_result r = proc_run_opts(argv, &opts, NULL, 0, 60000);
    char *out = strdup(r.out);
    proc_result_free(&r);
    if (out != NULL)
        out[strcspn(out, "\n")] = '\0';
    return out;
}

/* ---- ck-basal ---------------------------------------------------------------------- */

static struct proc_result cli(char *const *envp, const char *const *args)
{
    struct cli_opts opts = {.json = true, .envp = envp, .timeout_ms = TIMEOUT_MS};
    return cli_run(g_home, &opts, args);
}

static char *const NO_ENV[] = {NULL};

static const char *PRELUDE =
    "const T = trigger;\n"
    "async function g(p) {\n"
    "  try { return {value: await p}; }\n"
    "  catch (e) { if (e.name !== 'HostError') throw e; return {code: e.data.code, message: e.data.message}; }\n"
    "}\n";

static bool flow_add(const char *id, const char *body, const char *repos)
{
    char dir[PATH_MAX + 64], why[1024] = "cannot write the flow";
    static char manifest[8192], script[65536];
    sfmt(dir, sizeof dir, "%s/flow-%s", g_root, id);
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"test\","
         "\"trigger\":{\"manual\":true},\"git\":{\"read\":[%s]}}", id, repos);
    sfmt(script, sizeof script, "%s%s", PRELUDE, body);
    bool done = flow_dir_write(dir, manifest, script) &&
                cli_install_approve(g_home, NO_ENV, dir, id, 1, why, sizeof why) == FLOW_ADDED;
    return check(done, id, "%s", done ? "installed and approved" : why) && done;
}

static const char *trigger_json(void)
{
    static char t[4 * PATH_MAX];
    sfmt(t, sizeof t, "{\"good\":\"%s\",\"bare\":\"%s\",\"hostile\":\"%s\",\"root\":\"%s\"}",
         g_good, g_bare, g_hostile, g_root);
    return t;
}

struct run_out {
    int exit_code;
    json_t *json;
    json_t *result;
};

static struct run_out run_flow(const char *id, char *const *envp)
{
    struct proc_result r = cli(envp, ARGS("run", id, "--trigger", trigger_json()));
    struct run_out o = {r.exited ? r.exit_code : -1, NULL, NULL};
    o.json = cli_output_json(&r);
    o.result = json_object_get(o.json, "result");
    if (o.result == NULL)
        fprintf(stderr, "  run %s: %s\n  out: %.2000s\n  err: %.2000s\n", id, proc_describe(&r),
                r.out, r.err);
    proc_result_free(&r);
    return o;
}

static const json_t *at(const json_t *r, const char *key)
{
    return json_object_get(r, key);
}

static const char *code_of(const json_t *r, const char *key)
{
    const char *s = json_string_value(json_object_get(at(r, key), "code"));
    return s != NULL ? s : "";
}

static const char *message_of(const json_t *r, const char *key)
{
    const char *s = json_string_value(json_object_get(at(r, key), "message"));
    return s != NULL ? s : "";
}

static const json_t *value_of(const json_t *r, const char *key)
{
    return json_object_get(at(r, key), "value");
}

static const char *text_of(const json_t *r, const char *key)
{
    const char *s = json_string_value(value_of(r, key));
    return s != NULL ? s : "";
}

static void expect_code(const json_t *r, const char *key, const char *code, const char *needle,
                        const char *name)
{
    check(strcmp(code_of(r, key), code) == 0 &&
              (needle == NULL || strstr(message_of(r, key), needle) != NULL),
          name, "%s: code '%s' message '%s', expected %s with '%s'", key, code_of(r, key),
          message_of(r, key), code, needle != NULL ? needle : "");
}

/* ---- repositories ---------------------------------------------------------------------- */

static bool make_repos(void)
{
    char script[8 * PATH_MAX];
    sfmt(g_good, sizeof g_good, "%s/good", g_root);
    sfmt(g_bare, sizeof g_bare, "%s/bare.git", g_root);
    sfmt(script, sizeof script,
         "git init -q '%s'; cd '%s'\n"
         "printf 'one\\n' > a.txt; printf '\\377\\376\\000x' > bin.dat\n"
         "git add a.txt bin.dat; git commit -q -m first\n"
         "printf 'two\\n' > a.txt; mkdir dir; printf 'b\\n' > dir/b.txt\n"
         "git add a.txt dir/b.txt; git commit -q -m 'second' -m 'body'\n"
         "git tag v1\n"
         "git clone -q --bare '%s' '%s'\n", g_good, g_good, g_good, g_bare);
    return sh("git: make the repositories", script);
}

/* The hostile repository: every configuration that could run a program points at a
 * tool that appends its name to the marks file. */
static bool make_hostile(void)
{
    char script[16 * PATH_MAX];
    sfmt(g_hostile, sizeof g_hostile, "%s/hostile", g_root);
    sfmt(g_marks, sizeof g_marks, "%s/marks", g_root);
    sfmt(g_mark_tool, sizeof g_mark_tool, "%s/mark.sh", g_root);
    char tool[PATH_MAX + 128];
    sfmt(tool, sizeof tool, "#!/bin/sh\necho \"$1\" >> '%s'\nexit 0\n", g_marks);
    char gpg_tool[PATH_MAX + 32], gpg_text[PATH_MAX + 64];
    sfmt(gpg_tool, sizeof gpg_tool, "%s/gpg-mark.sh", g_root); /* gpg.program is a path */
    sfmt(gpg_text, sizeof gpg_text, "#!/bin/sh\nexec '%s' gpg\n", g_mark_tool);
    if (!write_text_file(g_mark_tool, tool, 0755) || !write_text_file(gpg_tool, gpg_text, 0755))
        return false;
    const char *m = g_mark_tool;
    sfmt(script, sizeof script,
         "git init -q '%s'; cd '%s'\n"
         "printf 'one\\n' > a.txt; printf '* diff=evil filter=evil\\n' > .gitattributes\n"
         "git add a.txt .gitattributes; git commit -q -m first\n"
         "printf 'two\\n' > a.txt; git add a.txt; git commit -q -m second; git tag v1\n"
         /* a commit carrying a signature: log.showSignature would call gpg.program */
         "git cat-file commit HEAD | sed '/^committer /a gpgsig -----BEGIN PGP SIGNATURE-----\\n "
         "\\n -----END PGP SIGNATURE-----' > signed.txt\n"
         "c=$(git hash-object -t commit -w signed.txt); git update-ref HEAD $c; rm signed.txt\n"
         "mkdir hooks; printf '#!/bin/sh\\n%s hook\\n' > hooks/post-checkout; chmod +x hooks/*\n"
         "git config remote.origin.url 'file://%s'\n"
         "git config remote.origin.uploadpack '%s uploadpack'\n"
         "git config core.fsmonitor '%s fsmonitor'\n"
         "git config core.pager '%s pager'\n"
         "git config core.sshCommand '%s ssh'\n"
         "git config core.hooksPath '%s/hooks'\n"
         "git config core.editor '%s editor'\n"
         "git config diff.external '%s external'\n"
         "git config diff.evil.textconv '%s textconv'\n"
         "git config diff.evil.command '%s diffcommand'\n"
         "git config filter.evil.clean '%s clean'\n"
         "git config filter.evil.smudge '%s smudge'\n"
         "git config filter.evil.process '%s process'\n"
         "git config alias.lg '!%s alias'\n"
         "git config alias.log '!%s aliaslog'\n"
         "git config log.showSignature true\n"
         "git config gpg.program '%s/gpg-mark.sh'\n"
         "printf '* diff=evil filter=evil\\n' > .git/info/attributes\n"
         "git config pager.log '%s pagerlog'\n"
         "git config core.alternateRefsCommand '%s altrefs'\n",
         g_hostile, g_hostile, m, g_root, m, m, m, m, g_hostile, m, m, m, m, m, m, m, m, m,
         g_root, m, m);
    return sh("git: make the hostile repository", script);
}

/* The marks left so far ("" if none). */
static char *marks(void)
{
    char *text = read_text_file(g_marks);
    return text != NULL ? text : strdup("");
}

/* ---- 1, 2, 3: calls, grants, dash refs -------------------------------------------------- */

static void test_calls(void)
{
    char head[128] = "", first[128] = "";
    char *h, *f;
    char cmd[PATH_MAX + 64];
    sfmt(cmd, sizeof cmd, "git -C '%s' rev-parse HEAD", g_good);
    h = sh_out(cmd);
    sfmt(cmd, sizeof cmd, "git -C '%s' rev-parse HEAD~1", g_good);
    f = sh_out(cmd);
    snprintf(head, sizeof head, "%s", h != NULL ? h : "");
    snprintf(first, sizeof first, "%s", f != NULL ? f : "");
    free(h);
    free(f);

    static const char *BODY =
        "const G = T.good;\n"
        "return {\n"
        "  log: await g(git.log(G)),\n"
        "  log1: await g(git.log(G, {maxCount: 1})),\n"
        "  logPath: await g(git.log(G, {path: 'dir/b.txt'})),\n"
        "  logSkip: await g(git.log(G, {skip: 1})),\n"
        "  rev: await g(git.revParse(G, 'HEAD')),\n"
        "  revTag: await g(git.revParse(G, 'v1~1')),\n"
        "  revMissing: await g(git.revParse(G, 'no-such-branch')),\n"
        "  tags: await g(git.describeTags(G)),\n"
        "  showFile: await g(git.show(G, 'HEAD', 'a.txt')),\n"
        "  showOld: await g(git.show(G, 'HEAD~1', 'a.txt')),\n"
        "  showBin: await g(git.show(G, 'HEAD', 'bin.dat')),\n"
        "  showMissing: await g(git.show(G, 'HEAD', 'nope.txt')),\n"
        "  showCommit: await g(git.show(G, 'HEAD')),\n"
        "  diff: await g(git.diff(G, 'HEAD~1', 'HEAD')),\n"
        "  diffNames: await g(git.diff(G, 'HEAD~1', 'HEAD', {nameOnly: true})),\n"
        "  diffPath: await g(git.diff(G, 'HEAD~1', 'HEAD', {paths: ['dir']})),\n"
        "  ls: await g(git.lsFiles(G)),\n"
        "  lsDir: await g(git.lsFiles(G, {paths: ['dir'], rev: 'v1'})),\n"
        "  bare: await g(git.lsFiles(T.bare)),\n"
        "  badOption: await g(git.log(G, {follow: true})),\n"
        "  badCount: await g(git.log(G, {maxCount: 5000})),\n"
        "  relative: await g(git.log('good')),\n"
        "  dashRev: await g(git.revParse(G, '--all')),\n"
        "  dashLog: await g(git.log(G, {rev: '--output=' + T.root + '/written'})),\n"
        "  dashShow: await g(git.show(G, '--output=' + T.root + '/written')),\n"
        "  dashShowPath: await g(git.show(G, '-p', 'a.txt')),\n"
        "  dashDiff: await g(git.diff(G, '-p', 'HEAD')),\n"
        "  dashDiffTo: await g(git.diff(G, 'HEAD', '--output=' + T.root + '/written')),\n"
        "  dashLs: await g(git.lsFiles(G, {rev: '-r'})),\n"
        "  dashTags: await g(git.describeTags(G, {rev: '--dirty'})),\n"
        "  pathDash: await g(git.log(G, {path: '--output=x'})),\n"
        "};\n";
    char repos[4 * PATH_MAX];
    sfmt(repos, sizeof repos, "\"%s\",\"%s\"", g_good, g_bare);
    if (!flow_add("calls", BODY, repos))
        return;
    struct run_out o = run_flow("calls", NO_ENV);
    const json_t *r = o.result;
    check(o.exit_code == 0 && json_is_object(r), "calls: the run succeeds", "exit %d", o.exit_code);

    const json_t *log = value_of(r, "log");
    const json_t *c0 = json_array_get(log, 0);
    check(json_array_size(log) == 2 &&
              strcmp(json_string_value(json_object_get(c0, "commit")) ?: "", head) == 0 &&
              strcmp(json_string_value(json_array_get(json_object_get(c0, "parents"), 0)) ?: "", first) == 0 &&
              strcmp(json_string_value(json_object_get(c0, "message")) ?: "", "second\n\nbody\n") == 0 &&
              strcmp(json_string_value(json_object_get(json_object_get(c0, "author"), "email")) ?: "",
                     "ada@example.org") == 0 &&
              json_integer_value(json_object_get(json_object_get(c0, "committer"), "time")) > 1000000000,
          "git.log: commits newest first with hash, parents, message, author, committer",
          "%zu commits", json_array_size(log));
    check(json_array_size(value_of(r, "log1")) == 1 && json_array_size(value_of(r, "logPath")) == 1 &&
              json_array_size(value_of(r, "logSkip")) == 1,
          "git.log: maxCount, path and skip", "%zu %zu %zu", json_array_size(value_of(r, "log1")),
          json_array_size(value_of(r, "logPath")), json_array_size(value_of(r, "logSkip")));
    check_str_eq(text_of(r, "rev"), head, "git.revParse: the full object name of HEAD");
    check_str_eq(text_of(r, "revTag"), first, "git.revParse: revision expressions (v1~1)");
    expect_code(r, "revMissing", "not_found", NULL, "git.revParse: an unknown name is not_found");
    check_str_eq(text_of(r, "tags"), "v1", "git.describeTags: the tag of HEAD");
    check_str_eq(text_of(r, "showFile"), "two\n", "git.show: a file at HEAD");
    check_str_eq(text_of(r, "showOld"), "one\n", "git.show: a file at an older revision");
    expect_code(r, "showBin", "not_text", NULL, "git.show: a file that is not UTF-8 is not_text");
    expect_code(r, "showMissing", "not_found", NULL, "git.show: a missing file is not_found");
    check(strstr(text_of(r, "showCommit"), "+two") != NULL &&
              strstr(text_of(r, "showCommit"), head) != NULL,
          "git.show without a path: the commit and its patch", "%.200s", text_of(r, "showCommit"));
    check(strstr(text_of(r, "diff"), "-one\n+two\n") != NULL, "git.diff: the unified diff",
          "%.200s", text_of(r, "diff"));
    const json_t *names = value_of(r, "diffNames");
    check(json_array_size(names) == 2 &&
              strcmp(json_string_value(json_array_get(names, 0)) ?: "", "a.txt") == 0 &&
              strcmp(json_string_value(json_array_get(names, 1)) ?: "", "dir/b.txt") == 0,
          "git.diff nameOnly: the changed paths", "%zu", json_array_size(names));
    check(strstr(text_of(r, "diffPath"), "dir/b.txt") != NULL &&
              strstr(text_of(r, "diffPath"), "a.txt") == NULL,
          "git.diff paths: limited to the paths", "%.200s", text_of(r, "diffPath"));
    const json_t *ls = value_of(r, "ls");
    check(json_array_size(ls) == 3 &&
              strcmp(json_string_value(json_array_get(ls, 2)) ?: "", "dir/b.txt") == 0,
          "git.lsFiles: every path of HEAD's tree", "%zu", json_array_size(ls));
    check(json_array_size(value_of(r, "lsDir")) == 1, "git.lsFiles: paths and rev", "%zu",
          json_array_size(value_of(r, "lsDir")));
    check(json_array_size(value_of(r, "bare")) == 3, "git.lsFiles on a bare repository", "%s %s",
          code_of(r, "bare"), message_of(r, "bare"));
    expect_code(r, "badOption", "invalid_arguments", "unknown", "git.log: an unknown option is refused");
    expect_code(r, "badCount", "invalid_arguments", "maxCount", "git.log: maxCount over 1000 is refused");
    expect_code(r, "relative", "invalid_arguments", "absolute", "a relative repository path is refused");
    static const char *const DASH[] = {"dashRev", "dashLog", "dashShow", "dashShowPath",
                                       "dashDiff", "dashDiffTo", "dashLs", "dashTags"};
    for (size_t i = 0; i < sizeof DASH / sizeof DASH[0]; i++) {
        char name[128];
        sfmt(name, sizeof name, "a revision starting with '-' is refused (%s) [guard: dash refs]",
             DASH[i]);
        expect_code(r, DASH[i], "invalid_arguments", "starts with '-'", name);
    }
    check(strcmp(code_of(r, "pathDash"), "") == 0,
          "a path starting with '-' is a path after \"--\" (no error, no option)", "%s %s",
          code_of(r, "pathDash"), message_of(r, "pathDash"));
    char written[PATH_MAX + 16];
    sfmt(written, sizeof written, "%s/written", g_root);
    ok(access(written, F_OK) != 0, "no revision became --output: nothing was written");
    json_decref(o.json);
}

static void test_grants(void)
{
    char script[8 * PATH_MAX];
    sfmt(script, sizeof script,
         "cd '%s'\n"
         "mkdir wt; printf 'gitdir: %s/.git\\n' > wt/.git\n"
         "git clone -q --shared '%s' alt\n"
         "git clone -q '%s' other; chown -R 65534:65534 other\n"
         "mkdir linkdir; ln -s '%s' linkdir/link\n"
         "git clone -q '%s' dotgitlink-src; mkdir dotgitlink; ln -s '%s/.git' dotgitlink/.git\n",
         g_root, g_good, g_good, g_good, g_good, g_good, g_good);
    if (!sh("git: make the repositories for grants", script))
        return;
    static const char *BODY =
        "const R = T.root;\n"
        "return {\n"
        "  link: await g(git.revParse(R + '/linkdir/link', 'HEAD')),\n"
        "  sub: await g(git.revParse(T.good + '/dir', 'HEAD')),\n"
        "  notGranted: await g(git.revParse(T.bare, 'HEAD')),\n"
        "  etc: await g(git.revParse('/etc', 'HEAD')),\n"
        "  dotdot: await g(git.revParse(T.good + '/dir/..', 'HEAD')),\n"
        "  worktree: await g(git.revParse(R + '/wt', 'HEAD')),\n"
        "  dotgitlink: await g(git.revParse(R + '/dotgitlink', 'HEAD')),\n"
        "  alternates: await g(git.revParse(R + '/alt', 'HEAD')),\n"
        "  other: await g(git.revParse(R + '/other', 'HEAD')),\n"
        "};\n";
    char repos[8 * PATH_MAX];
    sfmt(repos, sizeof repos, "\"%s\",\"%s/wt\",\"%s/dotgitlink\",\"%s/alt\",\"%s/other\"",
         g_good, g_root, g_root, g_root, g_root);
    if (!flow_add("grants", BODY, repos))
        return;
    struct run_out o = run_flow("grants", NO_ENV);
    const json_t *r = o.result;
    check(strlen(text_of(r, "link")) == 40,
          "a link to the granted repository is the same repository (real paths compared)", "%s %s",
          code_of(r, "link"), message_of(r, "link"));
    check(strlen(text_of(r, "dotdot")) == 40, "a path with .. resolving to the granted repository",
          "%s", message_of(r, "dotdot"));
    expect_code(r, "sub", "denied", "not a granted repository",
                "a subdirectory of a granted repository is denied [guard: exact repository]");
    expect_code(r, "notGranted", "denied", "not a granted repository",
                "a repository not granted is denied [guard: exact repository]");
    expect_code(r, "etc", "denied", "not a granted repository", "/etc is denied");
    expect_code(r, "worktree", "denied", "a file",
                "a granted directory whose .git is a gitdir file pointing elsewhere is denied "
                "[guard: .git file]");
    expect_code(r, "dotgitlink", "denied", "symbolic link",
                "a granted directory whose .git is a link to another repository is denied");
    expect_code(r, "alternates", "denied", "alternates",
                "a repository borrowing objects through alternates is denied");
    expect_code(r, "other", "denied", "owned by uid 65534",
                "a repository owned by another user is denied [guard: ownership]");
    json_decref(o.json);
}

/* ---- 4: the hostile repository ------------------------------------------------------------------ */

static void test_hostile(void)
{
    if (!make_hostile())
        return;
    /* Control: under a plain git this repository's config runs its programs. */
    char script[4 * PATH_MAX];
    sfmt(script, sizeof script,
         "cd '%s'; git diff HEAD~1 HEAD >/dev/null 2>&1 || true\n"
         "git lg >/dev/null 2>&1 || true\n"
         "git log -1 >/dev/null 2>&1 || true\n"
         "git status >/dev/null 2>&1 || true\n"
         "git fetch -q origin >/dev/null 2>&1 || true\n",
         g_hostile);
    sh("git: control run of a plain git", script);
    char *seen = marks();
    check(strstr(seen, "process") != NULL && strstr(seen, "alias") != NULL &&
              strstr(seen, "gpg") != NULL && strstr(seen, "fsmonitor") != NULL &&
              strstr(seen, "uploadpack") != NULL,
          "hostile repository (control): a plain git runs its filter process, alias, gpg, "
          "fsmonitor and upload-pack", "marks: %s", seen);
    free(seen);
    unlink(g_marks);

    static const char *BODY =
        "const H = T.hostile;\n"
        "return {\n"
        "  log: await g(git.log(H)),\n"
        "  logPath: await g(git.log(H, {path: 'a.txt'})),\n"
        "  rev: await g(git.revParse(H, 'HEAD')),\n"
        "  tags: await g(git.describeTags(H)),\n"
        "  showFile: await g(git.show(H, 'HEAD', 'a.txt')),\n"
        "  showCommit: await g(git.show(H, 'HEAD')),\n"
        "  diff: await g(git.diff(H, 'HEAD~1', 'HEAD')),\n"
        "  diffNames: await g(git.diff(H, 'HEAD~1', 'HEAD', {nameOnly: true})),\n"
        "  ls: await g(git.lsFiles(H)),\n"
        "  missing: await g(git.show(H, '0123456789012345678901234567890123456789', 'a.txt')),\n"
        "  missingRev: await g(git.revParse(H, '0123456789012345678901234567890123456789^{commit}')),\n"
        "};\n";
    char repos[PATH_MAX + 8];
    sfmt(repos, sizeof repos, "\"%s\"", g_hostile);
    if (!flow_add("hostile", BODY, repos))
        return;
    struct run_out o = run_flow("hostile", NO_ENV);
    const json_t *r = o.result;
    check(o.exit_code == 0 && json_array_size(value_of(r, "log")) == 2 &&
              strstr(text_of(r, "diff"), "-one\n+two\n") != NULL &&
              strcmp(text_of(r, "showFile"), "two\n") == 0,
          "hostile repository: log, diff and show work (without its programs)",
          "exit %d log %s/%s diff %.80s show %s", o.exit_code, code_of(r, "log"),
          message_of(r, "log"), text_of(r, "diff"), text_of(r, "showFile"));
    seen = marks();
    check(seen[0] == '\0',
          "hostile repository: no fsmonitor, pager, sshCommand, external diff, textconv, diff "
          "command, filter, alias, hook, gpg or upload-pack program ran [guard: hostile "
          "repository]", "marks: %s", seen);
    free(seen);
    json_decref(o.json);
}

/* ---- 5: a stand-in for git ---------------------------------------------------------------------- */

static char g_fake[PATH_MAX + 32], g_mode[PATH_MAX + 32], g_fifo[PATH_MAX + 32],
    g_dump[PATH_MAX + 32];

static bool make_fake(void)
{
    sfmt(g_fake, sizeof g_fake, "%s/fakegit.sh", g_root);
    sfmt(g_mode, sizeof g_mode, "%s/fakegit.mode", g_root);
    sfmt(g_fifo, sizeof g_fifo, "%s/fakegit.fifo", g_root);
    sfmt(g_dump, sizeof g_dump, "%s/fakegit.dump", g_root);
    char text[4 * PATH_MAX + 512];
    sfmt(text, sizeof text,
         "#!/bin/sh\n"
         "mode=$(cat '%s')\n"
         "case \"$mode\" in\n"
         "env) { for a in \"$@\"; do echo \"arg $a\"; done; env | sort | sed 's/^/env /';"
         " echo \"cwd $(pwd)\"; echo \"cpus $(nproc)\"; } > '%s';"
         " echo 0123456789012345678901234567890123456789 ;;\n"
         "big) yes aaaaaaaaaaaaaaa | head -c 2000000 ;;\n"
         "sleep) echo $$ > '%s'; exec sleep 60 ;;\n"
         "esac\n",
         g_mode, g_dump, g_fifo);
    return write_text_file(g_fake, text, 0755) && mkfifo(g_fifo, 0600) == 0;
}

static bool set_mode(const char *mode)
{
    return write_text_file(g_mode, mode, 0644);
}

static char *const *fake_env(char vars[2][PATH_MAX + 64], char **list)
{
    sfmt(vars[0], PATH_MAX + 64, "BASAL_TEST_GIT_PROGRAM=%s", g_fake);
    sfmt(vars[1], PATH_MAX + 64, "BASAL_TEST_GIT_TIMEOUT_MS=1000");
    list[0] = vars[0];
    list[1] = vars[1];
    list[2] = NULL;
    return list;
}

/* Reads the stand-in's pid from the FIFO (opened before it started). */
static pid_t read_fifo_pid(int fd, int timeout_ms)
{
    char buf[32];
    size_t n = 0;
    long long until = now_ms() + timeout_ms;
    while (n + 1 < sizeof buf) {
        long long left = until - now_ms();
        struct pollfd p = {fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (memchr(buf, '\n', n) != NULL)
            break;
    }
    buf[n] = '\0';
    return (pid_t)strtol(buf, NULL, 10);
}

/* Waits for pid (not our child) to be gone, through its pidfd. */
static bool gone_within(pid_t pid, int timeout_ms)
{
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0)
        return errno == ESRCH;
    struct pollfd p = {pidfd, POLLIN, 0};
    bool gone = poll(&p, 1, timeout_ms) == 1;
    close(pidfd);
    return gone;
}

static void test_fake(void)
{
    if (!ok(make_fake(), "git stand-in: made"))
        return;
    static const char *BODY =
        "return {rev: await g(git.revParse(T.good, 'HEAD'))};\n";
    static const char *BIG = "return {log: await g(git.log(T.good))};\n";
    char repos[PATH_MAX + 8];
    sfmt(repos, sizeof repos, "\"%s\"", g_good);
    if (!flow_add("fake", BODY, repos) || !flow_add("fakebig", BIG, repos))
        return;
    char vars[2][PATH_MAX + 64];
    char *list[3];
    char *const *env = fake_env(vars, list);

    set_mode("env");
    struct run_out o = run_flow("fake", env);
    check(strlen(text_of(o.result, "rev")) == 40, "git stand-in: its output is the result", "%s %s",
          code_of(o.result, "rev"), message_of(o.result, "rev"));
    json_decref(o.json);
    char *dump = read_text_file(g_dump);
    const char *d = dump != NULL ? dump : "";
    static const char *const WANT_ENV =
        "env GIT_ALLOW_PROTOCOL=\nenv GIT_ATTR_NOSYSTEM=1\nenv GIT_CONFIG_GLOBAL=/dev/null\n"
        "env GIT_CONFIG_NOSYSTEM=1\nenv GIT_CONFIG_SYSTEM=/dev/null\nenv GIT_INDEX_FILE=/.basal-no-index\n"
        "env GIT_LITERAL_PATHSPECS=1\nenv GIT_NO_LAZY_FETCH=1\nenv GIT_NO_REPLACE_OBJECTS=1\n"
        "env GIT_OPTIONAL_LOCKS=0\nenv GIT_PROTOCOL_FROM_USER=0\nenv GIT_TERMINAL_PROMPT=0\n"
        "env LC_ALL=C\nenv PATH=/usr/bin:/bin\n";
    /* env(1) under sh adds PWD (and maybe SHLVL, _): those are the shell's; every other
     * line counts, the parent's own (BASAL_TEST_*) included. */
    char got_env[2048] = "";
    for (const char *line = d; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) + 1 : strlen(line);
        if (strncmp(line, "env ", 4) == 0 && strncmp(line, "env PWD=", 8) != 0 &&
            strncmp(line, "env SHLVL=", 10) != 0 && strncmp(line, "env _=", 6) != 0 &&
            strncmp(line, "env OLDPWD=", 11) != 0)
            strncat(got_env, line, len < sizeof got_env - strlen(got_env) - 1 ? len : 0);
        line = end != NULL ? end + 1 : NULL;
    }
    check_str_eq(got_env, WANT_ENV, "git runs with only its fixed environment (no HOME, nothing "
                                    "of the parent's) [guard: empty environment]");
    /* The git call came during a burst's pin of the activation's thread
     * (supervisor/colocate.c); git must get the mask from before it, here the test's. */
    /* Inside git's sandbox there is no /proc: nproc(1) counts the CPUs of its mask. */
    cpu_set_t mine;
    CPU_ZERO(&mine);
    char own[64] = "";
    if (sched_getaffinity(0, sizeof mine, &mine) == 0)
        sfmt(own, sizeof own, "cpus %d\n", CPU_COUNT(&mine));
    const char *git_line = strstr(d, "cpus ");
    check(own[0] != '\0' && strstr(d, own) != NULL,
          "git started by a host call during the activation's pin may use every CPU the "
          "parent may [guard git-not-pinned]",
          "git's %.20s, the parent's %s", git_line != NULL ? git_line : "(none)", own);
    check(strstr(d, "arg --no-pager\n") != NULL && strstr(d, "arg core.fsmonitor=false\n") != NULL &&
              strstr(d, "arg protocol.allow=never\n") != NULL &&
              strstr(d, "arg core.hooksPath=/dev/null\n") != NULL &&
              strstr(d, "arg --end-of-options\narg HEAD\n") != NULL && strstr(d, "cwd ") != NULL,
          "git's command line: --no-pager, the config overrides, --end-of-options before the "
          "revision", "%.600s", d);
    free(dump);

    set_mode("big");
    o = run_flow("fakebig", env);
    expect_code(o.result, "log", "too_large", "1048576",
                "git output over 1 MiB is too_large (git killed) [guard: output bound]");
    json_decref(o.json);

    /* A git that never ends: killed at the (test) timeout. */
    set_mode("sleep");
    int fifo = open(g_fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    o = run_flow("fake", env);
    pid_t pid = fifo >= 0 ? read_fifo_pid(fifo, 5000) : 0;
    expect_code(o.result, "rev", "timeout", NULL,
                "a git that does not finish is a timeout [guard: git time bound]");
    check(pid > 0 && gone_within(pid, 10000), "the timed-out git is killed", "pid %d", (int)pid);
    json_decref(o.json);
    if (fifo >= 0)
        close(fifo);

    /* ck-basal SIGKILLed while git runs: git dies with it. */
    fifo = open(g_fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    vars[1][0] = '\0';
    sfmt(vars[1], PATH_MAX + 64, "BASAL_TEST_GIT_TIMEOUT_MS=60000");
    struct proc p;
    const struct cli_opts opts = {.json = true, .envp = env};
    if (fifo < 0 || cli_start(&p, g_home, &opts, ARGS("run", "fake", "--trigger", trigger_json())) != 0) {
        fail("git stand-in: parent death", "cannot start: %s", strerror(errno));
        return;
    }
    pid = read_fifo_pid(fifo, 20000);
    close(fifo);
    kill(p.pid, SIGKILL);
    struct proc_result pr = proc_finish(&p, NULL, 0, 10000);
    bool started = check(pid > 0, "git stand-in: running under ck-basal",
                         "no pid; ck-basal: %s: %.300s %.300s", proc_describe(&pr),
                         pr.out != NULL ? pr.out : "", pr.err != NULL ? pr.err : "");
    proc_result_free(&pr);
    if (started) {
        bool gone = gone_within(pid, 10000);
        check(gone, "git left running dies with ck-basal (SIGKILL of the parent) [guard: "
                    "PR_SET_PDEATHSIG]", "pid %d still alive 10 s later", (int)pid);
        if (!gone)
            kill(pid, SIGKILL);
    }
}

int main(void)
{
    const char *tmp = harness_tmpdir("git-builtin");
    if (tmp == NULL || !require_binary(harness_test_parent(), "git: test ck-basal") ||
        !require_binary("/usr/bin/git", "git: the git program"))
        return harness_finish();
    snprintf(g_root, sizeof g_root, "%s", tmp);
    chmod(g_root, 0755); /* the repository owned by another user is reached through it */
    sfmt(g_home, sizeof g_home, "%s/home", g_root);
    struct proc_result r = cli(NO_ENV, ARGS("setup"));
    bool ready = check(proc_exited_with(&r, 0), "git: data home set up", "%s", r.err);
    proc_result_free(&r);
    if (ready && make_repos()) {
        test_calls();
        test_grants();
        test_hostile();
        test_fake();
    }
    harness_remove_tree(g_root);
    return harness_finish();
}
