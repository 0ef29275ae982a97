/* The fs.* host calls (src/host/fs_builtin.c), in process, on a real directory tree
 * in a temporary directory. Happy paths are checked for their exact results; every
 * guard is checked for its rejection code, for a one-line message naming the path as
 * given, and (where it makes sense) against a control that the same operation
 * succeeds when it is granted. */
#include "flows/host_kinds.h"
#include "host/fs_builtin.h"
#include "lib/harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[PATH_MAX / 2]; /* the temporary directory, resolved */
static char r_dir[PATH_MAX]; /* granted for reading */
static char w_dir[PATH_MAX]; /* granted for writing */
static char home_dir[PATH_MAX]; /* the data home: a directory of its own, outside base */

/* snprintf into a fresh slot of a ring of buffers (test paths, several per call). */
__attribute__((format(printf, 1, 2))) static const char *fmt(const char *f, ...)
{
    static char ring[16][PATH_MAX + 64];
    static unsigned next;
    char *buf = ring[next++ % 16];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof ring[0], f, ap);
    va_end(ap);
    return buf;
}

/* The usual grants: r read-only, w writable. */
static struct fs_grants grants_rw(void)
{
    static const char *reads[1];
    static const char *writes[1];
    reads[0] = r_dir;
    writes[0] = w_dir;
    struct fs_grants g = {reads, 1, writes, 1, home_dir, NULL};
    return g;
}

/* ---- calling and expecting ---------------------------------------------------- */

/* Calls kind with args (stolen) and returns the parsed settlement value, with
 * *rejected set; NULL (and a failed check) if the call itself failed. */
static json_t *call(const struct fs_grants *g, const char *kind, json_t *args, bool *rejected,
                    const char *name)
{
    struct host_settlement s = {PROTO_SETTLEMENT_FULFILLED, NULL};
    int rc = fs_builtin_call(g, kind, args, &s);
    json_decref(args);
    if (!check(rc == 0 && s.value != NULL, name, "fs_builtin_call returned %d", rc))
        return NULL;
    *rejected = s.settlement == PROTO_SETTLEMENT_REJECTED;
    json_error_t err;
    json_t *v = json_loads(s.value, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    if (v == NULL)
        fail(name, "settlement is not JSON: %s", s.value);
    host_settlement_free(&s);
    return v;
}

/* Expects a fulfilment; returns its value (caller decrefs) or NULL after a failure. */
static json_t *expect_ok(const struct fs_grants *g, const char *kind, json_t *args,
                         const char *name)
{
    bool rejected = false;
    json_t *v = call(g, kind, args, &rejected, name);
    if (v != NULL && rejected) {
        fail(name, "rejected: %s", json_string_value(json_object_get(v, "message")));
        json_decref(v);
        return NULL;
    }
    return v;
}

/* Expects a rejection with code whose message is one line and quotes the path as
 * given (shown_path; NULL where the path itself is the malformed argument). */
static bool expect_code(const struct fs_grants *g, const char *kind, json_t *args,
                        const char *code, const char *shown_path, const char *name)
{
    bool rejected = false;
    json_t *v = call(g, kind, args, &rejected, name);
    if (v == NULL)
        return false;
    const char *got = json_string_value(json_object_get(v, "code"));
    const char *msg = json_string_value(json_object_get(v, "message"));
    bool ok = check(rejected && got != NULL && msg != NULL && strcmp(got, code) == 0 &&
                        strchr(msg, '\n') == NULL &&
                        (shown_path == NULL || strstr(msg, shown_path) != NULL),
                    name, "%s %s: %s (want %s%s%s)", rejected ? "rejected" : "fulfilled",
                    got != NULL ? got : "-", msg != NULL ? msg : "-", code,
                    shown_path != NULL ? " naming " : "", shown_path != NULL ? shown_path : "");
    json_decref(v);
    return ok;
}

static json_t *args1(const char *path)
{
    return json_pack("[s]", path);
}

static json_t *args_read_max(const char *path, json_int_t max)
{
    return json_pack("[s, {s:I}]", path, "maxBytes", max);
}

static json_t *args_write(const char *path, const char *text)
{
    return json_pack("[s, s]", path, text);
}

/* A call on one path (dir and tail joined) that is refused with code, its message
 * naming that path: a row of a table of guards. */
struct path_refusal {
    const char *kind;
    const char *dir;
    const char *tail;
    const char *code;
    const char *name;
};

static void expect_path_refusals(const struct fs_grants *g, const struct path_refusal *rows,
                                 size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const char *path = fmt("%s%s", rows[i].dir, rows[i].tail);
        expect_code(g, rows[i].kind, args1(path), rows[i].code, path, rows[i].name);
    }
}

/* A call whose arguments are malformed (stolen, like expect_code's): invalid_arguments. */
struct invalid_call {
    const char *kind;
    json_t *args;
    const char *name;
};

static void expect_invalid_calls(const struct fs_grants *g, const struct invalid_call *rows,
                                 size_t count)
{
    for (size_t i = 0; i < count; i++)
        expect_code(g, rows[i].kind, rows[i].args, HOST_CODE_INVALID_ARGUMENTS, NULL,
                    rows[i].name);
}

static void expect_read_text(const struct fs_grants *g, json_t *args, const char *want,
                             const char *name)
{
    json_t *v = expect_ok(g, "fs.read", args, name);
    if (v != NULL)
        check(json_is_string(v) && strcmp(json_string_value(v), want) == 0, name,
              "got %s, want \"%s\"", json_is_string(v) ? json_string_value(v) : "non-string",
              want);
    json_decref(v);
}

/* ---- the tree ------------------------------------------------------------------- */

static bool write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return false;
    bool ok = write(fd, data, len) == (ssize_t)len;
    return close(fd) == 0 && ok;
}

static bool put(const char *path, const char *text)
{
    return write_file(path, text, strlen(text));
}

/* symlink() for a test step; a failure shows as a failed check. */
static void link_at(const char *target, const char *path)
{
    if (symlink(target, path) != 0)
        fail("setup: symlink", "%s: %s", path, strerror(errno));
}

static char *slurp(const char *path)
{
    return read_text_file(path);
}

/* Layout under base:
 *   r/hello.txt "hello", r/sub/inner.txt, r/link_in -> hello.txt, r/link_out ->
 *   ../outside/secret.txt, r/dangling_out -> ../outside/nope, r/dangling_in ->
 *   missing.txt, r/bad.txt (invalid UTF-8), r/utf8.txt, r/fifo
 *   r2/file.txt (a sibling whose name has r as a prefix; never granted)
 *   w/ (writable), outside/secret.txt */
static bool make_tree(void)
{
    static const unsigned char bad[] = {'a', 0xc3, 0x28, 'b'};
    bool ok = mkdir(r_dir, 0755) == 0 && mkdir(w_dir, 0755) == 0 &&
              mkdir(fmt("%s/r2", base), 0755) == 0 && mkdir(fmt("%s/outside", base), 0755) == 0 &&
              mkdir(fmt("%s/sub", r_dir), 0755) == 0 && put(fmt("%s/hello.txt", r_dir), "hello") &&
              put(fmt("%s/sub/inner.txt", r_dir), "inner") &&
              put(fmt("%s/r2/file.txt", base), "sibling") &&
              put(fmt("%s/outside/secret.txt", base), "secret") &&
              symlink("hello.txt", fmt("%s/link_in", r_dir)) == 0 &&
              symlink("../outside/secret.txt", fmt("%s/link_out", r_dir)) == 0 &&
              symlink("../outside/nope", fmt("%s/dangling_out", r_dir)) == 0 &&
              symlink("missing.txt", fmt("%s/dangling_in", r_dir)) == 0 &&
              write_file(fmt("%s/bad.txt", r_dir), bad, sizeof bad) &&
              put(fmt("%s/utf8.txt", r_dir), "caf\xc3\xa9 \xe2\x82\xac") &&
              mkfifo(fmt("%s/fifo", r_dir), 0644) == 0;
    return check(ok, "setup: directory tree", "%s", strerror(errno));
}

static void remove_tree(void)
{
    if (base[0] != '\0')
        harness_remove_tree(base);
}

/* ---- the tests --------------------------------------------------------------------- */

/* The fs kinds are their rows of the kind table (flows/host_kinds.h); the builtin
 * itself refuses any other kind. */
static void test_kinds(const struct fs_grants *g)
{
    static const char *const FS[] = {"fs.read", "fs.list", "fs.stat", "fs.write"};
    size_t count = 0, fs_rows = 0, writes = 0;
    const struct host_kind *rows = host_kinds_all(&count);
    for (size_t i = 0; i < count; i++) {
        if (strncmp(rows[i].name, "fs.", 3) != 0)
            continue;
        fs_rows++;
        writes += rows[i].cls != JOURNAL_QUERY;
    }
    bool all = true;
    for (size_t i = 0; i < sizeof FS / sizeof FS[0]; i++)
        all = all && host_kind_find(FS[i]) != NULL;
    check(all && fs_rows == 4, "kinds: the table has exactly fs.read/list/stat/write",
          "%zu fs rows", fs_rows);
    expect_code(g, "fs.delete", args1("/x"), HOST_CODE_DENIED, NULL,
                "kinds: the builtin refuses fs.delete, not one of its kinds");
    expect_code(g, "kv.get", args1("/x"), HOST_CODE_DENIED, NULL,
                "kinds: the builtin refuses kv.get, not one of its kinds");
    const struct host_kind *w = host_kind_find("fs.write");
    check(writes == 1 && w != NULL && w->cls == JOURNAL_KEYED_MUTATION,
          "kinds: only fs.write is a write", "%zu fs rows are not queries", writes);
}

static void test_read(const struct fs_grants *g)
{
    expect_read_text(g, args1(fmt("%s/hello.txt", r_dir)), "hello", "read: file under a read root");
    expect_read_text(g, args1(fmt("%s/sub/inner.txt", r_dir)), "inner",
                     "read: file in a subdirectory");
    expect_read_text(g, args1(fmt("%s/utf8.txt", r_dir)), "caf\xc3\xa9 \xe2\x82\xac",
                     "read: multi-byte UTF-8 text returned intact");
    /* Guard: a link inside the root that stays inside is followed. */
    expect_read_text(g, args1(fmt("%s/link_in", r_dir)), "hello",
                     "read: link staying inside the root is followed [guard link-in-root-allowed]");
    expect_read_text(g, args1(fmt("%s/sub/../hello.txt", r_dir)), "hello",
                     "read: '..' staying inside the root is allowed (control for the escape)");
    put(fmt("%s/empty.txt", w_dir), "");
    expect_read_text(g, args1(fmt("%s/empty.txt", w_dir)), "",
                     "read: an empty file under a write root (write roots are readable)");
}

/* Guard: paths must be absolute, NUL-free, under PATH_MAX; arguments well typed. */
static void test_argument_guards(const struct fs_grants *g)
{
    const char *iv = HOST_CODE_INVALID_ARGUMENTS;
    expect_code(g, "fs.read", args1("hello.txt"), iv, NULL,
                "args: relative path refused [guard absolute-path]");
    expect_code(g, "fs.read", args1(""), iv, NULL,
                "args: empty path refused [guard absolute-path]");
    char nul_path[PATH_MAX];
    int nul_len = snprintf(nul_path, sizeof nul_path, "%s/hello.txt", r_dir);
    nul_path[strlen(r_dir)] = '\0'; /* "<r>\0hello.txt": the prefix alone is the root */
    expect_code(g, "fs.read", json_pack("[s%]", nul_path, (size_t)nul_len), iv, NULL,
                "args: path with a NUL refused [guard path-nul]");
    char *longp = malloc(PATH_MAX + 16);
    if (longp != NULL) {
        snprintf(longp, PATH_MAX + 16, "%s/", r_dir);
        size_t len = strlen(longp);
        memset(longp + len, 'a', PATH_MAX + 8 - len);
        longp[PATH_MAX + 8] = '\0';
        expect_code(g, "fs.stat", args1(longp), iv, NULL,
                    "args: path over PATH_MAX refused [guard path-max]");
        free(longp);
    }
    const struct invalid_call MALFORMED[] = {
        {"fs.read", json_pack("{s:s}", "path", "/x"), "args: arguments not an array refused"},
        {"fs.read", json_pack("[i]", 42), "args: path a number refused"},
        {"fs.read", json_array(), "args: fs.read without a path refused"},
        {"fs.stat", json_pack("[s, s]", r_dir, "x"), "args: fs.stat with two arguments refused"},
        {"fs.list", json_pack("[n]"), "args: fs.list path null refused"},
        {"fs.write", json_pack("[s, i]", fmt("%s/n.txt", w_dir), 5),
         "args: fs.write text a number refused"},
        {"fs.write", args1(fmt("%s/n.txt", w_dir)), "args: fs.write without text refused"},
        {"fs.read", json_pack("[s, s, s]", r_dir, "a", "b"),
         "args: fs.read with three arguments refused"},
    };
    expect_invalid_calls(g, MALFORMED, sizeof MALFORMED / sizeof MALFORMED[0]);
    check(access(fmt("%s/n.txt", w_dir), F_OK) != 0, "args: refused writes created nothing",
          "n.txt exists");
    expect_code(g, "fs.chmod", args1(r_dir), HOST_CODE_DENIED, NULL,
                "args: a kind that is not an fs call is denied");
}

static void test_escape_guards(const struct fs_grants *g)
{
    /* Guard: '..' resolved before the check, so it cannot climb out of a root. Guard: a
     * link inside the root leading out is refused... */
    static const struct path_refusal DOTDOT_AND_LINK_OUT[] = {
        {"fs.read", r_dir, "/../outside/secret.txt", HOST_CODE_DENIED,
         "escape: '..' out of the root denied [guard dotdot-resolved]"},
        {"fs.read", r_dir, "/link_out", HOST_CODE_DENIED,
         "escape: link inside root leading out denied [guard link-out-denied]"},
        {"fs.stat", r_dir, "/link_out", HOST_CODE_DENIED,
         "escape: fs.stat through a link leading out denied [guard link-out-denied]"},
    };
    expect_path_refusals(g, DOTDOT_AND_LINK_OUT,
                         sizeof DOTDOT_AND_LINK_OUT / sizeof DOTDOT_AND_LINK_OUT[0]);
    /* ...while the same target is readable when its directory is granted (control). */
    const char *both[2] = {r_dir, fmt("%s/outside", base)};
    struct fs_grants wide = {both, 2, NULL, 0, home_dir, NULL};
    expect_read_text(&wide, args1(fmt("%s/link_out", r_dir)), "secret",
                     "escape: the same link is followed once its target is granted (control)");
    static const struct path_refusal OUTSIDE_THE_ROOTS[] = {
        /* Guard: outside paths are denied whether or not they exist (no existence leak). */
        {"fs.read", base, "/outside/nope.txt", HOST_CODE_DENIED,
         "escape: missing path outside the roots is denied, not not_found "
         "[guard no-existence-leak]"},
        {"fs.stat", base, "/outside/nodir/deeper/x", HOST_CODE_DENIED,
         "escape: missing deep path outside the roots denied [guard no-existence-leak]"},
        {"fs.list", "", "/nonexistent-basal-dir/x", HOST_CODE_DENIED,
         "escape: missing top-level path denied [guard no-existence-leak]"},
        {"fs.read", base, "/outside/secret.txt", HOST_CODE_DENIED,
         "escape: existing path outside the roots denied [guard outside-roots]"},
        {"fs.read", r_dir, "/nope.txt", HOST_CODE_NOT_FOUND,
         "escape: missing path inside a root is not_found (control)"},
        /* Guard: a dangling link is followed by hand; leading out it is denied. */
        {"fs.stat", r_dir, "/dangling_out", HOST_CODE_DENIED,
         "escape: dangling link leading out denied [guard no-existence-leak]"},
        {"fs.stat", r_dir, "/dangling_in", HOST_CODE_NOT_FOUND,
         "escape: dangling link staying inside is not_found (control)"},
        /* Guard: containment is component-wise; r does not hold its sibling r2. */
        {"fs.read", base, "/r2/file.txt", HOST_CODE_DENIED,
         "escape: sibling r2 of root r denied [guard component-wise-prefix]"},
        {"fs.list", r_dir, "2", HOST_CODE_DENIED,
         "escape: listing sibling r2 of root r denied [guard component-wise-prefix]"},
    };
    expect_path_refusals(g, OUTSIDE_THE_ROOTS,
                         sizeof OUTSIDE_THE_ROOTS / sizeof OUTSIDE_THE_ROOTS[0]);
    /* Guard: a root that does not exist (or is relative) grants nothing. */
    const char *missing_root[2] = {fmt("%s/gone", base), "relative"};
    struct fs_grants none = {missing_root, 2, NULL, 0, home_dir, NULL};
    const char *p = fmt("%s/gone/x", base);
    expect_code(&none, "fs.read", args1(p), HOST_CODE_DENIED, p,
                "escape: missing root grants nothing [guard root-resolved-each-call]");
    /* Roots are resolved by realpath: a root given through a link works (control). */
    link_at(r_dir, fmt("%s/rootlink", base));
    const char *via_link[1] = {fmt("%s/rootlink", base)};
    struct fs_grants linked = {via_link, 1, NULL, 0, home_dir, NULL};
    expect_read_text(&linked, args1(fmt("%s/hello.txt", r_dir)), "hello",
                     "escape: a root given through a link is resolved (control)");
}

static void test_read_limits(const struct fs_grants *g)
{
    const char *p = fmt("%s/big.txt", r_dir);
    char *big = malloc(FS_READ_DEFAULT_BYTES + 2);
    if (big == NULL) {
        fail("read limits: setup", "out of memory");
        return;
    }
    memset(big, 'x', FS_READ_DEFAULT_BYTES + 1);
    big[FS_READ_DEFAULT_BYTES + 1] = '\0';
    bool made = write_file(p, big, FS_READ_DEFAULT_BYTES + 1);
    free(big);
    check(made, "read limits: setup big file", "%s", strerror(errno));
    /* Guard: the default limit is 1 MiB; one byte more is too_large. */
    expect_code(g, "fs.read", args1(p), HOST_CODE_TOO_LARGE, p,
                "read limits: 1 MiB + 1 over the default refused [guard read-max-bytes]");
    json_t *v = expect_ok(g, "fs.read", args_read_max(p, FS_READ_MAX_BYTES),
                          "read limits: the same file with maxBytes 8 MiB (control)");
    if (v != NULL)
        check_int_eq((long long)json_string_length(v), FS_READ_DEFAULT_BYTES + 1,
                     "read limits: all bytes returned with maxBytes 8 MiB");
    json_decref(v);
    const char *hello = fmt("%s/hello.txt", r_dir);
    expect_read_text(g, args_read_max(hello, 5), "hello", "read limits: maxBytes equal to size ok");
    expect_code(g, "fs.read", args_read_max(hello, 4), HOST_CODE_TOO_LARGE, hello,
                "read limits: maxBytes one under size refused [guard read-max-bytes]");
    /* Guard: maxBytes must be an integer from 1 to 8 MiB and the only option. */
    const struct invalid_call BAD_OPTIONS[] = {
        {"fs.read", args_read_max(hello, 0),
         "read limits: maxBytes 0 refused [guard maxbytes-bounds]"},
        {"fs.read", args_read_max(hello, (json_int_t)FS_READ_MAX_BYTES + 1),
         "read limits: maxBytes 8 MiB + 1 refused [guard maxbytes-bounds]"},
        {"fs.read", args_read_max(hello, -1),
         "read limits: maxBytes -1 refused [guard maxbytes-bounds]"},
        {"fs.read", json_pack("[s, {s:f}]", hello, "maxBytes", 10.5),
         "read limits: fractional maxBytes refused [guard maxbytes-bounds]"},
        {"fs.read", json_pack("[s, {s:s}]", hello, "maxBytes", "10"),
         "read limits: string maxBytes refused [guard maxbytes-bounds]"},
        {"fs.read", json_pack("[s, {s:i}]", hello, "max", 10),
         "read limits: unknown option refused [guard options-closed]"},
        {"fs.read", json_pack("[s, {s:i, s:i}]", hello, "maxBytes", 10, "x", 1),
         "read limits: unknown option beside maxBytes refused [guard options-closed]"},
        {"fs.read", json_pack("[s, i]", hello, 10), "read limits: options not an object refused"},
    };
    expect_invalid_calls(g, BAD_OPTIONS, sizeof BAD_OPTIONS / sizeof BAD_OPTIONS[0]);
    expect_read_text(g, json_pack("[s, {}]", hello), "hello", "read limits: empty options ok");
    expect_read_text(g, json_pack("[s, n]", hello), "hello", "read limits: null options ok");
}

static void test_read_kinds(const struct fs_grants *g)
{
    const char *p = fmt("%s/bad.txt", r_dir);
    /* Guard: the text must be valid UTF-8. */
    expect_code(g, "fs.read", args1(p), HOST_CODE_NOT_TEXT, p,
                "read: invalid UTF-8 refused not_text [guard utf8-text]");
    p = fmt("%s/sub", r_dir);
    expect_code(g, "fs.read", args1(p), HOST_CODE_INVALID_ARGUMENTS, "is a directory",
                "read: a directory refused invalid_arguments [guard regular-file]");
    /* Guard: a FIFO is refused without being opened for reading (no hang). */
    p = fmt("%s/fifo", r_dir);
    expect_code(g, "fs.read", args1(p), HOST_CODE_INVALID_ARGUMENTS, p,
                "read: a FIFO refused without blocking [guard regular-file]");
    p = fmt("%s/hello.txt/x", r_dir);
    expect_code(g, "fs.read", args1(p), HOST_CODE_NOT_FOUND, p,
                "read: a path through a file is not_found");
}

static void test_stat(const struct fs_grants *g)
{
    struct stat st;
    const char *p = fmt("%s/hello.txt", r_dir);
    json_t *v = expect_ok(g, "fs.stat", args1(p), "stat: file");
    if (v != NULL && stat(p, &st) == 0) {
        long long mtime = (long long)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
        json_t *want = json_pack("{s:s, s:i, s:I}", "type", "file", "size", 5, "mtimeMs",
                                 (json_int_t)mtime);
        char *got_text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
        check(json_equal(v, want), "stat: file type, size and mtimeMs", "got %s", got_text);
        free(got_text);
        json_decref(want);
    }
    json_decref(v);
    v = expect_ok(g, "fs.stat", args1(r_dir), "stat: the root itself");
    if (v != NULL)
        check_str_eq(json_string_value(json_object_get(v, "type")), "directory",
                     "stat: the root is a directory");
    json_decref(v);
    v = expect_ok(g, "fs.stat", args1(fmt("%s/link_in", r_dir)), "stat: link inside the root");
    if (v != NULL)
        check(strcmp(json_string_value(json_object_get(v, "type")), "file") == 0 &&
                  json_integer_value(json_object_get(v, "size")) == 5,
              "stat: a link inside the root reports its target", "type %s",
              json_string_value(json_object_get(v, "type")));
    json_decref(v);
    v = expect_ok(g, "fs.stat", args1(fmt("%s/fifo", r_dir)), "stat: fifo");
    if (v != NULL)
        check_str_eq(json_string_value(json_object_get(v, "type")), "other",
                     "stat: a FIFO is type other");
    json_decref(v);
}

static bool listing_is(const json_t *v, const char *const *names, const char *const *types,
                       size_t n, const char *name)
{
    bool ok = json_is_array(v) && json_array_size(v) == n;
    for (size_t i = 0; ok && i < n; i++) {
        const json_t *item = json_array_get(v, i);
        const char *got_name = json_string_value(json_object_get(item, "name"));
        const char *got_type = json_string_value(json_object_get(item, "type"));
        ok = json_object_size(item) == 2 && got_name != NULL && got_type != NULL &&
             strcmp(got_name, names[i]) == 0 && strcmp(got_type, types[i]) == 0;
    }
    char *text = json_dumps(v, JSON_COMPACT);
    bool result = check(ok, name, "got %.300s", text != NULL ? text : "?");
    free(text);
    return result;
}

static void test_list(const struct fs_grants *g)
{
    const char *d = fmt("%s/mix", w_dir);
    bool made = mkdir(d, 0755) == 0 && put(fmt("%s/b", d), "") && put(fmt("%s/B", d), "") &&
                put(fmt("%s/a.txt", d), "") && mkdir(fmt("%s/Zdir", d), 0755) == 0 &&
                symlink("b", fmt("%s/ln", d)) == 0 && mkfifo(fmt("%s/pipe", d), 0644) == 0 &&
                put(fmt("%s/\xc3\xa9t\xc3\xa9", d), "");
    check(made, "list: setup", "%s", strerror(errno));
    static const char *const names[] = {"B",  "Zdir", "a.txt", "b",
                                        "ln", "pipe", "\xc3\xa9t\xc3\xa9"};
    static const char *const types[] = {"file", "directory", "file", "file",
                                        "symlink", "other", "file"};
    json_t *v = expect_ok(g, "fs.list", args1(d), "list: mixed directory");
    if (v != NULL)
        listing_is(v, names, types, 7,
                   "list: sorted bytewise, typed, without '.' and '..'");
    json_decref(v);
    v = expect_ok(g, "fs.list", args1(fmt("%s/sub", r_dir)), "list: under a read root");
    static const char *const one[] = {"inner.txt"};
    static const char *const file[] = {"file"};
    if (v != NULL)
        listing_is(v, one, file, 1, "list: a subdirectory of a read root");
    json_decref(v);
    const char *p = fmt("%s/hello.txt", r_dir);
    expect_code(g, "fs.list", args1(p), HOST_CODE_INVALID_ARGUMENTS, p,
                "list: a file refused invalid_arguments");
    p = fmt("%s/nodir", r_dir);
    expect_code(g, "fs.list", args1(p), HOST_CODE_NOT_FOUND, p,
                "list: a missing directory is not_found");
}

/* Makes n empty files in dir. */
static bool fill_dir(const char *dir, unsigned n)
{
    if (mkdir(dir, 0755) != 0)
        return false;
    for (unsigned i = 0; i < n; i++)
        if (!put(fmt("%s/f%04u", dir, i), ""))
            return false;
    return true;
}

static void test_list_limit(const struct fs_grants *g)
{
    char full[PATH_MAX];
    char over[PATH_MAX];
    snprintf(full, sizeof full, "%.4000s/full", w_dir);
    snprintf(over, sizeof over, "%.4000s/over", w_dir);
    check(fill_dir(full, FS_LIST_MAX_ENTRIES) && fill_dir(over, FS_LIST_MAX_ENTRIES + 1),
          "list limit: setup", "%s", strerror(errno));
    json_t *v = expect_ok(g, "fs.list", args1(full), "list limit: exactly 1000 entries (control)");
    if (v != NULL)
        check_int_eq((long long)json_array_size(v), FS_LIST_MAX_ENTRIES,
                     "list limit: 1000 entries listed");
    json_decref(v);
    /* Guard: more than 1000 entries is too_large. */
    expect_code(g, "fs.list", args1(over), HOST_CODE_TOO_LARGE, over,
                "list limit: 1001 entries refused [guard list-max-entries]");
}

/* True if dir holds no ".basal-tmp-" file. */
static bool no_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return false;
    bool clean = true;
    const struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, ".basal-tmp-", 11) == 0)
            clean = false;
    closedir(d);
    return clean;
}

static void expect_file(const char *path, const char *want, const char *name)
{
    char *got = slurp(path);
    check(got != NULL && strcmp(got, want) == 0, name, "content \"%.60s\", want \"%.60s\"",
          got != NULL ? got : "(unreadable)", want);
    free(got);
}

static void test_write(const struct fs_grants *g)
{
    const char *p = fmt("%s/new.txt", w_dir);
    json_t *v = expect_ok(g, "fs.write", args_write(p, "abc"), "write: new file");
    if (v != NULL)
        check_int_eq(json_integer_value(json_object_get(v, "bytes")), 3, "write: bytes is 3");
    json_decref(v);
    expect_file(p, "abc", "write: content on disk");
    expect_read_text(g, args1(p), "abc", "write: read back through fs.read");
    struct stat before;
    stat(p, &before);
    v = expect_ok(g, "fs.write", args_write(p, "replaced \xc3\xa9"), "write: replace");
    if (v != NULL)
        check_int_eq(json_integer_value(json_object_get(v, "bytes")), 11,
                     "write: bytes counts UTF-8 bytes");
    json_decref(v);
    expect_file(p, "replaced \xc3\xa9", "write: content replaced");
    struct stat after;
    check(stat(p, &after) == 0 && after.st_ino != before.st_ino && (after.st_mode & 0777) == 0644,
          "write: replaced by rename (new inode, mode 0644)", "inode %lu -> %lu, mode %o",
          (unsigned long)before.st_ino, (unsigned long)after.st_ino, after.st_mode & 0777);
    check(no_temp_files(w_dir), "write: no temporary file left behind", "found .basal-tmp-*");
}

static void test_write_guards(const struct fs_grants *g)
{
    /* Guard: fs.write needs a write root; a read-only root is denied, saying so. */
    const char *p = fmt("%s/new.txt", r_dir);
    expect_code(g, "fs.write", args_write(p, "x"), HOST_CODE_DENIED, "read-only",
                "write guard: under a read-only root denied [guard write-root-only]");
    check(access(p, F_OK) != 0, "write guard: nothing created under the read-only root",
          "file exists");
    p = fmt("%s/hello.txt", r_dir);
    expect_code(g, "fs.write", args_write(p, "x"), HOST_CODE_DENIED, p,
                "write guard: overwriting under a read-only root denied [guard write-root-only]");
    expect_file(p, "hello", "write guard: read-only file unchanged");
    const char *writes_r[1] = {r_dir};
    struct fs_grants w_on_r = {NULL, 0, writes_r, 1, home_dir, NULL};
    p = fmt("%s/granted.txt", r_dir);
    json_decref(expect_ok(&w_on_r, "fs.write", args_write(p, "ok"),
                          "write guard: the same directory granted for writing accepts (control)"));
    unlink(p);
    /* Guard: outside every root, even when the parent does not exist. */
    p = fmt("%s/outside/new.txt", base);
    expect_code(g, "fs.write", args_write(p, "x"), HOST_CODE_DENIED, p,
                "write guard: outside the roots denied [guard outside-roots]");
    check(access(p, F_OK) != 0, "write guard: nothing created outside", "file exists");
    p = fmt("%s/outside/nodir/new.txt", base);
    expect_code(g, "fs.write", args_write(p, "x"), HOST_CODE_DENIED, p,
                "write guard: missing parent outside the roots denied [guard no-existence-leak]");
    p = fmt("%s/../outside/new.txt", w_dir);
    expect_code(g, "fs.write", args_write(p, "x"), HOST_CODE_DENIED, p,
                "write guard: '..' out of the write root denied [guard dotdot-resolved]");
    p = fmt("%s/nodir/new.txt", w_dir);
    expect_code(g, "fs.write", args_write(p, "x"), HOST_CODE_NOT_FOUND, p,
                "write guard: missing parent inside the write root is not_found");
    /* Guard: an existing link or non-regular target is refused; the target survives. */
    put(fmt("%s/target.txt", w_dir), "target");
    link_at("target.txt", fmt("%s/link.txt", w_dir));
    p = fmt("%s/link.txt", w_dir);
    expect_code(g, "fs.write", args_write(p, "x"), HOST_CODE_DENIED, p,
                "write guard: onto a symbolic link denied [guard write-no-symlink]");
    expect_file(fmt("%s/target.txt", w_dir), "target", "write guard: link target unchanged");
    struct stat st;
    check(lstat(p, &st) == 0 && S_ISLNK(st.st_mode), "write guard: the link is still a link",
          "not a link");
    link_at(fmt("%s/outside/planted", base), fmt("%s/dangling.txt", w_dir));
    p = fmt("%s/dangling.txt", w_dir);
    expect_code(g, "fs.write", args_write(p, "x"), HOST_CODE_DENIED, p,
                "write guard: onto a dangling link denied [guard write-no-symlink]");
    check(access(fmt("%s/outside/planted", base), F_OK) != 0,
          "write guard: nothing created through the dangling link", "planted exists");
    mkdir(fmt("%s/adir", w_dir), 0755);
    p = fmt("%s/adir", w_dir);
    expect_code(g, "fs.write", args_write(p, "x"), HOST_CODE_DENIED, p,
                "write guard: onto a directory denied [guard write-regular-only]");
    /* Guard: a write through a parent link out of the root is denied. */
    link_at(fmt("%s/outside", base), fmt("%s/outlink", w_dir));
    p = fmt("%s/outlink/new.txt", w_dir);
    expect_code(g, "fs.write", args_write(p, "x"), HOST_CODE_DENIED, p,
                "write guard: parent a link leading out denied [guard link-out-denied]");
    check(access(fmt("%s/outside/new.txt", base), F_OK) != 0,
          "write guard: nothing created through the parent link", "file exists");
    link_at("adir", fmt("%s/inlink", w_dir));
    json_decref(expect_ok(g, "fs.write", args_write(fmt("%s/inlink/in.txt", w_dir), "in"),
                          "write guard: parent a link staying inside accepted (control)"));
    expect_file(fmt("%s/adir/in.txt", w_dir), "in", "write guard: written through the inner link");
    /* Guard: the final component must name an entry. */
    const struct invalid_call NO_FINAL_NAME[] = {
        {"fs.write", args_write(fmt("%s/", w_dir), "x"),
         "write guard: trailing '/' refused [guard write-final-name]"},
        {"fs.write", args_write(fmt("%s/.", w_dir), "x"),
         "write guard: final '.' refused [guard write-final-name]"},
        {"fs.write", args_write(fmt("%s/adir/..", w_dir), "x"),
         "write guard: final '..' refused [guard write-final-name]"},
        {"fs.write", args_write("/", "x"), "write guard: '/' refused [guard write-final-name]"},
        {"fs.write", args_write("rel.txt", "x"),
         "write guard: relative path refused [guard absolute-path]"},
    };
    expect_invalid_calls(g, NO_FINAL_NAME, sizeof NO_FINAL_NAME / sizeof NO_FINAL_NAME[0]);
    check(no_temp_files(w_dir) && no_temp_files(fmt("%s/adir", w_dir)),
          "write guard: no temporary file left by refused writes", "found .basal-tmp-*");
}

static void test_write_size(const struct fs_grants *g)
{
    char *text = malloc(FS_WRITE_MAX_BYTES + 2);
    if (text == NULL) {
        fail("write size: setup", "out of memory");
        return;
    }
    memset(text, 'y', FS_WRITE_MAX_BYTES + 1);
    text[FS_WRITE_MAX_BYTES + 1] = '\0';
    const char *p = fmt("%s/large.txt", w_dir);
    /* Guard: text over 1 MiB is too_large and nothing is written. */
    expect_code(g, "fs.write", args_write(p, text), HOST_CODE_TOO_LARGE, p,
                "write size: 1 MiB + 1 refused [guard write-max-bytes]");
    check(access(p, F_OK) != 0, "write size: nothing created", "file exists");
    text[FS_WRITE_MAX_BYTES] = '\0';
    json_t *v =
        expect_ok(g, "fs.write", args_write(p, text), "write size: exactly 1 MiB (control)");
    if (v != NULL)
        check_int_eq(json_integer_value(json_object_get(v, "bytes")), FS_WRITE_MAX_BYTES,
                     "write size: 1 MiB written");
    json_decref(v);
    free(text);
    /* Multi-byte: 2-byte characters count twice against the limit. */
    size_t chars = FS_WRITE_MAX_BYTES / 2 + 1;
    char *wide = malloc(chars * 2 + 1);
    if (wide != NULL) {
        for (size_t i = 0; i < chars; i++)
            memcpy(wide + 2 * i, "\xc3\xa9", 2);
        wide[chars * 2] = '\0';
        expect_code(g, "fs.write", args_write(p, wide), HOST_CODE_TOO_LARGE, p,
                    "write size: the limit counts UTF-8 bytes, not characters "
                    "[guard write-max-bytes]");
        free(wide);
    }
    check(no_temp_files(w_dir), "write size: no temporary file left", "found .basal-tmp-*");
}

static void test_more_guards(const struct fs_grants *g)
{
    /* Guard: nested roots; a write root inside a read root is writable, the rest of the
     * read root is not, and a missing parent there is denied rather than not_found. */
    const char *reads[1] = {base};
    const char *writes[1] = {w_dir};
    struct fs_grants nested = {reads, 1, writes, 1, home_dir, NULL};
    const char *p = fmt("%s/outside/nested.txt", base);
    expect_code(&nested, "fs.write", args_write(p, "x"), HOST_CODE_DENIED, "read-only",
                "more: write in a read root holding a write root denied [guard write-root-only]");
    p = fmt("%s/outside/nodir/nested.txt", base);
    expect_code(&nested, "fs.write", args_write(p, "x"), HOST_CODE_DENIED, p,
                "more: missing parent under a read-only root denied [guard write-root-only]");
    json_decref(expect_ok(&nested, "fs.write", args_write(fmt("%s/nested.txt", w_dir), "n"),
                          "more: write in the nested write root accepted (control)"));
    /* Guard: control bytes in a path never break the one-line message. */
    expect_code(g, "fs.stat", args1(fmt("%s/a\nb\x1b", r_dir)), HOST_CODE_NOT_FOUND, "a?b?",
                "more: control bytes in a path shown as '?' [guard one-line-message]");
    /* Guard: a link loop ends as io_error (inside) or denied (through outside). */
    link_at("loop2", fmt("%s/loop1", r_dir));
    link_at("loop1", fmt("%s/loop2", r_dir));
    p = fmt("%s/loop1", r_dir);
    expect_code(g, "fs.read", args1(p), HOST_CODE_IO_ERROR, p,
                "more: link loop inside the root is io_error [guard link-hops-bounded]");
    link_at(fmt("%s/outside/loopb", base), fmt("%s/loopa", r_dir));
    link_at(fmt("%s/loopa", r_dir), fmt("%s/outside/loopb", base));
    p = fmt("%s/loopa", r_dir);
    expect_code(g, "fs.read", args1(p), HOST_CODE_DENIED, p,
                "more: link loop through outside denied [guard link-out-denied]");
    /* A name that is not UTF-8 cannot be a JSON string: the listing is refused. */
    const char *d = fmt("%s/badnames", w_dir);
    check(mkdir(d, 0755) == 0 && put(fmt("%s/x\xff", d), ""), "more: setup bad name", "%s",
          strerror(errno));
    expect_code(g, "fs.list", args1(d), HOST_CODE_NOT_TEXT, d,
                "more: a name that is not UTF-8 refuses the listing [guard utf8-text]");
    /* The root "/" holds the data home: never granted, even for reading. */
    const char *slash[1] = {"/"};
    struct fs_grants everything = {slash, 1, NULL, 0, home_dir, NULL};
    expect_code(&everything, "fs.read", args1(fmt("%s/hello.txt", r_dir)), HOST_CODE_DENIED,
                "the granted read root '/' contains basal's data home",
                "more: read root '/' refused at the call [guard data-home-roots]");
    /* Containment is component-wise also for a root written with a trailing '/'. */
    const char *trailing[1] = {fmt("%s/", r_dir)};
    struct fs_grants trail = {trailing, 1, NULL, 0, home_dir, NULL};
    expect_read_text(&trail, args1(fmt("%s/hello.txt", r_dir)), "hello",
                     "more: a root written with a trailing '/' (control)");
    p = fmt("%s/r2/file.txt", base);
    expect_code(&trail, "fs.read", args1(p), HOST_CODE_DENIED, p,
                "more: root with trailing '/' still excludes sibling r2 "
                "[guard component-wise-prefix]");
}

/* fs_root_allowed on one root: refused with a reason containing want_why, or allowed
 * when want_why is NULL. */
static void expect_root(const char *root, bool writable, const char *want_why, const char *name)
{
    char *real = realpath(root, NULL);
    char *home = realpath(home_dir, NULL);
    char why[128] = "";
    bool allowed = real != NULL && home != NULL &&
                   fs_root_allowed(real, writable, home, why, sizeof why);
    if (real == NULL || home == NULL)
        fail(name, "cannot resolve %s or %s: %s", root, home_dir, strerror(errno));
    else if (want_why == NULL)
        check(allowed, name, "refused: %s", why);
    else
        check(!allowed && strstr(why, want_why) != NULL, name, "%s (want \"%s\")",
              allowed ? "allowed" : why, want_why);
    free(real);
    free(home);
}

/* Roots that are never granted (fs_root_allowed), and the same refusal at every call
 * on the roots and the data home as they resolve at that call. */
static void test_forbidden_roots(const struct fs_grants *g)
{
    const char *home_parent = fmt("%s/..", home_dir);
    check(mkdir(fmt("%s/sub", home_dir), 0700) == 0, "roots: setup sub", "%s", strerror(errno));
    const struct {
        const char *root;
        bool writable;
        const char *want_why;
        const char *name;
    } ROOTS[] = {
        {home_dir, false, "is basal's data home",
         "roots: the data home itself refused [guard data-home-roots]"},
        {fmt("%s/sub", home_dir), false, "lies inside basal's data home",
         "roots: a root inside the data home refused [guard data-home-roots]"},
        {home_parent, false, "contains basal's data home",
         "roots: a read root holding the data home refused [guard data-home-roots]"},
        {home_parent, true, "contains basal's data home",
         "roots: a write root holding the data home refused [guard data-home-roots]"},
        {"/", false, "contains basal's data home",
         "roots: '/' as a read root refused [guard data-home-roots]"},
        {"/", true, "whole file system",
         "roots: '/' as a write root refused [guard no-slash-write-root]"},
        {"/proc/self", false, "/proc",
         "roots: a root under /proc refused [guard no-proc-sys-roots]"},
        {"/proc", false, "/proc", "roots: /proc refused [guard no-proc-sys-roots]"},
        {"/sys/kernel", false, "/sys",
         "roots: a root under /sys refused [guard no-proc-sys-roots]"},
        {r_dir, false, NULL, "roots: an ordinary read root allowed (control)"},
        {w_dir, true, NULL, "roots: an ordinary write root allowed (control)"},
    };
    for (size_t i = 0; i < sizeof ROOTS / sizeof ROOTS[0]; i++)
        expect_root(ROOTS[i].root, ROOTS[i].writable, ROOTS[i].want_why, ROOTS[i].name);

    /* At the call: a root that is a link, retargeted at the data home after approval. */
    const char *link = fmt("%s/moving_root", base);
    link_at(r_dir, link);
    const char *via[1] = {link};
    struct fs_grants moving = {via, 1, NULL, 0, home_dir, NULL};
    expect_read_text(&moving, args1(fmt("%s/hello.txt", link)), "hello",
                     "roots at the call: a root reached through a link works (control)");
    check(unlink(link) == 0 && symlink(home_dir, link) == 0, "roots at the call: setup relink",
          "%s", strerror(errno));
    check(put(fmt("%s/catalog.json", home_dir), "{}"), "roots at the call: setup home file",
          "%s", strerror(errno));
    expect_code(&moving, "fs.read", args1(fmt("%s/catalog.json", link)), HOST_CODE_DENIED,
                "is basal's data home",
                "roots at the call: a root relinked to the data home is refused at the call "
                "[guard data-home-per-call]");
    /* A data home inside a write root makes every call refused, reads elsewhere too. */
    struct fs_grants holding = *g;
    holding.home = fmt("%s/h", w_dir);
    check(mkdir(holding.home, 0700) == 0, "roots at the call: setup home in w", "%s",
          strerror(errno));
    expect_code(&holding, "fs.write", args_write(fmt("%s/h/modules.json", w_dir), "x"),
                HOST_CODE_DENIED, "contains basal's data home",
                "roots at the call: no write into a data home under a write root "
                "[guard data-home-per-call]");
    check(access(fmt("%s/h/modules.json", w_dir), F_OK) != 0,
          "roots at the call: nothing written into the data home", "the file exists");
    expect_code(&holding, "fs.read", args1(fmt("%s/hello.txt", r_dir)), HOST_CODE_DENIED,
                "contains basal's data home",
                "roots at the call: every call refused while such a root is granted "
                "[guard data-home-per-call]");
    /* Fail closed: no data home, or one that does not resolve. */
    struct fs_grants no_home = *g;
    no_home.home = NULL;
    expect_code(&no_home, "fs.read", args1(fmt("%s/hello.txt", r_dir)), HOST_CODE_DENIED,
                "data home cannot be resolved",
                "roots at the call: no data home refuses every call [guard fail-closed]");
    no_home.home = fmt("%s/no-such-home", base);
    expect_code(&no_home, "fs.read", args1(fmt("%s/hello.txt", r_dir)), HOST_CODE_DENIED,
                "data home cannot be resolved",
                "roots at the call: a data home that does not resolve refuses every call "
                "[guard fail-closed]");
    const char *procs[1] = {"/proc/self"};
    struct fs_grants proc = {procs, 1, NULL, 0, home_dir, NULL};
    expect_code(&proc, "fs.read", args1("/proc/self/environ"), HOST_CODE_DENIED, "/proc",
                "roots at the call: /proc/self/environ unreadable [guard no-proc-sys-roots]");
    const char *slash[1] = {"/"};
    struct fs_grants write_all_of_it = {NULL, 0, slash, 1, home_dir, NULL};
    expect_code(&write_all_of_it, "fs.write", args_write(fmt("%s/x.txt", w_dir), "x"),
                HOST_CODE_DENIED, "whole file system",
                "roots at the call: write root '/' refused [guard no-slash-write-root]");
    json_decref(expect_ok(g, "fs.stat", args1(r_dir),
                          "roots at the call: the usual grants still work (control)"));
}

int main(void)
{
    if (!harness_real_tmpdir("fs", base, sizeof base))
        return harness_finish();
    umask(022); /* the mode check of fs.write's 0644 assumes it */
    snprintf(home_dir, sizeof home_dir, "%s/basal-fs-home-XXXXXX", harness_tmp_root());
    if (mkdtemp(home_dir) == NULL) {
        fail("setup: data home directory", "%s", strerror(errno));
        remove_tree();
        return harness_finish();
    }
    snprintf(r_dir, sizeof r_dir, "%s/r", base);
    snprintf(w_dir, sizeof w_dir, "%s/w", base);
    if (make_tree()) {
        struct fs_grants g = grants_rw();
        test_kinds(&g);
        test_read(&g);
        test_argument_guards(&g);
        test_escape_guards(&g);
        test_read_limits(&g);
        test_read_kinds(&g);
        test_stat(&g);
        test_list(&g);
        test_list_limit(&g);
        test_write(&g);
        test_write_guards(&g);
        test_write_size(&g);
        test_more_guards(&g);
        test_forbidden_roots(&g);
    }
    harness_remove_tree(home_dir);
    remove_tree();
    return harness_finish();
}
