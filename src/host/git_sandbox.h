/* The confinement git runs in (git_builtin.c; docs/flows.md, "git"). A granted
 * repository is hostile, and git has more knobs that run programs, open connections
 * or write than any list of overrides can name, so git itself runs where none of
 * that can happen:
 *
 *   - its own user, mount, network, IPC and UTS namespaces (unshare): the network
 *     namespace is empty (no interface but a down loopback), the user namespace maps
 *     only basal's own uid and gid, and git keeps no capability (SECBIT_NOROOT,
 *     locked, and no_new_privs);
 *   - a root of its own: an empty read-only tmpfs holding only, bound read-only and
 *     without the mounts below them, the git directory (at its own path), the git
 *     program, its exec-path (git-core), its share directory, the library
 *     directories, /etc/ld.so.cache and /dev/null;
 *   - Landlock over every filesystem right the kernel has (and TCP, signals and
 *     abstract sockets where it has them): reading only the git directory, the
 *     libraries and git's own files, executing only the git program and its
 *     exec-path, writing only /dev/null.
 *
 * Fail closed: where any part cannot be set up (no user namespaces, no Landlock, a
 * mount refused) git does not run, and the call is refused with the step that failed.
 *
 * Test builds only (-DBASAL_TEST_HOOKS): a program given by BASAL_TEST_GIT_PROGRAM
 * runs in the same sandbox, with its own directory bound read-write and executable
 * and /usr/bin executable (a shell-script stand-in needs them);
 * BASAL_TEST_GIT_LANDLOCK_ABI=0 makes the kernel's Landlock ABI read as 0. */
#ifndef BASAL_HOST_GIT_SANDBOX_H
#define BASAL_HOST_GIT_SANDBOX_H

#include <stddef.h>

/* The index git is pointed at (as its environment's entry): a path that does not
 * exist in the sandbox's root, so git sees no index at all (an empty file would be an
 * invalid one). A git directory under that name is refused. */
#define GIT_SANDBOX_INDEX_FILE "/.basal-no-index"
#define GIT_SANDBOX_INDEX_ENV "GIT_INDEX_FILE=/.basal-no-index"

struct git_sandbox;

/* In the parent: opens what the sandbox binds (gitdir_fd: an O_PATH descriptor of
 * the checked git directory, whose path is gitdir; program: the git program, an
 * absolute path) and builds the Landlock ruleset. Returns the plan, or NULL with a
 * one-line reason in why. */
struct git_sandbox *git_sandbox_prepare(const char *program, int gitdir_fd, const char *gitdir,
                                        char *why, size_t why_cap);

/* In the child between fork and exec (async-signal-safe calls only): enters the
 * sandbox with the working directory the git directory. 0, or -1 with a short
 * reason (a static string and the errno) for the caller to report. */
int git_sandbox_enter(const struct git_sandbox *sb, const char **step, int *err);

/* In the parent, after the fork: closes the plan's descriptors and frees it. */
void git_sandbox_release(struct git_sandbox *sb);

#endif
