#include "worker/seccomp_policy.h"

#include <linux/futex.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MREMAP_FIXED
#define MREMAP_FIXED 2
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

/* Keep this table in the same order as docs/syscall-admission.md. */
const struct syscall_admission SYSCALL_ADMISSIONS[] = {
    {"read", ARG_FD_STDIN, "frames from the parent arrive on stdin"},
    {"readv", ARG_FD_STDIN, "glibc may gather reads on stdin"},
    {"write", ARG_FD_STDOUT_STDERR, "frames to the parent on stdout, logs on stderr"},
    {"writev", ARG_FD_STDOUT_STDERR, "header and payload of a frame in one call"},
    {"ppoll", ARG_ANY, "waits for stdin once the short spin on it gave up"},
    {"mmap", ARG_MMAP_PRIVATE_ANON, "malloc of large blocks and arena growth"},
    {"munmap", ARG_ANY, "free of large blocks"},
    {"mprotect", ARG_PROT_NO_EXEC, "malloc commits arena pages; never executable"},
    {"mremap", ARG_MREMAP_NO_FIXED, "realloc of large blocks grows in place or moves"},
    {"madvise", ARG_MADVISE_DONTNEED, "malloc returns freed arena pages to the kernel"},
    {"brk", ARG_ANY, "malloc's main arena"},
    {"futex", ARG_FUTEX_PRIVATE, "glibc locks, uncontended in a single thread"},
    {"clock_gettime", ARG_CLOCK_OWN, "the CPU budget (thread CPU clock); time when the vDSO falls back"},
    {"clock_nanosleep", ARG_CLOCK_OWN, "sleep (glibc's nanosleep uses it)"},
    {"gettimeofday", ARG_ANY, "QuickJS reads the realtime clock with it; the vDSO's fallback"},
    {"nanosleep", ARG_ANY, "sleep"},
    {"getrandom", ARG_ANY, "random bytes for the engine's hash seeds"},
    {"rt_sigreturn", ARG_ANY, "return from the worker's own signal handlers (the CPU timer's)"},
    {"rt_sigprocmask", ARG_ANY, "abort() blocks and unblocks signals"},
    {"rt_sigaction", ARG_ANY, "abort() resets the SIGABRT handler"},
    {"sigaltstack", ARG_ANY, "a handler stack for the worker's own signals"},
    {"getpid", ARG_ANY, "abort() names its own process"},
    {"gettid", ARG_ANY, "abort() names its own thread"},
    {"kill", ARG_PID_SELF, "signal itself only"},
    {"tgkill", ARG_TGID_TID_SELF, "abort() raises SIGABRT on itself only"},
    {"sched_yield", ARG_ANY, "glibc spin loops; once after Welcome and after a Finished that followed host calls, so the parent reads it first"},
    {"restart_syscall", ARG_ANY, "the kernel restarts an interrupted sleep"},
    {"exit", ARG_ANY, "thread exit"},
    {"exit_group", ARG_ANY, "process exit"},
};
const size_t SYSCALL_ADMISSION_COUNT = sizeof SYSCALL_ADMISSIONS / sizeof SYSCALL_ADMISSIONS[0];

const char *arg_rule_text(enum arg_rule rule)
{
    switch (rule) {
    case ARG_ANY: return "any";
    case ARG_FD_STDIN: return "fd == 0";
    case ARG_FD_STDOUT_STDERR: return "fd == 1 or fd == 2";
    case ARG_MMAP_PRIVATE_ANON: return "prot without PROT_EXEC; flags MAP_PRIVATE|MAP_ANONYMOUS, not shared";
    case ARG_PROT_NO_EXEC: return "prot without PROT_EXEC";
    case ARG_MREMAP_NO_FIXED: return "flags without MREMAP_FIXED or MREMAP_DONTUNMAP";
    case ARG_MADVISE_DONTNEED: return "advice == MADV_DONTNEED";
    case ARG_FUTEX_PRIVATE: return "op is FUTEX_WAIT, FUTEX_WAKE, FUTEX_WAIT_BITSET (also with FUTEX_CLOCK_REALTIME) or FUTEX_WAKE_BITSET, with FUTEX_PRIVATE_FLAG";
    case ARG_CLOCK_OWN: return "clock is CLOCK_REALTIME, CLOCK_MONOTONIC or CLOCK_THREAD_CPUTIME_ID";
    case ARG_PID_SELF: return "pid == own pid";
    case ARG_TGID_TID_SELF: return "tgid == own pid and tid == own tid";
    }
    return "?";
}

/* Arguments that are C ints are compared on their low 32 bits only where a wider
 * value could not change what the kernel does; fds and pids are compared whole, so
 * stray high bits make the call fail closed (killed), never admitted. */
#define LOW32 0xffffffffULL

/* Built field by field: libseccomp's SCMP_Ax macros leave fields implicit, which
 * clang's -Wmissing-field-initializers rejects. */
static struct scmp_arg_cmp arg_eq(unsigned arg, scmp_datum_t value)
{
    struct scmp_arg_cmp c = {.arg = arg, .op = SCMP_CMP_EQ, .datum_a = value, .datum_b = 0};
    return c;
}

static struct scmp_arg_cmp arg_masked_eq(unsigned arg, scmp_datum_t mask, scmp_datum_t value)
{
    struct scmp_arg_cmp c = {.arg = arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = mask,
                             .datum_b = value};
    return c;
}

static int add(scmp_filter_ctx ctx, int nr, unsigned count, const struct scmp_arg_cmp *cmp)
{
    return seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, count, cmp);
}

static int add_rule(scmp_filter_ctx ctx, int nr, enum arg_rule rule, pid_t self)
{
    static const unsigned long futex_ops[] = {
        FUTEX_WAIT | FUTEX_PRIVATE_FLAG,
        FUTEX_WAKE | FUTEX_PRIVATE_FLAG,
        FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
        FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME,
        FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG,
    };
    static const unsigned long clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC,
                                           CLOCK_THREAD_CPUTIME_ID};
    int rc = 0;
    switch (rule) {
    case ARG_ANY:
        return add(ctx, nr, 0, NULL);
    case ARG_FD_STDIN: {
        struct scmp_arg_cmp c[] = {arg_eq(0, 0)};
        return add(ctx, nr, 1, c);
    }
    case ARG_FD_STDOUT_STDERR: {
        struct scmp_arg_cmp out[] = {arg_eq(0, 1)};
        struct scmp_arg_cmp err[] = {arg_eq(0, 2)};
        rc = add(ctx, nr, 1, out);
        return rc != 0 ? rc : add(ctx, nr, 1, err);
    }
    case ARG_MMAP_PRIVATE_ANON: {
        const unsigned long kind = MAP_SHARED | MAP_PRIVATE | MAP_ANONYMOUS;
        struct scmp_arg_cmp c[] = {
            arg_masked_eq(2, PROT_EXEC, 0),
            arg_masked_eq(3, kind, MAP_PRIVATE | MAP_ANONYMOUS),
        };
        return add(ctx, nr, 2, c);
    }
    case ARG_PROT_NO_EXEC: {
        struct scmp_arg_cmp c[] = {arg_masked_eq(2, PROT_EXEC, 0)};
        return add(ctx, nr, 1, c);
    }
    case ARG_MREMAP_NO_FIXED: {
        struct scmp_arg_cmp c[] = {
            arg_masked_eq(3, MREMAP_FIXED | MREMAP_DONTUNMAP, 0)};
        return add(ctx, nr, 1, c);
    }
    case ARG_MADVISE_DONTNEED: {
        struct scmp_arg_cmp c[] = {arg_masked_eq(2, LOW32, MADV_DONTNEED)};
        return add(ctx, nr, 1, c);
    }
    case ARG_FUTEX_PRIVATE:
        for (size_t i = 0; rc == 0 && i < sizeof futex_ops / sizeof futex_ops[0]; i++) {
            struct scmp_arg_cmp c[] = {arg_masked_eq(1, LOW32, futex_ops[i])};
            rc = add(ctx, nr, 1, c);
        }
        return rc;
    case ARG_CLOCK_OWN:
        for (size_t i = 0; rc == 0 && i < sizeof clocks / sizeof clocks[0]; i++) {
            struct scmp_arg_cmp c[] = {arg_eq(0, clocks[i])};
            rc = add(ctx, nr, 1, c);
        }
        return rc;
    case ARG_PID_SELF: {
        struct scmp_arg_cmp c[] = {arg_eq(0, (scmp_datum_t)self)};
        return add(ctx, nr, 1, c);
    }
    case ARG_TGID_TID_SELF: {
        /* The worker is single-threaded (a startup check), so its tid is its pid. */
        struct scmp_arg_cmp c[] = {arg_eq(0, (scmp_datum_t)self),
                                   arg_eq(1, (scmp_datum_t)self)};
        return add(ctx, nr, 2, c);
    }
    }
    return -1;
}

scmp_filter_ctx seccomp_policy_build(uint32_t arch, pid_t self_pid)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
    if (ctx == NULL)
        return NULL;
    if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0 ||
        seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) != 0)
        goto fail;
    if (arch != SCMP_ARCH_NATIVE && arch != seccomp_arch_native()) {
        if (seccomp_arch_add(ctx, arch) != 0 || seccomp_arch_remove(ctx, SCMP_ARCH_NATIVE) != 0)
            goto fail;
    }
    for (size_t i = 0; i < SYSCALL_ADMISSION_COUNT; i++) {
        int nr = seccomp_syscall_resolve_name_arch(
            arch == SCMP_ARCH_NATIVE ? seccomp_arch_native() : arch, SYSCALL_ADMISSIONS[i].name);
        if (nr == __NR_SCMP_ERROR || nr < 0)
            goto fail;
        if (arch != SCMP_ARCH_NATIVE && arch != seccomp_arch_native()) {
            /* rule_add takes native numbers and translates them for each arch in
             * the filter, so name the call by its native number. */
            nr = seccomp_syscall_resolve_name(SYSCALL_ADMISSIONS[i].name);
            if (nr == __NR_SCMP_ERROR)
                goto fail;
        }
        if (add_rule(ctx, nr, SYSCALL_ADMISSIONS[i].rule, self_pid) != 0)
            goto fail;
    }
    return ctx;
fail:
    seccomp_release(ctx);
    return NULL;
}
