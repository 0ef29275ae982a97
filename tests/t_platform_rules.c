/* The portable platform rules, on Linux from the same sources every platform's parent
 * compiles: which Welcome a parent of each operating system accepts
 * (supervisor/welcome_rules.h) and which worker ends count in fatal_status_deaths
 * (supervisor/fatal_status.h). */
#include "supervisor/fatal_status.h"
#include "supervisor/welcome_rules.h"
#include "supervisor/worker_check.h"
#include "supervisor/worker_launch.h"
#include "proto/message.h"
#include "lib/harness.h"

#include <stdio.h>
#include <string.h>

static const struct welcome_confinement LINUX_OK = {.os = WORKER_OS_LINUX, .seccomp = true};
static const struct welcome_confinement MACOS_OK = {.os = WORKER_OS_MACOS, .seatbelt = true};
static const struct welcome_confinement WINDOWS_OK = {
    .os = WORKER_OS_WINDOWS,
    .lpac_token = true,
    .untrusted_integrity = true,
    .no_thread_token = true,
    .mitigations = true,
    .handle_inventory = true,
};

static void expect(enum worker_os host, const struct welcome_confinement *w, bool accepted,
                   const char *want_reason, const char *name)
{
    char why[256] = "";
    bool got = welcome_rules_accept(host, w, why, sizeof why);
    check(got == accepted && (want_reason == NULL || strstr(why, want_reason) != NULL), name,
          "accepted %d, reason '%s' (expected %d, '%s')", got, why, accepted,
          want_reason != NULL ? want_reason : "");
}

static void test_each_os_accepts_only_its_own(void)
{
    expect(WORKER_OS_LINUX, &LINUX_OK, true, NULL, "welcome rules: Linux accepts a Linux Welcome with seccomp");
    expect(WORKER_OS_WINDOWS, &WINDOWS_OK, true, NULL,
           "welcome rules: Windows accepts a Windows Welcome with all five fields true");
    expect(WORKER_OS_MACOS, &MACOS_OK, true, NULL, "welcome rules: macOS accepts a macOS Welcome with Seatbelt");

    expect(WORKER_OS_LINUX, &WINDOWS_OK, false, "os 'windows', this is linux",
           "welcome rules: Linux refuses a complete Windows Welcome [guard os-match]");
    expect(WORKER_OS_LINUX, &MACOS_OK, false, "os 'macos', this is linux",
           "welcome rules: Linux refuses a complete macOS Welcome [guard os-match]");
    expect(WORKER_OS_WINDOWS, &LINUX_OK, false, "os 'linux', this is windows",
           "welcome rules: Windows refuses a Linux Welcome [guard os-match]");
    expect(WORKER_OS_WINDOWS, &MACOS_OK, false, "os 'macos', this is windows",
           "welcome rules: Windows refuses a macOS Welcome [guard os-match]");
    expect(WORKER_OS_MACOS, &LINUX_OK, false, "os 'linux', this is macos",
           "welcome rules: macOS refuses a Linux Welcome [guard os-match]");
    expect(WORKER_OS_MACOS, &WINDOWS_OK, false, "os 'windows', this is macos",
           "welcome rules: macOS refuses a Windows Welcome [guard os-match]");

    /* A Welcome that carries every system's fields true is still refused elsewhere. */
    struct welcome_confinement everything = WINDOWS_OK;
    everything.seccomp = true;
    everything.seatbelt = true;
    everything.os = WORKER_OS_UNKNOWN;
    expect(WORKER_OS_LINUX, &everything, false, "os 'unknown'",
           "welcome rules: an unknown os is refused even with every field true");
    expect(WORKER_OS_UNKNOWN, &LINUX_OK, false, "no known operating system",
           "welcome rules: a parent of no known system accepts nothing");
}

static void test_required_fields(void)
{
    struct welcome_confinement w = LINUX_OK;
    w.seccomp = false;
    w.seatbelt = true;
    expect(WORKER_OS_LINUX, &w, false, "no seccomp",
           "welcome rules: Linux without seccomp refused (Seatbelt does not stand in) [guard linux-seccomp]");
    w = MACOS_OK;
    w.seatbelt = false;
    w.seccomp = true;
    expect(WORKER_OS_MACOS, &w, false, "no Seatbelt",
           "welcome rules: macOS without Seatbelt refused (seccomp does not stand in) [guard macos-seatbelt]");

    struct welcome_confinement win = WINDOWS_OK;
    const struct {
        bool *field;
        const char *reason, *name;
    } fields[] = {
        {&win.lpac_token, "LPAC token",
         "welcome rules: Windows without the LPAC token refused [guard windows-lpac]"},
        {&win.untrusted_integrity, "Untrusted",
         "welcome rules: Windows not at Untrusted refused [guard windows-untrusted]"},
        {&win.no_thread_token, "impersonation token",
         "welcome rules: Windows with a thread token left refused [guard windows-thread-token]"},
        {&win.mitigations, "mitigations",
         "welcome rules: Windows without the mitigations refused [guard windows-mitigations]"},
        {&win.handle_inventory, "handle table",
         "welcome rules: Windows with a handle table outside its profile refused "
         "[guard windows-handles]"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        win = WINDOWS_OK;
        *fields[i].field = false;
        expect(WORKER_OS_WINDOWS, &win, false, fields[i].reason, fields[i].name);
    }
}

static void test_os_names(void)
{
    check(worker_os_from_name("linux", 5) == WORKER_OS_LINUX &&
              worker_os_from_name("windows", 7) == WORKER_OS_WINDOWS &&
              worker_os_from_name("macos", 5) == WORKER_OS_MACOS,
          "welcome rules: the three os names parse", "%s", "wrong");
    check(worker_os_from_name("linuxx", 6) == WORKER_OS_UNKNOWN &&
              worker_os_from_name("linu", 4) == WORKER_OS_UNKNOWN &&
              worker_os_from_name("Linux", 5) == WORKER_OS_UNKNOWN &&
              worker_os_from_name(NULL, 0) == WORKER_OS_UNKNOWN &&
              worker_os_from_name("", 0) == WORKER_OS_UNKNOWN,
          "welcome rules: other spellings are unknown (exact bytes only)", "%s", "wrong");
    check(worker_launch_host_os() == WORKER_OS_LINUX,
          "welcome rules: the Linux build's launcher is Linux's (the Makefile picked worker_launch_linux.c)",
          "%s", worker_os_name(worker_launch_host_os()));
}

static void test_fatal_status(void)
{
    check(fatal_status_death(0xc0000008U, false), "fatal_status_deaths: exit 0xc0000008 (invalid handle) counts", "%s", "wrong");
    check(fatal_status_death(0xc0000005U, false), "fatal_status_deaths: exit 0xc0000005 (access violation) counts", "%s", "wrong");
    check(!fatal_status_death(70, false), "fatal_status_deaths: the worker's refusal (exit 70) never counts", "%s", "wrong");
    check(!fatal_status_death(0xc0000008U, true) && !fatal_status_death(0xc0000005U, true) &&
              !fatal_status_death(1, true),
          "fatal_status_deaths: a parent's kill never counts, whatever its code", "%s", "wrong");
    const unsigned others[] = {0, 1, 0xc0000409U, 0xc00000fdU, 0xc0000006U, 0x40010004U, 0xc0000007U};
    bool none = true;
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        none = none && !fatal_status_death(others[i], false);
    check(none, "fatal_status_deaths: other exits (0, 1, stack overrun, stack overflow, in-page, "
                "console kill, a neighbour code) do not count", "%s", "wrong");
}

/* A worker's Welcome as the parent receives it: encoded, decoded, mapped by
 * welcome_rules' welcome_reported_confinement and judged by host's rule. Proves the
 * bytes on the wire are the ones the rule reads. */
static bool wire_welcome_accepted(const struct proto_welcome *fields, enum worker_os host,
                                  char *why, size_t why_cap)
{
    struct proto_msg sent = {.tag = PROTO_WELCOME};
    sent.welcome = *fields;
    sent.welcome.protocol_version = PROTO_VERSION;
    sent.welcome.engine = proto_text_of("quickjs 2021-03-27");
    sent.welcome.worker_version = proto_text_of("test");
    sent.welcome.landlock_policy = LANDLOCK_POLICY_REQUIRED;
    struct wire_buf wire;
    wire_buf_init(&wire);
    struct proto_msg got;
    memset(&got, 0, sizeof got);
    bool accepted = false;
    snprintf(why, why_cap, "the Welcome did not encode and decode");
    if (proto_encode(&sent, &wire) == PROTO_OK &&
        proto_decode(wire.data, wire.len, &got) == PROTO_OK) {
        struct welcome_confinement reported = welcome_reported_confinement(&got.welcome);
        why[0] = '\0';
        accepted = welcome_rules_accept(host, &reported, why, why_cap);
        proto_msg_free(&got);
    }
    wire_buf_free(&wire);
    return accepted;
}

static bool macos_welcome_accepted(bool seatbelt, enum worker_os host, char *why, size_t why_cap)
{
    struct proto_welcome fields = {.os = proto_text_of("macos"), .seatbelt = seatbelt};
    return wire_welcome_accepted(&fields, host, why, why_cap);
}

/* The Windows worker's Welcome: all five fields true on the wire, or one of them false
 * (drop names which, -1 none). */
static bool windows_welcome_accepted(int drop, enum worker_os host, char *why, size_t why_cap)
{
    struct proto_welcome fields = {
        .os = proto_text_of("windows"),
        .windows_lpac_token = drop != 0,
        .windows_untrusted_integrity = drop != 1,
        .windows_no_thread_token = drop != 2,
        .windows_mitigations = drop != 3,
        .windows_handle_inventory = drop != 4,
    };
    return wire_welcome_accepted(&fields, host, why, why_cap);
}

static void test_windows_welcome_from_the_wire(void)
{
    char why[256];
    check(windows_welcome_accepted(-1, WORKER_OS_WINDOWS, why, sizeof why),
          "welcome rules: a Windows Welcome with the five fields 1 on the wire is accepted by a "
          "Windows parent",
          "%s", why);
    static const char *const reasons[] = {"no attested LPAC token", "not lowered to Untrusted",
                                          "impersonation token left", "mitigations not in force",
                                          "outside its profile"};
    for (int field = 0; field < 5; field++) {
        char name[160];
        snprintf(name, sizeof name,
                 "welcome rules: a Windows Welcome with field %d ('%s') 0 on the wire is refused "
                 "[guard windows-field-%d]",
                 field, reasons[field], field);
        bool accepted = windows_welcome_accepted(field, WORKER_OS_WINDOWS, why, sizeof why);
        check(!accepted && strstr(why, reasons[field]) != NULL, name, "%s",
              accepted ? "accepted" : why);
    }
    check(!windows_welcome_accepted(-1, WORKER_OS_LINUX, why, sizeof why) &&
              strstr(why, "os 'windows', this is linux") != NULL,
          "welcome rules: a complete Windows Welcome on the wire is refused by a Linux parent "
          "[guard os-match]",
          "%s", why[0] != '\0' ? why : "accepted");
}

static void test_macos_welcome_from_the_wire(void)
{
    char why[256];
    check(macos_welcome_accepted(true, WORKER_OS_MACOS, why, sizeof why),
          "welcome rules: a macOS Welcome with seatbelt 1 on the wire is accepted by a macOS parent",
          "%s", why);
    check(!macos_welcome_accepted(false, WORKER_OS_MACOS, why, sizeof why) &&
              strstr(why, "no Seatbelt") != NULL,
          "welcome rules: a macOS Welcome with seatbelt 0 on the wire is refused by a macOS "
          "parent [guard macos-seatbelt]",
          "%s", why[0] != '\0' ? why : "accepted");
    check(!macos_welcome_accepted(true, WORKER_OS_LINUX, why, sizeof why) &&
              strstr(why, "os 'macos', this is linux") != NULL,
          "welcome rules: a macOS Welcome with seatbelt 1 on the wire is refused by a Linux "
          "parent [guard os-match]",
          "%s", why[0] != '\0' ? why : "accepted");
}

int main(void)
{
    test_each_os_accepts_only_its_own();
    test_required_fields();
    test_macos_welcome_from_the_wire();
    test_windows_welcome_from_the_wire();
    test_os_names();
    test_fatal_status();
    return harness_finish();
}
