/* Step 6 of the Linux confinement: the seccomp allowlist, kept as one readable table.
 * docs/syscall-admission.md lists the same rows; tests/t_syscall_table.c keeps the two
 * equal for x86_64 and aarch64 by building this policy's filter for each architecture
 * and comparing the system calls it admits with the document.
 *
 * Default action KILL_PROCESS, bad architecture KILL_PROCESS (this also kills the
 * i386 int 0x80 entry and x32 numbers on x86_64), installed with TSYNC. */
#ifndef BASAL_WORKER_SECCOMP_POLICY_H
#define BASAL_WORKER_SECCOMP_POLICY_H

#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The argument rule of one admitted system call. */
enum arg_rule {
    ARG_ANY,                 /* no argument restriction */
    ARG_FD_STDIN,            /* arg0 == 0 */
    ARG_FD_STDOUT_STDERR,    /* arg0 == 1 or arg0 == 2 */
    ARG_MMAP_PRIVATE_ANON,   /* prot without PROT_EXEC; flags private and anonymous */
    ARG_PROT_NO_EXEC,        /* arg2 (prot) without PROT_EXEC */
    ARG_MREMAP_NO_FIXED,     /* flags without MREMAP_FIXED or MREMAP_DONTUNMAP */
    ARG_MADVISE_DONTNEED,    /* advice == MADV_DONTNEED */
    ARG_FUTEX_PRIVATE,       /* op is a private wait or wake */
    ARG_CLOCK_OWN,           /* clock is REALTIME, MONOTONIC or THREAD_CPUTIME_ID */
    ARG_PID_SELF,            /* kill: pid == own pid */
    ARG_TGID_TID_SELF,       /* tgkill: tgid == own pid and tid == own tid */
};

struct syscall_admission {
    const char *name;   /* the system call's name as libseccomp resolves it */
    enum arg_rule rule;
    const char *why;    /* one line; docs/syscall-admission.md says more */
};

/* The table, in document order. */
extern const struct syscall_admission SYSCALL_ADMISSIONS[];
extern const size_t SYSCALL_ADMISSION_COUNT;

/* The words docs/syscall-admission.md uses for a rule ("fd == 0", ...). */
const char *arg_rule_text(enum arg_rule rule);

/* Builds the filter for one architecture (SCMP_ARCH_NATIVE for the running worker;
 * others for the table test), admitting kill/tgkill only for self_pid. Returns NULL
 * if any rule cannot be added: the caller refuses, never loads a partial filter. */
scmp_filter_ctx seccomp_policy_build(uint32_t arch, pid_t self_pid);

#endif
