/* parent_watch.h on macOS: a kqueue EVFILT_PROC NOTE_EXIT watch of the parent, waited on
 * by a thread of its own that kills the worker when the event comes.
 *
 * The pid is read once (getppid) and the watch registered before sandbox_init, while
 * the worker is still unconfined, so the profile need not allow anything for it (the
 * thread then only waits in kevent). A parent that exits before the watch is registered
 * is seen either way: kevent refuses a pid that is gone (ESRCH), and a worker whose
 * parent exited is reparented, so getppid, read again after registering, no longer
 * names the parent (this also covers a watch registered on a reused pid). Fails
 * closed: a watch that cannot be set refuses, and a wait that fails ends the worker as
 * the parent's exit does, since nothing would watch it any more.
 * Written and compile-checked against declared signatures (tests/macos/macos_decls.h,
 * make macos-check), not run here: no macOS machine is reachable (docs/platforms.md);
 * make macos-probe (tests/macos/parent_watch_probe.c) drives it in the CI job. */
#include "worker/parent_watch.h"

#include "worker/refuse.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/event.h>
#include <unistd.h>

static int watch_queue = -1;

__attribute__((noreturn)) static void end_worker(void)
{
    (void)kill(getpid(), SIGKILL); /* as Linux's PR_SET_PDEATHSIG */
    _exit(WORKER_EXIT_PROTOCOL);
}

static void *watcher_main(void *unused)
{
    (void)unused;
    for (;;) {
        struct kevent event;
        int n = kevent(watch_queue, NULL, 0, &event, 1, NULL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n != 0)
            end_worker(); /* the parent exited, or the watch broke */
    }
    return NULL;
}

void parent_watch_or_refuse(void)
{
    pid_t parent = getppid();
    if (parent <= 1)
        refuse_unconfined("parent-gone"); /* already reparented to launchd */
    watch_queue = kqueue();
    if (watch_queue < 0)
        refuse_unconfined("parent-watch");
    struct kevent change;
    EV_SET(&change, (uintptr_t)parent, EVFILT_PROC, EV_ADD, NOTE_EXIT, 0, NULL);
    if (kevent(watch_queue, &change, 1, NULL, 0, NULL) != 0)
        refuse_unconfined(errno == ESRCH ? "parent-gone" : "parent-watch");
    if (getppid() != parent)
        refuse_unconfined("parent-gone");
    pthread_t watcher;
    if (pthread_create(&watcher, NULL, watcher_main, NULL) != 0 ||
        pthread_detach(watcher) != 0)
        refuse_unconfined("parent-watch");
}
