/* Hostile repositories against git.* through the real ck-basal and worker (issue 23
 * section 2; src/host/git_builtin.h, src/host/git_sandbox.h, docs/flows.md "git").
 * Every repository is built here; a marker program appends its name to a marks file
 * and connects to a loopback listener; another repository ("secret", never granted)
 * is watched with inotify. For each trick:
 *
 *   - a control with a plain git shows the trick works (the marker runs, the secret
 *     is read, the listener is reached);
 *   - the git.* calls on it through ck-basal then leave no mark, no connection on
 *     the listener, no access to the secret, and the git directory's tree hash
 *     unchanged; a refused repository is refused with the reason.
 *
 *   1. partial clones: an ext:: remote with protocol.ext.allow=always, an uploadpack
 *      program with protocol.file.allow=always, a plain file:// promisor of the
 *      secret, an http:// promisor on the listener [guard: partial clone refused];
 *   2. a git directory whose objects/ or a pack is a link into the secret [guard:
 *      git directory walk, no link], or whose objects/ is the secret's bound there
 *      (mount --bind; the test runs as root) [guard: git directory walk, no mount];
 *   3. hooks, fsmonitor, textconv (.gitattributes and info/attributes), diff.external,
 *      core.pager, gpg.program, credential.helper, an ext:: submodule: once as git
 *      runs, once with every command-line override left out (the test hook
 *      BASAL_TEST_GIT_NO_OVERRIDES) so that the sandbox alone holds [guard: git
 *      sandbox];
 *   4. a diff and a show of a commit with a submodule (gitlink) entry work [guard:
 *      no index, GIT_INDEX_FILE a path that does not exist];
 *   5. fail closed: with unshare denied (a seccomp filter from tests/tools/launch) or
 *      Landlock reading as absent (BASAL_TEST_GIT_LANDLOCK_ABI=0), the call is
 *      refused with the step that failed, and a stand-in for git never ran, while
 *      it does run without them (control) [guard: git sandbox fails closed]. */
#include "lib/cli_home.h"
#include "lib/harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIMEOUT_MS 120000
#define SECRET_TEXT "SECRET-CONTENT-7f3a"

static char g_root[PATH_MAX];
static char g_home[PATH_MAX + 32], g_marks[PATH_MAX + 32], g_mark[PATH_MAX + 32];
static char g_gpg[PATH_MAX + 32], g_secret[PATH_MAX + 32];
static int g_listener = -1, g_port = 0, g_inotify = -1;

/* ---- helpers ------------------------------------------------------------------------ */

static char *const SH_ENV[] = {"PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1",
                               "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=Ada",
                               "GIT_AUTHOR_EMAIL=ada@example.org", "GIT_COMMITTER_NAME=Ada",
                               "GIT_COMMITTER_EMAIL=ada@example.org", "GIT_TERMINAL_PROMPT=0",
                               "LC_ALL=C", "HOME=/nonexistent", NULL};

/* A shell script for setting up and for controls (never ck-basal's own git runs). */
static bool sh(const char *what, const char *script, bool must_succeed)
{
    const char *argv[] = {"/bin/sh", "-ec", script, NULL};
    struct proc_opts opts = {.use_fds = false, .envp = SH_ENV};
    struct proc_result r = proc_run_opts(argv, &opts, NULL, 0, 60000);
    bool done = proc_exited_with(&r, 0);
    if (!done && must_succeed)
        fail(what, "%s: %.400s", proc_describe(&r), r.err);
    proc_result_free(&r);
    return done;
}

static char *sh_out(const char *script)
{
    const char *argv[] = {"/bin/sh", "-ec", script, NULL};
    struct proc_opts opts = {.use_fds = false, .envp = SH_ENV};
    struct proc_result r = proc_run_opts(argv, &opts, NULL, 0, 60000);
    char *out = strdup(r.out != NULL ? r.out : "");
    proc_result_free(&r);
    return out;
}

/* A hash of the whole tree under dir: names, types, modes, sizes, times, link targets
 * and every file's bytes. */
static char *tree_hash(const char *dir)
{
    char script[PATH_MAX + 512];
    sfmt(script, sizeof script,
         "cd '%s'; { find . -printf '%%p %%y %%m %%s %%T@ %%l\\n' | LC_ALL=C sort;"
         " find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum; }"
         " | sha256sum",
         dir);
    return sh_out(script);
}

static char *marks(void)
{
    char *text = read_text_file(g_marks);
    return text != NULL ? text : strdup("");
}

/* Connections waiting on the listener (accepted and closed: counted once). */
static int listener_hits(void)
{
    int hits = 0;
    struct pollfd p = {g_listener, POLLIN, 0};
    while (poll(&p, 1, 0) == 1) {
        int c = accept(g_listener, NULL, NULL);
        if (c < 0)
            break;
        close(c);
        hits++;
    }
    return hits;
}

/* Accesses to the secret repository since the last call. */
static int secret_events(void)
{
    char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
    int events = 0;
    ssize_t n;
    while ((n = read(g_inotify, buf, sizeof buf)) > 0)
        for (char *p = buf; p < buf + n; p += sizeof(struct inotify_event) +
                                              ((struct inotify_event *)(void *)p)->len)
            events++;
    return events;
}

static int watch_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_D)
        (void)inotify_add_watch(g_inotify, path, IN_OPEN | IN_ACCESS | IN_MODIFY | IN_CREATE);
    return 0;
}

/* Every event of the control runs is consumed; the next count is of the basal run. */
static void reset_witnesses(void)
{
    unlink(g_marks);
    (void)listener_hits();
    (void)secret_events();
}

/* ---- ck-basal --------------------------------------------------------------------------- */

static struct proc_result cli(char *const *envp, const char *const *args, bool launched,
                              const char *inject)
{
    const struct cli_opts opts = {.json = true, .envp = envp, .timeout_ms = TIMEOUT_MS,
                                  .prefix = launched ? ARGS(harness_launcher(), inject, "--") : NULL};
    return cli_run(g_home, &opts, args);
}

static char *const NO_ENV[] = {NULL};

static const char *BODY =
    "const T = trigger;\n"
    "async function g(p) {\n"
    "  try { return {value: await p}; }\n"
    "  catch (e) { if (e.name !== 'HostError') throw e; return {code: e.data.code, message: e.data.message}; }\n"
    "}\n"
    "const R = T.repo;\n"
    "return {\n"
    "  log: await g(git.log(R)),\n"
    "  show: await g(git.show(R, 'HEAD')),\n"
    "  file: await g(git.show(R, 'HEAD', 'a.txt')),\n"
    "  secret: await g(git.show(R, 'HEAD', 'secret.txt')),\n"
    "  diff: await g(git.diff(R, 'HEAD~1', 'HEAD')),\n"
    "  names: await g(git.diff(R, 'HEAD~1', 'HEAD', {nameOnly: true})),\n"
    "  ls: await g(git.lsFiles(R)),\n"
    "  tags: await g(git.describeTags(R)),\n"
    "  rev: await g(git.revParse(R, 'HEAD')),\n"
    "};\n";

static bool flow_add(const char *id, const char *repos)
{
    char dir[PATH_MAX + 64], why[1024] = "cannot write the flow";
    static char manifest[65536];
    sfmt(dir, sizeof dir, "%s/flow-%s", g_root, id);
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"test\","
         "\"trigger\":{\"manual\":true},\"git\":{\"read\":[%s]}}", id, repos);
    bool done = flow_dir_write(dir, manifest, BODY) &&
                cli_install_approve(g_home, NO_ENV, dir, id, 1, why, sizeof why) == FLOW_ADDED;
    return check(done, id, "%s", done ? "installed and approved" : why) && done;
}

/* Runs the flow on repo; the result object (to json_decref via *whole) or NULL. */
static json_t *run_on(const char *id, const char *repo, char *const *envp, json_t **whole,
                      const char *inject)
{
    char trigger[PATH_MAX + 32];
    sfmt(trigger, sizeof trigger, "{\"repo\":\"%s\"}", repo);
    struct proc_result r = cli(envp, ARGS("run", id, "--trigger", trigger), inject != NULL,
                               inject);
    *whole = cli_output_json(&r);
    json_t *result = json_object_get(*whole, "result");
    if (result == NULL)
        fprintf(stderr, "  run %s on %s: %s\n  out: %.2000s\n  err: %.2000s\n", id, repo,
                proc_describe(&r), r.out, r.err);
    proc_result_free(&r);
    return result;
}

static const char *field(const json_t *r, const char *key, const char *what)
{
    const char *s = json_string_value(json_object_get(json_object_get(r, key), what));
    return s != NULL ? s : "";
}

/* ---- repositories ------------------------------------------------------------------------ */

static const char *BASE =
    "git init -q \"$R\"; cd \"$R\"\n"
    "printf 'one\\n' > a.txt; git add a.txt; git commit -q -m first\n"
    "printf 'two\\n' > a.txt; git add a.txt; git commit -q -m second; git tag v1\n";

/* Builds repository name with BASE (unless partial) then extra (R, S, M, G, P set to
 * the repository, the secret, the marker, the gpg wrapper and the listener's port). */
static bool make_repo(const char *name, bool base, const char *extra, char *path, size_t cap)
{
    sfmt(path, cap, "%s/%s", g_root, name);
    static char script[32768];
    sfmt(script, sizeof script, "R='%s'; S='%s'; M='%s'; G='%s'; P=%d\n%s%s", path, g_secret,
         g_mark, g_gpg, g_port, base ? BASE : "", extra);
    char what[128];
    sfmt(what, sizeof what, "hostile: make the repository %s", name);
    return sh(what, script, true);
}

struct trick {
    const char *name;
    bool base;
    enum { SEEN_MARK, SEEN_SECRET, SEEN_LISTENER } control_shows; /* what the control shows */
    const char *build;   /* after BASE (or alone): makes $R hostile */
    const char *control; /* run on a copy $C of it with a plain git */
    const char *code, *needle; /* the refusal expected of every call; NULL: the calls run */
    const char *guard;
};

#define PARTIAL(extra)                                                                           \
    "git clone -q --filter=blob:none --no-checkout \"file://$S\" \"$R\"; cd \"$R\"\n" extra

static const struct trick TRICKS[] = {
    {"ext-promisor", false, SEEN_MARK,
     PARTIAL("git config protocol.ext.allow always\n"
             "git config remote.origin.url \"ext::$M ext\"\n"),
     "git -C \"$C\" show HEAD:secret.txt || true",  "denied", "partial clone",
     "partial clone refused"},
    {"uploadpack-promisor", false, SEEN_MARK,
     PARTIAL("git config protocol.file.allow always\n"
             "git config remote.origin.uploadpack \"$M uploadpack\"\n"),
     "git -C \"$C\" show HEAD:secret.txt || true",  "denied", "partial clone",
     "partial clone refused"},
    {"file-promisor", false, SEEN_SECRET, PARTIAL(""), "git -C \"$C\" show HEAD:secret.txt", 
     "denied", "partial clone", "partial clone refused"},
    {"http-promisor", false, SEEN_LISTENER,
     PARTIAL("git config protocol.http.allow always\n"
             "git config remote.origin.url \"http://127.0.0.1:$P/x\"\n"),
     "git -C \"$C\" show HEAD:secret.txt || true",  "denied", "partial clone",
     "partial clone refused"},
    {"objects-link", false, SEEN_SECRET,
     "git init -q \"$R\"; cd \"$R\"; rm -rf .git/objects; ln -s \"$S/.git/objects\" .git/objects\n"
     "git -C \"$S\" rev-parse HEAD > .git/refs/heads/master\n"
     "git symbolic-ref HEAD refs/heads/master\n",
     "git -C \"$C\" show HEAD:secret.txt",  "denied", "symbolic link",
     "git directory walk: no link"},
    {"pack-link", true, SEEN_SECRET,
     "for f in \"$S\"/.git/objects/pack/pack-*; do ln -s \"$f\" .git/objects/pack/; done\n"
     "git -C \"$S\" rev-parse HEAD > .git/refs/heads/master\n",
     "git -C \"$C\" show HEAD:secret.txt",  "denied", "symbolic link",
     "git directory walk: no link"},
    {"objects-mount", true, SEEN_SECRET,
     "mount --bind \"$S/.git/objects\" .git/objects\n"
     "git -C \"$S\" rev-parse HEAD > .git/refs/heads/master\n",
     "git -C \"$R\" show HEAD:secret.txt", "denied", "another file system or mount",
     "git directory walk: no mount"},
    {"hooks", true, SEEN_MARK,
     "mkdir .git/myhooks\n"
     "for h in pre-commit post-commit post-checkout post-index-change reference-transaction"
     " pre-auto-gc post-rewrite; do printf '#!/bin/sh\\n%s hook\\n' \"$M\" > .git/myhooks/$h;"
     " chmod +x .git/myhooks/$h; cp -p .git/myhooks/$h .git/hooks/$h; done\n"
     "git config core.hooksPath \"$R/.git/myhooks\"\n",
     "git -C \"$C\" commit -q --allow-empty -m x",  NULL, NULL, "git sandbox"},
    {"fsmonitor", true, SEEN_MARK, "git config core.fsmonitor \"$M fsmonitor\"\n",
     "git -C \"$C\" status >/dev/null",  NULL, NULL, "git sandbox"},
    {"textconv", true, SEEN_MARK,
     "printf '* diff=evil\\n' > .gitattributes; git add .gitattributes; git commit -q -m attrs\n"
     "printf 'three\\n' > a.txt; git add a.txt; git commit -q -m third\n"
     "printf '* diff=evil\\n' > .git/info/attributes\n"
     "git config diff.evil.textconv \"$M textconv\"\n",
     "git -C \"$C\" diff HEAD~1 HEAD >/dev/null",  NULL, NULL, "git sandbox"},
    {"external-diff", true, SEEN_MARK, "git config diff.external \"$M\"\n",
     "git -C \"$C\" diff HEAD~1 HEAD >/dev/null",  NULL, NULL, "git sandbox"},
    {"pager", true, SEEN_MARK, "git config core.pager \"$M pager\"; git config pager.log true\n",
     "script -qec \"git -C '$C' log -1\" /dev/null >/dev/null",  NULL, NULL,
     "git sandbox"},
    {"gpg", true, SEEN_MARK,
     "git cat-file commit HEAD | sed '/^committer /a gpgsig -----BEGIN PGP SIGNATURE-----\\n "
     "\\n -----END PGP SIGNATURE-----' > signed.txt\n"
     "c=$(git hash-object -t commit -w signed.txt); git update-ref HEAD $c; rm signed.txt\n"
     "git config log.showSignature true; git config gpg.program \"$G\"\n",
     "git -C \"$C\" log -1 >/dev/null",  NULL, NULL, "git sandbox"},
    {"credential", true, SEEN_MARK,
     "git config credential.helper \"!$M credential\"\n"
     "git config remote.origin.url \"https://127.0.0.1:$P/x\"\n",
     "printf 'protocol=https\\nhost=example.org\\n\\n' | git -C \"$C\" credential fill"
     " >/dev/null 2>&1 || true",
      NULL, NULL, "git sandbox"},
    {"ext-submodule", true, SEEN_MARK,
     "printf '[submodule \"sub\"]\\n\\tpath = sub\\n\\turl = ext::%s submodule\\n' \"$M\""
     " > .gitmodules\n"
     "git add .gitmodules\n"
     "git update-index --add --cacheinfo 160000,$(git -C \"$S\" rev-parse HEAD),sub\n"
     "git commit -q -m submodule\n"
     "git config protocol.ext.allow always; git config submodule.recurse true\n"
     "git config diff.submodule log; git config fetch.recurseSubmodules true\n",
     "git -C \"$C\" -c protocol.ext.allow=always submodule update --init >/dev/null 2>&1 || true",
      NULL, NULL, "git sandbox"},
};
#define TRICK_COUNT (sizeof TRICKS / sizeof TRICKS[0])

static char g_paths[TRICK_COUNT][PATH_MAX + 64];

static bool make_world(void)
{
    sfmt(g_home, sizeof g_home, "%s/home", g_root);
    sfmt(g_marks, sizeof g_marks, "%s/marks", g_root);
    sfmt(g_mark, sizeof g_mark, "%s/mark.sh", g_root);
    sfmt(g_gpg, sizeof g_gpg, "%s/gpg-mark.sh", g_root);
    sfmt(g_secret, sizeof g_secret, "%s/secret", g_root);
    /* The listener the marker (and an http remote) would reach. */
    g_listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (g_listener < 0 || bind(g_listener, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(g_listener, 64) != 0 || getsockname(g_listener, (struct sockaddr *)&a, &len) != 0)
        return check(false, "hostile: a loopback listener", "%s", strerror(errno));
    g_port = ntohs(a.sin_port);
    char tool[2 * PATH_MAX];
    sfmt(tool, sizeof tool,
         "#!/bin/sh\necho \"$1\" >> '%s'\n"
         "/bin/bash -c 'echo x > /dev/tcp/127.0.0.1/%d' 2>/dev/null\nexit 0\n", g_marks, g_port);
    char gpg[PATH_MAX + 64];
    sfmt(gpg, sizeof gpg, "#!/bin/sh\nexec '%s' gpg\n", g_mark);
    if (!write_text_file(g_mark, tool, 0755) || !write_text_file(g_gpg, gpg, 0755))
        return false;
    char script[4 * PATH_MAX];
    sfmt(script, sizeof script,
         "R='%s'\n%s"
         "printf '%s\\n' > secret.txt; git add secret.txt; git commit -q -m secret\n"
         "git config uploadpack.allowFilter true; git repack -adq\n", g_secret, BASE,
         SECRET_TEXT);
    if (!sh("hostile: make the secret repository", script, true))
        return false;
    for (size_t i = 0; i < TRICK_COUNT; i++)
        if (!make_repo(TRICKS[i].name, TRICKS[i].base, TRICKS[i].build, g_paths[i],
                       sizeof g_paths[i]))
            return false;
    g_inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    return check(g_inotify >= 0 && nftw(g_secret, watch_one, 32, FTW_PHYS) == 0,
                 "hostile: the secret repository is watched", "%s", strerror(errno));
}

/* ---- 1-4: the tricks ------------------------------------------------------------------------ */

static void control(size_t i)
{
    const struct trick *t = &TRICKS[i];
    char script[4 * PATH_MAX + 512];
    /* On a copy (a control may write: a lazy fetch stores packs), with R the original
     * (a control that only reads may use it: a copy of a mount is no mount). */
    sfmt(script, sizeof script,
         "R='%s'; C='%s-control'; rm -rf \"$C\"; cp -a --one-file-system \"$R\" \"$C\"\n%s\n",
         g_paths[i], g_paths[i], t->control);
    reset_witnesses();
    sh("hostile: control", script, false);
    char *seen = marks();
    int hits = listener_hits(), events = secret_events();
    char name[256];
    sfmt(name, sizeof name, "%s (control): a plain git %s", t->name,
         t->control_shows == SEEN_MARK     ? "runs the marker program"
         : t->control_shows == SEEN_SECRET ? "reads the secret repository"
                                           : "connects to the loopback listener");
    check(t->control_shows == SEEN_MARK     ? seen[0] != '\0'
          : t->control_shows == SEEN_SECRET ? events > 0
                                            : hits > 0,
          name, "marks '%s', %d listener connections, %d secret accesses", seen, hits, events);
    free(seen);
}

/* The basal run on trick i: no mark, no connection, no access to the secret, the git
 * directory unchanged; the expected refusal. */
static void basal_run(size_t i, const char *flow, bool no_overrides)
{
    const struct trick *t = &TRICKS[i];
    char gitdir[PATH_MAX + 80];
    sfmt(gitdir, sizeof gitdir, "%s/.git", g_paths[i]);
    char *before = tree_hash(gitdir);
    reset_witnesses();
    static char *const NO_OVERRIDES[] = {"BASAL_TEST_GIT_NO_OVERRIDES=1", NULL};
    json_t *whole = NULL;
    json_t *r = run_on(flow, g_paths[i], no_overrides ? NO_OVERRIDES : NO_ENV, &whole, NULL);
    char *seen = marks();
    int hits = listener_hits(), events = secret_events();
    char *after = tree_hash(gitdir); /* after the count: the hash reads a bound secret */
    const char *how = no_overrides ? " with no command-line override" : "";
    char name[512];
    bool ran = check(r != NULL, t->name, "%s", "the run gives a result");
    if (ran && t->code != NULL) {
        sfmt(name, sizeof name, "%s%s: every call is %s (%s) [guard: %s]", t->name, how,
             t->code, t->needle, t->guard);
        static const char *const KEYS[] = {"log", "show", "file", "secret", "diff", "ls", "rev"};
        bool all = true;
        for (size_t k = 0; k < sizeof KEYS / sizeof KEYS[0]; k++)
            all = all && strcmp(field(r, KEYS[k], "code"), t->code) == 0 &&
                  strstr(field(r, KEYS[k], "message"), t->needle) != NULL;
        check(all, name, "log: %s %s", field(r, "log", "code"), field(r, "log", "message"));
    } else if (ran && !no_overrides) {
        sfmt(name, sizeof name, "%s: git.log and git.diff work on it", t->name);
        check(json_array_size(json_object_get(json_object_get(r, "log"), "value")) >= 2 &&
                  field(r, "diff", "code")[0] == '\0',
              name, "log %s %s, diff %s %s", field(r, "log", "code"), field(r, "log", "message"),
              field(r, "diff", "code"), field(r, "diff", "message"));
    }
    char *text = r != NULL ? json_dumps(r, 0) : NULL;
    sfmt(name, sizeof name, "%s%s: no program ran, no connection, the secret untouched, the "
         "git directory unchanged, no secret in the result [guard: %s]", t->name, how,
         no_overrides ? "git sandbox" : t->guard);
    check(seen[0] == '\0' && hits == 0 && events == 0 && before != NULL && after != NULL &&
              strcmp(before, after) == 0 && (text == NULL || strstr(text, SECRET_TEXT) == NULL),
          name, "marks '%s', %d connections, %d secret accesses, tree %.16s -> %.16s", seen,
          hits, events, before != NULL ? before : "?", after != NULL ? after : "?");
    free(text);
    free(before);
    free(after);
    free(seen);
    json_decref(whole);
}

static void test_tricks(void)
{
    static char repos[TRICK_COUNT * (PATH_MAX + 72)];
    size_t at = 0;
    for (size_t i = 0; i < TRICK_COUNT; i++)
        at += (size_t)snprintf(repos + at, sizeof repos - at, "%s\"%s\"", i > 0 ? "," : "",
                               g_paths[i]);
    if (!flow_add("hostile", repos))
        return;
    for (size_t i = 0; i < TRICK_COUNT; i++) {
        control(i);
        basal_run(i, "hostile", false);
        if (TRICKS[i].code == NULL)
            basal_run(i, "hostile", true);
    }
}

/* 4: the ext-submodule repository's HEAD adds a gitlink. */
static void test_submodule_diff(void)
{
    size_t i = 0;
    while (i < TRICK_COUNT && strcmp(TRICKS[i].name, "ext-submodule") != 0)
        i++;
    if (i == TRICK_COUNT)
        return;
    char cmd[PATH_MAX + 64];
    sfmt(cmd, sizeof cmd, "git -C '%s' rev-parse HEAD", g_secret);
    char *sub = sh_out(cmd);
    sub[strcspn(sub, "\n")] = '\0';
    char want[128];
    sfmt(want, sizeof want, "+Subproject commit %s", sub);
    json_t *whole = NULL;
    json_t *r = run_on("hostile", g_paths[i], NO_ENV, &whole, NULL);
    check(strstr(json_string_value(json_object_get(json_object_get(r, "diff"), "value")) ?: "",
                 want) != NULL,
          "git.diff of a commit adding a submodule (gitlink) entry shows it [guard: no index]",
          "diff: %s %.300s", field(r, "diff", "message"), field(r, "diff", "value"));
    check(strstr(json_string_value(json_object_get(json_object_get(r, "show"), "value")) ?: "",
                 want) != NULL,
          "git.show of a commit adding a submodule (gitlink) entry shows it [guard: no index]",
          "show: %s", field(r, "show", "message"));
    const json_t *names = json_object_get(json_object_get(r, "names"), "value");
    check(json_array_size(names) == 2, "git.diff nameOnly lists the submodule entry",
          "%zu names: %s", json_array_size(names), field(r, "names", "message"));
    free(sub);
    json_decref(whole);
}

/* ---- 5: fail closed ------------------------------------------------------------------------- */

static void test_fail_closed(void)
{
    char dir[PATH_MAX + 32], fake[PATH_MAX + 48], ran[PATH_MAX + 48], repo[PATH_MAX + 32];
    sfmt(dir, sizeof dir, "%s/standin", g_root);
    sfmt(fake, sizeof fake, "%s/git.sh", dir);
    sfmt(ran, sizeof ran, "%s/ran", dir);
    char text[PATH_MAX + 128];
    sfmt(text, sizeof text, "#!/bin/sh\n: > '%s'\necho 0123456789012345678901234567890123456789\n",
         ran);
    if (mkdir(dir, 0755) != 0 || !write_text_file(fake, text, 0755) ||
        !make_repo("plain", true, "", repo, sizeof repo))
        return;
    char granted[PATH_MAX + 8];
    sfmt(granted, sizeof granted, "\"%s\"", repo);
    if (!flow_add("closed", granted))
        return;
    char program[PATH_MAX + 64];
    sfmt(program, sizeof program, "BASAL_TEST_GIT_PROGRAM=%s", fake);
    char *const env[] = {program, NULL};
    char *const no_landlock[] = {program, "BASAL_TEST_GIT_LANDLOCK_ABI=0", NULL};

    json_t *whole = NULL;
    json_t *r = run_on("closed", repo, env, &whole, NULL);
    const char *rev = json_string_value(json_object_get(json_object_get(r, "rev"), "value"));
    check(rev != NULL && strlen(rev) == 40 && access(ran, F_OK) == 0,
          "fail closed (control): the stand-in for git runs in the sandbox", "%s %s",
          field(r, "rev", "code"), field(r, "rev", "message"));
    json_decref(whole);
    unlink(ran);

    r = run_on("closed", repo, env, &whole, "--inject=unshare:EPERM");
    check(strcmp(field(r, "rev", "code"), "git_error") == 0 &&
              strstr(field(r, "rev", "message"),
                     "cannot confine git: user, mount and network namespaces (unshare): "
                     "Operation not permitted") != NULL &&
              access(ran, F_OK) != 0,
          "without user namespaces (unshare denied) every git call is refused with the step, "
          "and git never ran [guard: git sandbox fails closed]",
          "%s %s; ran: %s", field(r, "rev", "code"), field(r, "rev", "message"),
          access(ran, F_OK) == 0 ? "yes" : "no");
    json_decref(whole);
    unlink(ran);

    r = run_on("closed", repo, no_landlock, &whole, NULL);
    check(strcmp(field(r, "rev", "code"), "git_error") == 0 &&
              strstr(field(r, "rev", "message"), "the kernel has no Landlock") != NULL &&
              access(ran, F_OK) != 0,
          "without Landlock every git call is refused, and git never ran [guard: git sandbox "
          "fails closed]",
          "%s %s; ran: %s", field(r, "rev", "code"), field(r, "rev", "message"),
          access(ran, F_OK) == 0 ? "yes" : "no");
    json_decref(whole);
}

int main(void)
{
    const char *tmp = harness_tmpdir("git-hostile");
    if (tmp == NULL || !require_binary(harness_test_parent(), "git: test ck-basal") ||
        !require_binary(harness_launcher(), "git: the launcher") ||
        !require_binary("/usr/bin/git", "git: the git program") ||
        !require_binary("/usr/bin/script", "git: script(1) for the pager control") ||
        !require_binary("/bin/bash", "git: bash for the marker's connection"))
        return harness_finish();
    snprintf(g_root, sizeof g_root, "%s", tmp);
    chmod(g_root, 0755);
    if (make_world()) {
        struct proc_result r = cli(NO_ENV, ARGS("setup"), false, NULL);
        bool ready = check(proc_exited_with(&r, 0), "git: data home set up", "%s", r.err);
        proc_result_free(&r);
        if (ready) {
            test_tricks();
            test_submodule_diff();
            test_fail_closed();
        }
    }
    for (size_t i = 0; i < TRICK_COUNT; i++) {
        char objects[PATH_MAX + 96];
        sfmt(objects, sizeof objects, "%s/.git/objects", g_paths[i]);
        if (g_paths[i][0] != '\0' && strstr(TRICKS[i].build, "mount --bind") != NULL)
            (void)umount2(objects, MNT_DETACH);
    }
    if (g_listener >= 0)
        close(g_listener);
    if (g_inotify >= 0)
        close(g_inotify);
    harness_remove_tree(g_root);
    return harness_finish();
}
