/* The confinement probes (behind probes.h) on Windows: none is built. The Linux probes
 * (probes.c) are system calls the seccomp allowlist must kill; sandbox.md's Windows
 * probes (file opens, package-folder creates, hive writes, IPC, process creation,
 * another process, Winsock) need a real Windows token and job to mean anything, which
 * Wine does not give (docs/platforms.md). --confinement-probe=NAME is therefore an
 * unknown probe on Windows (usage, exit 64), never a probe that passes. */
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
