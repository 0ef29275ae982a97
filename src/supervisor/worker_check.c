#include "supervisor/worker_check.h"

#include "supervisor/kernel_facts.h"
#include "supervisor/welcome_rules.h"
#include "supervisor/worker_launch.h"
#include "supervisor/worker_channel.h"
#include "proto/channel.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define REFUSE(...)                                                                          \
    do {                                                                                     \
        snprintf(why, why_cap, __VA_ARGS__);                                                 \
        return false;                                                                        \
    } while (0)

bool welcome_acceptable(const struct proto_welcome *welcome, enum landlock_policy policy,
                        int kernel_landlock_abi, char *why, size_t why_cap)
{
    if (!welcome_rules_accept_welcome(worker_launch_host_os(), welcome, why, why_cap))
        return false;
    if (welcome->landlock_policy != policy)
        REFUSE("Welcome reports Landlock policy %d, asked for %d", (int)welcome->landlock_policy,
               (int)policy);
    if (kernel_landlock_abi < 0)
        REFUSE("cannot ask the kernel for its Landlock ABI");
    unsigned kernel_abi = (unsigned)kernel_landlock_abi;
    if (kernel_abi == 0) {
        if (policy == LANDLOCK_POLICY_REQUIRED)
            REFUSE("the kernel has no Landlock and the policy requires it");
        if (welcome->landlock_applied_abi != 0 || welcome->landlock_runtime_abi != 0)
            REFUSE("Welcome claims Landlock ABI %u on a kernel without Landlock",
                   (unsigned)welcome->landlock_applied_abi);
        return true;
    }
    /* The kernel has Landlock: both policies require it at the full ABI. */
    if (welcome->landlock_runtime_abi != kernel_abi)
        REFUSE("Welcome reports kernel Landlock ABI %u, the kernel says %u",
               (unsigned)welcome->landlock_runtime_abi, kernel_abi);
    if (welcome->landlock_applied_abi != expected_landlock_abi(kernel_abi))
        REFUSE("Welcome reports Landlock ABI %u applied, expected %u",
               (unsigned)welcome->landlock_applied_abi, expected_landlock_abi(kernel_abi));
    return true;
}

bool status_acceptable(const struct proc_status *status, int parent_filters, char *why,
                       size_t why_cap)
{
    if (status->seccomp != 2)
        REFUSE("kernel reports Seccomp %d, expected 2 (filter)", status->seccomp);
    if (status->no_new_privs != 1)
        REFUSE("kernel reports NoNewPrivs %d, expected 1", status->no_new_privs);
    if (status->threads != 1)
        REFUSE("kernel reports %d threads, expected 1", status->threads);
    if (parent_filters < 0 || status->seccomp_filters != parent_filters + 1)
        REFUSE("kernel reports %d seccomp filters, expected the parent's %d plus the worker's own",
               status->seccomp_filters, parent_filters);
    return true;
}

static void copy_text(char *dst, size_t cap, const struct proto_text *text)
{
    snprintf(dst, cap, "%.*s", (int)text->len, text->str != NULL ? text->str : "");
}

static void record_welcome(struct worker_report *report, const struct proto_welcome *w)
{
    report->have_welcome = true;
    report->protocol_version = w->protocol_version;
    copy_text(report->engine, sizeof report->engine, &w->engine);
    copy_text(report->worker_version, sizeof report->worker_version, &w->worker_version);
    copy_text(report->os, sizeof report->os, &w->os);
    report->seccomp = w->seccomp;
    report->landlock_policy = w->landlock_policy;
    report->landlock_runtime_abi = w->landlock_runtime_abi;
    report->landlock_applied_abi = w->landlock_applied_abi;
}

static bool refuse_worker(struct worker_proc *proc, struct worker_report *report)
{
    report->accepted = false;
    /* Whatever the worker said (its refusal token) helps the operator. */
    worker_kill_keep_log(proc, report->worker_log, sizeof report->worker_log);
    return false;
}

bool worker_handshake(struct worker_proc *proc, enum landlock_policy policy, int timeout_ms,
                      struct worker_report *report)
{
    memset(report, 0, sizeof *report);
    report->kernel_landlock_abi = kernel_landlock_abi();

    struct wire_buf scratch;
    wire_buf_init(&scratch);
    struct proto_msg hello;
    memset(&hello, 0, sizeof hello);
    hello.tag = PROTO_HELLO;
    hello.hello.version = PROTO_VERSION;
    enum frame_result sent = FRAME_OK;
    enum proto_error encoded = proto_send(proc->to_worker, &hello, &scratch, &sent);
    wire_buf_free(&scratch);
    if (encoded != PROTO_OK || sent != FRAME_OK) {
        snprintf(report->reason, sizeof report->reason, "cannot send Hello: %s",
                 sent == FRAME_IO_ERROR ? strerror(errno) : frame_result_name(sent));
        return refuse_worker(proc, report);
    }

    struct worker_channel channel;
    channel_init(&channel, proc->from_worker);
    const uint8_t *payload = NULL;
    size_t len = 0;
    enum channel_result got = channel_read_frame(&channel, timeout_ms, &payload, &len);
    if (got != CHANNEL_FRAME) {
        channel_free(&channel);
        snprintf(report->reason, sizeof report->reason, "no Welcome: %s",
                 channel_result_name(got));
        return refuse_worker(proc, report);
    }
    struct proto_msg welcome;
    enum proto_error decoded = proto_decode(payload, len, &welcome);
    channel_free(&channel);
    if (decoded != PROTO_OK) {
        snprintf(report->reason, sizeof report->reason, "malformed Welcome: %s",
                 proto_error_name(decoded));
        return refuse_worker(proc, report);
    }
    if (welcome.tag != PROTO_WELCOME) {
        snprintf(report->reason, sizeof report->reason, "expected Welcome, got %s",
                 proto_msg_name(welcome.tag));
        proto_msg_free(&welcome);
        return refuse_worker(proc, report);
    }
    record_welcome(report, &welcome.welcome);
    bool ok = welcome_acceptable(&welcome.welcome, policy, report->kernel_landlock_abi,
                                 report->reason, sizeof report->reason);
    proto_msg_free(&welcome);
    if (!ok)
        return refuse_worker(proc, report);

    if (proc_status_read(proc->pid, &report->status) != 0) {
        snprintf(report->reason, sizeof report->reason, "cannot read /proc/%d/status",
                 (int)proc->pid);
        return refuse_worker(proc, report);
    }
    report->have_status = true;
    struct proc_status own;
    report->parent_seccomp_filters = proc_status_read(0, &own) == 0 ? own.seccomp_filters : -1;
    if (!status_acceptable(&report->status, report->parent_seccomp_filters, report->reason,
                           sizeof report->reason))
        return refuse_worker(proc, report);
    report->accepted = true;
    return true;
}

bool worker_start_ahead(const char *path, enum landlock_policy policy,
                   const struct worker_limits *limits, struct worker_proc *proc,
                   struct worker_report *report)
{
    memset(report, 0, sizeof *report);
    char located[4096];
    if (path == NULL) {
        if (worker_locate(located, sizeof located, report->reason, sizeof report->reason) != 0)
            return false;
        path = located;
    } else if (access(path, X_OK) != 0) {
        snprintf(report->reason, sizeof report->reason, "worker %.160s is not executable: %s",
                 path, strerror(errno));
        return false;
    }
    const char *args[] = {worker_policy_arg(policy), NULL};
    if (worker_spawn(path, args, limits, proc) != 0) {
        snprintf(report->reason, sizeof report->reason, "cannot start %.160s: %s", path,
                 strerror(errno));
        return false;
    }
    report->started = true;
    return true;
}

bool worker_start_checked_with(const char *path, enum landlock_policy policy,
                               const struct worker_limits *limits, int welcome_timeout_ms,
                               struct worker_proc *proc, struct worker_report *report)
{
    if (!worker_start_ahead(path, policy, limits, proc, report))
        return false;
    bool accepted = worker_handshake(proc, policy, welcome_timeout_ms, report);
    report->started = true;
    return accepted;
}

bool worker_start_checked(enum landlock_policy policy, struct worker_proc *proc,
                          struct worker_report *report)
{
    struct worker_limits limits = {WORKER_FLOW_ADDRESS_SPACE, WORKER_OPEN_FILES};
    return worker_start_checked_with(NULL, policy, &limits, WORKER_WELCOME_TIMEOUT_MS, proc,
                                     report);
}
