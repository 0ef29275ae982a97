/* Keeps docs/syscall-admission.md and the worker's seccomp filter equal, for x86_64 and
 * aarch64, as basal.md section 2 requires ("a test keeps that table and the filter equal").
 *
 * For each architecture the test builds the real filter with seccomp_policy_build
 * (src/worker/seccomp_policy.c, linked into every test binary), exports it twice:
 *   - as libseccomp's pseudo filter code (PFC), for the names and numbers it admits,
 *     which calls it admits without an argument check, and its two actions;
 *   - as the BPF program the kernel would run, which this test executes itself (a
 *     small classic-BPF interpreter over struct seccomp_data) to see the verdict for
 *     chosen system calls, arguments and architectures. libseccomp's x32 check exists
 *     only there: seccomp_export_pfc does not print it.
 * and compares all of it with the document's tables and with SYSCALL_ADMISSIONS.
 *
 * Guards proven here (each check's name says which):
 *   [guard allowlist]         the filter admits exactly the documented calls
 *   [guard argument rule]     each admitted call's arguments are checked as documented
 *   [guard default kill]      everything else, and every listed forbidden call, is
 *                             KILL_PROCESS
 *   [guard bad arch]          foreign architectures (i386 int 0x80, arm) are killed
 *   [guard x32]               x32 numbers on the x86_64 arch are killed
 *   [guard tsync]             the filter is loaded with TSYNC
 * The document's "Not admitted" and "refused argument" tables are checked too, so the
 * page cannot claim a kill the filter does not do or name a probe that does not exist.
 *
 * The probe names come from the worker's own probe table (the Makefile links
 * src/worker/probes.c into the test programs). */
#include "lib/harness.h"

#include "worker/seccomp_policy.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "worker/probes.h"

#define SELF_PID 12345 /* the pid the filter is built for (kill/tgkill rules) */
#define DOC_REL "docs/syscall-admission.md"

#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MREMAP_MAYMOVE
#define MREMAP_MAYMOVE 1
#endif
#ifndef MREMAP_FIXED
#define MREMAP_FIXED 2
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef AUDIT_ARCH_AARCH64
#define AUDIT_ARCH_AARCH64 0xc00000b7U
#endif

/* ------------------------------------------------------------------ small helpers */

static char *xstrdup(const char *s)
{
    char *d = s != NULL ? strdup(s) : NULL;
    if (d == NULL) {
        fail("setup: memory", "strdup failed");
        exit(harness_finish());
    }
    return d;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* Reads a whole stream from its start into a malloc'd string. */
static char *slurp_stream(FILE *f)
{
    if (fseek(f, 0, SEEK_END) != 0)
        return NULL;
    long size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0)
        return NULL;
    char *buf = malloc((size_t)size + 1);
    if (buf == NULL)
        return NULL;
    size_t got = fread(buf, 1, (size_t)size, f);
    buf[got] = '\0';
    return buf;
}

/* ------------------------------------------------------------------ the document */

#define MAX_CELLS 8
#define MAX_ROWS 128

struct doc_row {
    char *text; /* the row's own copy; cell[] point into it */
    char *cell[MAX_CELLS];
    int ncells;
};

struct doc_table {
    struct doc_row row[MAX_ROWS];
    int nrows;
    bool found;
};

/* Splits a Markdown table row into trimmed cells. "\|" inside a cell is a literal bar
 * (the mmap rule text contains one). Modifies line. */
static int split_row(char *line, char **cells, int max)
{
    int n = 0;
    char *p = line;
    if (*p != '|')
        return 0;
    p++;
    char *start = p;
    char *out = p;
    while (*p != '\0') {
        if (p[0] == '\\' && p[1] == '|') {
            *out++ = '|';
            p += 2;
            continue;
        }
        if (*p == '|') {
            *out = '\0';
            if (n < max)
                cells[n] = trim(start);
            n++;
            p++;
            start = out = p;
            continue;
        }
        *out++ = *p++;
    }
    return n;
}

/* Finds the table whose header row starts with header_prefix and collects its body
 * rows (after the |---| line) up to the first line that is not a table row. */
static void parse_table(const char *doc, const char *header_prefix, struct doc_table *t)
{
    memset(t, 0, sizeof *t);
    const char *line = doc;
    while (line != NULL && *line != '\0') {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (strncmp(line, header_prefix, strlen(header_prefix)) == 0) {
            t->found = true;
            line = end ? end + 1 : NULL;
            /* separator */
            if (line != NULL && strncmp(line, "|---", 4) == 0) {
                end = strchr(line, '\n');
                line = end ? end + 1 : NULL;
            }
            while (line != NULL && *line == '|' && t->nrows < MAX_ROWS) {
                end = strchr(line, '\n');
                len = end ? (size_t)(end - line) : strlen(line);
                char *copy = strndup(line, len);
                if (copy == NULL)
                    break;
                struct doc_row *r = &t->row[t->nrows++];
                r->text = copy;
                r->ncells = split_row(copy, r->cell, MAX_CELLS);
                line = end ? end + 1 : NULL;
            }
            return;
        }
        (void)len;
        line = end ? end + 1 : NULL;
    }
}

static void free_table(struct doc_table *t)
{
    for (int i = 0; i < t->nrows; i++)
        free(t->row[i].text);
    t->nrows = 0;
}

/* ------------------------------------------------------------------ the filter */

struct arch_info {
    const char *name;
    uint32_t scmp;     /* SCMP_ARCH_* */
    uint32_t audit;    /* AUDIT_ARCH_* the BPF checks */
    int doc_column;    /* 1: x86_64 column, 2: aarch64 column */
};

static const struct arch_info ARCHES[] = {
    {"x86_64", SCMP_ARCH_X86_64, AUDIT_ARCH_X86_64, 1},
    {"aarch64", SCMP_ARCH_AARCH64, AUDIT_ARCH_AARCH64, 2},
};

struct filter {
    char *pfc;
    struct sock_filter *prog;
    size_t len;
};

/* Exports the filter as PFC and BPF. */
static bool export_filter(scmp_filter_ctx ctx, struct filter *f, char *why, size_t cap)
{
    memset(f, 0, sizeof *f);
    FILE *pfc = tmpfile();
    FILE *bpf = tmpfile();
    bool ok = false;
    if (pfc == NULL || bpf == NULL) {
        snprintf(why, cap, "tmpfile: %s", strerror(errno));
        goto out;
    }
    int rc = seccomp_export_pfc(ctx, fileno(pfc));
    if (rc != 0) {
        snprintf(why, cap, "seccomp_export_pfc: %d", rc);
        goto out;
    }
    rc = seccomp_export_bpf(ctx, fileno(bpf));
    if (rc != 0) {
        snprintf(why, cap, "seccomp_export_bpf: %d", rc);
        goto out;
    }
    f->pfc = slurp_stream(pfc);
    char *raw = slurp_stream(bpf);
    long size = ftell(bpf);
    if (f->pfc == NULL || raw == NULL || size <= 0 || size % (long)sizeof(struct sock_filter)) {
        snprintf(why, cap, "could not read the exported filter (%ld BPF bytes)", size);
        free(raw);
        goto out;
    }
    f->prog = (struct sock_filter *)(void *)raw;
    f->len = (size_t)size / sizeof(struct sock_filter);
    ok = true;
out:
    if (pfc)
        fclose(pfc);
    if (bpf)
        fclose(bpf);
    return ok;
}

/* Runs a classic BPF seccomp program on one seccomp_data, as the kernel would, and
 * returns its verdict (SECCOMP_RET_*). An instruction the kernel would reject, or a
 * load outside seccomp_data, makes the verdict BPF_INVALID so the check fails. */
#define BPF_INVALID 0xdeadbeefU

static uint32_t bpf_run(const struct filter *f, uint32_t arch, uint32_t nr, const uint64_t args[6])
{
    struct seccomp_data data;
    memset(&data, 0, sizeof data);
    data.nr = (int)nr;
    data.arch = arch;
    data.instruction_pointer = 0x7f0000001000ULL;
    for (int i = 0; i < 6; i++)
        data.args[i] = args[i];
    const unsigned char *bytes = (const unsigned char *)&data;

    uint32_t A = 0, X = 0, M[BPF_MEMWORDS];
    memset(M, 0, sizeof M);
    for (size_t pc = 0, steps = 0; pc < f->len && steps < 4096; pc++, steps++) {
        const struct sock_filter *in = &f->prog[pc];
        uint32_t k = in->k;
        uint32_t src = BPF_SRC(in->code) == BPF_X ? X : k;
        switch (BPF_CLASS(in->code)) {
        case BPF_LD:
            if (in->code == (BPF_LD | BPF_W | BPF_ABS)) {
                if (k % 4 != 0 || k + 4 > sizeof data)
                    return BPF_INVALID;
                memcpy(&A, bytes + k, 4);
            } else if (in->code == (BPF_LD | BPF_IMM)) {
                A = k;
            } else if (in->code == (BPF_LD | BPF_MEM) && k < BPF_MEMWORDS) {
                A = M[k];
            } else if (in->code == (BPF_LD | BPF_W | BPF_LEN)) {
                A = sizeof data;
            } else {
                return BPF_INVALID;
            }
            break;
        case BPF_LDX:
            if (in->code == (BPF_LDX | BPF_IMM))
                X = k;
            else if (in->code == (BPF_LDX | BPF_MEM) && k < BPF_MEMWORDS)
                X = M[k];
            else if (in->code == (BPF_LDX | BPF_W | BPF_LEN))
                X = sizeof data;
            else
                return BPF_INVALID;
            break;
        case BPF_ST:
            if (k >= BPF_MEMWORDS)
                return BPF_INVALID;
            M[k] = A;
            break;
        case BPF_STX:
            if (k >= BPF_MEMWORDS)
                return BPF_INVALID;
            M[k] = X;
            break;
        case BPF_ALU:
            switch (BPF_OP(in->code)) {
            case BPF_ADD: A += src; break;
            case BPF_SUB: A -= src; break;
            case BPF_MUL: A *= src; break;
            case BPF_DIV: if (src == 0) return BPF_INVALID; A /= src; break;
            case BPF_MOD: if (src == 0) return BPF_INVALID; A %= src; break;
            case BPF_OR: A |= src; break;
            case BPF_AND: A &= src; break;
            case BPF_XOR: A ^= src; break;
            case BPF_LSH: A = src < 32 ? A << src : 0; break;
            case BPF_RSH: A = src < 32 ? A >> src : 0; break;
            case BPF_NEG: A = (uint32_t)-A; break;
            default: return BPF_INVALID;
            }
            break;
        case BPF_JMP: {
            if (BPF_OP(in->code) == BPF_JA) {
                pc += k;
                break;
            }
            bool taken;
            switch (BPF_OP(in->code)) {
            case BPF_JEQ: taken = A == src; break;
            case BPF_JGT: taken = A > src; break;
            case BPF_JGE: taken = A >= src; break;
            case BPF_JSET: taken = (A & src) != 0; break;
            default: return BPF_INVALID;
            }
            pc += taken ? in->jt : in->jf;
            break;
        }
        case BPF_RET:
            if (BPF_RVAL(in->code) == BPF_K)
                return k;
            if (BPF_RVAL(in->code) == BPF_A)
                return A;
            return BPF_INVALID;
        case BPF_MISC:
            if (BPF_MISCOP(in->code) == BPF_TAX)
                X = A;
            else if (BPF_MISCOP(in->code) == BPF_TXA)
                A = X;
            else
                return BPF_INVALID;
            break;
        default:
            return BPF_INVALID;
        }
    }
    return BPF_INVALID; /* fell off the end: the kernel rejects such a program */
}

static const char *verdict_name(uint32_t v)
{
    switch (v & SECCOMP_RET_ACTION_FULL) {
    case SECCOMP_RET_KILL_PROCESS: return "KILL_PROCESS";
    case SECCOMP_RET_KILL_THREAD: return "KILL_THREAD";
    case SECCOMP_RET_ALLOW: return "ALLOW";
    case SECCOMP_RET_ERRNO: return "ERRNO";
    case SECCOMP_RET_TRAP: return "TRAP";
    case SECCOMP_RET_TRACE: return "TRACE";
    case SECCOMP_RET_LOG: return "LOG";
    default: return v == BPF_INVALID ? "INVALID-BPF" : "other";
    }
}

/* ------------------------------------------------------------------ rule semantics */

/* What each documented argument rule means, stated independently of the filter code:
 * argument values the rule admits and values it refuses. Keyed by the rule's text in
 * the document (which another check requires to equal arg_rule_text). Arguments not
 * named are set to junk, to show the rule does not depend on them. */
#define JUNK 0x5a5a5a5a5a5aULL
#define NOARG UINT64_MAX /* "leave this argument junk" */
#define MAX_VECS 16

struct arg_vec {
    uint64_t a[6];
    const char *what;
};

struct rule_semantics {
    const char *text;
    struct arg_vec admit[MAX_VECS];
    struct arg_vec refuse[MAX_VECS];
};

#define V(what, a0, a1, a2, a3) {{a0, a1, a2, a3, NOARG, NOARG}, what}
#define PID ((uint64_t)SELF_PID)
#define NEG(x) ((uint64_t)(int64_t)(x))
#define HI (1ULL << 32)

static const struct rule_semantics SEMANTICS[] = {
    {"any",
     {V("zeros", 0, 0, 0, 0), V("junk", NOARG, NOARG, NOARG, NOARG),
      V("all ones", UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX)},
     {{{0}, NULL}}},
    {"fd == 0",
     {V("fd 0", 0, NOARG, NOARG, NOARG)},
     {V("fd 1", 1, NOARG, NOARG, NOARG), V("fd 2", 2, NOARG, NOARG, NOARG),
      V("fd 3", 3, NOARG, NOARG, NOARG), V("fd 0 with high bits", HI, NOARG, NOARG, NOARG),
      V("fd -1", NEG(-1), NOARG, NOARG, NOARG)}},
    {"fd == 1 or fd == 2",
     {V("fd 1", 1, NOARG, NOARG, NOARG), V("fd 2", 2, NOARG, NOARG, NOARG)},
     {V("fd 0", 0, NOARG, NOARG, NOARG), V("fd 3", 3, NOARG, NOARG, NOARG),
      V("fd 1 with high bits", HI | 1, NOARG, NOARG, NOARG),
      V("fd 2 with high bits", HI | 2, NOARG, NOARG, NOARG),
      V("fd -1", NEG(-1), NOARG, NOARG, NOARG)}},
    {"prot without PROT_EXEC; flags MAP_PRIVATE|MAP_ANONYMOUS, not shared",
     {V("rw private anon", NOARG, NOARG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS),
      V("none private anon noreserve", NOARG, NOARG, PROT_NONE,
        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE),
      V("r private anon fixed", NOARG, NOARG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED)},
     {V("rwx private anon", NOARG, NOARG, PROT_READ | PROT_WRITE | PROT_EXEC,
        MAP_PRIVATE | MAP_ANONYMOUS),
      V("x private anon", NOARG, NOARG, PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS),
      V("rw shared anon", NOARG, NOARG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS),
      V("rw shared-validate anon", NOARG, NOARG, PROT_READ | PROT_WRITE,
        MAP_SHARED_VALIDATE | MAP_ANONYMOUS),
      V("rw shared file", NOARG, NOARG, PROT_READ | PROT_WRITE, MAP_SHARED),
      V("r private file", NOARG, NOARG, PROT_READ, MAP_PRIVATE),
      V("rx private file", NOARG, NOARG, PROT_READ | PROT_EXEC, MAP_PRIVATE),
      V("rw anon without a type", NOARG, NOARG, PROT_READ | PROT_WRITE, MAP_ANONYMOUS)}},
    {"prot without PROT_EXEC",
     {V("r", NOARG, NOARG, PROT_READ, NOARG), V("rw", NOARG, NOARG, PROT_READ | PROT_WRITE, NOARG),
      V("none", NOARG, NOARG, PROT_NONE, NOARG)},
     {V("x", NOARG, NOARG, PROT_EXEC, NOARG), V("rx", NOARG, NOARG, PROT_READ | PROT_EXEC, NOARG),
      V("rwx", NOARG, NOARG, PROT_READ | PROT_WRITE | PROT_EXEC, NOARG)}},
    {"flags without MREMAP_FIXED or MREMAP_DONTUNMAP",
     {V("0", NOARG, NOARG, NOARG, 0), V("MAYMOVE", NOARG, NOARG, NOARG, MREMAP_MAYMOVE)},
     {V("MAYMOVE|FIXED", NOARG, NOARG, NOARG, MREMAP_MAYMOVE | MREMAP_FIXED),
      V("FIXED", NOARG, NOARG, NOARG, MREMAP_FIXED),
      V("MAYMOVE|DONTUNMAP", NOARG, NOARG, NOARG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP)}},
    {"advice == MADV_DONTNEED",
     {V("DONTNEED", NOARG, NOARG, MADV_DONTNEED, NOARG)},
     {V("FREE", NOARG, NOARG, MADV_FREE, NOARG), V("NORMAL", NOARG, NOARG, MADV_NORMAL, NOARG),
      V("REMOVE", NOARG, NOARG, MADV_REMOVE, NOARG),
      V("DONTFORK", NOARG, NOARG, MADV_DONTFORK, NOARG),
      V("MERGEABLE", NOARG, NOARG, MADV_MERGEABLE, NOARG),
      V("HUGEPAGE", NOARG, NOARG, MADV_HUGEPAGE, NOARG),
      V("WIPEONFORK", NOARG, NOARG, MADV_WIPEONFORK, NOARG),
      V("COLD (20)", NOARG, NOARG, 20, NOARG), V("PAGEOUT (21)", NOARG, NOARG, 21, NOARG)}},
    {"op is FUTEX_WAIT, FUTEX_WAKE, FUTEX_WAIT_BITSET (also with FUTEX_CLOCK_REALTIME) or "
     "FUTEX_WAKE_BITSET, with FUTEX_PRIVATE_FLAG",
     {V("WAIT_PRIVATE", NOARG, FUTEX_WAIT_PRIVATE, NOARG, NOARG),
      V("WAKE_PRIVATE", NOARG, FUTEX_WAKE_PRIVATE, NOARG, NOARG),
      V("WAIT_BITSET_PRIVATE", NOARG, FUTEX_WAIT_BITSET_PRIVATE, NOARG, NOARG),
      V("WAIT_BITSET_PRIVATE|CLOCK_REALTIME", NOARG,
        FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, NOARG, NOARG),
      V("WAKE_BITSET_PRIVATE", NOARG, FUTEX_WAKE_BITSET_PRIVATE, NOARG, NOARG)},
     {V("WAIT (shared)", NOARG, FUTEX_WAIT, NOARG, NOARG),
      V("WAKE (shared)", NOARG, FUTEX_WAKE, NOARG, NOARG),
      V("WAIT_BITSET (shared)", NOARG, FUTEX_WAIT_BITSET, NOARG, NOARG),
      V("REQUEUE_PRIVATE", NOARG, FUTEX_REQUEUE_PRIVATE, NOARG, NOARG),
      V("CMP_REQUEUE_PRIVATE", NOARG, FUTEX_CMP_REQUEUE_PRIVATE, NOARG, NOARG),
      V("WAKE_OP_PRIVATE", NOARG, FUTEX_WAKE_OP_PRIVATE, NOARG, NOARG),
      V("LOCK_PI_PRIVATE", NOARG, FUTEX_LOCK_PI_PRIVATE, NOARG, NOARG),
      V("WAIT_REQUEUE_PI_PRIVATE", NOARG, FUTEX_WAIT_REQUEUE_PI_PRIVATE, NOARG, NOARG),
      V("WAKE_PRIVATE|CLOCK_REALTIME", NOARG, FUTEX_WAKE_PRIVATE | FUTEX_CLOCK_REALTIME, NOARG,
        NOARG)}},
    {"clock is CLOCK_REALTIME, CLOCK_MONOTONIC or CLOCK_THREAD_CPUTIME_ID",
     {V("REALTIME", CLOCK_REALTIME, NOARG, NOARG, NOARG),
      V("MONOTONIC", CLOCK_MONOTONIC, NOARG, NOARG, NOARG),
      V("THREAD_CPUTIME_ID", CLOCK_THREAD_CPUTIME_ID, NOARG, NOARG, NOARG)},
     {V("PROCESS_CPUTIME_ID", CLOCK_PROCESS_CPUTIME_ID, NOARG, NOARG, NOARG),
      V("MONOTONIC_RAW", CLOCK_MONOTONIC_RAW, NOARG, NOARG, NOARG),
      V("REALTIME_COARSE", CLOCK_REALTIME_COARSE, NOARG, NOARG, NOARG),
      V("BOOTTIME", CLOCK_BOOTTIME, NOARG, NOARG, NOARG),
      V("TAI", CLOCK_TAI, NOARG, NOARG, NOARG),
      V("another thread's CPU clock (-6)", NEG(-6), NOARG, NOARG, NOARG),
      V("REALTIME with high bits", HI, NOARG, NOARG, NOARG)}},
    {"pid == own pid",
     {V("own pid", PID, NOARG, NOARG, NOARG)},
     {V("pid 0 (own group)", 0, NOARG, NOARG, NOARG), V("pid 1", 1, NOARG, NOARG, NOARG),
      V("pid -1 (everyone)", NEG(-1), NOARG, NOARG, NOARG),
      V("-own pid (group)", NEG(-SELF_PID), NOARG, NOARG, NOARG),
      V("own pid + 1", PID + 1, NOARG, NOARG, NOARG),
      V("own pid with high bits", HI | PID, NOARG, NOARG, NOARG)}},
    {"tgid == own pid and tid == own tid",
     {V("self, self", PID, PID, NOARG, NOARG)},
     {V("self, other tid", PID, PID + 1, NOARG, NOARG),
      V("other tgid, self tid", PID + 1, PID, NOARG, NOARG), V("1, 1", 1, 1, NOARG, NOARG),
      V("0, self", 0, PID, NOARG, NOARG), V("self, 0", PID, 0, NOARG, NOARG)}},
};

#undef V

static const struct rule_semantics *semantics_for(const char *text)
{
    for (size_t i = 0; i < sizeof SEMANTICS / sizeof SEMANTICS[0]; i++)
        if (strcmp(SEMANTICS[i].text, text) == 0)
            return &SEMANTICS[i];
    return NULL;
}

static void fill_args(const struct arg_vec *v, uint64_t out[6])
{
    for (int i = 0; i < 6; i++)
        out[i] = v->a[i] == NOARG ? JUNK + (uint64_t)i : v->a[i];
}

/* ------------------------------------------------------------------ PFC parsing */

struct pfc_entry {
    char name[64];
    int nr;
    bool unconditional; /* "action ALLOW;" directly under the syscall test */
};

struct pfc_info {
    struct pfc_entry e[128];
    int n;
    int arch_lines;
    char arch_line[128];
    bool default_kill;
    bool badarch_kill;
};

/* "# filter for syscall "NAME" (NR) [priority: ...]" -> name, nr. */
static bool parse_pfc_syscall(const char *body, char *name, size_t cap, int *nr)
{
    static const char lead[] = "# filter for syscall \"";
    if (strncmp(body, lead, sizeof lead - 1) != 0)
        return false;
    const char *start = body + sizeof lead - 1;
    const char *quote = strchr(start, '"');
    if (quote == NULL || (size_t)(quote - start) >= cap || strncmp(quote, "\" (", 3) != 0)
        return false;
    memcpy(name, start, (size_t)(quote - start));
    name[quote - start] = '\0';
    char *end;
    errno = 0;
    long v = strtol(quote + 3, &end, 10);
    if (errno != 0 || end == quote + 3 || *end != ')' || v < INT32_MIN || v > INT32_MAX)
        return false;
    *nr = (int)v;
    return true;
}

static void parse_pfc(const char *pfc, struct pfc_info *info)
{
    memset(info, 0, sizeof *info);
    char *copy = xstrdup(pfc);
    char *save = NULL;
    const char *prev_comment = NULL;
    struct pfc_entry *cur = NULL;
    int cur_depth = 0;
    for (char *line = strtok_r(copy, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        int depth = 0;
        while (line[depth] == ' ')
            depth++;
        const char *body = line + depth;
        char name[64];
        int nr;
        if (parse_pfc_syscall(body, name, sizeof name, &nr) && info->n < 128) {
            cur = &info->e[info->n++];
            snprintf(cur->name, sizeof cur->name, "%s", name);
            cur->nr = nr;
            cur->unconditional = false;
            cur_depth = depth;
        } else if (strncmp(body, "# filter for arch ", 18) == 0) {
            info->arch_lines++;
            snprintf(info->arch_line, sizeof info->arch_line, "%s", body + 18);
        } else if (cur != NULL && depth == cur_depth + 2 && strcmp(body, "action ALLOW;") == 0) {
            cur->unconditional = true;
        } else if (strcmp(body, "action KILL_PROCESS;") == 0 && prev_comment != NULL) {
            if (strcmp(prev_comment, "# default action") == 0)
                info->default_kill = true;
            if (strcmp(prev_comment, "# invalid architecture action") == 0)
                info->badarch_kill = true;
        }
        prev_comment = body[0] == '#' ? body : NULL;
        if (strncmp(body, "# default action", 16) == 0 ||
            strncmp(body, "# invalid architecture action", 29) == 0)
            cur = NULL;
    }
    free(copy);
}

static const struct pfc_entry *pfc_find(const struct pfc_info *info, const char *name)
{
    for (int i = 0; i < info->n; i++)
        if (strcmp(info->e[i].name, name) == 0)
            return &info->e[i];
    return NULL;
}

/* ------------------------------------------------------------------ checks */

static struct doc_table admissions;  /* | system call | x86_64 | aarch64 | rule | why | seen | */
static struct doc_table forbidden;   /* | not admitted | x86_64 | aarch64 | what | probe | */
static struct doc_table refused;     /* | call | refused argument | probe | */

static bool is_known_probe(const char *name)
{
    return probe_find(name) != NULL;
}

/* "open, create" or "-": every name must be a probe of the worker. */
static bool probes_known(const char *cell, char *bad, size_t cap)
{
    if (strcmp(cell, "-") == 0)
        return true;
    char *copy = xstrdup(cell);
    char *save = NULL;
    bool ok = true;
    for (char *p = strtok_r(copy, ",", &save); p != NULL; p = strtok_r(NULL, ",", &save)) {
        p = trim(p);
        if (!is_known_probe(p)) {
            snprintf(bad, cap, "%s", p);
            ok = false;
        }
    }
    free(copy);
    return ok;
}

static int admission_index(const char *name)
{
    for (int i = 0; i < admissions.nrows; i++)
        if (strcmp(admissions.row[i].cell[0], name) == 0)
            return i;
    return -1;
}

/* The number a document cell gives, or -1 for "none", or -2 if it is neither. */
static int doc_number(const char *cell)
{
    if (strcmp(cell, "none") == 0)
        return -1;
    char *end;
    long v = strtol(cell, &end, 10);
    if (*cell == '\0' || *end != '\0' || v < 0 || v > 100000)
        return -2;
    return (int)v;
}

static void check_document_shape(void)
{
    /* Every admission row: name, two numbers, rule, why, seen. */
    bool ok = admissions.found && admissions.nrows > 0;
    char detail[256] = "";
    for (int i = 0; ok && i < admissions.nrows; i++) {
        const struct doc_row *r = &admissions.row[i];
        if (r->ncells != 6) {
            snprintf(detail, sizeof detail, "row %d has %d cells, want 6", i + 1, r->ncells);
            ok = false;
        } else if (admission_index(r->cell[0]) != i) {
            snprintf(detail, sizeof detail, "%s is listed twice", r->cell[0]);
            ok = false;
        }
    }
    if (!admissions.found)
        snprintf(detail, sizeof detail, "no table headed '| system call | x86_64 | aarch64 |'");
    check(ok, "doc: admission table present and well formed", "%s", detail);

    ok = forbidden.found && forbidden.nrows > 0;
    detail[0] = '\0';
    for (int i = 0; ok && i < forbidden.nrows; i++) {
        const struct doc_row *r = &forbidden.row[i];
        if (r->ncells != 5) {
            snprintf(detail, sizeof detail, "row %d has %d cells, want 5", i + 1, r->ncells);
            ok = false;
        } else if (admission_index(r->cell[0]) >= 0) {
            snprintf(detail, sizeof detail, "%s is both admitted and not admitted", r->cell[0]);
            ok = false;
        }
    }
    if (!forbidden.found)
        snprintf(detail, sizeof detail, "no table headed '| not admitted |'");
    check(ok, "doc: 'Not admitted' table present, well formed, disjoint from the admissions",
          "%s", detail);
}

/* [guard allowlist] The C table and the document list the same calls, in order, and
 * the document's rule text is the C rule's text. */
static void check_doc_matches_c_table(void)
{
    char detail[512] = "";
    bool ok = (size_t)admissions.nrows == SYSCALL_ADMISSION_COUNT;
    if (!ok)
        snprintf(detail, sizeof detail, "document has %d rows, SYSCALL_ADMISSIONS has %zu",
                 admissions.nrows, SYSCALL_ADMISSION_COUNT);
    for (size_t i = 0; ok && i < SYSCALL_ADMISSION_COUNT; i++) {
        if (strcmp(admissions.row[i].cell[0], SYSCALL_ADMISSIONS[i].name) != 0) {
            snprintf(detail, sizeof detail, "row %zu: document says %s, C table says %s", i + 1,
                     admissions.row[i].cell[0], SYSCALL_ADMISSIONS[i].name);
            ok = false;
        }
    }
    check(ok, "doc and SYSCALL_ADMISSIONS list the same calls in the same order [guard allowlist]",
          "%s", detail);

    ok = (size_t)admissions.nrows == SYSCALL_ADMISSION_COUNT;
    snprintf(detail, sizeof detail, "%s", ok ? "" : "the row counts differ (see above)");
    for (size_t i = 0; ok && i < SYSCALL_ADMISSION_COUNT; i++) {
        const char *want = arg_rule_text(SYSCALL_ADMISSIONS[i].rule);
        if (strcmp(admissions.row[i].cell[3], want) != 0) {
            snprintf(detail, sizeof detail, "%s: document says '%s', arg_rule_text says '%s'",
                     SYSCALL_ADMISSIONS[i].name, admissions.row[i].cell[3], want);
            ok = false;
        }
    }
    check(ok, "doc rule text equals arg_rule_text of the C table's rule, row by row "
              "[guard argument rule]", "%s", detail);

    /* Every rule text the document uses has its meaning stated in this test. */
    ok = true;
    detail[0] = '\0';
    for (int i = 0; i < admissions.nrows; i++) {
        if (semantics_for(admissions.row[i].cell[3]) == NULL) {
            snprintf(detail, sizeof detail, "%s: no admitted/refused values in this test for '%s'",
                     admissions.row[i].cell[0], admissions.row[i].cell[3]);
            ok = false;
        }
    }
    check(ok, "every documented rule has admitted and refused values in this test", "%s", detail);
}

static void check_probe_references(void)
{
    char bad[64] = "";
    char detail[256] = "";
    bool ok = forbidden.found;
    for (int i = 0; i < forbidden.nrows; i++) {
        if (forbidden.row[i].ncells >= 5 && !probes_known(forbidden.row[i].cell[4], bad, sizeof bad)) {
            snprintf(detail, sizeof detail, "%s names unknown probe '%s'", forbidden.row[i].cell[0], bad);
            ok = false;
        }
    }
    check(ok, "doc: every probe named in 'Not admitted' is a probe of the worker", "%s", detail);

    ok = refused.found && refused.nrows > 0;
    detail[0] = '\0';
    if (!refused.found)
        snprintf(detail, sizeof detail, "no table headed '| call | refused argument | probe |'");
    for (int i = 0; ok && i < refused.nrows; i++) {
        const struct doc_row *r = &refused.row[i];
        if (r->ncells != 3) {
            snprintf(detail, sizeof detail, "row %d has %d cells, want 3", i + 1, r->ncells);
            ok = false;
        } else if (admission_index(r->cell[0]) < 0) {
            snprintf(detail, sizeof detail, "%s is not an admitted call", r->cell[0]);
            ok = false;
        } else if (!probes_known(r->cell[2], bad, sizeof bad) || strcmp(r->cell[2], "-") == 0) {
            snprintf(detail, sizeof detail, "%s names unknown probe '%s'", r->cell[0], r->cell[2]);
            ok = false;
        }
    }
    check(ok, "doc: every refused-argument row names an admitted call and a probe of the worker",
          "%s", detail);
}

/* Everything the document says of one architecture's filter, checked on its PFC and
 * by running its BPF. label names the filter in each check. Frees f. */
static void check_filter(const struct arch_info *arch, const char *label, struct filter *f)
{
    char name[256];
    char detail[1024];

    struct pfc_info pfc;
    parse_pfc(f->pfc, &pfc);
    char want_arch[64];
    snprintf(want_arch, sizeof want_arch, "%s (%u)", arch->name, arch->audit);
    snprintf(name, sizeof name, "%s: PFC has one architecture (%s), default and invalid-arch "
             "action KILL_PROCESS [guard default kill] [guard bad arch]", label, want_arch);
    check(pfc.arch_lines == 1 && strcmp(pfc.arch_line, want_arch) == 0 && pfc.default_kill &&
              pfc.badarch_kill,
          name, "%d arch lines (last '%s'), default kill %d, invalid-arch kill %d",
          pfc.arch_lines, pfc.arch_line, pfc.default_kill, pfc.badarch_kill);

    /* [guard allowlist] names and numbers: PFC == document == libseccomp's numbers. */
    bool ok = pfc.n == admissions.nrows;
    detail[0] = '\0';
    if (!ok)
        snprintf(detail, sizeof detail, "PFC admits %d calls, the document lists %d", pfc.n,
                 admissions.nrows);
    for (int i = 0; i < admissions.nrows; i++) {
        const char *call = admissions.row[i].cell[0];
        int doc_nr = doc_number(admissions.row[i].cell[arch->doc_column]);
        int lib_nr = seccomp_syscall_resolve_name_arch(arch->scmp, call);
        const struct pfc_entry *e = pfc_find(&pfc, call);
        if (e == NULL) {
            snprintf(detail, sizeof detail, "%s is documented but the filter does not admit it", call);
            ok = false;
        } else if (doc_nr != lib_nr || e->nr != lib_nr) {
            snprintf(detail, sizeof detail, "%s: document %s, libseccomp %d, filter %d", call,
                     admissions.row[i].cell[arch->doc_column], lib_nr, e->nr);
            ok = false;
        }
    }
    for (int i = 0; i < pfc.n; i++) {
        if (admission_index(pfc.e[i].name) < 0) {
            snprintf(detail, sizeof detail, "the filter admits %s (%d), which the document does not list",
                     pfc.e[i].name, pfc.e[i].nr);
            ok = false;
        }
    }
    snprintf(name, sizeof name, "%s: the filter admits exactly the documented calls, with the "
             "documented numbers [guard allowlist]", label);
    check(ok, name, "%s", detail);

    /* Calls with rule "any", and only those, are admitted without an argument check. */
    ok = true;
    detail[0] = '\0';
    for (int i = 0; i < pfc.n; i++) {
        int row = admission_index(pfc.e[i].name);
        if (row < 0)
            continue;
        bool any = strcmp(admissions.row[row].cell[3], "any") == 0;
        if (any != pfc.e[i].unconditional) {
            snprintf(detail, sizeof detail, "%s: rule '%s' but the filter %s", pfc.e[i].name,
                     admissions.row[row].cell[3],
                     pfc.e[i].unconditional ? "admits it unconditionally" : "checks arguments");
            ok = false;
        }
    }
    snprintf(name, sizeof name, "%s: exactly the calls with rule 'any' are admitted without an "
             "argument check (PFC) [guard argument rule]", label);
    check(ok, name, "%s", detail);

    /* [guard argument rule] run the BPF on what each rule admits and refuses. */
    for (int i = 0; i < admissions.nrows; i++) {
        const char *call = admissions.row[i].cell[0];
        const char *rule = admissions.row[i].cell[3];
        int nr = seccomp_syscall_resolve_name_arch(arch->scmp, call);
        const struct rule_semantics *sem = semantics_for(rule);
        snprintf(name, sizeof name, "%s: %s (%d) behaves as '%s' [guard argument rule]", label,
                 call, nr, rule);
        if (sem == NULL || nr < 0) {
            fail(name, "no semantics for the rule, or libseccomp does not know the call");
            continue;
        }
        ok = true;
        detail[0] = '\0';
        int admitted = 0, refused_n = 0;
        for (int v = 0; v < MAX_VECS && sem->admit[v].what != NULL; v++) {
            uint64_t a[6];
            fill_args(&sem->admit[v], a);
            uint32_t verdict = bpf_run(f, arch->audit, (uint32_t)nr, a);
            admitted++;
            if (verdict != SECCOMP_RET_ALLOW) {
                snprintf(detail, sizeof detail, "%s gives %s, want ALLOW", sem->admit[v].what,
                         verdict_name(verdict));
                ok = false;
            }
        }
        for (int v = 0; v < MAX_VECS && sem->refuse[v].what != NULL; v++) {
            uint64_t a[6];
            fill_args(&sem->refuse[v], a);
            uint32_t verdict = bpf_run(f, arch->audit, (uint32_t)nr, a);
            refused_n++;
            if (verdict != SECCOMP_RET_KILL_PROCESS) {
                snprintf(detail, sizeof detail, "%s gives %s, want KILL_PROCESS", sem->refuse[v].what,
                         verdict_name(verdict));
                ok = false;
            }
        }
        check(ok && admitted > 0, name, "%s", admitted > 0 ? detail : "no admitted values");
        (void)refused_n;
    }

    /* [guard default kill] every documented forbidden call is killed with any arguments. */
    for (int i = 0; i < forbidden.nrows; i++) {
        const struct doc_row *r = &forbidden.row[i];
        if (r->ncells != 5)
            continue;
        int doc_nr = doc_number(r->cell[arch->doc_column]);
        int lib_nr = seccomp_syscall_resolve_name_arch(arch->scmp, r->cell[0]);
        if (lib_nr < 0 || doc_nr < 0) {
            snprintf(name, sizeof name, "%s: not admitted: %s does not exist on this "
                     "architecture, as the document says", label, r->cell[0]);
            check(doc_nr == -1 && lib_nr < 0, name,
                  "document says '%s', libseccomp number %d", r->cell[arch->doc_column], lib_nr);
            continue;
        }
        snprintf(name, sizeof name, "%s: not admitted: %s (%d) is killed with any arguments "
                 "[guard default kill]", label, r->cell[0], lib_nr);
        if (doc_nr != lib_nr) {
            fail(name, "document says %d, libseccomp says %d", doc_nr, lib_nr);
            continue;
        }
        static const uint64_t zeros[6] = {0, 0, 0, 0, 0, 0};
        static const uint64_t junk[6] = {1, 2, 3, 4, 5, 6};
        static const uint64_t ones[6] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX,
                                         UINT64_MAX, UINT64_MAX};
        uint32_t v1 = bpf_run(f, arch->audit, (uint32_t)lib_nr, zeros);
        uint32_t v2 = bpf_run(f, arch->audit, (uint32_t)lib_nr, junk);
        uint32_t v3 = bpf_run(f, arch->audit, (uint32_t)lib_nr, ones);
        check(v1 == SECCOMP_RET_KILL_PROCESS && v2 == SECCOMP_RET_KILL_PROCESS &&
                  v3 == SECCOMP_RET_KILL_PROCESS,
              name, "verdicts %s / %s / %s", verdict_name(v1), verdict_name(v2), verdict_name(v3));
    }

    /* [guard default kill] every number outside the table is killed: the allowlist has
     * no call this document does not list, under any name. */
    ok = true;
    detail[0] = '\0';
    int killed = 0;
    for (uint32_t nr = 0; nr < 1024; nr++) {
        char *callname = seccomp_syscall_resolve_num_arch(arch->scmp, (int)nr);
        bool listed = false;
        for (int i = 0; i < admissions.nrows; i++)
            if (seccomp_syscall_resolve_name_arch(arch->scmp, admissions.row[i].cell[0]) == (int)nr)
                listed = true;
        if (listed) {
            free(callname);
            continue;
        }
        static const uint64_t zeros[6] = {0, 0, 0, 0, 0, 0};
        uint32_t v = bpf_run(f, arch->audit, nr, zeros);
        if (v != SECCOMP_RET_KILL_PROCESS) {
            snprintf(detail, sizeof detail, "number %u (%s) gives %s", nr,
                     callname ? callname : "unnamed", verdict_name(v));
            ok = false;
        } else {
            killed++;
        }
        free(callname);
    }
    snprintf(name, sizeof name, "%s: every other number 0..1023 is killed (%d numbers) "
             "[guard default kill]", label, killed);
    check(ok, name, "%s", detail);

    /* [guard bad arch] the filter's own calls, under any other architecture, are killed. */
    static const uint32_t other_arches[] = {AUDIT_ARCH_I386, AUDIT_ARCH_X86_64, AUDIT_ARCH_ARM,
                                            AUDIT_ARCH_AARCH64, AUDIT_ARCH_PPC64LE,
                                            AUDIT_ARCH_RISCV64, 0};
    ok = true;
    detail[0] = '\0';
    for (size_t a = 0; a < sizeof other_arches / sizeof other_arches[0]; a++) {
        if (other_arches[a] == arch->audit)
            continue;
        for (uint32_t nr = 0; nr < 512; nr++) {
            static const uint64_t zeros[6] = {0, 0, 0, 0, 0, 0};
            uint32_t v = bpf_run(f, other_arches[a], nr, zeros);
            if (v != SECCOMP_RET_KILL_PROCESS) {
                snprintf(detail, sizeof detail, "arch 0x%x number %u gives %s", other_arches[a], nr,
                         verdict_name(v));
                ok = false;
            }
        }
    }
    snprintf(name, sizeof name, "%s: every call under another architecture (i386 int 0x80, arm, "
             "...) is killed [guard bad arch]", label);
    check(ok, name, "%s", detail);

    if (arch->audit == AUDIT_ARCH_X86_64) {
        /* [guard x32] x32 numbers arrive with the x86_64 arch and bit 30 set. They must
         * be killed even where the bits below name an admitted call (x32 read of fd 0,
         * x32 getpid) and for the x32-only numbers 512..547. */
        ok = true;
        detail[0] = '\0';
        int n = 0;
        for (uint32_t nr = 0; nr < 1024; nr++) {
            static const uint64_t zeros[6] = {0, 0, 0, 0, 0, 0};
            static const uint64_t fd1[6] = {1, 0, 0, 0, 0, 0};
            uint32_t x = 0x40000000U | nr;
            uint32_t v1 = bpf_run(f, AUDIT_ARCH_X86_64, x, zeros);
            uint32_t v2 = bpf_run(f, AUDIT_ARCH_X86_64, x, fd1);
            n++;
            if (v1 != SECCOMP_RET_KILL_PROCESS || v2 != SECCOMP_RET_KILL_PROCESS) {
                snprintf(detail, sizeof detail, "x32 number 0x%x gives %s / %s", x, verdict_name(v1),
                         verdict_name(v2));
                ok = false;
            }
        }
        snprintf(name, sizeof name, "x86_64: x32 numbers (0x40000000 | 0..1023, incl. getpid "
                 "0x40000027 and read 0x40000000) are killed (%d numbers) [guard x32]", n);
        check(ok, name, "%s", detail);
    }

    free(f->pfc);
    free(f->prog);
}


static void check_arch(const struct arch_info *arch)
{
    char name[256];

    scmp_filter_ctx ctx = seccomp_policy_build(arch->scmp, SELF_PID);
    snprintf(name, sizeof name, "%s: seccomp_policy_build builds the filter", arch->name);
    if (!check(ctx != NULL, name, "returned NULL"))
        return;

    /* [guard default kill] [guard bad arch] [guard tsync] from libseccomp's own view. */
    uint32_t def = 0, bad = 0, tsync = 0, nnp = 0;
    bool got = seccomp_attr_get(ctx, SCMP_FLTATR_ACT_DEFAULT, &def) == 0 &&
               seccomp_attr_get(ctx, SCMP_FLTATR_ACT_BADARCH, &bad) == 0 &&
               seccomp_attr_get(ctx, SCMP_FLTATR_CTL_TSYNC, &tsync) == 0 &&
               seccomp_attr_get(ctx, SCMP_FLTATR_CTL_NNP, &nnp) == 0;
    snprintf(name, sizeof name,
             "%s: default action KILL_PROCESS, bad-arch action KILL_PROCESS, TSYNC and "
             "no_new_privs set [guard default kill] [guard bad arch] [guard tsync]", arch->name);
    check(got && def == SCMP_ACT_KILL_PROCESS && bad == SCMP_ACT_KILL_PROCESS && tsync == 1 &&
              nnp == 1,
          name, "attr_get %s: default 0x%x, badarch 0x%x, tsync %u, nnp %u", got ? "ok" : "failed",
          def, bad, tsync, nnp);

    struct filter f;
    char why[256];
    bool exported = export_filter(ctx, &f, why, sizeof why);
    seccomp_release(ctx);
    snprintf(name, sizeof name, "%s: filter exports as PFC and BPF", arch->name);
    if (!check(exported, name, "%s", why))
        return;
    check_filter(arch, arch->name, &f);
}

/* The filter another build made: mk/aarch64.mk exports the arm64 build's filter
 * (tests/tools/export_filter.c, the worker's policy object and its static libseccomp,
 * run under qemu-aarch64-static) into build/aarch64/filter.{pfc,bpf}. Its absence is
 * a failure: scripts/test.sh builds it. */
static void check_built(const struct arch_info *arch, const char *label, const char *build,
                        const char *stem)
{
    char pfc_path[4096], bpf_path[4096], name[256];
    snprintf(pfc_path, sizeof pfc_path, "%s/%s.pfc", build, stem);
    snprintf(bpf_path, sizeof bpf_path, "%s/%s.bpf", build, stem);
    struct filter f = {0};
    f.pfc = read_text_file(pfc_path);
    FILE *bpf = fopen(bpf_path, "rb");
    char *raw = bpf != NULL ? slurp_stream(bpf) : NULL;
    long size = bpf != NULL ? ftell(bpf) : -1;
    if (bpf != NULL)
        fclose(bpf);
    snprintf(name, sizeof name, "%s: the exported filter (%s.pfc, %s.bpf) is there and whole "
             "(make aarch64)", label, stem, stem);
    if (!check(f.pfc != NULL && raw != NULL && size > 0 && size % (long)sizeof(struct sock_filter) == 0,
               name, "%s: %s; %s: %ld bytes", pfc_path, f.pfc != NULL ? "read" : "missing",
               bpf_path, size)) {
        free(f.pfc);
        free(raw);
        return;
    }
    f.prog = (struct sock_filter *)(void *)raw;
    f.len = (size_t)size / sizeof(struct sock_filter);
    check_filter(arch, label, &f);
}

int main(void)
{
    char docpath[4096];
    const char *build = harness_build_dir();
    snprintf(docpath, sizeof docpath, "%s/../%s", build, DOC_REL);
    char *doc = read_text_file(docpath);
    if (!check(doc != NULL, "doc: docs/syscall-admission.md is readable", "%s: %s", docpath,
               strerror(errno)))
        return harness_finish();

    parse_table(doc, "| system call | x86_64 | aarch64 | argument rule |", &admissions);
    parse_table(doc, "| not admitted | x86_64 | aarch64 |", &forbidden);
    parse_table(doc, "| call | refused argument | probe |", &refused);

    check_document_shape();
    check_doc_matches_c_table();
    check_probe_references();
    for (size_t i = 0; i < sizeof ARCHES / sizeof ARCHES[0]; i++)
        check_arch(&ARCHES[i]);
    check_built(&ARCHES[1], "aarch64 build", build, "aarch64/filter");

    free_table(&admissions);
    free_table(&forbidden);
    free_table(&refused);
    free(doc);
    return harness_finish();
}
