/* The Linux stand-in for kqueue, kevent, thread_info and pthread_mach_thread_np
 * (include/sys/event.h, include/mach/mach.h state what of each), so that make
 * macos-logic can run the logic of cpu_timer_macos.c and parent_watch_macos.c here,
 * as tests/t_macos_sign.sh runs deploy/macos-sign.sh against a stand-in for codesign.
 * What it cannot show is Darwin's own behaviour: the CI job runs the same probes on
 * macOS. */
#include <mach/mach.h>
#include <sys/event.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define THREADS_MAX 8
static clockid_t thread_clocks[THREADS_MAX];
static unsigned thread_count;

mach_port_t pthread_mach_thread_np(pthread_t thread)
{
    clockid_t clock;
    if (thread_count == THREADS_MAX || pthread_getcpuclockid(thread, &clock) != 0)
        return MACH_PORT_NULL;
    thread_clocks[thread_count] = clock;
    return ++thread_count;
}

kern_return_t thread_info(mach_port_t thread, natural_t flavor, thread_info_t out,
                          mach_msg_type_number_t *count)
{
    struct timespec now;
    if (thread == MACH_PORT_NULL || thread > thread_count || flavor != THREAD_BASIC_INFO ||
        *count < THREAD_BASIC_INFO_COUNT || clock_gettime(thread_clocks[thread - 1], &now) != 0)
        return KERN_FAILURE;
    thread_basic_info_data_t info;
    memset(&info, 0, sizeof info);
    info.user_time.seconds = (integer_t)now.tv_sec;
    info.user_time.microseconds = (integer_t)(now.tv_nsec / 1000);
    memcpy(out, &info, sizeof info);
    *count = THREAD_BASIC_INFO_COUNT;
    return KERN_SUCCESS;
}

/* epoll data: which filter an event is. */
enum { TAG_TIMER = 1, TAG_PROC = 2 };
#define QUEUES_MAX 1024
static int queue_timer[QUEUES_MAX]; /* a queue's timerfd + 1, 0: none yet */

int kqueue(void)
{
    int queue = epoll_create1(EPOLL_CLOEXEC);
    if (queue >= QUEUES_MAX) {
        (void)close(queue);
        errno = EMFILE;
        return -1;
    }
    return queue;
}

static int change_timer(int queue, const struct kevent *change)
{
    if (queue_timer[queue] == 0) {
        int timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        struct epoll_event watch = {.events = EPOLLIN, .data.u64 = TAG_TIMER};
        if (timer < 0 || epoll_ctl(queue, EPOLL_CTL_ADD, timer, &watch) != 0)
            return -1;
        queue_timer[queue] = timer + 1;
    }
    struct itimerspec period;
    memset(&period, 0, sizeof period);
    if (change->flags & EV_ADD) {
        period.it_value.tv_sec = change->data / 1000000000;
        period.it_value.tv_nsec = change->data % 1000000000;
        period.it_interval = period.it_value;
    }
    return timerfd_settime(queue_timer[queue] - 1, 0, &period, NULL);
}

static int change_proc(int queue, const struct kevent *change)
{
    int process = (int)syscall(SYS_pidfd_open, (pid_t)change->ident, 0);
    if (process < 0)
        return -1; /* ESRCH: gone, as kevent answers */
    struct epoll_event watch = {.events = EPOLLIN, .data.u64 = TAG_PROC};
    return epoll_ctl(queue, EPOLL_CTL_ADD, process, &watch);
}

int kevent(int kq, const struct kevent *changelist, int nchanges, struct kevent *eventlist,
           int nevents, const struct timespec *timeout)
{
    if (kq < 0 || kq >= QUEUES_MAX) {
        errno = EBADF;
        return -1;
    }
    for (int i = 0; i < nchanges; i++) {
        int rc = changelist[i].filter == EVFILT_TIMER ? change_timer(kq, &changelist[i])
                                                       : change_proc(kq, &changelist[i]);
        if (rc != 0)
            return -1;
    }
    if (nevents == 0)
        return 0;
    int wait_ms = timeout == NULL ? -1 : (int)(timeout->tv_sec * 1000 + timeout->tv_nsec / 1000000);
    struct epoll_event ready;
    int n = epoll_wait(kq, &ready, 1, wait_ms);
    if (n <= 0)
        return n;
    memset(&eventlist[0], 0, sizeof eventlist[0]);
    if (ready.data.u64 == TAG_TIMER) {
        uint64_t expirations;
        if (read(queue_timer[kq] - 1, &expirations, sizeof expirations) != (ssize_t)sizeof expirations)
            return -1;
        eventlist[0].filter = EVFILT_TIMER;
        eventlist[0].data = (intptr_t)expirations;
    } else {
        eventlist[0].filter = EVFILT_PROC;
        eventlist[0].fflags = NOTE_EXIT;
    }
    return 1;
}
