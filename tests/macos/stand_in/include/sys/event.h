/* A Linux stand-in for the part of Darwin's <sys/event.h> that
 * src/worker/cpu_timer_macos.c and parent_watch_macos.c use (make macos-logic;
 * stand_in.c implements it over epoll): EVFILT_TIMER (a periodic timerfd, one per
 * queue; EV_ADD arms it with data nanoseconds, EV_DELETE disarms it) and EVFILT_PROC
 * NOTE_EXIT (a pidfd; ESRCH for a process that is gone). Only the names and types the
 * sources use: the real declarations are tests/macos/macos_decls.h's. */
#ifndef BASAL_TESTS_MACOS_STAND_IN_EVENT_H
#define BASAL_TESTS_MACOS_STAND_IN_EVENT_H

#include <stdint.h>
#include <time.h>

struct kevent {
    uintptr_t ident;
    int16_t filter;
    uint16_t flags;
    uint32_t fflags;
    intptr_t data;
    void *udata;
};
#define EVFILT_PROC (-5)
#define EVFILT_TIMER (-7)
#define EV_ADD 0x0001
#define EV_DELETE 0x0002
#define NOTE_EXIT 0x80000000u
#define NOTE_NSECONDS 0x00000004u
#define EV_SET(kevp, a, b, c, d, e, f)                                                      \
    do {                                                                                   \
        struct kevent *kev_ = (kevp);                                                      \
        kev_->ident = (a);                                                                 \
        kev_->filter = (int16_t)(b);                                                       \
        kev_->flags = (uint16_t)(c);                                                       \
        kev_->fflags = (uint32_t)(d);                                                      \
        kev_->data = (e);                                                                  \
        kev_->udata = (f);                                                                 \
    } while (0)

int kqueue(void);
int kevent(int kq, const struct kevent *changelist, int nchanges, struct kevent *eventlist,
           int nevents, const struct timespec *timeout);

#endif
