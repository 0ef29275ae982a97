/* Accepting a worker: the handshake and every check before it may see flow code.
 *
 * A worker is accepted only if its Welcome speaks our protocol version, reports
 * os "linux" and seccomp installed, reports the Landlock policy we asked for, and its
 * Landlock state matches the kernel's view taken by the parent itself: under the
 * required policy the applied ABI is exactly min(kernel ABI, LANDLOCK_ABI_KNOWN);
 * under the optional policy the worker may run without Landlock only when the kernel
 * has none. Then the kernel must confirm it in /proc/<pid>/status: Seccomp 2,
 * NoNewPrivs 1, Threads 1, and exactly one more seccomp filter than the parent has:
 * filters are inherited, so "Seccomp 2" alone would also show a worker whose own
 * filter load was faked under a filter of the parent's (a container's, say). A
 * worker that fails anything is killed. */
#ifndef BASAL_SUPERVISOR_WORKER_CHECK_H
#define BASAL_SUPERVISOR_WORKER_CHECK_H

#include "supervisor/proc_status.h"
#include "supervisor/welcome_rules.h"
#include "supervisor/worker_proc.h"
#include "proto/message.h"

#include <stdbool.h>
#include <stddef.h>

#define WORKER_WELCOME_TIMEOUT_MS 10000

/* What the parent saw of one worker, accepted or not. */
struct worker_report {
    bool accepted;
    bool started;              /* the process was started (then refused, if not accepted) */
    char reason[256];          /* why not, one line; empty when accepted */
    bool have_welcome;
    uint32_t protocol_version;
    char engine[64];
    char worker_version[64];
    char os[16];
    bool seccomp;
    enum landlock_policy landlock_policy;
    unsigned landlock_runtime_abi;
    unsigned landlock_applied_abi;
    int kernel_landlock_abi;   /* the parent's own question to the kernel */
    bool have_status;
    struct proc_status status; /* /proc/<pid>/status after the Welcome */
    int parent_seccomp_filters; /* the parent's own, from /proc/self/status */
    char worker_log[512];      /* what the worker said on stderr (e.g. its refusal) */
};

/* Pure check of a Welcome: welcome_rules_accept_welcome for this parent's os, then
 * (Linux's alone) the policy and the kernel's Landlock ABI.
 * Returns true, or false with a one-line reason. */
bool welcome_acceptable(const struct proto_welcome *welcome, enum landlock_policy policy,
                        int kernel_landlock_abi, char *why, size_t why_cap);

/* Pure check of the kernel's view of an accepted worker, given the parent's own
 * number of seccomp filters. */
bool status_acceptable(const struct proc_status *status, int parent_filters, char *why,
                       size_t why_cap);

/* Sends Hello, reads the Welcome within timeout_ms, checks it and the kernel's view.
 * On refusal the worker is killed (proc->pid becomes -1). Returns report->accepted. */
bool worker_handshake(struct worker_proc *proc, enum landlock_policy policy, int timeout_ms,
                      struct worker_report *report);

/* Locates, spawns and checks a worker under policy (flow limits). On acceptance the
 * worker stays alive in *proc; otherwise it has been killed. Returns accepted. */
bool worker_start_checked(enum landlock_policy policy, struct worker_proc *proc,
                          struct worker_report *report);

/* Only locates and spawns it (report->started, or the reason it could not start): it
 * confines itself meanwhile, and is accepted by nothing until worker_handshake. */
bool worker_start_ahead(const char *path, enum landlock_policy policy,
                   const struct worker_limits *limits, struct worker_proc *proc,
                   struct worker_report *report);

/* The same with the worker's path (NULL: worker_locate), its resource limits and the
 * Welcome timeout chosen by the caller (the pool: per profile). report->started says
 * whether a process was started at all. */
bool worker_start_checked_with(const char *path, enum landlock_policy policy,
                               const struct worker_limits *limits, int welcome_timeout_ms,
                               struct worker_proc *proc, struct worker_report *report);

#endif
