/* The worker ends when its parent dies, on macOS (sandbox.md "macOS"). Linux's launcher
 * asks the kernel for it before the exec (PR_SET_PDEATHSIG, worker_launch_linux.c);
 * macOS has no parent-death signal and posix_spawn no such attribute, so the worker
 * watches its parent itself: parent_watch_macos.c, called by confine_macos.c before the
 * Seatbelt profile. Without it an idle worker would still end (its stdin reads end of
 * file), but one busy in a script would run on to the end of its budget. */
#ifndef BASAL_WORKER_PARENT_WATCH_H
#define BASAL_WORKER_PARENT_WATCH_H

/* Reads the parent's pid now and starts the watch: from then on the worker is killed
 * (SIGKILL, as on Linux) as soon as that process exits. Refuses (exit 70):
 *   parent-gone   the parent has already exited (the worker was reparented)
 *   parent-watch  the watch could not be set */
void parent_watch_or_refuse(void);

#endif
