#include "supervisor/welcome_rules.h"

#include <stdio.h>
#include <string.h>

static const char *const OS_NAMES[] = {
    [WORKER_OS_UNKNOWN] = "unknown",
    [WORKER_OS_LINUX] = "linux",
    [WORKER_OS_WINDOWS] = "windows",
    [WORKER_OS_MACOS] = "macos",
};

enum worker_os worker_os_from_name(const char *name, size_t len)
{
    for (size_t os = WORKER_OS_LINUX; os < sizeof OS_NAMES / sizeof OS_NAMES[0]; os++) {
        if (name != NULL && strlen(OS_NAMES[os]) == len && memcmp(OS_NAMES[os], name, len) == 0)
            return (enum worker_os)os;
    }
    return WORKER_OS_UNKNOWN;
}

const char *worker_os_name(enum worker_os os)
{
    if ((size_t)os >= sizeof OS_NAMES / sizeof OS_NAMES[0])
        return OS_NAMES[WORKER_OS_UNKNOWN];
    return OS_NAMES[os];
}

#define REFUSE(...)                                                                          \
    do {                                                                                     \
        snprintf(why, why_cap, __VA_ARGS__);                                                 \
        return false;                                                                        \
    } while (0)

static bool windows_fields_true(const struct welcome_confinement *w, char *why, size_t why_cap)
{
    /* Every field is required: one missing is a weaker sandbox, never accepted. */
    if (!w->lpac_token)
        REFUSE("Welcome reports no attested LPAC token");
    if (!w->untrusted_integrity)
        REFUSE("Welcome reports the primary token not lowered to Untrusted");
    if (!w->no_thread_token)
        REFUSE("Welcome reports an impersonation token left on the thread");
    if (!w->mitigations)
        REFUSE("Welcome reports the required process mitigations not in force");
    if (!w->handle_inventory)
        REFUSE("Welcome reports a handle table outside its profile");
    return true;
}

bool welcome_rules_accept(enum worker_os host, const struct welcome_confinement *welcome,
                          char *why, size_t why_cap)
{
    if (host == WORKER_OS_UNKNOWN)
        REFUSE("this parent was built for no known operating system");
    if (welcome->os != host)
        REFUSE("Welcome reports os '%s', this is %s", worker_os_name(welcome->os),
               worker_os_name(host));
    switch (host) {
    case WORKER_OS_LINUX:
        if (!welcome->seccomp)
            REFUSE("Welcome reports no seccomp filter");
        return true;
    case WORKER_OS_WINDOWS:
        return windows_fields_true(welcome, why, why_cap);
    case WORKER_OS_MACOS:
        if (!welcome->seatbelt)
            REFUSE("Welcome reports no Seatbelt profile");
        return true;
    case WORKER_OS_UNKNOWN:
        break;
    }
    REFUSE("this parent was built for no known operating system");
}

struct welcome_confinement welcome_reported_confinement(const struct proto_welcome *welcome)
{
    struct welcome_confinement reported = {
        .os = worker_os_from_name(welcome->os.str, welcome->os.len),
        .seccomp = welcome->seccomp,
        .seatbelt = welcome->seatbelt,
        .lpac_token = welcome->windows_lpac_token,
        .untrusted_integrity = welcome->windows_untrusted_integrity,
        .no_thread_token = welcome->windows_no_thread_token,
        .mitigations = welcome->windows_mitigations,
        .handle_inventory = welcome->windows_handle_inventory,
    };
    return reported;
}

bool welcome_rules_accept_welcome(enum worker_os host, const struct proto_welcome *welcome,
                                  char *why, size_t why_cap)
{
    if (welcome->protocol_version != PROTO_VERSION)
        REFUSE("protocol version %u, expected %u", (unsigned)welcome->protocol_version,
               PROTO_VERSION);
    struct welcome_confinement reported = welcome_reported_confinement(welcome);
    /* An os no rule knows is named as the worker spelled it (escaped where printed). */
    if (reported.os == WORKER_OS_UNKNOWN)
        REFUSE("Welcome reports os '%.*s', this is %s", (int)welcome->os.len,
               welcome->os.str != NULL ? welcome->os.str : "", worker_os_name(host));
    return welcome_rules_accept(host, &reported, why, why_cap);
}
