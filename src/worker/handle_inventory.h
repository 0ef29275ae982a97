/* The Windows worker's handle table against its allowlist (sandbox.md "Residual
 * handles"), portable C so the rule is unit-tested on Linux from the same source the
 * Windows worker compiles (worker/confine_windows.c feeds it the table it reads).
 *
 * The whole inventory must fit ONE image profile, windows-latest or windows-2022,
 * never their union. Stdio (one File 0x120189, two File 0x120196) and one Directory
 * \KnownDlls 0x3 must be present at exactly those counts; every other row is a ceiling;
 * at most 26 handles in all. Refused, with a named reason:
 *   handle-unknown-type   a type no row of the profile names (or a Directory not \KnownDlls)
 *   handle-mask           a known type with another access mask
 *   handle-inheritable    an inheritable handle that is not one of the three stdio pipes
 *   handle-count          more of a row than its ceiling, or an exact row not exact
 *   handle-total          more than 26 handles */
#ifndef BASAL_WORKER_HANDLE_INVENTORY_H
#define BASAL_WORKER_HANDLE_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum handle_profile {
    HANDLE_PROFILE_WINDOWS_LATEST = 0,
    HANDLE_PROFILE_WINDOWS_2022 = 1,
};

#define HANDLE_INVENTORY_MAX 26U

/* One open handle as the worker's snapshot of its own table reports it. */
struct handle_entry {
    const char *type;   /* object type name, e.g. "Event" */
    const char *name;   /* object name, "" when unnamed (\KnownDlls for the Directory) */
    uint32_t access;    /* granted access mask */
    bool inheritable;
};

/* "windows-latest" or "windows-2022". */
const char *handle_profile_name(enum handle_profile profile);

/* Checks entries against profile. Returns true, or false with the reason token and a
 * detail in why ("handle-mask: Event 0x1f0001"). */
bool handle_inventory_check(enum handle_profile profile, const struct handle_entry *entries,
                            size_t count, char *why, size_t why_cap);

/* True if entries fit either profile on its own (never a mix of both); the fitting
 * profile in *fitted. why gets the reason against windows-latest when neither fits. */
bool handle_inventory_fits_a_profile(const struct handle_entry *entries, size_t count,
                                     enum handle_profile *fitted, char *why, size_t why_cap);

#endif
