#include "worker/handle_inventory.h"

#include <stdio.h>
#include <string.h>

struct handle_row {
    const char *type;
    const char *name; /* NULL: any (unnamed) object of the type */
    uint32_t access;
    bool exact;       /* the count must be exactly the bound, not at most */
    bool stdio;       /* the only rows whose handles may be inheritable */
    unsigned bound[2]; /* indexed by enum handle_profile */
};

/* sandbox.md's table, row by row: the two profiles side by side, never merged. */
static const struct handle_row ROWS[] = {
    {"File", NULL, 0x120189, true, true, {1, 1}},   /* stdin */
    {"File", NULL, 0x120196, true, true, {2, 2}},   /* stdout, stderr */
    {"Directory", "\\KnownDlls", 0x3, true, false, {1, 1}},
    {"Event", NULL, 0x1f0003, false, false, {7, 7}},
    {"IoCompletion", NULL, 0x1f0003, false, false, {2, 2}},
    {"TpWorkerFactory", NULL, 0xf00ff, false, false, {2, 2}},
    {"IRTimer", NULL, 0x100002, false, false, {4, 4}},
    {"WaitCompletionPacket", NULL, 0x1, false, false, {6, 5}},
    {"Semaphore", NULL, 0x100003, false, false, {0, 2}},
    {"SchedulerSharedData", NULL, 0x1, false, false, {1, 0}},
};
#define ROW_COUNT (sizeof ROWS / sizeof ROWS[0])

const char *handle_profile_name(enum handle_profile profile)
{
    return profile == HANDLE_PROFILE_WINDOWS_2022 ? "windows-2022" : "windows-latest";
}

#define REFUSE(...)                                                                          \
    do {                                                                                     \
        snprintf(why, why_cap, __VA_ARGS__);                                                 \
        return false;                                                                        \
    } while (0)

static bool row_takes_type(const struct handle_row *row, const struct handle_entry *e)
{
    if (strcmp(row->type, e->type) != 0)
        return false;
    return row->name == NULL || (e->name != NULL && strcmp(row->name, e->name) == 0);
}

bool handle_inventory_check(enum handle_profile profile, const struct handle_entry *entries,
                            size_t count, char *why, size_t why_cap)
{
    const char *pname = handle_profile_name(profile);
    if (count > HANDLE_INVENTORY_MAX)
        REFUSE("handle-total: %zu handles, %s allows at most %u", count, pname,
               HANDLE_INVENTORY_MAX);
    unsigned seen[ROW_COUNT] = {0};
    for (size_t i = 0; i < count; i++) {
        const struct handle_entry *e = &entries[i];
        const char *type = e->type != NULL ? e->type : "";
        bool type_known = false;
        size_t row = ROW_COUNT;
        for (size_t r = 0; r < ROW_COUNT; r++) {
            if (e->type == NULL || !row_takes_type(&ROWS[r], e))
                continue;
            type_known = true;
            if (ROWS[r].access == e->access) {
                row = r;
                break;
            }
        }
        if (!type_known)
            REFUSE("handle-unknown-type: %s '%s'", type, e->name != NULL ? e->name : "");
        if (row == ROW_COUNT)
            REFUSE("handle-mask: %s 0x%x", type, (unsigned)e->access);
        if (e->inheritable && !ROWS[row].stdio)
            REFUSE("handle-inheritable: %s 0x%x", type, (unsigned)e->access);
        seen[row]++;
    }
    for (size_t r = 0; r < ROW_COUNT; r++) {
        unsigned bound = ROWS[r].bound[profile];
        if (seen[r] > bound || (ROWS[r].exact && seen[r] != bound))
            REFUSE("handle-count: %u %s 0x%x, %s allows %s%u", seen[r], ROWS[r].type,
                   (unsigned)ROWS[r].access, pname, ROWS[r].exact ? "exactly " : "at most ",
                   bound);
    }
    return true;
}

bool handle_inventory_fits_a_profile(const struct handle_entry *entries, size_t count,
                                     enum handle_profile *fitted, char *why, size_t why_cap)
{
    char ignored[160];
    if (handle_inventory_check(HANDLE_PROFILE_WINDOWS_2022, entries, count, ignored,
                               sizeof ignored)) {
        *fitted = HANDLE_PROFILE_WINDOWS_2022;
        return true;
    }
    if (handle_inventory_check(HANDLE_PROFILE_WINDOWS_LATEST, entries, count, why, why_cap)) {
        *fitted = HANDLE_PROFILE_WINDOWS_LATEST;
        return true;
    }
    return false;
}
