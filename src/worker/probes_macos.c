/* The confinement probes (behind probes.h) on macOS: none is built into the worker.
 * The Linux probes (probes.c) are system calls the seccomp allowlist must kill; the
 * macOS worker has no allowlist, and its Seatbelt confinement is probed by
 * tests/macos/seatbelt_probe.c (make macos-probe, each probe beside its control),
 * which links confine_macos.c itself. --confinement-probe=NAME is therefore an unknown
 * probe on macOS (usage, exit 64), never a probe that passes. */
#include "worker/probes.h"

#include <stddef.h>

const struct probe *probe_find(const char *name)
{
    (void)name;
    return NULL;
}

const char *probe_name(const struct probe *probe)
{
    (void)probe;
    return "";
}

size_t probe_count(void)
{
    return 0;
}

const char *probe_name_at(size_t i)
{
    (void)i;
    return NULL;
}

int probe_prepare(const struct probe *probe, struct probe_ctx *ctx)
{
    (void)probe;
    (void)ctx;
    return -1;
}

int probe_run(const struct probe *probe, struct probe_ctx *ctx)
{
    (void)probe;
    (void)ctx;
    return 1;
}
