/* Confinement facts both binaries must agree on: the worker applies them, the parent
 * checks the worker's Welcome against them with its own copy of these constants
 * (a worker's claim about itself is never the reference). */
#ifndef BASAL_PROTO_CONFINEMENT_H
#define BASAL_PROTO_CONFINEMENT_H

/* The highest Landlock ABI whose rights the worker knows how to handle. Under the
 * required policy the applied ABI must equal min(kernel ABI, this). */
#define LANDLOCK_ABI_KNOWN 7U

enum landlock_policy {
    LANDLOCK_POLICY_REQUIRED = 1, /* refuse to run without Landlock (the default) */
    LANDLOCK_POLICY_OPTIONAL = 2, /* run without it only when the kernel lacks it */
};

#endif
