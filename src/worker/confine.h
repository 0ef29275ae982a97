/* The worker's confinement before its first read of stdin: one contract, one file per
 * operating system, chosen by the Makefile (no #ifdef per platform):
 *   worker/confine_linux.c    built for Linux (the native build and mk/aarch64.mk)
 *   worker/confine_windows.c  built for Windows by mk/windows.mk (sandbox.md "Windows")
 *   worker/confine_macos.c    built for macOS by mk/macos.mk (Seatbelt, sandbox.md
 *                             "macOS"; compile-checked here, run by the CI job)
 * Every platform's confine() either returns with every step of its sequence in force or
 * refuses: exit 70 with "refusing to run unconfined: <token>" (worker/refuse.h), never a
 * weaker sandbox. Its struct confinement is what the Welcome reports.
 *
 * Linux's sequence:
 *   1 startup checks      2 close descriptors      3 no_new_privs, non-dumpable
 *   4 Landlock            5 close descriptors again 6 seccomp allowlist (TSYNC)
 * and, in engine mode, the CPU timer (cpu_timer.h) just before step 6.
 * Tokens of step 3 and 6:
 *   no-new-privs   PR_SET_NO_NEW_PRIVS failed or did not take effect
 *   dumpable       PR_SET_DUMPABLE 0 failed or did not take effect
 *   seccomp        the filter could not be built or loaded
 *   cpu-timer      the CPU timer could not be armed */
#ifndef BASAL_WORKER_CONFINE_H
#define BASAL_WORKER_CONFINE_H

#include "proto/confinement.h"

#include <stdbool.h>

struct confinement {
    const char *os; /* the Welcome's os: "linux", "macos", "windows" (confine_NAME.c) */
    bool seccomp;
    enum landlock_policy landlock_policy;
    unsigned landlock_runtime_abi;
    unsigned landlock_applied_abi;
    bool seatbelt; /* macOS (confine_macos.c): the Seatbelt profile is in force */
    /* Windows (confine_windows.c), each set only once the whole sequence passed */
    bool windows_lpac_token;          /* the LPAC token attested */
    bool windows_untrusted_integrity; /* the primary lowered to Untrusted */
    bool windows_no_thread_token;     /* no impersonation token left on the thread */
    bool windows_mitigations;         /* every required mitigation in force */
    bool windows_handle_inventory;    /* the handle table fits one image profile */
};

struct confine_options {
    enum landlock_policy landlock_policy;
    bool cpu_timer; /* engine mode: arm the CPU timer before the filter */
#ifdef BASAL_TEST_HOOKS
    bool test_skip_seccomp; /* test builds only: proves Landlock alone is a layer */
#endif
};

/* Runs the sequence; never returns unless the worker is confined. */
struct confinement confine(const struct confine_options *options);

/* Work that needs forbidden calls but must be done once before the filter: the time
 * zone file, the allocator's first arena. Called by confine() before step 1. */
void confine_preload(void);

#endif
