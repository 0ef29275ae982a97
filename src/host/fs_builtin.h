/* fs.read, fs.list, fs.stat and fs.write for flows (basal.md section 7).
 *
 * The parent performs them for a script, inside the roots the approved manifest
 * grants. Paths must be absolute. Each root is resolved again (realpath) at every
 * call; a path is resolved with realpath and must lie under a resolved root (the root
 * itself or below it, compared component-wise, never by string prefix alone). `..`
 * and symbolic links are resolved before the check, so a link inside a root that
 * stays inside is followed, and one leading out of every root is refused. Files are
 * then opened one component at a time from "/" with openat2 (RESOLVE_BENEATH,
 * RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS, and RESOLVE_NO_XDEV below the root), and
 * the opened descriptor's own path (/proc/self/fd/N) is checked again, so a swap
 * between the check and the open is refused too. Mounts below a root are not
 * traversed (a bind mount of the data home or of /proc inside a root would lead there
 * under another path): such a path is "denied". No opened component may be the data
 * home, /proc or /sys by device and inode, whatever path leads there ("denied"); nor,
 * at or above the root, a mount root on the data home's device that is a directory
 * the data home holds (a root bind-mounted from inside it; found by walking the data
 * home, which fails closed). A
 * kernel without openat2 (ENOSYS) serves no fs call ("denied", saying why).
 *
 * Reads (read, list, stat) are allowed under read and write roots; fs.write only under
 * write roots. A path that is not under any granted root is "denied" whether or not
 * it exists (nothing leaks about paths outside the grants).
 *
 * Some roots are never granted, whatever the manifest says (fs_root_allowed): the data
 * home, a root inside it or one holding it (a flow could rewrite the store or the
 * module catalog and so run a program as the operator), "/" for writing, and roots on
 * /proc or /sys (fs runs in the parent: /proc/self would be the parent's environment
 * and memory maps). `flow install` and `flow approve` refuse such a manifest, and every
 * call checks again, on the roots and the data home as they resolve now: while any
 * granted root is refused (or the data home cannot be resolved) every fs call is
 * "denied", naming the root and the reason.
 *
 * Calls and results (args is the JSON array the script passed):
 *   fs.read(path[, {maxBytes}])  -> string (the file's bytes as UTF-8 text)
 *       maxBytes: 1..8 MiB, default 1 MiB; a larger file is too_large; bytes that are
 *       not valid UTF-8 are rejected "not_text".
 *   fs.list(path)                -> [{name, type}] sorted by name (bytewise);
 *       type is "file", "directory", "symlink" or "other"; at most 1000 entries, more
 *       is too_large. "." and ".." are not listed.
 *   fs.stat(path)                -> {type, size, mtimeMs} of the path itself after
 *       resolution (a link inside the root reports its target).
 *   fs.write(path, text)         -> {bytes} written. Atomic: a temporary file in the
 *       same directory (O_CREAT|O_EXCL|O_NOFOLLOW, 0644), write, fsync, rename over
 *       path, fsync of the directory. The directory must exist under a write root;
 *       an existing path that is a symbolic link or not a regular file is refused
 *       "denied"; text is at most 1 MiB. The temporary file is named
 *       ".basal-tmp-<tag>-<16 hex digits>", tag being the call's idempotency key
 *       (grants->temp_tag; ".basal-tmp-<16 hex digits>" without one), so what a
 *       crash between its creation and the rename leaves behind names its call, and
 *       its run: fs_builtin_remove_temporaries removes it.
 *
 * Rejections use host.h's codes: invalid_arguments (wrong types, relative path, NUL
 * in a path, path over PATH_MAX), denied (outside the grants, write under a read-only
 * root, link out of a root), not_found, too_large, not_text, io_error (anything else,
 * with strerror in the message). Messages name the path as the script gave it. */
#ifndef BASAL_HOST_FS_BUILTIN_H
#define BASAL_HOST_FS_BUILTIN_H

#include "host/host.h"

#include <stdbool.h>
#include <stddef.h>

#define HOST_CODE_NOT_TEXT "not_text"

#define FS_READ_DEFAULT_BYTES (1u << 20)
#define FS_READ_MAX_BYTES (8u << 20)
#define FS_WRITE_MAX_BYTES (1u << 20)
#define FS_LIST_MAX_ENTRIES 1000u

struct fs_grants {
    const char *const *read_roots; /* absolute directory paths from the manifest */
    size_t read_count;
    const char *const *write_roots;
    size_t write_count;
    const char *home; /* the data home; NULL (or one that does not resolve) denies every call */
    const char *temp_tag; /* 1-64 of [0-9a-f] naming fs.write's temporary files, or NULL */
};

/* Whether a root may be granted at all. root_real and home_real are resolved paths
 * (realpath). Refused: the data home itself, a root inside it or holding it; "/" as a
 * write root; a root under /proc or /sys, or on a proc or sysfs file system wherever
 * mounted. Returns true, or false with the reason into why (a phrase completing
 * "ROOT ...", e.g. "contains basal's data home"; it does not name the data home, so a
 * script refused at a call does not learn where it is). A root whose file-system type
 * cannot be read is refused. */
bool fs_root_allowed(const char *root_real, bool writable, const char *home_real, char *why,
                     size_t why_cap);

/* Performs kind ("fs.read", "fs.list", "fs.stat" or "fs.write"; their classes and
 * grant checks are their rows in flows/host_kinds.h; any other kind is refused
 * "denied") with args (a jansson json_t * array) under grants. Fills *out,
 * fulfilled or rejected. Returns 0, or -1 if not even a rejection could be made (out
 * of memory). */
int fs_builtin_call(const struct fs_grants *grants, const char *kind, const void *args,
                    struct host_settlement *out);

/* One call in three steps, as a run's host takes it (flows/host_kinds.h): the
 * arguments parsed, the path authorized against the grants where the other grants
 * are decided, then the operation on what was authorized. The grants and rules are
 * those above; fs_builtin_call is the three at once. */
struct fs_request;

/* The arguments alone (types, an absolute path, maxBytes, fs.write's file name and
 * text size), touching nothing. 0 with *req made, or -1 with the rejection's code and
 * its one-line message as reason (code_cap >= 32). Strings of args are used in place:
 * args must outlive *req. */
int fs_builtin_parse(const char *kind, const void *args, struct fs_request **req, char *code,
                     size_t code_cap, char *reason, size_t reason_cap);

/* The grant decision: every granted root allowed as it resolves now, and the path
 * (fs.write: its directory) under a root granting the call. 0, or -1 with the
 * refusal's code ("denied") and message. A path under a root that does not exist is
 * authorized: the operation answers not_found. */
int fs_builtin_authorize(const struct fs_grants *grants, struct fs_request *req, char *code,
                         size_t code_cap, char *reason, size_t reason_cap);

/* The operation on an authorized request (one never authorized is refused
 * "denied"): the path opened one component at a time with openat2 as above, which
 * refuses a path changed since the decision. temp_tag names fs.write's temporary
 * file (see fs_grants). check_only: fs.write makes every check and writes nothing
 * (*would_write true, *out untouched with value NULL, when it would go ahead). Fills
 * *out; 0, or -1 if not even a rejection could be made. */
int fs_builtin_perform(struct fs_request *req, const char *temp_tag, bool check_only,
                       struct host_settlement *out, bool *would_write);

void fs_request_free(struct fs_request *req);

/* Removes the temporary files tagged tag that an interrupted fs.write of path (the
 * script's argument) may have left in path's directory: only when that directory
 * still resolves under a write root of grants (checked as fs.write checks it), only
 * regular files whose names are exactly ".basal-tmp-<tag>-<16 hex digits>", never
 * through a symbolic link (one so named is left alone, its target untouched). The
 * directory is opened as fs calls open paths (openat2 from "/", grants->home needed:
 * without it, or without openat2, nothing is removed).
 * Returns the number removed (0 when the directory is not under a write root), or -1
 * with errno set (EINVAL: tag or path malformed). */
int fs_builtin_remove_temporaries(const struct fs_grants *grants, const char *path,
                                  const char *tag);

/* Every check fs.write makes (arguments, the grants, the directory's placement and
 * real path, the existing target) without writing anything, for a dry run. Returns 0
 * with *would_write true and *out untouched (value NULL) when the write would go
 * ahead, 0 with *out the rejection the write would get, or -1 on no memory. */
int fs_builtin_check_write(const struct fs_grants *grants, const void *args,
                           struct host_settlement *out, bool *would_write);

#endif
