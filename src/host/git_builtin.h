/* git.* for flows: read-only commands on repositories the manifest grants exactly
 * (basal.md section 7; docs/flows.md, "git" is the script's view). The repository
 * is hostile: its own config, attributes and objects are chosen by whoever can write
 * it, so nothing it says may make git run a program.
 *
 *   git.log(repo[, {rev, path, maxCount, skip}])
 *       -> [{commit, parents, author: {name, email, time}, committer: {...}, message}]
 *          rev default "HEAD", maxCount 1..1000 (default 100), skip 0..1000000;
 *          time in seconds since the epoch
 *   git.revParse(repo, rev)           -> the full object name ("not_found" if none)
 *   git.describeTags(repo[, {rev}])   -> `git describe --tags` of rev (default HEAD)
 *   git.show(repo, rev[, path])       -> with path: the file's bytes at rev as text
 *                                        ("not_text" if not UTF-8, "not_found" if
 *                                        absent); without: the commit and its patch
 *   git.diff(repo, from, to[, {paths, nameOnly}])
 *                                     -> the unified diff of two revisions (never the
 *                                        working tree); nameOnly: the paths only
 *   git.lsFiles(repo[, {rev, paths}]) -> the paths in rev's tree (default HEAD), sorted
 *
 * Text other than git.show's file contents has invalid UTF-8 replaced by U+FFFD.
 *
 * The repository. repo must resolve (realpath) to exactly a granted directory. Its
 * git directory is repo/.git when that is a directory (not a link); repo itself when
 * there is no .git (a bare repository). Refused ("denied"): a .git that is a file
 * ("gitdir: ..." of a linked worktree or submodule) or a symbolic link, since it
 * would point git at another repository than the one granted; a repository or git
 * directory not owned by the user basal runs as (what git's own safe.directory check
 * guards, done here since the git directory is given explicitly); and a git
 * directory that, walked entry by entry (each directory opened with openat2,
 * RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS, its device compared; file types from
 * readdir), holds a symbolic link, a directory mount point (a bind mount of the same
 * file system included) or another file system, anything but directories and
 * regular files, "commondir", "objects/info/alternates",
 * "objects/info/http-alternates" or "info/grafts" (objects or refs from elsewhere),
 * a promisor pack or "objects/info/promisor", or a config (config, config.worktree)
 * naming "partialclone", "promisor" or "include" anywhere (a partial clone, or
 * config read from other files).
 *
 * The program. /usr/bin/git (or /usr/local/bin/git) runs in git_sandbox.h's
 * confinement (its own namespaces, no network, a read-only root holding only the git
 * directory and git's own files, Landlock: reads of those only, execution of git's
 * own binaries only, no writes; fail closed), with --git-dir set to that directory,
 * its working directory there, stdin /dev/null, in its own process group, every
 * other descriptor closed, killed if the parent dies (PR_SET_PDEATHSIG), and an
 * environment of only PATH=/usr/bin:/bin, LC_ALL=C, GIT_CONFIG_NOSYSTEM=1,
 * GIT_CONFIG_GLOBAL=/dev/null, GIT_CONFIG_SYSTEM=/dev/null, GIT_TERMINAL_PROMPT=0,
 * GIT_LITERAL_PATHSPECS=1, GIT_NO_REPLACE_OBJECTS=1, GIT_OPTIONAL_LOCKS=0,
 * GIT_ATTR_NOSYSTEM=1, GIT_ALLOW_PROTOCOL= (empty: no transport, whatever the
 * repository's protocol.*.allow say), GIT_PROTOCOL_FROM_USER=0, GIT_NO_LAZY_FETCH=1
 * and GIT_INDEX_FILE=/.basal-no-index (a path that does not exist in the sandbox; a
 * git directory under it is refused), no HOME; with no index no file of a working
 * tree is ever read in place of a blob. The
 * command line also turns off, above anything the repository's config says: hooks
 * (core.hooksPath=/dev/null), fsmonitor, the pager (--no-pager, core.pager=cat),
 * core.sshCommand, diff.external, credential helpers, every transport
 * (protocol.allow=never), signature verification (log.showSignature=false, gpg
 * programs "false"), mailmap, automatic gc and maintenance, submodule recursion and
 * summaries; diffs run with --no-ext-diff --no-textconv. Revisions are strings of
 * 1-256 bytes without control characters that do not start with '-', and come after
 * --end-of-options; paths come after "--" and are literal. Output over 1 MiB kills
 * git ("too_large"); so do 20 s, cut to the activation's deadline ("timeout"). git
 * failing otherwise is "git_error" with the end of its stderr; so is a sandbox that
 * cannot be set up ("cannot confine git: STEP: ERROR"), and git does not run.
 *
 * Test builds only (-DBASAL_TEST_HOOKS): BASAL_TEST_GIT_PROGRAM=PATH runs PATH
 * instead of git (in the sandbox, see git_sandbox.h), BASAL_TEST_GIT_TIMEOUT_MS=N
 * sets the 20 s to N, BASAL_TEST_GIT_NO_OVERRIDES=1 leaves out every override of the
 * repository's config (the -c list, --no-pager, --no-ext-diff, --no-textconv,
 * --no-show-signature) to show that the sandbox alone holds. */
#ifndef BASAL_HOST_GIT_BUILTIN_H
#define BASAL_HOST_GIT_BUILTIN_H

#include "host/host.h"

#include <stdbool.h>
#include <stddef.h>

#define HOST_CODE_GIT_ERROR "git_error"

#define GIT_OUTPUT_MAX (1u << 20)
#define GIT_TIMEOUT_MS 20000L
#define GIT_REV_MAX 256u
#define GIT_LOG_DEFAULT_COUNT 100
#define GIT_LOG_MAX_COUNT 1000
#define GIT_MAX_PATHS 64u

struct git_grants {
    const char *const *repos; /* real paths of the granted repositories */
    size_t count;
};

/* One call, parsed once (its kind, repository, revisions, paths, options): the grant
 * check and the run both use it. Its strings point into args, which must outlive it. */
struct git_request;

/* Parses kind ("git.log", ... "git.lsFiles") and its args (a jansson json_t * array)
 * without touching the file system. 0 with *req made, or -1 with the rejection's code
 * and a one-line reason. */
int git_builtin_parse(const char *kind, const void *args, struct git_request **req,
                      char *code, size_t code_cap, char *reason, size_t reason_cap);

/* The repository grant and its git directory's checks (above), without running git:
 * 0 (the request then holds the checked git directory open, and is marked granted),
 * or -1 with the refusal's code and reason. */
int git_builtin_grant(const struct git_grants *grants, struct git_request *req, char *code,
                      size_t code_cap, char *reason, size_t reason_cap);

void git_request_free(struct git_request *req);

/* Runs a granted request (one never granted is refused "denied") on the git directory
 * it checked, giving up at deadline_at_ms (CLOCK_MONOTONIC ms; 0: only the 20 s).
 * Once: the request is spent (free it after). Fills *out. Returns 0, or -1 if not even
 * a rejection could be made (out of memory). */
int git_builtin_run(struct git_request *req, long long deadline_at_ms,
                    struct host_settlement *out);

#endif
