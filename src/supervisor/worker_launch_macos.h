/* The macOS worker launch (worker_launch_macos.c), until the platform seam lands.
 * The Windows work moves the worker spawn behind one per-OS contract,
 * supervisor/worker_launch.h: worker_launch(path, argv, limits, out) starts path with
 * argv with exactly three fresh pipes as stdin, stdout and stderr, nothing else of the
 * parent's, and fails with no worker started when its confinement cannot be put in
 * place. That header is not in this tree yet, so the same declaration stands here;
 * when it lands, worker_launch_macos.c includes it instead and this file goes. Not
 * built on Linux (mk/macos.mk compile-checks it). */
#ifndef BASAL_SUPERVISOR_WORKER_LAUNCH_MACOS_H
#define BASAL_SUPERVISOR_WORKER_LAUNCH_MACOS_H

#include "supervisor/worker_proc.h"

/* Starts path with argv (argv[0] is path, NULL-terminated), disclaimed from the
 * parent's privacy grants. Fills *out and returns 0, or returns -1 with errno set and
 * nothing started. */
int worker_launch(const char *path, char *const argv[], const struct worker_limits *limits,
                  struct worker_proc *out);

#endif
