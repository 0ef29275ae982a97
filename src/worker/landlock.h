/* Step 4 of the Linux confinement: an empty Landlock ruleset that handles every
 * filesystem, TCP and scope right of min(kernel ABI, LANDLOCK_ABI_KNOWN), so nothing
 * outside stdio is reachable through the filesystem or TCP even if seccomp failed.
 *   landlock-unavailable   the kernel has no Landlock (ENOSYS/EOPNOTSUPP) under the
 *                          required policy
 *   landlock               any other failure, under either policy
 *   landlock-not-enforced  after restrict_self, opening "/" still succeeded */
#ifndef BASAL_WORKER_LANDLOCK_H
#define BASAL_WORKER_LANDLOCK_H

#include "proto/confinement.h"

struct landlock_outcome {
    unsigned runtime_abi; /* what the kernel reports; 0 = no Landlock */
    unsigned applied_abi; /* the ABI whose rights were restricted; 0 = none */
};

/* Applies the ruleset under policy, or refuses (never returns). */
struct landlock_outcome landlock_apply_or_refuse(enum landlock_policy policy);

/* The kernel's Landlock ABI, 0 if it has none, -1 on any other error. */
int landlock_kernel_abi(void);

#endif
