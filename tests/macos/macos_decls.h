/* The system declarations basal's macOS sources use, for `make macos-check` on Linux
 * (mk/macos.mk): clang -target arm64-apple-macos13 -fsyntax-only with no system header
 * of this machine. There is no macOS SDK here, so each declaration below is written
 * from the public signature it names, for a reviewer to compare with that header:
 *   [sandbox.h]        Apple's <sandbox.h> (MacOSX.sdk/usr/include/sandbox.h)
 *   [spawn_private.h]  Apple's libsyscall spawn_private.h (xnu, libsyscall/wrappers/
 *                      spawn/spawn_private.h), not in the SDK; LLVM's lldb declares it
 *                      the same way (PosixSpawnResponsible.h)
 *   [spawn.h]          Darwin's <spawn.h> (POSIX posix_spawn, with Apple's extensions)
 *   [libproc.h]        Apple's <libproc.h> and <sys/proc_info.h>
 *   [mach]             Apple's <mach/mach.h>: <mach/port.h>, <mach/kern_return.h>,
 *                      <mach/thread_info.h>, <mach/thread_act.h>, <mach/time_value.h>
 *   [pthread.h]        Darwin's <pthread.h> (POSIX threads; pthread_mach_thread_np)
 *   [sys/event.h]      Darwin's <sys/event.h> (kqueue, kevent and their constants)
 *   [malloc/malloc.h]  Apple's <malloc/malloc.h> (malloc_size)
 *   [CommonDigest.h]   Apple's <CommonCrypto/CommonDigest.h> (SHA-256)
 *   [C11]              the C library of ISO C11, as Darwin's headers declare it
 *   [POSIX]            the POSIX interface, with Darwin's arm64 types and values
 * A constant's value is Darwin's (from the named header); -fsyntax-only checks our
 * calls against these types, not the values: the CI job on macOS builds against the
 * real SDK (.github/workflows/macos.yml). Only what the macOS sources use is here;
 * the tests/macos/include/ headers each include this one file. */
#ifndef BASAL_TESTS_MACOS_DECLS_H
#define BASAL_TESTS_MACOS_DECLS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if !defined(__APPLE__) || !defined(__aarch64__)
#error "macos_decls.h is for clang -target arm64-apple-macos13 only"
#endif

/* ---- types [POSIX; Darwin's <sys/_types.h>, arm64] ---- */
typedef int32_t pid_t;
typedef long ssize_t;
typedef int64_t off_t;
typedef uint16_t mode_t;
typedef uint32_t uid_t;
typedef uint32_t sigset_t;

/* ---- errno [POSIX; Darwin's <sys/errno.h>] ---- */
extern int *__error(void);
#define errno (*__error())
#define EPERM 1
#define ESRCH 3
#define EINTR 4
#define EIO 5
#define EBADF 9
#define EINVAL 22
#define ENOSYS 78

/* ---- stdlib, string, formatting [C11, POSIX] ---- */
void *malloc(size_t size);
void *calloc(size_t count, size_t size);
void *realloc(void *ptr, size_t size);
void free(void *ptr);
__attribute__((noreturn)) void abort(void);
long strtol(const char *restrict str, char **restrict endptr, int base);
int strcmp(const char *s1, const char *s2);
int strncmp(const char *s1, const char *s2, size_t n);
void *memchr(const void *s, int c, size_t n);
int memcmp(const void *s1, const void *s2, size_t n);
void *memmove(void *dst, const void *src, size_t len);
__attribute__((noreturn)) void exit(int status);
__attribute__((noreturn)) void _exit(int status);
size_t strlen(const char *s);
char *strstr(const char *haystack, const char *needle);
void *memset(void *s, int c, size_t n);
void *memcpy(void *restrict dst, const void *restrict src, size_t n);
char *strerror(int errnum);
int snprintf(char *restrict str, size_t size, const char *restrict format, ...)
    __attribute__((format(printf, 3, 4)));
int vsnprintf(char *restrict str, size_t size, const char *restrict format, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* ---- stdio [POSIX; Darwin's <stdio.h> names its streams __stderrp] ---- */
typedef struct __sFILE FILE;
extern FILE *__stderrp;
#define stderr __stderrp
int fprintf(FILE *restrict stream, const char *restrict format, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- the bytes a block holds [malloc/malloc.h] ---- */
size_t malloc_size(const void *ptr);

/* ---- math [C11 <math.h>: isfinite is a macro; Darwin's dispatches on the type to its
 * inline functions, clang's builtin stands in for it here] ---- */
#define isfinite(x) __builtin_isfinite(x)

/* ---- scheduling [POSIX <sched.h>] ---- */
int sched_yield(void);

/* ---- gathered writes [POSIX <sys/uio.h>] ---- */
struct iovec {
    void *iov_base;
    size_t iov_len;
};
ssize_t writev(int fd, const struct iovec *iov, int iovcnt);

/* ---- poll [POSIX <poll.h>; Darwin's values] ---- */
typedef unsigned int nfds_t;
struct pollfd {
    int fd;
    short events;
    short revents;
};
#define POLLIN 0x0001
int poll(struct pollfd fds[], nfds_t nfds, int timeout);

/* ---- SHA-256 [CommonDigest.h]: CC_LONG is 32 bits ---- */
typedef uint32_t CC_LONG;
#define CC_SHA256_DIGEST_LENGTH 32
typedef struct CC_SHA256state_st {
    CC_LONG count[2];
    CC_LONG hash[8];
    CC_LONG wbuf[16];
} CC_SHA256_CTX;
int CC_SHA256_Init(CC_SHA256_CTX *c);
int CC_SHA256_Update(CC_SHA256_CTX *c, const void *data, CC_LONG len);
int CC_SHA256_Final(unsigned char *md, CC_SHA256_CTX *c);

/* ---- resource limits [POSIX; Darwin's <sys/resource.h>] ---- */
typedef uint64_t rlim_t;
struct rlimit {
    rlim_t rlim_cur;
    rlim_t rlim_max;
};
#define RLIMIT_CORE 4
int setrlimit(int resource, const struct rlimit *rlp);

/* ---- time [POSIX] ---- */
void tzset(void);
struct timespec {
    long tv_sec; /* Darwin's __darwin_time_t: long */
    long tv_nsec;
};
/* Darwin's <time.h> (macOS 10.12 and later): an enum, the thread's clock is 16. */
typedef enum {
    _CLOCK_REALTIME = 0,
    _CLOCK_MONOTONIC = 6,
    _CLOCK_PROCESS_CPUTIME_ID = 12,
    _CLOCK_THREAD_CPUTIME_ID = 16
} clockid_t;
#define CLOCK_REALTIME _CLOCK_REALTIME
#define CLOCK_MONOTONIC _CLOCK_MONOTONIC
#define CLOCK_PROCESS_CPUTIME_ID _CLOCK_PROCESS_CPUTIME_ID
#define CLOCK_THREAD_CPUTIME_ID _CLOCK_THREAD_CPUTIME_ID
int clock_gettime(clockid_t clock_id, struct timespec *tp);

/* ---- unistd, fcntl [POSIX; values from Darwin's <sys/fcntl.h>] ---- */
int close(int fd);
ssize_t read(int fd, void *buf, size_t count);
ssize_t write(int fd, const void *buf, size_t count);
pid_t getpid(void);
int pipe(int fds[2]);
int open(const char *path, int flags, ...);
int fcntl(int fd, int cmd, ...);
#define O_RDONLY 0x0000
#define O_WRONLY 0x0001
#define O_CREAT 0x0200
#define O_CLOEXEC 0x01000000
#define F_DUPFD 0
#define F_GETFD 1
#define F_SETFD 2
#define FD_CLOEXEC 1

/* ---- signals [POSIX; values from Darwin's <sys/signal.h>] ---- */
typedef int sig_atomic_t;
#define SIGKILL 9
#define SIGPIPE 13
#define SIGALRM 14
int sigemptyset(sigset_t *set);
int sigaddset(sigset_t *set, int signo);
int kill(pid_t pid, int sig);
typedef void (*sig_t)(int);
#define SIG_IGN ((sig_t)1)
sig_t signal(int sig, sig_t handler);

/* ---- posix_spawn [spawn.h: Darwin's types are opaque pointers] ---- */
typedef void *posix_spawnattr_t;
typedef void *posix_spawn_file_actions_t;
#define POSIX_SPAWN_SETSIGDEF 0x0004
#define POSIX_SPAWN_SETSIGMASK 0x0008
#define POSIX_SPAWN_CLOEXEC_DEFAULT 0x4000 /* Apple: close every fd no action names */
int posix_spawn(pid_t *restrict pid, const char *restrict path,
                const posix_spawn_file_actions_t *file_actions,
                const posix_spawnattr_t *restrict attrp, char *const argv[restrict],
                char *const envp[restrict]);
int posix_spawnattr_init(posix_spawnattr_t *attr);
int posix_spawnattr_destroy(posix_spawnattr_t *attr);
int posix_spawnattr_setflags(posix_spawnattr_t *attr, short flags);
int posix_spawnattr_setsigmask(posix_spawnattr_t *restrict attr, const sigset_t *restrict mask);
int posix_spawnattr_setsigdefault(posix_spawnattr_t *restrict attr,
                                  const sigset_t *restrict sigdefault);
int posix_spawn_file_actions_init(posix_spawn_file_actions_t *actions);
int posix_spawn_file_actions_destroy(posix_spawn_file_actions_t *actions);
int posix_spawn_file_actions_adddup2(posix_spawn_file_actions_t *actions, int fd, int newfd);

/* ---- disclaimed launch [spawn_private.h], macOS 10.14 and later. Weakly imported, as
 * lldb does: where the system lacks it the address is NULL, which the launcher's
 * startup check refuses. Returns 0 or an errno value. ---- */
int responsibility_spawnattrs_setdisclaim(posix_spawnattr_t *attrs, bool disclaim)
    __attribute__((weak_import));

/* ---- Seatbelt [sandbox.h]. Deprecated since macOS 10.8 but still the one public
 * entry that applies a profile string; flags 0: profile is the profile's source text.
 * On failure returns -1 and sets *errorbuf, freed with sandbox_free_error. ---- */
int sandbox_init(const char *profile, uint64_t flags, char **errorbuf);
void sandbox_free_error(char *errorbuf);

/* ---- the open descriptors of a process [libproc.h, sys/proc_info.h] ---- */
#define PROC_PIDLISTFDS 1
struct proc_fdinfo {
    int32_t proc_fd;
    uint32_t proc_fdtype;
};
/* Fills buffer with up to buffersize bytes of flavor's records; returns the bytes
 * filled, or 0 or less on failure. */
int proc_pidinfo(int pid, int flavor, uint64_t arg, void *buffer, int buffersize);

/* ---- Mach ports, threads' CPU time [mach] ---- */
typedef unsigned int mach_port_t;
typedef int kern_return_t;
typedef int integer_t;
typedef unsigned int natural_t;
typedef natural_t mach_msg_type_number_t;
typedef natural_t thread_flavor_t;
typedef integer_t *thread_info_t;
typedef mach_port_t thread_inspect_t;
#define MACH_PORT_NULL ((mach_port_t)0)
#define KERN_SUCCESS 0
struct time_value {
    integer_t seconds;
    integer_t microseconds;
};
typedef struct time_value time_value_t;
#define THREAD_BASIC_INFO 3
struct thread_basic_info {
    time_value_t user_time;
    time_value_t system_time;
    integer_t cpu_usage;
    integer_t policy; /* policy_t */
    integer_t run_state;
    integer_t flags;
    integer_t suspend_count;
    integer_t sleep_time;
};
typedef struct thread_basic_info thread_basic_info_data_t;
#define THREAD_BASIC_INFO_COUNT \
    ((mach_msg_type_number_t)(sizeof(thread_basic_info_data_t) / sizeof(natural_t)))
kern_return_t thread_info(thread_inspect_t target_act, thread_flavor_t flavor,
                          thread_info_t thread_info_out,
                          mach_msg_type_number_t *thread_info_outCnt);

/* ---- threads [pthread.h; Darwin's opaque types] ---- */
typedef struct _opaque_pthread_t *pthread_t;
typedef struct {
    long __sig;
    char __opaque[56];
} pthread_attr_t;
int pthread_create(pthread_t *restrict thread, const pthread_attr_t *restrict attr,
                   void *(*start_routine)(void *), void *restrict arg);
int pthread_detach(pthread_t thread);
pthread_t pthread_self(void);
mach_port_t pthread_mach_thread_np(pthread_t thread);

/* ---- kqueue [sys/event.h] ---- */
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
#define EV_ENABLE 0x0004
#define EV_DISABLE 0x0008
#define EV_ONESHOT 0x0010
#define EV_CLEAR 0x0020
#define EV_ERROR 0x4000
#define NOTE_EXIT 0x80000000
#define NOTE_NSECONDS 0x00000004
#define EV_SET(kevp, a, b, c, d, e, f)                                                      \
    do {                                                                                   \
        struct kevent *__kevp__ = (kevp);                                                  \
        __kevp__->ident = (a);                                                             \
        __kevp__->filter = (int16_t)(b);                                                   \
        __kevp__->flags = (uint16_t)(c);                                                   \
        __kevp__->fflags = (uint32_t)(d);                                                  \
        __kevp__->data = (e);                                                              \
        __kevp__->udata = (f);                                                             \
    } while (0)
int kqueue(void);
int kevent(int kq, const struct kevent *changelist, int nchanges, struct kevent *eventlist,
           int nevents, const struct timespec *timeout);

/* ---- used only by tests/macos/seatbelt_probe.c (the probe the CI job runs) ---- */
/* [POSIX stdio; Darwin's <stdio.h>] */
extern FILE *__stdoutp;
#define stdout __stdoutp
int printf(const char *restrict format, ...) __attribute__((format(printf, 1, 2)));
int fflush(FILE *stream);
/* [POSIX unistd] */
pid_t fork(void);
pid_t getppid(void);
unsigned int alarm(unsigned int seconds);
int dup2(int fd, int fd2);
int unlink(const char *path);
/* [POSIX sys/wait.h; Darwin's macros] */
pid_t waitpid(pid_t pid, int *status, int options);
#define WIFEXITED(status) (((status) & 0177) == 0)
#define WEXITSTATUS(status) (((status) >> 8) & 0xff)
#define WIFSIGNALED(status) (((status) & 0177) != 0177 && ((status) & 0177) != 0)
#define WTERMSIG(status) ((status) & 0177)
/* [POSIX sys/socket.h, netinet/in.h, arpa/inet.h; Darwin's layout, with sin_len] */
typedef uint32_t socklen_t;
typedef uint8_t sa_family_t;
typedef uint16_t in_port_t;
typedef uint32_t in_addr_t;
struct sockaddr {
    uint8_t sa_len;
    sa_family_t sa_family;
    char sa_data[14];
};
struct in_addr {
    in_addr_t s_addr;
};
struct sockaddr_in {
    uint8_t sin_len;
    sa_family_t sin_family;
    in_port_t sin_port;
    struct in_addr sin_addr;
    char sin_zero[8];
};
#define AF_INET 2
#define SOCK_STREAM 1
#define INADDR_LOOPBACK ((in_addr_t)0x7f000001)
int socket(int domain, int type, int protocol);
int bind(int fd, const struct sockaddr *addr, socklen_t len);
int listen(int fd, int backlog);
int connect(int fd, const struct sockaddr *addr, socklen_t len);
int getsockname(int fd, struct sockaddr *restrict addr, socklen_t *restrict len);
/* Macros in Darwin's <sys/_endian.h>; functions of the same types here. */
uint16_t htons(uint16_t v);
uint16_t ntohs(uint16_t v);
uint32_t htonl(uint32_t v);
/* [Apple's <servers/bootstrap.h>; mach_port_t and kern_return_t above, [mach]] */
extern mach_port_t bootstrap_port;
kern_return_t bootstrap_look_up(mach_port_t bp, const char *service_name, mach_port_t *sp);

#endif
