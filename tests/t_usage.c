/* The worker's command line (basal.md section 1) and what its release binary
 * contains (basal.md section 11).
 *
 * Usage errors exit 64 with the usage text on stderr and nothing on stdout, before
 * any confinement step; --version prints "ck-basal-worker <version> (git <rev>)".
 * The release build rejects the test-only --test-skip-seccomp switch [guard: test
 * hooks absent from release builds].
 *
 * The release worker must not link or contain the parent's libraries (SQLite,
 * libcurl, jansson) [guard: the worker never links parent code]. Checked on the ELF
 * itself: its DT_NEEDED entries (none: it is a static PIE) and dynamic symbols, and a
 * scan of every byte for those libraries' symbol prefixes. Controls: the byte scan of
 * the release parent build/bin/ck-basal finds the libraries it links (statically,
 * Makefile PARENT_LIBS), and the DT_NEEDED and dynamic-symbol inspections find
 * libsqlite3 in the sqlite3 shell, which links it as a shared library, so each
 * inspection can see what it looks for. */
#include "lib/harness.h"

#include <ctype.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_MS 15000
/* A program that links libsqlite3 as a shared library: the ELF inspections' control. */
#define SHARED_SQLITE_PROGRAM "/usr/bin/sqlite3"

static const struct proc_opts EMPTY_ENV = {false, 0, 0, 0, HARNESS_EMPTY_ENV};

struct usage_case {
    const char *what;
    const char *args[4];
    bool release_only;
    const char *extra_line_prefix; /* a line stderr must also contain, or NULL */
};

static const struct usage_case USAGE_CASES[] = {
    {"no argument", {NULL}, false, NULL},
    {"an unknown argument", {"--bogus"}, false, NULL},
    {"a stray word", {"required"}, false, NULL},
    {"--landlock=bogus", {"--landlock=bogus"}, false, NULL},
    {"--landlock without a value", {"--landlock"}, false, NULL},
    {"two engine modes", {"--landlock=required", "--landlock=optional"}, false, NULL},
    {"the same mode twice", {"--landlock=required", "--landlock=required"}, false, NULL},
    {"engine mode and --version", {"--landlock=required", "--version"}, false, NULL},
    {"--version and a probe", {"--version", "--confinement-probe=open"}, false, NULL},
    {"--no-sandbox without a probe", {"--no-sandbox"}, false, NULL},
    {"--no-sandbox in engine mode", {"--landlock=optional", "--no-sandbox"}, false, NULL},
    {"an unknown probe name", {"--confinement-probe=no-such-probe"}, false,
     "ck-basal-worker: unknown probe 'no-such-probe'"},
    {"an unknown probe name with --no-sandbox",
     {"--confinement-probe=no-such-probe", "--no-sandbox"}, false,
     "ck-basal-worker: unknown probe 'no-such-probe'"},
    {"an empty probe name", {"--confinement-probe="}, false, NULL},
    {"--test-skip-seccomp (a test-build switch)", {"--test-skip-seccomp"}, true, NULL},
    {"--test-skip-seccomp in engine mode (a test-build switch)",
     {"--landlock=required", "--test-skip-seccomp"}, true, NULL},
};

static void check_usage(const char *label, const char *worker, const struct usage_case *c)
{
    const char *argv[8] = {worker};
    int n = 1;
    for (size_t i = 0; i < 4 && c->args[i] != NULL; i++)
        argv[n++] = c->args[i];
    argv[n] = NULL;
    char name[256];
    (void)snprintf(name, sizeof name, "usage (%s worker): %s exits 64 with usage on stderr%s",
                   label, c->what,
                   c->release_only ? " [guard test hooks absent in release]" : "");
    struct proc_result r = proc_run_opts(argv, &EMPTY_ENV, NULL, 0, TIMEOUT_MS);
    bool ok = proc_exited_with(&r, 64) && r.out_len == 0 &&
              output_has_line_prefix(r.err, "usage: ck-basal-worker ") &&
              (c->extra_line_prefix == NULL || output_has_line_prefix(r.err, c->extra_line_prefix));
    check(ok, name, "%s; stdout \"%.100s\"", proc_describe(&r), r.out);
    proc_result_free(&r);
}

static char *trim(char *s)
{
    size_t len = strlen(s);
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        s[--len] = '\0';
    return s;
}

static bool is_rev(const char *rev)
{
    size_t len = strlen(rev);
    if (len < 7 || len > 40)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isxdigit((unsigned char)rev[i]) || isupper((unsigned char)rev[i]))
            return false;
    return true;
}

/* Whether the repository has a commit: "unknown" is an honest revision only without. */
static bool repo_has_commit(const char *repo)
{
    const char *argv[] = {"/usr/bin/git", "-C", repo, "rev-parse", "--verify", "-q", "HEAD", NULL};
    struct proc_result r = proc_run(argv, NULL, 0, TIMEOUT_MS);
    bool has = proc_exited_with(&r, 0);
    proc_result_free(&r);
    return has;
}

static void check_version(const char *label, const char *worker)
{
    char repo[4096];
    (void)snprintf(repo, sizeof repo, "%s/..", harness_build_dir());
    char path[4200];
    (void)snprintf(path, sizeof path, "%s/VERSION", repo);
    char *version = read_text_file(path);
    char name[256];
    (void)snprintf(name, sizeof name,
                   "usage (%s worker): --version prints \"ck-basal-worker <VERSION> (git <rev>)\" "
                   "and exits 0",
                   label);
    if (version == NULL) {
        fail(name, "cannot read %s", path);
        return;
    }
    trim(version);
    const char *argv[] = {worker, "--version", NULL};
    struct proc_result r = proc_run_opts(argv, &EMPTY_ENV, NULL, 0, TIMEOUT_MS);
    char prefix[128];
    (void)snprintf(prefix, sizeof prefix, "ck-basal-worker %s (git ", version);
    bool ok = proc_exited_with(&r, 0) && r.err_len == 0 &&
              strncmp(r.out, prefix, strlen(prefix)) == 0;
    char rev[64] = "";
    if (ok) {
        const char *at = r.out + strlen(prefix);
        const char *close = strstr(at, ")\n");
        ok = close != NULL && close[2] == '\0' && (size_t)(close - at) < sizeof rev;
        if (ok) {
            memcpy(rev, at, (size_t)(close - at));
            rev[close - at] = '\0';
            ok = is_rev(rev) || (strcmp(rev, "unknown") == 0 && !repo_has_commit(repo));
        }
    }
    check(ok, name, "%s; stdout \"%.200s\" (rev \"%s\": want hex, or unknown only in a "
                    "repository without commits)",
          proc_describe(&r), r.out, rev);
    proc_result_free(&r);
    free(version);
}

/* ---- the release binary's contents ---------------------------------------------- */

struct blob {
    unsigned char *data;
    size_t len;
};

static bool read_blob(const char *path, struct blob *b)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return false;
    b->data = NULL;
    b->len = 0;
    size_t cap = 0;
    for (;;) {
        if (b->len == cap) {
            cap = cap == 0 ? 1 << 20 : cap * 2;
            unsigned char *grown = realloc(b->data, cap);
            if (grown == NULL) {
                free(b->data);
                fclose(f);
                return false;
            }
            b->data = grown;
        }
        size_t n = fread(b->data + b->len, 1, cap - b->len, f);
        if (n == 0)
            break;
        b->len += n;
    }
    bool ok = !ferror(f);
    fclose(f);
    return ok;
}

static bool blob_contains(const struct blob *b, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0 || b->len < n)
        return false;
    for (size_t i = 0; i + n <= b->len; i++)
        if (b->data[i] == (unsigned char)needle[0] && memcmp(b->data + i, needle, n) == 0)
            return true;
    return false;
}

/* What the ELF's dynamic section and dynamic symbol table name. */
struct elf_view {
    bool valid;
    char needed[1024];     /* DT_NEEDED names, comma separated */
    char bad_symbols[512]; /* dynamic symbols with a forbidden prefix */
};

static const char *const FORBIDDEN_SYMBOL_PREFIXES[] = {"sqlite3_", "curl_", "json_"};
static const char *const FORBIDDEN_LIBRARIES[] = {"libsqlite3", "libcurl", "libjansson"};

static bool in_range(const struct blob *b, uint64_t off, uint64_t len)
{
    return off <= b->len && len <= b->len - off;
}

static void append(char *buf, size_t cap, const char *s)
{
    size_t used = strlen(buf);
    (void)snprintf(buf + used, cap - used, "%s%s", used ? "," : "", s);
}

static struct elf_view elf_inspect(const struct blob *b)
{
    struct elf_view v;
    memset(&v, 0, sizeof v);
    if (b->len < sizeof(Elf64_Ehdr) || memcmp(b->data, ELFMAG, SELFMAG) != 0 ||
        b->data[EI_CLASS] != ELFCLASS64)
        return v;
    Elf64_Ehdr eh;
    memcpy(&eh, b->data, sizeof eh);
    if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
        !in_range(b, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
        return v;
    bool saw_dynamic = false;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, b->data + eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_DYNAMIC && sh.sh_type != SHT_DYNSYM)
            continue;
        if (sh.sh_link >= eh.e_shnum || !in_range(b, sh.sh_offset, sh.sh_size))
            return v;
        Elf64_Shdr strsh;
        memcpy(&strsh, b->data + eh.e_shoff + (uint64_t)sh.sh_link * sizeof strsh, sizeof strsh);
        if (!in_range(b, strsh.sh_offset, strsh.sh_size) || strsh.sh_size == 0)
            return v;
        const char *strtab = (const char *)b->data + strsh.sh_offset;
        if (strtab[strsh.sh_size - 1] != '\0')
            return v;
        if (sh.sh_type == SHT_DYNAMIC) {
            saw_dynamic = true;
            for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= sh.sh_size; off += sizeof(Elf64_Dyn)) {
                Elf64_Dyn dyn;
                memcpy(&dyn, b->data + sh.sh_offset + off, sizeof dyn);
                if (dyn.d_tag == DT_NULL)
                    break;
                if (dyn.d_tag == DT_NEEDED && dyn.d_un.d_val < strsh.sh_size)
                    append(v.needed, sizeof v.needed, strtab + dyn.d_un.d_val);
            }
        } else {
            for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
                Elf64_Sym sym;
                memcpy(&sym, b->data + sh.sh_offset + off, sizeof sym);
                if (sym.st_name >= strsh.sh_size)
                    continue;
                const char *name = strtab + sym.st_name;
                for (size_t p = 0; p < sizeof FORBIDDEN_SYMBOL_PREFIXES / sizeof(char *); p++)
                    if (strncmp(name, FORBIDDEN_SYMBOL_PREFIXES[p],
                                strlen(FORBIDDEN_SYMBOL_PREFIXES[p])) == 0)
                        append(v.bad_symbols, sizeof v.bad_symbols, name);
            }
        }
    }
    v.valid = saw_dynamic;
    return v;
}

static bool needed_has(const struct elf_view *v, const char *lib)
{
    return strstr(v->needed, lib) != NULL;
}

static void check_release_contents(void)
{
    const char *worker = harness_release_worker();
    const char *parent = harness_release_parent();
    struct blob w = {NULL, 0}, p = {NULL, 0};
    if (!read_blob(worker, &w)) {
        fail("release worker: readable for inspection", "cannot read %s", worker);
        return;
    }
    struct elf_view wv = elf_inspect(&w);
    if (check(wv.valid, "release worker: an ELF64 file with a dynamic section", "%s", worker)) {
        bool clean = true;
        for (size_t i = 0; i < sizeof FORBIDDEN_LIBRARIES / sizeof(char *); i++)
            clean = clean && !needed_has(&wv, FORBIDDEN_LIBRARIES[i]);
        check(clean, "release worker: links no SQLite, libcurl or jansson (DT_NEEDED) "
                     "[guard the worker never links parent code]",
              "DT_NEEDED: %s", wv.needed);
        /* A static PIE (Makefile, WORKER_LIBS): no shared library and no loader run in
         * the worker, which was a third of its time from exec to Welcome. */
        check(wv.needed[0] == '\0',
              "release worker: a static PIE that needs no shared library (no loader runs "
              "before it confines itself)",
              "DT_NEEDED: %s", wv.needed);
        check(wv.bad_symbols[0] == '\0',
              "release worker: no sqlite3_/curl_/json_ dynamic symbols "
              "[guard the worker never links parent code]",
              "found: %s", wv.bad_symbols);
    }
    const char *needles[] = {"sqlite3_", "curl_easy", "libcurl", "jansson", "json_object",
                             "json_loads", "SQLite format"};
    char found[256] = "";
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
        if (blob_contains(&w, needles[i]))
            append(found, sizeof found, needles[i]);
    check(found[0] == '\0',
          "release worker: no SQLite, libcurl or jansson strings anywhere in the binary "
          "[guard the worker never links parent code]",
          "found: %s", found);

    /* Controls: the byte scan finds the libraries the parent links statically; the
     * ELF inspections find libsqlite3 where it is a shared library. */
    if (!read_blob(parent, &p)) {
        fail("release worker control: the parent is readable for the same inspection",
             "cannot read %s", parent);
    } else {
        char pfound[256] = "";
        for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
            if (blob_contains(&p, needles[i]))
                append(pfound, sizeof pfound, needles[i]);
        check(strstr(pfound, "sqlite3_") != NULL && strstr(pfound, "json_loads") != NULL,
              "release worker control: the byte scan finds SQLite and jansson in "
              "build/bin/ck-basal",
              "strings: %s", pfound);
    }
    struct blob shell = {NULL, 0};
    if (!read_blob(SHARED_SQLITE_PROGRAM, &shell)) {
        fail("release worker control: " SHARED_SQLITE_PROGRAM " is readable "
             "(scripts/install-deps.sh --test installs sqlite3)",
             "cannot read it");
    } else {
        struct elf_view sv = elf_inspect(&shell);
        check(sv.valid && needed_has(&sv, "libsqlite3") && sv.bad_symbols[0] != '\0',
              "release worker control: the DT_NEEDED and dynamic-symbol inspections find "
              "libsqlite3 in " SHARED_SQLITE_PROGRAM,
              "DT_NEEDED: %s; forbidden-prefix symbols: %.200s", sv.needed, sv.bad_symbols);
    }
    free(shell.data);
    free(w.data);
    free(p.data);
}

int main(void)
{
    const char *release = harness_release_worker();
    const char *test = harness_test_worker();
    bool have_release = require_binary(release, "usage: the release worker is built");
    bool have_test = require_binary(test, "usage: the test worker is built");
    bool have_parent = require_binary(harness_release_parent(), "usage: the release parent is built");
    for (size_t i = 0; i < sizeof USAGE_CASES / sizeof USAGE_CASES[0]; i++) {
        if (have_release)
            check_usage("release", release, &USAGE_CASES[i]);
        if (have_test && !USAGE_CASES[i].release_only)
            check_usage("test", test, &USAGE_CASES[i]);
    }
    if (have_release)
        check_version("release", release);
    if (have_test)
        check_version("test", test);
    if (have_release && have_parent)
        check_release_contents();
    return harness_finish();
}
