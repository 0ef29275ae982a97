/* The Windows worker's handle-table allowlist (worker/handle_inventory.h, sandbox.md
 * "Residual handles"), on Linux from the source the Windows worker compiles: both
 * image profiles' production inventories pass, each refusal is named, and the union
 * of the two profiles fits neither. */
#include "worker/handle_inventory.h"
#include "lib/harness.h"

#include <string.h>

#define MAXH 40

struct table {
    struct handle_entry e[MAXH];
    size_t n;
};

static void add(struct table *t, const char *type, const char *name, uint32_t access,
                bool inheritable, unsigned count)
{
    for (unsigned i = 0; i < count && t->n < MAXH; i++)
        t->e[t->n++] = (struct handle_entry){type, name, access, inheritable};
}

/* The production rows of sandbox.md's table: 25 handles per image. */
static struct table production(enum handle_profile profile)
{
    bool latest = profile == HANDLE_PROFILE_WINDOWS_LATEST;
    struct table t = {.n = 0};
    add(&t, "File", "", 0x120189, true, 1);
    add(&t, "File", "", 0x120196, true, 2);
    add(&t, "Directory", "\\KnownDlls", 0x3, false, 1);
    add(&t, "Event", "", 0x1f0003, false, 6);
    add(&t, "IoCompletion", "", 0x1f0003, false, 2);
    add(&t, "TpWorkerFactory", "", 0xf00ff, false, 2);
    add(&t, "IRTimer", "", 0x100002, false, 4);
    add(&t, "WaitCompletionPacket", "", 0x1, false, latest ? 6 : 5);
    add(&t, "Semaphore", "", 0x100003, false, latest ? 0 : 2);
    add(&t, "SchedulerSharedData", "", 0x1, false, latest ? 1 : 0);
    return t;
}

static void expect(enum handle_profile p, const struct table *t, bool pass, const char *reason,
                   const char *name)
{
    char why[200] = "";
    bool got = handle_inventory_check(p, t->e, t->n, why, sizeof why);
    check(got == pass && (reason == NULL || strncmp(why, reason, strlen(reason)) == 0), name,
          "%s: passed %d, reason '%s' (expected %d, '%s')", handle_profile_name(p), got, why,
          pass, reason != NULL ? reason : "");
}

int main(void)
{
    const enum handle_profile L = HANDLE_PROFILE_WINDOWS_LATEST, W22 = HANDLE_PROFILE_WINDOWS_2022;
    struct table latest = production(L), w22 = production(W22);
    check(latest.n == 25 && w22.n == 25, "handles: both production inventories have 25 handles",
          "%zu, %zu", latest.n, w22.n);
    expect(L, &latest, true, NULL, "handles: windows-latest production rows pass windows-latest");
    expect(W22, &w22, true, NULL, "handles: windows-2022 production rows pass windows-2022");
    /* Each image's inventory is refused by the other's profile: no union. */
    expect(W22, &latest, false, "handle-count", "handles: windows-latest's inventory fails windows-2022 (SchedulerSharedData, 6 packets)");
    expect(L, &w22, false, "handle-count", "handles: windows-2022's inventory fails windows-latest (Semaphores)");

    struct table t = latest;
    add(&t, "Mutant", "", 0x1f0001, false, 1);
    expect(L, &t, false, "handle-unknown-type", "handles: an unknown type is refused [guard handle-unknown-type]");
    t = latest;
    t.e[5].access = 0x1f0001; /* an Event with another mask */
    expect(L, &t, false, "handle-mask: Event", "handles: an Event with another mask is refused [guard handle-mask]");
    t = latest;
    t.e[0].access = 0x12019f; /* stdin opened for writing too */
    expect(L, &t, false, "handle-mask: File", "handles: a File with a mask of no stdio row is refused [guard handle-mask]");
    t = latest;
    add(&t, "Event", "", 0x1f0003, false, 1);
    expect(L, &t, true, NULL, "handles: a seventh Event is within the ceiling (control)");
    t.n -= 2; /* the seventh Event and SchedulerSharedData: 24 handles */
    add(&t, "Event", "", 0x1f0003, false, 2);
    expect(L, &t, false, "handle-count: 8 Event", "handles: an extra Event past the ceiling of 7 is refused [guard handle-count]");
    t = latest;
    t.e[4].inheritable = true;
    expect(L, &t, false, "handle-inheritable", "handles: an inheritable Event is refused [guard handle-inheritable]");
    t = latest;
    add(&t, "File", "", 0x120196, true, 1);
    expect(L, &t, false, "handle-count", "handles: a third stdout/stderr File (extra inheritable pipe) is refused [guard handle-count exact]");
    t = latest;
    t.n--; /* SchedulerSharedData, the last row, is a ceiling: dropping it is fine */
    expect(L, &t, true, NULL, "handles: fewer than a ceiling passes (control)");
    t = latest;
    memmove(&t.e[3], &t.e[4], (t.n - 4) * sizeof t.e[0]);
    t.n--;
    expect(L, &t, false, "handle-count: 0 Directory", "handles: \\KnownDlls missing is refused (exact row) [guard handle-count exact]");
    t = latest;
    t.e[3].name = "\\BaseNamedObjects";
    expect(L, &t, false, "handle-unknown-type", "handles: a Directory other than \\KnownDlls is refused [guard handle-unknown-type]");

    /* The union: 2022's Semaphores on top of latest's inventory fits neither profile. */
    struct table both = latest;
    add(&both, "Semaphore", "", 0x100003, false, 1);
    enum handle_profile fitted = L;
    char why[200] = "";
    bool fits = handle_inventory_fits_a_profile(both.e, both.n, &fitted, why, sizeof why);
    check(!fits && strncmp(why, "handle-count", 12) == 0,
          "handles: the union of the profiles (latest's rows plus a Semaphore) fits neither [guard one-profile]",
          "fits %d (%s), '%s'", fits, handle_profile_name(fitted), why);
    fits = handle_inventory_fits_a_profile(w22.e, w22.n, &fitted, why, sizeof why);
    check(fits && fitted == W22, "handles: windows-2022's inventory fits its own profile (control)", "%s", why);
    fits = handle_inventory_fits_a_profile(latest.e, latest.n, &fitted, why, sizeof why);
    check(fits && fitted == L, "handles: windows-latest's inventory fits its own profile (control)", "%s", why);

    struct table big = latest;
    add(&big, "Event", "", 0x1f0003, false, 2);
    expect(L, &big, false, "handle-total", "handles: 27 handles are refused [guard handle-total]");
    return harness_finish();
}
