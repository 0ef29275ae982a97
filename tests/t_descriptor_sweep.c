/* The worker's descriptor sweep (src/worker/descriptors.c, steps 2 and 5 of the
 * confinement): after close_range it must still find any descriptor left open in
 * 3..1023, wherever it sits, whatever the fd limit. The sweep asks poll for a chunk of
 * numbers at a time (a closed number comes back POLLNVAL) instead of one fcntl per
 * number; these checks pin what that must not lose: the first and last numbers of a
 * chunk and of the range, a descriptor above a soft fd limit lowered after it was
 * opened (the parent sets 16 before exec, and poll refuses more entries than the
 * limit), and a limit of 0, where poll cannot look at all and fcntl must answer.
 * t_descriptors checks the real worker from outside (/proc/<pid>/fd). */
#include "worker/descriptors.h"
#include "lib/harness.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FROM 300 /* above anything the harness holds open */
#define END 1024

static bool place(int fd)
{
    int src = open("/dev/null", O_RDONLY | O_CLOEXEC);
    bool ok = src >= 0 && dup3(src, fd, O_CLOEXEC) == fd;
    if (src >= 0 && src != fd)
        close(src);
    return ok;
}

static void clear(void)
{
    (void)syscall(SYS_close_range, (unsigned)FROM, ~0U, 0U);
}

static void set_fd_limit(rlim_t soft)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
        lim.rlim_cur = soft;
        (void)setrlimit(RLIMIT_NOFILE, &lim);
    }
}

int main(void)
{
    struct rlimit saved;
    if (getrlimit(RLIMIT_NOFILE, &saved) != 0 || saved.rlim_max < END) {
        check(false, "descriptor sweep: setup", "RLIMIT_NOFILE hard limit below %d", END);
        return harness_finish();
    }
    set_fd_limit(END);
    clear();
    check_int_eq(descriptors_first_open(FROM, END), END,
                 "descriptor sweep: nothing open in the range reports the range's end");

    static const int SPOTS[] = {FROM, FROM + 15, FROM + 16, 555, 811, END - 1};
    for (size_t i = 0; i < sizeof SPOTS / sizeof SPOTS[0]; i++) {
        clear();
        char name[160];
        snprintf(name, sizeof name,
                 "descriptor sweep: finds the one descriptor left open at %d "
                 "[guard: poll's POLLNVAL sweep misses no number]",
                 SPOTS[i]);
        bool placed = place(SPOTS[i]);
        check(placed && descriptors_first_open(FROM, END) == SPOTS[i], name, "placed %d, got %d",
              placed, descriptors_first_open(FROM, END));
    }

    clear();
    bool placed = place(END - 1) && place(700);
    check(placed && descriptors_first_open(FROM, END) == 700,
          "descriptor sweep: of two left open it reports the lower", "got %d",
          descriptors_first_open(FROM, END));

    /* The parent's limit: descriptors opened before it was lowered stay open above it. */
    set_fd_limit(16);
    check(placed && descriptors_first_open(FROM, END) == 700 &&
              descriptors_first_open(701, END) == END - 1,
          "descriptor sweep: finds descriptors above a soft fd limit of 16 "
          "[guard: a descriptor above the fd limit does not escape the sweep]",
          "got %d and %d", descriptors_first_open(FROM, END), descriptors_first_open(701, END));

    set_fd_limit(0);
    check(placed && descriptors_first_open(FROM, END) == 700 &&
              descriptors_first_open(701, END) == END - 1,
          "descriptor sweep: with an fd limit of 0 (poll refuses) fcntl still finds them "
          "[guard: the sweep fails closed when poll cannot look]",
          "got %d and %d", descriptors_first_open(FROM, END), descriptors_first_open(701, END));

    (void)setrlimit(RLIMIT_NOFILE, &saved);
    clear();
    return harness_finish();
}
