/* What the running kernel offers, asked by the parent itself: the reference a
 * worker's Welcome is checked against (never the worker's own claim). */
#ifndef BASAL_SUPERVISOR_KERNEL_FACTS_H
#define BASAL_SUPERVISOR_KERNEL_FACTS_H

/* The kernel's Landlock ABI; 0 if it has none (ENOSYS or EOPNOTSUPP); -1 if the
 * question itself failed. */
int kernel_landlock_abi(void);

/* The ABI a worker must apply under the default policy: min(kernel, known). */
unsigned expected_landlock_abi(unsigned kernel_abi);

/* 1 if the kernel offers seccomp filters with KILL_PROCESS, else 0. */
int kernel_has_seccomp_kill_process(void);

#endif
