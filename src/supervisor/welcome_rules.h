/* Which Welcome a parent accepts, per operating system (portable: the same rules are
 * compiled into every platform's parent and unit-tested on Linux).
 *
 * A parent accepts a worker's Welcome only if the worker reports the parent's own
 * operating system (worker_launch_host_os(): a Linux parent never accepts a Windows
 * Welcome, and so on) and that system's whole confinement:
 *   linux    seccomp true (the Landlock and kernel-view checks follow in
 *            worker_check.h, which are Linux's alone)
 *   windows  all five fields true (sandbox.md "Windows"): the LPAC token attested, the
 *            primary lowered to Untrusted, no impersonation token left on the thread,
 *            the required mitigations in force, the handle inventory within its profile
 *   macos    Seatbelt applied (sandbox_init with worker.sb)
 * An os the parent does not know is refused. */
#ifndef BASAL_SUPERVISOR_WELCOME_RULES_H
#define BASAL_SUPERVISOR_WELCOME_RULES_H

#include "proto/message.h"

#include <stdbool.h>
#include <stddef.h>

enum worker_os {
    WORKER_OS_UNKNOWN = 0,
    WORKER_OS_LINUX,
    WORKER_OS_WINDOWS,
    WORKER_OS_MACOS,
};

/* The confinement a Welcome reports, whatever its system. Fields of other systems are
 * ignored (a Linux Welcome carries no Windows fields). */
struct welcome_confinement {
    enum worker_os os;
    bool seccomp; /* linux */
    bool seatbelt; /* macos */
    /* windows: the five fields */
    bool lpac_token;
    bool untrusted_integrity;
    bool no_thread_token;
    bool mitigations;
    bool handle_inventory;
};

/* "linux", "windows", "macos" as the Welcome spells them (len bytes, not
 * NUL-terminated); WORKER_OS_UNKNOWN for anything else. */
enum worker_os worker_os_from_name(const char *name, size_t len);

/* "linux", "windows", "macos", or "unknown". */
const char *worker_os_name(enum worker_os os);

/* Pure: true if a parent built for host accepts this Welcome's confinement, else false
 * with a one-line reason in why. */
bool welcome_rules_accept(enum worker_os host, const struct welcome_confinement *welcome,
                          char *why, size_t why_cap);

/* The confinement a decoded Welcome reports, as welcome_rules_accept judges it (the os
 * parsed from its name; seccomp, seatbelt and the five Windows fields copied). */
struct welcome_confinement welcome_reported_confinement(const struct proto_welcome *welcome);

/* Pure: a decoded Welcome speaks PROTO_VERSION, names an os, and welcome_rules_accept
 * accepts its confinement for host; else false with a one-line reason. The part of the
 * Welcome check every platform's parent shares (Linux's worker_check.c adds Landlock). */
bool welcome_rules_accept_welcome(enum worker_os host, const struct proto_welcome *welcome,
                                  char *why, size_t why_cap);

#endif
